"""grader.late_policy: 10% per started day late after 15 minutes of grace."""

from __future__ import annotations

import pytest

from grader.late_policy import PercentPerDay, percent_per_day_penalty

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
