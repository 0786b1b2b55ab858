"""grader.service.stats reads misconception explanations from the checks' messages (no torch in the web app)."""

from __future__ import annotations

from grader.checks import misconceptions
from grader.service.dashboard.stats import causes, explanations
from grader.service.records.models import TestResult as Result


def test_explanations_come_from_the_messages_the_checks_wrote() -> None:
    message = (
        "dL/dx is a whole number of times too large.\n\n"
        f"{misconceptions.SUM_NOT_MEAN}\n\nTraceback (most recent call last): ..."
    )
    tests = (
        Result("test_grad", 0.0, 4.0, False, message),
        Result("test_value", 3.0, 3.0, True, f"{misconceptions.HARD_CODED}"),  # passed: not counted
    )
    assert causes(tests) == {"sum-instead-of-mean"}
    assert explanations(tests) == {"sum-instead-of-mean": " ".join(misconceptions.SUM_NOT_MEAN.explanation.split())}
