"""``grader similarity ASSIGNMENT``: the pairs of submissions that look copied, as the staff page lists them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .. import course

if TYPE_CHECKING:
    from . import report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("assignment", help="the assignment whose submissions to compare")
    parser.add_argument(
        "--threshold", default=None, help="list pairs at least this similar: 0.5 or 50%% (default: 0.5; from 0.2)"
    )
    parser.add_argument("--csv", type=Path, help="also write the pairs to this CSV file")
    parser.add_argument(
        "--submitted",
        action="store_true",
        help="compare nbgrader's submitted/ folders even when the service's database holds graded attempts",
    )
    parser.add_argument("--course", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from . import report, sources  # here, not at the top: copydetect imports matplotlib (0.7 s) for every command

    root = course.locate()[0]
    threshold = report.threshold_of(args.threshold)
    plate = sources.boilerplate(root, args.assignment)
    found = _from_service(args.assignment, threshold) if not args.submitted else None
    if found is None:
        where = f"{root / 'submitted'} (nbgrader's submitted/<student>/{args.assignment}/)"
        print(f"grader similarity: comparing {where}", file=sys.stderr)
        found = report.build(
            root, args.assignment, sources.from_folder(root, args.assignment, plate), threshold, where, plate
        )
    print(report.table(found))
    if args.csv:
        args.csv.write_text(report.csv_text(found))
        print(f"wrote {args.csv}")
    return 0


def _from_service(assignment: str, threshold: float) -> report.Report | None:
    """The report over the service's counting attempts, when its database has graded ones; else None."""
    from ..service import config as service_config
    from ..service.dashboard import similarity
    from ..service.records.store import Store

    settings = service_config.load()
    if not similarity.has_submissions(settings.db_url, assignment):
        return None
    print(f"grader similarity: comparing {similarity.WHERE}", file=sys.stderr)
    return similarity.build(Store(settings.db_url), settings, assignment, threshold)
