"""Gradebook: the one place the service writes nbgrader's grade rows.

nbgrader's own ``SaveAutoGrades`` and ``AssignLatePenalties`` (run by the engine, exactly as
``nbgrader autograde`` runs them) write the rows of the attempt they graded.  That is the
normal case, and then this stage writes nothing.  It writes only what they could not:

- the run did not complete (nbgrader gave up on the notebook), so the gradebook may still hold
  an older attempt's rows: the grade the service recorded is written;
- another attempt counts (an older one regraded, or a better one under ``counting = "best"``):
  that attempt's recorded grade is written back;
- a stage after nbgrader's failed, so no grade is recorded for the attempt nbgrader just wrote
  (``put_back``, on SQLite: on PostgreSQL the job's transaction rolls back whole): the attempt that
  counts is written back, so a fault of ours never changes what the gradebook holds.

``record`` decides, before the grade is stored, so the gradebook and the service never disagree
about which attempt counts.  Writing the same grade twice changes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import rubrics
from ..config import ServiceConfig
from ..records import tables
from ..records.models import Grade, Submission
from ..records.store import Store
from ..rules.counting import counting


def record(
    store: Store,
    config: ServiceConfig,
    submission: Submission,
    notebook_name: str,
    grade: Grade,
    written: bool,
    conn: Connection | None = None,
    autograded: Any = None,
) -> bool:
    """Make nbgrader's gradebook hold the attempt that counts once ``grade`` is recorded for ``submission``.

    ``written``: nbgrader already wrote ``grade``'s rows (the run completed).  ``conn``: the job's one
    transaction, where there is one (the attempts are read in it).  ``autograded``: the attempt's autograded
    notebook, whose written answers keep their marks where unchanged (``carry_marks``).  Returns whether
    anything was written here.
    """
    graded = dataclasses.replace(
        submission, status="graded", score=grade.score, max_score=grade.max_score, late_penalty=grade.late_penalty
    )
    attempts = [
        graded if s.id == submission.id else s
        for s in store.submissions(submission.student, submission.assignment, conn)
    ]
    counts = counting(attempts, config.counting) or graded
    if counts.id == submission.id:
        if written:
            if autograded is not None:
                carry_marks(store, submission, notebook_name, autograded, conn)
            return False
        _write(config, submission, notebook_name, grade)
        return True
    _write(config, counts, notebook_name, _recorded(store, counts))
    return True


def _recorded(store: Store, attempt: Submission) -> Grade:
    """The grade the service recorded for ``attempt``."""
    return Grade(
        submission_id=attempt.id,
        score=attempt.score or 0.0,
        max_score=attempt.max_score or 0.0,
        late_penalty=attempt.late_penalty or 0.0,
        tests=store.results(attempt.id),
    )


def _write(
    config: ServiceConfig, submission: Submission, notebook_name: str, grade: Grade, penalty: float | None = -1.0
) -> None:
    """``grade``'s points into the gradebook, and ``penalty`` as the late penalty (-1: ``grade``'s; None: none)."""
    from nbgrader.api import Gradebook

    points = {t.name: t.points for t in grade.tests}
    with Gradebook(config.db_url) as gradebook:
        gradebook.update_or_create_student(submission.student)
        gradebook.update_or_create_submission(
            submission.assignment, submission.student, timestamp=submission.received_at
        )
        notebook = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
        for cell_grade in notebook.grades:
            if cell_grade.name in points:
                cell_grade.auto_score = points[cell_grade.name]
                cell_grade.needs_manual_grade = False
        notebook.late_submission_penalty = grade.late_penalty if penalty == -1.0 else penalty
        gradebook.db.commit()


def carry_marks(
    store: Store, submission: Submission, notebook_name: str, autograded: Any, conn: Connection | None
) -> None:
    """The TAs' marks of the written answers (``grader.service.marking``) after nbgrader autograded a new attempt.

    nbgrader keeps a cell's ``manual_score`` when it grades a new attempt and flags it for review. Here an answer
    whose text is unchanged keeps its mark (the score, no review needed); a changed answer loses it (its score
    is cleared and it waits for a person, or is 0 if left as released, as nbgrader decides), and the audit says
    so. Nothing happens for an assignment no TA has marked.
    """
    t = tables.marks
    where = (t.c.assignment == submission.assignment, t.c.student == submission.student)
    query = sa.select(t).where(*where)
    if conn is not None:
        marks = {row.cell: row for row in conn.execute(query)}
    else:  # one read without a transaction: most attempts have no mark to carry
        with store.reader.connect() as reader:
            marks = {row.cell: row for row in reader.execute(query)}
    if not marks:
        return
    with bound(store, conn) as (connection, gradebook):
        answers = {
            str(cell.metadata["nbgrader"]["grade_id"]): str(cell.source)
            for cell in autograded.cells
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in marks
        }
        for cell, mark in marks.items():
            grade = gradebook.find_grade(cell, notebook_name, submission.assignment, submission.student)
            if cell in answers and rubrics.answer_digest(answers[cell]) == mark.digest:
                grade.manual_score = mark.score
                grade.needs_manual_grade = False
                continue
            grade.manual_score = None
            grade.needs_manual_grade = grade.auto_score is None
            comment = gradebook.find_comment(cell, notebook_name, submission.assignment, submission.student)
            comment.manual_comment = None
            connection.execute(sa.delete(t).where(*where, t.c.cell == cell))
            connection.execute(
                sa.insert(tables.mark_audit).values(
                    at=submission.received_at,
                    actor="grader",
                    assignment=submission.assignment,
                    cell=cell,
                    student=submission.student,
                    added="[]",
                    removed=mark.items,
                    old_score=mark.score,
                    new_score=grade.auto_score,
                    what=f"the answer changed in submission {submission.id}: its mark no longer applies, graded again",
                    previous_answer=mark.answer,
                )
            )


@contextmanager
def bound(store: Store, conn: Connection | None = None) -> Iterator[tuple[Connection, Any]]:
    """``conn`` (the job's transaction) or a transaction of its own, with nbgrader's look-ups (``find_grade``,
    ``find_comment``) in a session on it: the service's rows and nbgrader's (one database) commit together."""
    from nbgrader.api import Gradebook
    from sqlalchemy.orm import Session

    with contextlib.ExitStack() as stack:
        connection = conn if conn is not None else stack.enter_context(store.transaction())
        session = Session(bind=connection, join_transaction_mode="rollback_only", autoflush=True)
        stack.callback(session.close)
        finder = _Looked(session, Gradebook)
        yield connection, finder
        session.flush()


class _Looked:
    """nbgrader's ``Gradebook`` look-ups on a session of ours (they read only ``self.db``)."""

    def __init__(self, session: Any, gradebook: Any) -> None:
        self.db = session
        self.find_grade = gradebook.find_grade.__get__(self)
        self.find_comment = gradebook.find_comment.__get__(self)


def put_back(store: Store, config: ServiceConfig, submission: Submission, notebook_name: str) -> None:
    """After nbgrader wrote ``submission``'s rows and a later stage failed (no grade recorded for it): make the
    gradebook hold the attempt that counts again, as recorded; with none, this attempt's scores are cleared."""
    recorded = [
        dataclasses.replace(s, status="graded") if s.graded_at is not None else s
        for s in store.submissions(submission.student, submission.assignment)
    ]
    counts = counting(recorded, config.counting)
    if counts is None:
        _clear(config, submission, notebook_name)
        return
    # no late penalty is written as nbgrader writes it: None
    _write(config, counts, notebook_name, _recorded(store, counts), penalty=counts.late_penalty or None)


def _clear(config: ServiceConfig, submission: Submission, notebook_name: str) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(config.db_url) as gradebook:
        try:
            notebook = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
        except MissingEntry:
            return
        for cell_grade in notebook.grades:
            cell_grade.auto_score = None
        notebook.late_submission_penalty = None
        gradebook.db.commit()
