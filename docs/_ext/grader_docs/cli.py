"""The command-line reference, written from ``grader.cli.build_parser()`` itself.

Every command and subcommand gets a section with the target ``cli-<path>`` (``cli-grader-lti-sync-roster``),
its usage line as argparse prints it, its help, and one entry per argument: its option strings or name,
its choices and default, and its help text. Nothing here is typed by hand, so the page cannot drift
from the parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass

from . import markdown as md


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # ("grader", "lti", "sync-roster")
    parser: argparse.ArgumentParser
    help: str

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def target(self) -> str:
        return md.label("cli", *self.path)


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """The parser's subcommands, in the order they were added: name, parser, help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, sub, helps.get(name, "")


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] | None = None, help: str = "") -> list[Command]:
    """``parser`` and every subcommand below it, depth first."""
    path = path or (parser.prog,)
    found = [Command(path, parser, help or parser.description or "")]
    for name, sub, sub_help in subcommands(parser):
        found += commands(sub, (*path, name), sub_help)
    return found


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a reader types: everything but ``--help`` and the subcommand slot."""
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and action.help != argparse.SUPPRESS
    ]


def argument_names(action: argparse.Action) -> list[str]:
    """What a reader types: the option strings (``--output``, ``-o``), or a positional argument's name."""
    return list(action.option_strings) or [str(action.metavar or action.dest)]


def _details(action: argparse.Action) -> list[str]:
    details = []
    if action.choices is not None:
        details.append("one of " + ", ".join(md.code(str(choice)) for choice in action.choices))
    if action.option_strings and action.required:
        details.append("required")
    if action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction):
        details.append("repeatable" if action.option_strings else "any number")
    if action.nargs == "?" and not action.option_strings:
        details.append("optional")
    is_flag = isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction)
    if not is_flag and action.default not in (None, "", argparse.SUPPRESS) and action.option_strings:
        details.append("default " + md.code(repr(action.default)))
    if isinstance(action.type, type):
        details.append(action.type.__name__)
    return details


def render(parser: argparse.ArgumentParser) -> str:
    """The whole reference, as MyST Markdown (one section per command)."""
    out: list[str] = []
    for command in commands(parser):
        depth = min(len(command.path), 3)
        out += [f"({command.target})=", f"{'#' * (depth + 1)} {md.code(command.name)}", ""]
        if command.help:
            out += [md.text(command.help), ""]
        out += ["```text", command.parser.format_usage().strip(), "```", ""]
        listed = arguments(command.parser)
        for action in listed:
            details = _details(action)
            help_text = md.text(action.help) if action.help else "(no help text in the parser)"
            suffix = f" ({'; '.join(details)})" if details else ""
            names = ", ".join(md.code(name) for name in argument_names(action))
            out.append(f"- {names}{suffix}: {help_text}")
        if listed:
            out.append("")
        subs = list(subcommands(command.parser))
        if subs:
            out.append(
                "Commands: "
                + ", ".join(f"[{md.code(name)}](#{md.label('cli', *command.path, name)})" for name, _, _ in subs)
                + "."
            )
            out.append("")
    return "\n".join(out)
