"""The staff's verbs, for TAs and admins: grade, extend, import a roster, export, regrade.

Thin edges (``grader.cli`` builds the parser): each parses its arguments and calls one library function.
"""

from __future__ import annotations

import argparse
import sys

from .. import course
from ..errors import GraderError


def autograde(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..engine.doors import batch

    try:
        root = course.locate()[0]
        result = batch.run(
            root,
            args.assignment,
            args.student or None,
            args.jobs,
            force=not args.no_force,
            borrow=not args.own_engine,
            trust_timestamps=args.trust_timestamps,
        )
    except batch.BatchError as error:
        print(f"grader autograde: {error}", file=sys.stderr)
        return 2
    print(result.summary())
    if args.failures_json:
        batch.write_failures(result, Path(args.failures_json))
    return 0 if result.ok else 1


def extension(args: argparse.Namespace) -> int:
    from ..service import config as service_config
    from ..service.rules import deadlines

    try:
        deadlines.grant_extension(service_config.load(), args.assignment, args.student, args.hours)
    except GraderError as error:
        print(f"grader extension: {error}", file=sys.stderr)
        return 2
    print(f"{args.student} has {args.hours:g} extra hour(s) for {args.assignment}")
    return 0


def roster(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..service import config as service_config
    from ..service.dashboard import roster

    try:
        issued = roster.import_roster(service_config.load(), Path(args.csv))
    except roster.RosterError as error:
        print(f"grader roster: {error}", file=sys.stderr)
        return 2
    print("student_id,token")
    for student, token in issued:
        print(f"{student},{token}")
    return 0


def export(args: argparse.Namespace) -> int:
    from ..errors import GraderError
    from ..service import config as service_config
    from ..service.dashboard import export
    from ..service.records.store import Store

    if args.format == "gradescope" and not args.assignment:  # every assignment: one zip each, in a folder
        from pathlib import Path

        folder = Path(args.output)
        if args.output == "-" or folder.is_file():
            print(
                "grader export gradescope: without --assignment it writes one zip per assignment: name a folder "
                "for them with --output FOLDER",
                file=sys.stderr,
            )
            return 2
        settings = service_config.load()
        written = export.gradescope_zips(Store(settings.db_url), settings, folder)
        for path in written:
            print(f"wrote {path}")
        if not written:
            print("grader export gradescope: the gradebook has no assignments, so no zip was written", file=sys.stderr)
        return 0
    settings = service_config.load()
    try:
        if args.format == "gradescope":
            body: str | bytes = export.gradescope_zip(Store(settings.db_url), settings, args.assignment)
        elif args.format == "canvas":
            body = export.canvas_csv(Store(settings.db_url), settings)
        else:
            body = export.nbgrader_csv(settings)
    except GraderError as error:
        print(f"grader export: {error}", file=sys.stderr)
        return 1
    if args.output == "-":
        if isinstance(body, bytes):
            print("grader export: a zip archive needs --output FILE", file=sys.stderr)
            return 2
        sys.stdout.write(body)
    else:
        mode = "wb" if isinstance(body, bytes) else "w"
        with open(args.output, mode) as handle:
            handle.write(body)
        print(f"wrote {args.output}")
    return 0


def regrade(args: argparse.Namespace) -> int:
    from ..errors import GraderError
    from ..service import config as service_config
    from ..service.dashboard import regrade
    from ..service.records.store import Store

    settings = service_config.load()
    store = Store(settings.db_url)
    try:
        if args.dry_run:
            print(regrade.report(regrade.dry_run(store, settings, args.assignment, jobs=args.jobs)))
        else:
            count = regrade.apply(store, settings, args.assignment)
            print(f"queued {count} submission(s) of {args.assignment}; the service's workers grade them")
    except GraderError as error:
        print(f"grader regrade: {error}", file=sys.stderr)
        return 1
    return 0
