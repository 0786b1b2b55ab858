"""Every grader.* name nbgrader_config.py gives must import, and an old one is answered with its new name."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets.config import Config

from grader import course
from grader.engine.engine import Engine
from grader.errors import ConfigurationError
from grader.plugins import names


def test_every_name_the_course_configuration_gives_imports() -> None:
    found = dict((name, where) for where, name in names.named(course.read_config(course.REPO_ROOT)))
    assert found["grader.plugins.isolation.PrivateExecute"] == "Autograde.autograde_preprocessors"
    assert found["grader.plugins.mending.MendCells"] == "Autograde.sanitize_preprocessors"
    assert found["grader.plugins.late_policy.PercentPerDay"] == "AssignLatePenalties.plugin_class"
    assert found["grader.plugins.redaction.HideHiddenTests"] == "GenerateFeedback.preprocessors"
    assert found["grader.exchange.GraderExchange"] == "ExchangeFactory.exchange"
    names.check(course.read_config(course.REPO_ROOT))


def test_a_name_from_before_the_plugins_moved_is_answered_with_its_new_one() -> None:
    config = Config()
    config.Autograde.sanitize_preprocessors = ["nbgrader.preprocessors.ClearOutput", "grader.mending.MendCells"]
    with pytest.raises(ConfigurationError) as caught:
        names.check(config)
    assert str(caught.value).startswith(
        "nbgrader_config.py: Autograde.sanitize_preprocessors names 'grader.mending.MendCells', which does not import ("
    )
    assert str(caught.value).endswith("; it moved: write 'grader.plugins.mending.MendCells'")


def test_a_misspelt_name_is_refused() -> None:
    config = Config()
    config.AssignLatePenalties.plugin_class = "grader.plugins.late_policy.PercentPerDya"
    with pytest.raises(ConfigurationError, match=r"AssignLatePenalties.plugin_class names .*; check the spelling$"):
        names.check(config)


def test_values_that_are_not_grader_names_are_left_alone() -> None:
    config = Config()
    config.PercentPerDay.unit = "day"
    config.ClearSolutions.code_stub = {"python": "grader.nothing"}
    config.Autograde.autograde_preprocessors = ["nbgrader.preprocessors.NoSuchStep"]  # nbgrader's to find
    assert list(names.named(config)) == []
    names.check(config)


def test_an_engine_on_a_course_with_an_old_name_fails_at_start_up(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    config = root / "nbgrader_config.py"
    text = config.read_text()
    assert '"grader.plugins.isolation.PrivateExecute"' in text
    config.write_text(text.replace('"grader.plugins.isolation.PrivateExecute"', '"grader.isolation.PrivateExecute"'))
    with pytest.raises(ConfigurationError, match=r"write 'grader.plugins.isolation.PrivateExecute'$"):
        Engine(root)
