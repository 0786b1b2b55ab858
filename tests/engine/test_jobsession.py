"""A worker's job on one nbgrader session in the caller's transaction (a real PostgreSQL of its own)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grader import course
from grader.engine.bookkeeping import inprocess, jobsession
from tests.fixtures.gradebooks import every_kind_of_cell
from tests.fixtures.sql import sent_statements


@contextlib.contextmanager
def _gradebook(database: str) -> Iterator[tuple[str, Any]]:
    """A fresh PostgreSQL database holding ``every_kind_of_cell``: its URL, and an engine on it for the job's
    connection."""
    import sqlalchemy as sa

    from tests.service.conftest import fresh_database

    course.put_bin_on_path()
    inprocess.apply()
    with fresh_database(database) as url:
        every_kind_of_cell(url)
        engine = sa.create_engine(url)
        try:
            yield url, engine
        finally:
            engine.dispose()


def test_gradebooks_opened_in_bound_write_in_the_callers_one_transaction(tmp_path: Path) -> None:
    import sqlalchemy as sa
    from nbgrader.api import Gradebook

    from tests.service.conftest import fresh_database

    def students(url: str) -> list[str]:
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                return sorted(conn.execute(sa.text("SELECT id FROM student")).scalars())
        finally:
            engine.dispose()

    course.put_bin_on_path()
    inprocess.apply()
    elsewhere = f"sqlite:///{tmp_path / 'other.db'}"
    with fresh_database("grader_bound") as url:
        with Gradebook(url):
            pass  # nbgrader's tables
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn, conn.begin():
                with jobsession.bound(conn):
                    with Gradebook(url) as first, Gradebook(url) as second:
                        assert first.db is second.db  # one session on the caller's connection
                        first.update_or_create_student("kept")  # nbgrader commits ...
                        assert second.find_student("kept").id == "kept"
                    with Gradebook(elsewhere) as other:  # another database: a session, and commits, of its own
                        other.update_or_create_student("sqlite")
                    assert students(url) == []  # ... but nothing is visible before the caller commits
                    assert students(elsewhere) == ["sqlite"]
            assert students(url) == ["kept"]

            with pytest.raises(RuntimeError, match="the job failed"):
                with engine.connect() as conn, conn.begin():
                    with jobsession.bound(conn):
                        with Gradebook(url) as gradebook:
                            gradebook.update_or_create_student("lost")
                        raise RuntimeError("the job failed")
            assert students(url) == ["kept"]  # rolled back with the caller's transaction

            with Gradebook(url) as outside:  # outside ``bound``: nbgrader's own session and commits again
                outside.update_or_create_student("outside")
            assert students(url) == ["kept", "outside"]
        finally:
            engine.dispose()


def test_find_notebook_in_a_bound_session_answers_with_the_sessions_object_by_its_key(tmp_path: Path) -> None:
    """nbgrader asks for the instructor's notebook several times per grading: inside ``bound`` the repeats cost
    no statement, nbgrader's commits included (they leave the instructor's rows loaded); outside, each asks."""
    from nbgrader.api import Gradebook, MissingEntry

    with _gradebook("grader_find_notebook") as (url, engine):
        with engine.connect() as conn, conn.begin(), jobsession.bound(conn):
            with Gradebook(url) as gradebook:
                found = gradebook.find_notebook("first", "ps")
                kernelspec, max_score = found.kernelspec, found.max_score
            with Gradebook(url) as gradebook, sent_statements() as asked:  # the next step's gradebook
                again = gradebook.find_notebook("first", "ps")
                assert again is found and (again.kernelspec, again.max_score) == (kernelspec, max_score)
                assert gradebook.find_notebook("second", "ps") is not found  # another notebook: its query
            assert len(asked) == 1 and "JOIN assignment" in asked[0]
            with Gradebook(url) as gradebook:
                gradebook.update_or_create_student("committing")  # nbgrader commits
                with sent_statements() as asked:
                    assert gradebook.find_notebook("first", "ps") is found
                    assert found.max_score == max_score
                assert asked == []  # the instructor's row stayed loaded
                for _ in range(2):  # a missing notebook: nbgrader's own error, each time
                    with pytest.raises(MissingEntry, match=r"^No such notebook: ps/third$"):
                        gradebook.find_notebook("third", "ps")
        with Gradebook(url) as gradebook, sent_statements() as asked:  # outside: nbgrader's query each time
            gradebook.find_notebook("first", "ps")
            gradebook.find_notebook("first", "ps")
        assert len(asked) == 2


def test_notebooks_of_loads_the_assignment_and_its_notebooks_for_nbgraders_later_lookups(tmp_path: Path) -> None:
    """A job reads the assignment's notebook names once; nbgrader's own ``find_assignment``, ``find_notebook``
    and ``Assignment.notebooks`` then cost no statement in that session.  Outside ``bound`` nothing is read."""
    from nbgrader.api import Gradebook, MissingEntry

    with _gradebook("grader_notebooks_of") as (url, engine):
        with sent_statements() as outside:
            assert jobsession.notebooks_of("ps") == []
        assert outside == []
        with engine.connect() as conn, conn.begin(), jobsession.bound(conn):
            with sent_statements() as read:
                assert jobsession.notebooks_of("ps") == ["first", "second"]  # nbgrader's order: by name
                assert jobsession.notebooks_of("empty") == []  # no notebook yet
                assert jobsession.notebooks_of("unknown") == []
            assert len(read) == 3
            with Gradebook(url) as gradebook, sent_statements() as asked:
                assignment = gradebook.find_assignment("ps")
                assert [n.name for n in assignment.notebooks] == ["first", "second"]
                assert gradebook.find_notebook("second", "ps") is assignment.notebooks[1]
                assert assignment.duedate is not None
            assert asked == []
            with Gradebook(url) as gradebook:
                with pytest.raises(MissingEntry, match=r"^No such assignment: unknown$"):
                    gradebook.find_assignment("unknown")


def test_a_commit_in_bound_expires_the_students_rows_and_what_they_make_of_the_instructors(tmp_path: Path) -> None:
    """The late-penalty step reads a notebook's score after the grades were written and committed: what a
    student's rows hold, or make (a notebook's count of submissions), is read again after each commit."""
    from nbgrader.api import Gradebook

    with _gradebook("grader_bound_expiry") as (url, engine):
        with engine.connect() as conn, conn.begin(), jobsession.bound(conn):
            with Gradebook(url) as gradebook:
                notebook = gradebook.find_notebook("first", "ps")
                assert notebook.num_submissions == 0
                gradebook.add_submission("ps", "stock")
                submitted = gradebook.find_submission_notebook("first", "ps", "stock")
                assert submitted.score == 0
                for grade in submitted.grades:
                    grade.auto_score = grade.max_score
                gradebook.db.commit()
                assert submitted.score == 6  # test_a 2 + answer 1 + task 3: read again after the commit
                assert notebook.num_submissions == 1
                assert gradebook.find_notebook("first", "ps") is notebook


def test_notebooks_of_a_students_job_loads_their_row_and_submission_in_the_same_query(tmp_path: Path) -> None:
    """With the student, the one query also loads their row and their submission of the assignment: nbgrader's
    ``find_student`` and ``find_submission`` then cost no statement.  A submission found missing is missing once
    (nbgrader's own ``MissingEntry``, no statement); the next look-up asks the database, which finds the one added."""
    from nbgrader.api import Gradebook, MissingEntry

    with _gradebook("grader_notebooks_of_student") as (url, engine):
        with engine.connect() as conn, conn.begin(), jobsession.bound(conn):
            with sent_statements() as read:
                assert jobsession.notebooks_of("ps", "stock") == ["first", "second"]
            assert len(read) == 1
            with Gradebook(url) as gradebook, sent_statements() as asked:
                assert gradebook.find_student("stock").id == "stock"
                with pytest.raises(MissingEntry, match=r"^No such submission: ps for stock$"):
                    gradebook.find_submission("ps", "stock")
            assert asked == []
            with Gradebook(url) as gradebook:
                with sent_statements() as adding:
                    added = gradebook.add_submission("ps", "stock", timestamp="2026-12-02 17:00:00")
                    # not read back: the session's own student and assignment, the columns as written
                    assert (added.student.id, added.assignment.name, added.extension) == ("stock", "ps", None)
                    assert added.total_seconds_late == 24 * 3600  # due 2026-12-01 17:00
                assert len(adding) == 2, adding  # the assignment's cells, then one INSERT of every row
                with sent_statements() as again:
                    assert gradebook.find_submission("ps", "stock") is added
                assert len(again) == 1  # found missing once only: now nbgrader's query finds it
        with engine.connect() as conn, conn.begin(), jobsession.bound(conn):  # a second attempt: it exists
            assert jobsession.notebooks_of("ps", "stock") == ["first", "second"]
            with Gradebook(url) as gradebook, sent_statements() as asked:
                found = gradebook.find_submission("ps", "stock")
                assert (found.student.id, found.assignment.name) == ("stock", "ps")
            assert asked == []
            with sent_statements() as unknown:  # a student the gradebook lacks: nothing is noted for them
                assert jobsession.notebooks_of("ps", "nobody") == ["first", "second"]
            with Gradebook(url) as gradebook:
                with pytest.raises(MissingEntry, match=r"^No such student: nobody$"):
                    gradebook.find_student("nobody")
            assert len(unknown) == 1
