"""The course's late policy as an nbgrader late-submission plugin."""

from __future__ import annotations

import math

from nbgrader.plugins import BasePlugin
from traitlets import Float


def percent_per_day_penalty(score: float, seconds_late: float, percent_per_day: float, grace_minutes: float) -> float:
    """Points taken off ``score`` for a submission ``seconds_late`` past the due date."""
    if seconds_late <= grace_minutes * 60 or score <= 0:
        return 0.0
    days = math.ceil(seconds_late / 86400)
    return min(score, score * percent_per_day * days / 100.0)


class PercentPerDay(BasePlugin):  # type: ignore[misc]
    """Subtract a percentage of the score for every started day late."""

    percent_per_day = Float(10.0, help="Percent of the score lost per started day late.").tag(config=True)
    grace_minutes = Float(15.0, help="Minutes after the due date that still count as on time.").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        return percent_per_day_penalty(score, total_seconds_late, self.percent_per_day, self.grace_minutes)
