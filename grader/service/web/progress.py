"""Where a student's submission stands, in one sentence: the notice on ``/me`` after an upload, and its
status request (``/me/submissions/{id}/status``), which the page's script asks until the grade is in.

The sentence is made here from what the student may see of the submission (``feedback.view``), so the
page without its script (reloaded) and the page with it (updated in place) say the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..records.finished import FINAL

RELOAD_HINT = "Reload this page to see the result."


@dataclass(frozen=True)
class Progress:
    """One submission's status for its owner: ``finished`` once graded or failed (nothing will change)."""

    submission_id: int
    assignment: str
    status: str
    finished: bool
    message: str
    score: float | None = None
    max_score: float | None = None
    late_penalty: float | None = None
    final_score: float | None = None
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.submission_id,
            "assignment": self.assignment,
            "status": self.status,
            "finished": self.finished,
            "message": self.message,
            "score": self.score,
            "max_score": self.max_score,
            "late_penalty": self.late_penalty,
            "final_score": self.final_score,
            "reason": self.reason,
        }


def _points(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def words(view: Mapping[str, Any]) -> str:
    """The sentence for a submission as ``feedback.view`` shows it to its student."""
    name = f"Submission {view['id']} of {view['assignment']}"
    reason = str(view.get("reason") or "").strip()
    status = view["status"]
    if status == "graded":
        penalty = view.get("late_penalty") or 0.0
        said = f"{name} is graded: {_points(view.get('final_score'))} of {_points(view.get('max_score'))} points"
        said += f" ({_points(view.get('score'))} less a late penalty of {_points(penalty)})." if penalty else "."
        return f"{said} {reason}" if reason else said
    if status == "failed":  # the reason says the submission is stored and why it is not graded (``pipeline``)
        return (
            f"{name}: {reason}" if reason else f"{name} is stored but could not be graded. Ask your TA to regrade it."
        )
    if status == "running":
        return f"{name} received; it is being graded."
    said = f"{name} received; it is waiting to be graded."
    return f"{said} {reason}" if reason else said  # queued again after a fault of ours: the reason says so


def of(view: Mapping[str, Any]) -> Progress:
    """The status of the submission that ``view`` (``feedback.view``, as its student sees it) describes."""
    graded = view["status"] == "graded"
    return Progress(
        submission_id=int(view["id"]),
        assignment=str(view["assignment"]),
        status=str(view["status"]),
        finished=view["status"] in FINAL,
        message=words(view),
        score=view.get("score") if graded else None,
        max_score=view.get("max_score") if graded else None,
        late_penalty=view.get("late_penalty") if graded else None,
        final_score=view.get("final_score") if graded else None,
        reason=str(view.get("reason") or ""),
    )
