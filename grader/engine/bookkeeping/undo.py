"""A student's gradebook rows of one assignment, as they were before a grading that then failed by our fault.

nbgrader writes as it goes: ``init_assignment`` stamps the submission's time, the grade step writes every
cell's score, the late policy the penalty, each committing on its own.  When a later step of ours
raises (``faults``), what was already written would be a score the student never earned (or lost).
Inside a service job on PostgreSQL the job's one transaction rolls back whole (``jobsession.bound``),
so nothing is taken here; elsewhere (SQLite, ``grader autograde``) ``snapshot`` reads the rows before
the grading (four small queries) and ``restore`` writes them back: the submission's time, each
notebook's late penalty and flag, each cell's scores and comments; a submission the grading created is
removed again (its student's row stays: it is not a score).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa


@dataclass(frozen=True)
class Snapshot:
    assignment: str
    student: str
    submission: tuple[int, dt.datetime | None] | None  # (id, timestamp); None: there was no submission
    notebooks: tuple[tuple[int, bool | None, float | None], ...] = ()  # (id, flagged, late penalty)
    grades: tuple[tuple[int, float | None, float | None, float | None, bool | None], ...] = ()
    comments: tuple[tuple[int, str | None, str | None], ...] = ()


def _tables() -> tuple[Any, Any, Any, Any, Any]:
    from nbgrader.api import Assignment, Comment, Grade, SubmittedAssignment, SubmittedNotebook

    return (
        Assignment.__table__,
        SubmittedAssignment.__table__,
        SubmittedNotebook.__table__,
        Grade.__table__,
        Comment.__table__,
    )


def snapshot(db_url: str, course_id: str, assignment: str, student: str) -> Snapshot:
    """The rows of ``student``'s submission of ``assignment`` that a grading writes, as they are now."""
    from nbgrader.api import Gradebook

    assignments, submitted, notebooks, grades, comments = _tables()
    with Gradebook(db_url, course_id) as gradebook:
        db = gradebook.db
        found = db.execute(
            sa.select(submitted.c.id, submitted.c.timestamp)
            .join(assignments, assignments.c.id == submitted.c.assignment_id)
            .where(assignments.c.name == assignment, submitted.c.student_id == student)
        ).first()
        if found is None:
            return Snapshot(assignment, student, None)
        ids = sa.select(notebooks.c.id).where(notebooks.c.assignment_id == found.id).scalar_subquery()
        kept = Snapshot(
            assignment,
            student,
            (found.id, found.timestamp),
            tuple(
                (r.id, r.flagged, r.late_submission_penalty)
                for r in db.execute(sa.select(notebooks).where(notebooks.c.assignment_id == found.id))
            ),
            tuple(
                (r.id, r.auto_score, r.manual_score, r.extra_credit, r.needs_manual_grade)
                for r in db.execute(sa.select(grades).where(grades.c.notebook_id.in_(ids)))
            ),
            tuple(
                (r.id, r.auto_comment, r.manual_comment)
                for r in db.execute(sa.select(comments).where(comments.c.notebook_id.in_(ids)))
            ),
        )
        db.rollback()  # end the read's transaction: the grading's own sessions write next
        return kept


def restore(db_url: str, course_id: str, before: Snapshot) -> None:
    """Put ``before`` back: the rows as they were, and no submission where there was none."""
    from nbgrader.api import Gradebook, MissingEntry

    _, submitted, notebooks, grades, comments = _tables()
    with Gradebook(db_url, course_id) as gradebook:
        db = gradebook.db
        db.rollback()  # whatever the failed step left unflushed is not kept
        if before.submission is None:
            try:
                gradebook.remove_submission(before.assignment, before.student)
            except MissingEntry:
                pass
            return
        sid, timestamp = before.submission
        db.execute(submitted.update().where(submitted.c.id == sid).values(timestamp=timestamp))
        for nid, flagged, penalty in before.notebooks:
            db.execute(
                notebooks.update().where(notebooks.c.id == nid).values(flagged=flagged, late_submission_penalty=penalty)
            )
        for gid, auto, manual, extra, needs in before.grades:
            db.execute(
                grades.update()
                .where(grades.c.id == gid)
                .values(auto_score=auto, manual_score=manual, extra_credit=extra, needs_manual_grade=needs)
            )
        for cid, auto_comment, manual_comment in before.comments:
            db.execute(
                comments.update()
                .where(comments.c.id == cid)
                .values(auto_comment=auto_comment, manual_comment=manual_comment)
            )
        db.commit()
