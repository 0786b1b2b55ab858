"""Feedback: what a student may see of a graded submission, by the assignment's policy.

Policies (``GraderService.feedback_policy`` per assignment): ``immediate``
(every test with its message), ``after_deadline`` (the total until the due
date, then everything), ``score_only`` (the total, always).  The source of a
test cell is never part of it.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

import sqlalchemy as sa

from ..config import ServiceConfig
from ..records.models import Submission, TestResult
from ..records.tables import now
from .intake import received_at_utc

# nbgrader's own ``assignment`` table, read directly: a Gradebook per status request would open a new
# database connection each time (expensive on PostgreSQL), for one column
_assignment = sa.table(
    "assignment", sa.column("id", sa.String), sa.column("name", sa.String), sa.column("duedate", sa.DateTime)
)


@functools.lru_cache(maxsize=16)
def _engine(db_url: str) -> sa.Engine:
    return sa.create_engine(db_url, pool_pre_ping=not db_url.startswith("sqlite"))


_submitted = sa.table(
    "submitted_assignment",
    sa.column("assignment_id", sa.String),
    sa.column("student_id", sa.String),
    sa.column("extension", sa.Interval),
)


def due_date(config: ServiceConfig, assignment: str, student: str | None = None) -> dt.datetime | None:
    """The assignment's due date in nbgrader's gradebook (naive UTC), or None; for a ``student``,
    moved by their extension, as intake (``deadlines.deadline``) and nbgrader's late penalty see it."""
    query = sa.select(_assignment.c.duedate).where(_assignment.c.name == assignment)
    with _engine(config.db_url).connect() as conn:
        value = conn.execute(query).scalar()
        if not isinstance(value, dt.datetime):
            return None
        if student is None:
            return value
        extension = conn.execute(
            sa.select(_submitted.c.extension)
            .join(_assignment, _assignment.c.id == _submitted.c.assignment_id)
            .where(_assignment.c.name == assignment, _submitted.c.student_id == student)
        ).scalar()
    return value + extension if isinstance(extension, dt.timedelta) else value


def view(
    config: ServiceConfig, submission: Submission, tests: tuple[TestResult, ...], staff: bool = False
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": submission.id,
        "student": submission.student,
        "assignment": submission.assignment,
        "received_at": received_at_utc(submission.received_at),
        "status": submission.status,
        "reason": submission.reason,
    }
    if submission.status != "graded":
        return body
    penalty = submission.late_penalty or 0.0
    body.update(
        score=submission.score,
        max_score=submission.max_score,
        late_penalty=penalty,
        final_score=(submission.score or 0.0) - penalty,
        graded_at=received_at_utc(submission.graded_at) if submission.graded_at else None,
    )
    policy = config.policy(submission.assignment)
    due = due_date(config, submission.assignment, submission.student)  # with the student's extension
    shown = staff or policy == "immediate" or (policy == "after_deadline" and due is not None and now() >= due)
    if shown:
        body["tests"] = [
            {
                "name": t.name,
                "points": t.points,
                "max_points": t.max_points,
                "passed": t.passed,
                "message": t.message,
            }
            for t in tests
        ]
    else:
        body["tests_hidden_until"] = "the due date" if policy == "after_deadline" else "never (score only)"
    return body
