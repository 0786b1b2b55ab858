"""Deadlines and submission limits: the one place a student's due date is computed.

The due date is the assignment's in the nbgrader gradebook, moved by the
student's extension (``nbgrader``'s own ``grant_extension``, also
``grader extension``): ``effective_due`` is that rule, ``due_of`` reads its
inputs, ``is_late`` applies it.  Intake (``admit``), feedback, the exchange
listing, the dashboard and its statistics all call these.  nbgrader's late
penalty (``grader.plugins.late_policy``) sees the same date: it reads the same two
columns.  Settings (``c.GraderService.*``):

- ``hard_deadline_hours``: assignment -> hours after the (extended) due date
  after which submissions are refused;
- ``max_submissions``: attempts per student and assignment (0: no limit);
- ``min_seconds_between_submissions``: a per-student rate limit;
- a late submission that would replace an on-time one needs ``confirm_late``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ...errors import (
    LateConfirmationNeeded,
    NoDueDate,
    PastHardDeadline,
    RateLimited,
    TooManyAttempts,
    UnknownAssignment,
    UnknownStudent,
)
from ...plugins import late_policy
from ..config import ServiceConfig
from ..records import nbgrader_tables, students
from ..records.store import Store
from ..records.tables import users


def effective_due(due: dt.datetime | None, extension: dt.timedelta | None) -> dt.datetime | None:
    """The rule: the assignment's due date moved by the student's extension (naive UTC); None: no due date."""
    if due is None:
        return None
    return due + (extension or dt.timedelta(0))


def is_late(when: dt.datetime, due: dt.datetime | None) -> bool:
    """Whether an attempt received at ``when`` is late for the effective due date ``due``."""
    return due is not None and when > due


def due_of(config: ServiceConfig, assignment: str, student: str | None = None) -> dt.datetime | None:
    """The effective due date of ``student`` (for None: the assignment's own), from nbgrader's gradebook."""
    _assignment, _submitted = nbgrader_tables.assignment, nbgrader_tables.submitted_assignment
    extension = (
        sa.select(_submitted.c.extension)
        .where(_submitted.c.assignment_id == _assignment.c.id, _submitted.c.student_id == student)
        .scalar_subquery()
        if student is not None
        else sa.null()
    )
    query = sa.select(_assignment.c.duedate, extension.label("extension")).where(_assignment.c.name == assignment)
    with nbgrader_tables.reader(config.db_url).connect() as conn:
        row = conn.execute(query).first()  # the due date and the student's extension, in one query
    if row is None or not isinstance(row.duedate, dt.datetime):
        return None
    return effective_due(row.duedate, row.extension if isinstance(row.extension, dt.timedelta) else None)


@dataclass(frozen=True)
class Deadline:
    due: dt.datetime | None
    """The due date including the student's extension (naive UTC), or None."""
    hard: dt.datetime | None

    def is_late(self, when: dt.datetime) -> bool:
        return is_late(when, self.due)


def deadline(config: ServiceConfig, assignment: str, student: str) -> Deadline:
    """The student's effective due date and, where the course sets one, the hard deadline after it."""
    due = due_of(config, assignment, student)
    hours = config.hard_deadline_hours.get(assignment)
    return Deadline(due, due + dt.timedelta(hours=hours) if due is not None and hours is not None else None)


def grant_extension(config: ServiceConfig, assignment: str, student: str, hours: float) -> None:
    """Give ``student`` ``hours`` more on ``assignment`` (0 removes the extension): nbgrader's own extension.

    Refused, with nothing written, for an assignment not in the gradebook, a student not on the roster (a typo
    would otherwise add a phantom student), and an extension on an assignment without a due date.  That last
    one is refused rather than given a meaning: nbgrader itself adds the extension to the due date, so stock
    ``nbgrader autograde`` fails on every notebook of such a student (``TypeError``), and the due date the
    extension would move is not there to say what the student was given.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(config.db_url) as gradebook:
        found = _assignment(gradebook, assignment)
        try:
            gradebook.find_student(student)
            listed = True
        except MissingEntry:
            listed = False
        if not listed and not _service_student(config, student):
            raise UnknownStudent(
                f"no student {student!r} on the course's roster: check the spelling, or add them first with "
                "`grader roster ROSTER.csv` (columns id,first_name,last_name,email)"
            )
        if found.duedate is None and hours > 0:
            raise NoDueDate(
                f"{assignment} has no due date, so there is nothing to extend: set its due date first "
                "(Settings page, Due dates), then grant the extension"
            )
        if not listed:  # a student the service knows (a token was issued), not yet in the gradebook
            students.add(config.db_url, [student])
            gradebook.update_or_create_student(student)
        try:
            gradebook.find_submission(assignment, student)
        except MissingEntry:
            if hours == 0:
                return  # no extension to remove
            gradebook.add_submission(assignment, student)
        gradebook.grant_extension(assignment, student, minutes=round(hours * 60))


def _service_student(config: ServiceConfig, student: str) -> bool:
    """Whether the service knows ``student`` as a student (a token was issued to them) though the gradebook does not
    list them yet (it does from their first submission)."""
    with nbgrader_tables.reader(config.db_url).connect() as conn:
        if not sa.inspect(conn).has_table(users.name):
            return False
        query = sa.select(users.c.id).where(users.c.id == student, users.c.role == "student")
        return conn.execute(query).first() is not None


def _assignment(gradebook: Any, assignment: str) -> Any:
    from nbgrader.api import MissingEntry

    try:
        return gradebook.find_assignment(assignment)
    except MissingEntry:
        known = ", ".join(sorted(a.name for a in gradebook.assignments)) or "none yet"
        raise UnknownAssignment(
            f"no assignment {assignment!r} in the gradebook (known: {known}); a new one is added by "
            f"`grader release {assignment}`"
        ) from None


def admit(
    store: Store, config: ServiceConfig, student: str, assignment: str, when: dt.datetime, confirm_late: bool
) -> None:
    """Refuse a submission the course's rules do not allow; otherwise return.

    The student's earlier attempts are read only when a rule needs them: a rate limit, a cap on attempts, or a
    late submission (which may replace an on-time one).
    """
    limited = config.min_seconds_between_submissions > 0 or config.max_submissions > 0
    earlier = store.submissions(student=student, assignment=assignment) if limited else None
    if earlier and config.min_seconds_between_submissions > 0:
        wait = config.min_seconds_between_submissions - (when - earlier[-1].received_at).total_seconds()
        if wait > 0:
            raise RateLimited(f"you submitted {assignment} moments ago; wait {wait:.0f} s before submitting again")
    if earlier is not None and config.max_submissions and len(earlier) >= config.max_submissions:
        raise TooManyAttempts(
            f"you have used all {config.max_submissions} submissions of {assignment}; ask your TA if you need another"
        )
    limits = deadline(config, assignment, student)
    if limits.hard is not None and when > limits.hard:
        raise PastHardDeadline(
            f"{assignment} closed on {limits.hard:%Y-%m-%d %H:%M} UTC; no more submissions are accepted"
        )
    if not limits.is_late(when) or confirm_late:
        return
    if earlier is None:
        earlier = store.submissions(student=student, assignment=assignment)
    on_time = [s for s in earlier if s.status != "failed" and not limits.is_late(s.received_at)]
    if on_time:
        assert limits.due is not None  # it is late, so there is a due date
        cost = late_policy.penalty_words(config.course_root, (when - limits.due).total_seconds())
        raise LateConfirmationNeeded(
            f"{assignment} was due {limits.due:%Y-%m-%d %H:%M} UTC. This late submission would replace your "
            f"on-time one and {cost}. To submit it anyway, confirm: form field confirm_late=true "
            "(grader submit --confirm-late)."
        )


def set_due_date(config: ServiceConfig, assignment: str, due: dt.datetime | None) -> None:
    """The assignment's due date in nbgrader's gradebook (naive UTC; None removes it, unless students have
    extensions of it: ``grant_extension`` says why)."""
    from nbgrader.api import Gradebook

    with Gradebook(config.db_url) as gradebook:
        found = _assignment(gradebook, assignment)
        extended = sorted(s.student_id for s in found.submissions if s.extension is not None)
        if due is None and extended:
            raise NoDueDate(
                f"{assignment} cannot lose its due date while {', '.join(extended)} "
                f"{'has an extension' if len(extended) == 1 else 'have extensions'} of it: remove "
                f"{'it' if len(extended) == 1 else 'them'} first (extension of 0 hours)"
            )
        gradebook.update_or_create_assignment(assignment, duedate=due)


def parse_due(text: str, what: str = "the due date") -> dt.datetime | None:
    """A date typed into a page (``YYYY-MM-DDTHH:MM``, UTC; ``what`` it is, for the error); empty for none."""
    from ...errors import StudentError

    text = text.strip()
    if not text:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise StudentError(f"{what} {text!r} is not a date and time like 2026-12-01T17:00 (UTC)") from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


LATE_POLICY = "late_policy"  # its key in grader_settings


def set_late_policy(store: Store, config: ServiceConfig, values: dict[str, object]) -> dict[str, float | str]:
    """Validate and save the late policy: the course's ``late_policy.json`` (which ``nbgrader_config.py``
    applies, so stock ``nbgrader autograde`` uses it too) and the database, from which every
    ``grader worker`` copies it into its own course copy before its next job."""
    from ...plugins import late_policy

    checked = late_policy.save(config.course_root, values)
    store.put_setting(LATE_POLICY, json.dumps(checked, sort_keys=True))
    return checked


def apply_late_policy(store: Store, config: ServiceConfig, applied: str | None) -> str | None:
    """On a worker: write the late policy the database holds into this course copy if it changed since
    ``applied``; returns what is applied now (the caller reloads its engine's configuration on a change)."""
    from ...plugins import late_policy

    wanted = store.setting(LATE_POLICY)
    if wanted is not None and wanted != applied:
        late_policy.save(config.course_root, json.loads(wanted))
    return wanted
