"""What a regrade selects: one function, called by every door (``POST /api/admin/regrade``, the
assignment page, ``grader regrade``, the dry run)."""

from __future__ import annotations

from ..config import ServiceConfig
from ..records.models import Submission
from ..records.store import Store
from .counting import counting


def select(
    store: Store,
    config: ServiceConfig,
    *,
    submission_id: int | None = None,
    student: str | None = None,
    assignment: str | None = None,
) -> list[Submission]:
    """What a regrade grades again: the submission ``submission_id``, else the attempt that counts
    of each student (``student``, or all) in each assignment (``assignment``, or all)."""
    if submission_id is not None:
        return [s for s in store.submissions(student=student, assignment=assignment) if s.id == submission_id]
    by_student: dict[tuple[str, str], list[Submission]] = {}
    for submission in store.submissions(student=student, assignment=assignment):
        by_student.setdefault((submission.assignment, submission.student), []).append(submission)
    chosen = (counting(attempts, config.counting) for attempts in by_student.values())
    return sorted((c for c in chosen if c is not None), key=lambda s: (s.assignment, s.student))
