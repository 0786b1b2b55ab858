"""The reference pages have an entry for every command, option and setting the code defines.

The pages are written from the code when the site is built (``grader_docs.cli``, ``grader_docs.config``);
these tests find the commands and settings on their own, from ``grader.cli.build_parser()`` and the
course's ``nbgrader_config.py``, and fail when one has no entry in what the site would show, or a
grader-defined setting has no description. A new command, a nested subcommand, a new option, a new
``c.GraderService`` field or a new configurable class named in ``nbgrader_config.py`` is covered.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re
from pathlib import Path

from grader_docs import cli as cli_reference
from grader_docs import config as config_reference
from traitlets.config import Configurable

from grader.cli import build_parser
from grader.service.config import ServiceConfig

REPO = Path(__file__).resolve().parents[2]
LABEL = re.compile(r"^\(([a-z0-9-]+)\)=$", re.MULTILINE)
NO_HELP = "(no help text in the code)"


def sections(text: str) -> dict[str, str]:
    """The page's text under each ``(label)=`` target, up to the next one."""
    marks = list(LABEL.finditer(text))
    return {
        m.group(1): text[m.end() : nxt.start() if nxt else len(text)]
        for m, nxt in zip(marks, [*marks[1:], None], strict=True)
    }


def label(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], list[str]]]:
    """Each command's path and the names a reader types for its arguments, found without grader_docs (an
    argument whose help is ``argparse.SUPPRESS`` is hidden from ``-h`` on purpose, and from the reference)."""
    names = []
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += walk(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS:  # hidden on purpose
            names += list(action.option_strings) or [str(action.metavar or action.dest)]
    return [(path, names), *found]


def missing_cli_entries(parser: argparse.ArgumentParser, page: str) -> list[str]:
    by_label = sections(page)
    missing = []
    for path, names in walk(parser, ("grader",)):
        section = by_label.get(label("cli", *path))
        if section is None:
            missing.append(" ".join(path))
            continue
        missing += [f"{' '.join(path)} {name}" for name in names if f"`{name}" not in section]
    return missing


def test_every_cli_command_and_option_has_a_reference_entry() -> None:
    parser = build_parser()
    assert missing_cli_entries(parser, cli_reference.render(parser)) == []


def test_a_command_or_option_without_an_entry_is_found() -> None:
    page = cli_reference.render(build_parser())
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands.add_parser("frobnicate").add_argument("--level")
    (serve,) = [sub for name, sub in commands.choices.items() if name == "serve"]
    serve.add_argument("--no-such-option")
    assert missing_cli_entries(parser, page) == ["grader serve --no-such-option", "grader frobnicate"]


def expected_settings() -> dict[str, set[str]]:
    """Each c.<Section> the course's nbgrader_config.py configures through grader's own classes, and its options:
    c.GraderService (ServiceConfig's fields but the three load() refuses there) and every grader.* class the
    file names, with every trait it takes from configuration."""
    expected = {
        "GraderService": {f.name for f in dataclasses.fields(ServiceConfig)}
        - {"course_root", "db_url", "release_directory"}
    }
    text = (REPO / "nbgrader_config.py").read_text()
    for dotted in sorted(set(re.findall(r"[\"'](grader(?:\.\w+)+)[\"']", text))):
        module, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name, None)
        if isinstance(cls, type) and issubclass(cls, Configurable):
            expected[cls.__name__] = set(cls.class_traits(config=True))
    sections_set = set(re.findall(r"^c\.(\w+)\.", text, re.M))
    for dotted in config_reference.BY_SECTION:  # set as c.<Name>, named by no dotted path
        module, _, name = dotted.rpartition(".")
        if name in sections_set:
            expected[name] = set(getattr(importlib.import_module(module), name).class_traits(config=True))
    return expected


def missing_config_entries(expected: dict[str, set[str]], page: str) -> list[str]:
    by_label = sections(page)
    missing = []
    for section, options in sorted(expected.items()):
        text = by_label.get(label("config", section))
        if text is None:
            missing.append(section)
            continue
        missing += [f"c.{section}.{name}" for name in sorted(options) if f"`c.{section}.{name}`" not in text]
    return missing


def test_every_config_option_has_a_reference_entry() -> None:
    expected = expected_settings()
    named = {"GraderService", "GraderExchange", "GraderSubmit", "PercentPerDay", "HideHiddenTests", "Variants"}
    assert named <= set(expected)
    assert missing_config_entries(expected, config_reference.render(REPO)) == []


def test_a_setting_without_an_entry_is_found() -> None:
    page = config_reference.render(REPO)
    expected = expected_settings()
    expected["GraderService"].add("no_such_setting")
    expected["NoSuchClass"] = {"x"}
    assert missing_config_entries(expected, page) == ["c.GraderService.no_such_setting", "NoSuchClass"]


def test_every_setting_the_grader_defines_is_described() -> None:
    undescribed = [
        f"c.{section.name}.{option.name}"
        for section in config_reference.sections(REPO)
        for option in section.options
        if option.defined_by.startswith("grader.") and not option.help.strip()
    ]
    assert undescribed == [], f"give these a help text (traits) or a comment / SERVICE_HELP entry: {undescribed}"
    page = config_reference.render(REPO)
    assert NO_HELP not in "".join(
        line for line in page.splitlines() if line.startswith(("- `c.GraderService.", "- `c.Grader"))
    )


def test_service_help_names_only_real_settings() -> None:
    settings = {f.name for f in dataclasses.fields(ServiceConfig)} - config_reference.NOT_SETTINGS
    assert set(config_reference.SERVICE_HELP) <= settings
