"""The course's own verbs, for instructors: release the assignments, try the grading on examples.

Thin edges (``grader.cli`` builds the parser): each parses its arguments and calls one library function.
"""

from __future__ import annotations

import argparse
import sys

from .. import course


def release(args: argparse.Namespace) -> int:
    from ..variants import check

    root = course.locate()[0]
    names = args.assignments or course.assignments(root)
    failures = [f.sentence(name) for name in names for f in check.check(root, name, sys.stdout)]
    if failures:
        print("grader release: refused, release/ is unchanged: " + "\n".join(failures), file=sys.stderr)
        return 1
    course.generate_releases(root, args.assignments or None)
    print(f"release/ regenerated for: {', '.join(args.assignments or course.assignments(root))}")
    return 0


def demo(args: argparse.Namespace) -> int:
    from .. import demo

    done = demo.run(course.locate()[0])
    print(demo.table(done.scores))
    print(demo.where(done.copy))
    return 0
