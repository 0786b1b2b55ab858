"""The ``grader`` command line: thin wrappers that parse arguments and call one function."""

from __future__ import annotations

import argparse
import sys

from . import course


def _release(args: argparse.Namespace) -> int:
    course.generate_releases(course.REPO_ROOT, args.assignments or None)
    print(f"release/ regenerated for: {', '.join(args.assignments or course.assignments())}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from . import demo

    print(demo.table(demo.run()))
    print(
        "\nAutograded notebooks: autograded/<student>/<assignment>/; gradebook: gradebook.db "
        "(`nbgrader export`, `nbgrader formgrader` read it)."
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="The autograded PyTorch course.")
    commands = parser.add_subparsers(dest="command", required=True)
    release = commands.add_parser("release", help="regenerate release/ from source/ (nbgrader generate_assignment)")
    release.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    release.set_defaults(func=_release)
    demo = commands.add_parser("demo", help="release the course and autograde the bundled example submissions")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except course.NbgraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
