"""Instructor-side commands: the service owns releases, feedback and collection."""

from __future__ import annotations

from nbgrader.exchange.abc import (
    ExchangeCollect,
    ExchangeReleaseAssignment,
    ExchangeReleaseFeedback,
)

from .base import GraderExchange


class _ServiceOwned(GraderExchange):
    action = ""
    instead = ""

    def start(self) -> None:
        self.fail(f"{self.action} is not used with the grading service: {self.instead}")


class GraderReleaseAssignment(_ServiceOwned, ExchangeReleaseAssignment):  # type: ignore[misc]
    action = "nbgrader release_assignment"
    instead = (
        "the service serves release/<assignment>/ of the course directly; regenerate it with "
        "`grader release` (nbgrader generate_assignment) and deploy the course."
    )


class GraderReleaseFeedback(_ServiceOwned, ExchangeReleaseFeedback):  # type: ignore[misc]
    action = "nbgrader release_feedback"
    instead = "the service builds feedback itself; students get it with `nbgrader fetch_feedback <assignment>`."


class GraderCollect(_ServiceOwned, ExchangeCollect):  # type: ignore[misc]
    action = "nbgrader collect"
    instead = "the service grades submissions as they arrive; staff get grades from /api/admin/grades(.csv)."
