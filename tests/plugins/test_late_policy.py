"""grader.plugins.late_policy: 10% per started day late after 15 minutes of grace."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.plugins.late_policy import PercentPerDay, percent_per_day_penalty

DAY = 86400.0


@pytest.mark.parametrize(
    ("seconds_late", "penalty"),
    [
        (0, 0.0),
        (15 * 60, 0.0),
        (15 * 60 + 1, 3.0),
        (DAY, 3.0),
        (DAY + 1, 6.0),
        (44 * 3600, 6.0),
        (10 * DAY, 30.0),
        (30 * DAY, 30.0),
    ],
)
def test_penalty(seconds_late: float, penalty: float) -> None:
    assert percent_per_day_penalty(30.0, seconds_late, 10.0, 15.0) == pytest.approx(penalty)


def test_no_penalty_on_a_zero_score() -> None:
    assert percent_per_day_penalty(0.0, 5 * DAY, 10.0, 15.0) == 0.0


def test_plugin_reads_its_settings_from_nbgrader_config() -> None:
    from traitlets.config import Config

    config = Config()
    config.PercentPerDay.percent_per_day = 25.0
    plugin = PercentPerDay(config=config)
    assert plugin.late_submission_penalty("s", 40.0, 3 * DAY) == pytest.approx(30.0)


def test_per_hour_with_a_cap() -> None:
    assert percent_per_day_penalty(40.0, 3 * 3600 + 1, 5.0, 0.0, unit="hour") == pytest.approx(8.0)
    assert percent_per_day_penalty(40.0, 30 * 3600, 5.0, 0.0, unit="hour", max_percent=50.0) == pytest.approx(20.0)


def test_plugin_unit_and_cap_from_config() -> None:
    from traitlets.config import Config

    config = Config()
    config.PercentPerDay.unit = "hour"
    config.PercentPerDay.percent_per_day = 2.0
    config.PercentPerDay.max_percent = 30.0
    plugin = PercentPerDay(config=config)
    assert plugin.late_submission_penalty("s", 50.0, 5 * 3600) == pytest.approx(5.0)
    assert plugin.late_submission_penalty("s", 50.0, 100 * 3600) == pytest.approx(15.0)


def test_the_question_before_a_late_submission_names_its_penalty(tmp_path: Path) -> None:
    """``penalty_words``: what the 409 (and the Lab page's question) says a late attempt will cost, from the
    course's own policy; the course's override file counts, and a course with another plugin gets no figure."""
    from grader import course
    from grader.plugins.late_policy import penalty_words, save

    assert penalty_words(course.REPO_ROOT, 30 * 3600) == "cost a late penalty of 20% of its score (10% per started day)"
    assert penalty_words(course.REPO_ROOT, 60) == (
        "cost no late penalty (it is within the late policy's 15 minutes of grace)"
    )
    root = course.copy_course(tmp_path / "course")
    save(root, {"percent_per_day": 5, "unit": "hour", "grace_minutes": 0, "max_percent": 50})
    assert penalty_words(root, 3 * 3600 + 1) == "cost a late penalty of 20% of its score (5% per started hour)"
    assert penalty_words(root, 30 * 3600) == "cost a late penalty of 50% of its score (5% per started hour)"
    config = root / "nbgrader_config.py"
    config.write_text(
        config.read_text() + '\nc.AssignLatePenalties.plugin_class = "nbgrader.plugins.LateSubmissionPlugin"\n'
    )
    assert penalty_words(root, 30 * 3600) == "may cost a late penalty"
