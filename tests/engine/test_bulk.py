"""``bulk._Prefetched``: nbgrader's per-cell lookups answered from a few queries, with nbgrader's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import course
from grader.engine import bulk, inprocess
from tests.engine.test_inprocess import _gradebook_with_every_kind_of_cell
from tests.fixtures.sql import sent_statements


def test_find_notebook_is_asked_once_and_answers_as_nbgrader(tmp_path: Path) -> None:
    """``OverwriteCells.add_missing_grade_cells`` and ``add_missing_task_cells`` each ask for the notebook the
    cells were just read from: the same object of the same session, one query in all."""
    from nbgrader.api import Gradebook, MissingEntry

    course.put_bin_on_path()
    inprocess.apply()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    _gradebook_with_every_kind_of_cell(url)
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
