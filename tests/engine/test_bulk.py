"""``bulk._Prefetched``: nbgrader's per-cell lookups answered from a few queries, with nbgrader's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import course
from grader.engine.bookkeeping import bulk, inprocess
from tests.fixtures.gradebooks import every_kind_of_cell
from tests.fixtures.sql import sent_statements


def test_find_notebook_is_asked_once_and_answers_as_nbgrader(tmp_path: Path) -> None:
    """``OverwriteCells.add_missing_grade_cells`` and ``add_missing_task_cells`` each ask for the notebook the
    cells were just read from: the same object of the same session, one query in all."""
    from nbgrader.api import Gradebook, MissingEntry

    course.put_bin_on_path()
    inprocess.apply()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    every_kind_of_cell(url)
    with Gradebook(url) as gradebook:
        view = bulk._Prefetched(gradebook)
        with sent_statements() as asked:
            found = view.find_notebook("first", "ps")
            assert view.find_notebook("first", "ps") is found
            view.find_graded_cell("answer", "first", "ps")  # OverwriteCells' first lookup reads it no more
        assert len([s for s in asked if "FROM notebook" in s]) == 1
        assert found is gradebook.find_notebook("first", "ps")
        assert sorted(c.name for c in found.grade_cells) == ["answer", "test_a"]
        for _ in range(2):  # a missing notebook: nbgrader's own error, each time
            with pytest.raises(MissingEntry, match=r"^No such notebook: ps/third$"):
                view.find_notebook("third", "ps")


def test_a_students_grades_and_comments_are_nbgraders_rows_read_in_one_query_each(tmp_path: Path) -> None:
    """``SaveAutoGrades`` finds each grade and comment by name: the view reads a submitted notebook's grades and
    its comments in one query each, and answers with the very rows nbgrader's own ``find_grade`` and
    ``find_comment`` find, for that student and notebook only."""
    from nbgrader.api import Gradebook, MissingEntry

    course.put_bin_on_path()
    inprocess.apply()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    every_kind_of_cell(url)
    with Gradebook(url) as gradebook:
        for student in ("stock", "fast"):
            gradebook.add_submission("ps", student)
        view = bulk._Prefetched(gradebook)
        with sent_statements() as asked:
            found = {
                name: (view.find_grade(name, "first", "ps", "fast"), view.find_comment(other, "first", "ps", "fast"))
                for name, other in (("test_a", "prose"), ("answer", "answer"), ("task", "task"))
            }
        assert len(asked) == 2, asked  # the grades, the comments
        for name, (grade, comment) in found.items():
            other = "prose" if name == "test_a" else name
            assert grade is gradebook.find_grade(name, "first", "ps", "fast")
            assert comment is gradebook.find_comment(other, "first", "ps", "fast")
        assert found["answer"][0].cell.type == "GradeCell" and found["answer"][1].cell.type == "SolutionCell"
        assert view.find_grade("test_a", "second", "ps", "fast") is not found["test_a"][0]  # another notebook
        assert view.find_grade("test_a", "first", "ps", "stock") is not found["test_a"][0]  # another student
        with pytest.raises(MissingEntry, match=r"^No such grade: ps/first/test_a of nobody$"):  # no submission
            view.find_grade("test_a", "first", "ps", "nobody")
        with pytest.raises(MissingEntry, match=r"^No such comment: ps/first/test_a of fast$"):  # not commented
            view.find_comment("test_a", "first", "ps", "fast")
