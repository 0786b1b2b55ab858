"""``grader validate ASSIGNMENT``: parse the arguments, validate, print, write the report, exit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import course


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment", nargs="+", help="the assignment(s) to validate (folder names under source/)")
    parser.add_argument(
        "--stock", action="store_true", help="also grade the fixtures with stock nbgrader autograde and compare"
    )
    parser.add_argument("--no-mutants", action="store_true", help="grade the fixtures and probes only")
    parser.add_argument("--strict", action="store_true", help="message-quality warnings fail the validation too")
    parser.add_argument("--jobs", type=int, help="kernels at a time (default: twice the CPU count)")
    parser.add_argument(
        "--json", type=_absolute, help="write the report here too (default: validation/<assignment>.json in the course)"
    )
    parser.add_argument(
        "--html", type=_absolute, help="write the HTML report here too (default: validation/<assignment>.html)"
    )
    parser.add_argument("--course", help=argparse.SUPPRESS)


def _absolute(text: str) -> Path:
    """A path as the instructor typed it, from where they typed it (grading changes the working directory)."""
    return Path(text).resolve()


def run(args: argparse.Namespace) -> int:
    """Exit status: 0 when every assignment passes, 1 when any validation fails (bad input: the caller's 2)."""
    from . import report  # here, not at the top: every grader command builds this verb's arguments
    from .validate import validate

    root = course.locate()[0]
    if len(args.assignment) > 1 and (args.json or args.html):
        print("grader validate: --json and --html name one file: give one assignment with them", file=sys.stderr)
        return 2
    failed = False
    for name in args.assignment:
        found = validate(root, name, stock=args.stock, mutants=not args.no_mutants, jobs=args.jobs, out=sys.stderr)
        print(report.text(found, strict=args.strict), flush=True)
        json_path, html_path = report.paths(root, name)
        for write, default, chosen in (
            (report.write_json, json_path, args.json),
            (report.write_html, html_path, args.html),
        ):
            for path in {default, chosen} - {None}:
                assert path is not None
                write(found, path)
        print(f"Report: {html_path} (and {json_path.name}); the dashboard's assignment page shows it to staff.")
        failed |= found.failed(args.strict)
    return 1 if failed else 0
