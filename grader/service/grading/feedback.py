"""Feedback: what a student may see of a graded submission, by the assignment's policy.

Policies (``GraderService.feedback_policy`` per assignment): ``immediate``
(every test with its message), ``after_deadline`` (the total until the due
date, then everything), ``score_only`` (the total, always).  The source of a
test cell is never part of it.
"""

from __future__ import annotations

from typing import Any

from ..config import ServiceConfig
from ..records.models import Submission, TestResult
from ..records.tables import now
from ..rules import deadlines
from ..rules.counting import final_score
from .intake import received_at_utc


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
        final_score=final_score(submission.score, penalty),
        graded_at=received_at_utc(submission.graded_at) if submission.graded_at else None,
    )
    policy = config.policy(submission.assignment)
    due = deadlines.due_of(config, submission.assignment, submission.student)  # with the student's extension
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
