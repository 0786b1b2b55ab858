"""The course's late policy as an nbgrader late-submission plugin.

nbgrader itself offers ``none`` and ``zero`` (``LateSubmissionPlugin.penalty_method``);
this plugin adds a percentage of the score per started hour or day late, after a
grace period, up to a cap.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

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


# --- set from the dashboard ------------------------------------------------------------------------

POLICY_FILE = "late_policy.json"  # in the course root; nbgrader_config.py applies it after its own values
FIELDS = ("percent_per_day", "unit", "grace_minutes", "max_percent")


class PolicyError(ValueError):
    """A late policy that cannot be used; the message says which value and why."""


def validate(values: dict[str, object]) -> dict[str, float | str]:
    """The policy's four values, checked: numbers in range, a known unit; ``PolicyError`` otherwise."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise PolicyError(f"unknown late-policy setting(s) {unknown}; known: {list(FIELDS)}")
    checked: dict[str, float | str] = {}
    for name, low, high in (
        ("percent_per_day", 0.0, 100.0),
        ("grace_minutes", 0.0, 7 * 24 * 60.0),
        ("max_percent", 0.0, 100.0),
    ):
        raw = values.get(name)
        try:
            number = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise PolicyError(f"{name.replace('_', ' ')} must be a number, not {raw!r}") from None
        if not low <= number <= high or number != number:
            raise PolicyError(f"{name.replace('_', ' ')} must be between {low:g} and {high:g}, not {number:g}")
        checked[name] = number
    unit = values.get("unit")
    if unit not in UNIT_SECONDS:
        raise PolicyError(f"unit must be 'day' or 'hour', not {unit!r}")
    checked["unit"] = str(unit)
    return checked


def current(root: Path) -> dict[str, float | str]:
    """The policy stock nbgrader and the engine apply: ``nbgrader_config.py`` with its override file."""
    from .. import course

    loaded = course.read_config(root)
    plugin = PercentPerDay(config=loaded)
    return {name: getattr(plugin, name) for name in FIELDS}


def save(root: Path, values: dict[str, object]) -> dict[str, float | str]:
    """Validate and write the override file atomically; a bad value changes nothing."""
    checked = validate(values)
    target = root / POLICY_FILE
    partial = target.with_suffix(".part")
    partial.write_text(json.dumps(checked, indent=2) + "\n")
    os.replace(partial, target)
    return checked


def penalty_words(root: Path, seconds_late: float) -> str:
    """What a submission ``seconds_late`` past its due date will lose, for the question asked before it is
    sent ("cost a late penalty of 20% of its score (10% per started day)"); the course's own plugin
    decides, so a course with another plugin gets the general words."""
    from .. import course

    loaded = course.read_config(root)
    configured = str(loaded.AssignLatePenalties.get("plugin_class", ""))
    if configured not in (f"{__name__}.PercentPerDay", "PercentPerDay"):
        return "may cost a late penalty"
    plugin = PercentPerDay(config=loaded)
    percent = percent_per_day_penalty(
        100.0, seconds_late, plugin.percent_per_day, plugin.grace_minutes, plugin.unit, plugin.max_percent
    )
    if percent == 0:
        return f"cost no late penalty (it is within the late policy's {plugin.grace_minutes:g} minutes of grace)"
    return f"cost a late penalty of {percent:g}% of its score ({plugin.percent_per_day:g}% per started {plugin.unit})"
