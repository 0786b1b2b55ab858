"""The students' verbs: submit a notebook, check it before submitting.

Thin edges (``grader.cli`` builds the parser): each parses its arguments and calls one library function.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import NotANotebook


def submit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..student import client

    try:
        body = client.submit(Path(args.path), args.assignment, client.connection(), confirm_late=args.confirm_late)
    except client.ClientError as error:
        print(f"grader submit: {error}", file=sys.stderr)
        return 2
    print(client.report(body))
    return 0 if body["status"] == "graded" else 1


def check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..student import check

    path = Path(args.path)
    if not path.exists():
        print(f"grader check: {path} does not exist", file=sys.stderr)
        return 2
    try:
        results = check.run(path)
    except NotANotebook as error:
        print(f"grader check: {path} is not a notebook this course can check: {error}", file=sys.stderr)
        return 2
    print(check.report(results))
    return 0 if results and all(r.passed for r in results) else 1
