"""``grader variants``: what an assignment marks, a student's values, and the course secret."""

from __future__ import annotations

import argparse

from .. import course
from ..errors import ConfigurationError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment", nargs="?", help="the assignment whose marked values to show")
    parser.add_argument("students", nargs="*", help="also show these students' own values (needs the course secret)")
    parser.add_argument(
        "--create-secret",
        action="store_true",
        help="write a new course secret (refused when one exists: it would change every student's values)",
    )


def run(args: argparse.Namespace) -> int:
    from . import marked, secret  # here, not at the top: every grader command builds this verb's arguments
    from .spec import student_values

    root = course.locate()[0]
    if args.create_secret:
        print(f"Created the course secret: {secret.create(root)} (back it up with the gradebook; never commit it).")
        return 0
    names = [args.assignment] if args.assignment else marked.assignments(root)
    if args.assignment and args.assignment not in course.assignments(root):
        raise ConfigurationError(f"no assignment {args.assignment!r} in {root / 'source'}")
    if not names:
        print("No assignment of this course marks per-student variants.")
        return 0
    for name in names:
        cells = marked.cells(root, name)
        if not cells:
            print(f"{name}: no values marked `# variant:`")
            continue
        for cell in cells:
            print(f"{name}, cell `{cell.grade_id}` ({cell.combinations} combinations):")
            for v in cell.variants:
                print(f"  {v.name} = {v.default!r}  choices {list(v.choices)}")
        if args.students:
            key = secret.require(root)
            for student in args.students:
                values = student_values(key, name, student, cells)
                print(f"  {student}: " + ", ".join(f"{k} = {v!r}" for k, v in values.items()))
    return 0
