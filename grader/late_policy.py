"""The course's late policy as an nbgrader late-submission plugin.

nbgrader itself offers ``none`` and ``zero`` (``LateSubmissionPlugin.penalty_method``);
this plugin adds a percentage of the score per started hour or day late, after a
grace period, up to a cap.
"""

from __future__ import annotations

import math

from nbgrader.plugins import BasePlugin
from traitlets import Enum, Float

UNIT_SECONDS = {"hour": 3600.0, "day": 86400.0}


def percent_per_day_penalty(
    score: float,
    seconds_late: float,
    percent_per_day: float,
    grace_minutes: float,
    unit: str = "day",
    max_percent: float = 100.0,
) -> float:
    """Points taken off ``score`` for a submission ``seconds_late`` past its due date.

    ``percent_per_day`` is the percentage per started ``unit`` (a day or an hour).
    """
    if seconds_late <= grace_minutes * 60 or score <= 0:
        return 0.0
    units = math.ceil(seconds_late / UNIT_SECONDS[unit])
    return min(score, score * min(percent_per_day * units, max_percent) / 100.0)


class PercentPerDay(BasePlugin):  # type: ignore[misc]
    """Subtract a percentage of the score for every started day (or hour) late, up to a cap."""

    percent_per_day = Float(10.0, help="Percent of the score lost per started unit late.").tag(config=True)
    unit = Enum(("day", "hour"), default_value="day", help="The unit the percentage is charged per.").tag(config=True)
    max_percent = Float(100.0, help="The most a late submission can lose, in percent.").tag(config=True)
    grace_minutes = Float(15.0, help="Minutes after the due date that still count as on time.").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        return percent_per_day_penalty(
            score, total_seconds_late, self.percent_per_day, self.grace_minutes, self.unit, self.max_percent
        )
