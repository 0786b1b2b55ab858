"""grader.lab.panel's sentences for nbgrader's Assignments panel, from the exchange's own refusals."""

from __future__ import annotations

from grader.lab.panel import CONFIRM_WINDOW_S, late_question

LATE = (
    "The grading service refused (409): ps1_tensors was due 2026-01-01 12:00 UTC. This late submission would "
    "replace your on-time one and cost a late penalty of 20% of its score (10% per started day). To submit it "
    "anyway, confirm: re-run with --GraderSubmit.confirm_late=True (or set c.GraderSubmit.confirm_late = True)."
)


def test_a_late_refusal_becomes_the_panels_question() -> None:
    question = late_question(LATE)
    assert question == (
        "ps1_tensors was due 2026-01-01 12:00 UTC. This late submission would replace your on-time one and cost a "
        "late penalty of 20% of its score (10% per started day). Submit late, with this penalty? Press Submit "
        f"again within {round(CONFIRM_WINDOW_S / 60)} minutes to submit it late, or use Course grades (Launcher or "
        "File menu), which asks with Yes/No."
    )


def test_other_refusals_are_not_questions() -> None:
    assert late_question("The grading service refused (422): this is not ps1_tensors's notebook") is None
    assert late_question("Assignment not found at: /home/x/ps1 (fetch it first: nbgrader fetch_assignment)") is None
