"""The ``grader`` command line: thin wrappers that parse arguments and call one function."""

from __future__ import annotations

import argparse
import os
import sys

from . import course, deferred_imports
from .commands import course as course_verbs
from .commands import service, staff, students
from .errors import GraderError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="The autograded PyTorch course.")
    parser.add_argument("--course", dest="top_course", help=COURSE_HELP)
    commands = parser.add_subparsers(dest="command", required=True)
    release = commands.add_parser("release", help="regenerate release/ from source/ (nbgrader generate_assignment)")
    release.add_argument("assignments", nargs="*", help="assignment names (default: all)")
    release.set_defaults(func=course_verbs.release)
    demo = commands.add_parser(
        "demo",
        help="release the course and autograde a few bundled example submissions, in a scratch copy of the course "
        "(its gradebook and folders stay as they are)",
    )
    demo.set_defaults(func=course_verbs.demo)
    autograde = commands.add_parser(
        "autograde",
        help="autograde submitted/ like `nbgrader autograde`, same gradebook rows, many times faster",
    )
    autograde.add_argument("assignment", help="the assignment to grade (a folder under source/)")
    autograde.add_argument("--student", action="append", help="only this student (repeatable; default: everyone)")
    autograde.add_argument(
        "--failures-json", metavar="PATH", help="also write the students not graded, with the reasons, as JSON to PATH"
    )
    autograde.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="grade every submission with its timestamp.txt, even one before the release or in the future "
        "(by default those are not graded: their late penalty would rest on a time no submission can have)",
    )
    autograde.add_argument("--jobs", type=int, help="kernels at a time (default: twice the CPU count)")
    autograde.add_argument("--no-force", action="store_true", help="skip submissions already autograded")
    autograde.add_argument(
        "--own-engine",
        action="store_true",
        help="start this command's own engine even when `grader serve` runs for the course (default: use its warm one)",
    )
    autograde.add_argument("--course", help=COURSE_HELP)
    autograde.set_defaults(func=staff.autograde)
    serve = commands.add_parser("serve", help="run the grading service for this course on localhost")
    serve.add_argument("--host", help="the address to listen on (default: GraderService.host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="the port to listen on (default: GraderService.port, 8000)")
    serve.add_argument(
        "--workers", type=int, help="notebooks graded at a time by this process (default: GraderService.workers)"
    )
    serve.add_argument(
        "--db-url",
        help="the database for the gradebook and the service's tables, e.g. postgresql://user@host/db "
        "(default: the course's, $GRADER_DB_URL for this repository, else gradebook.db)",
    )
    serve.add_argument(
        "--broker-url",
        help="publish jobs to `grader worker`s through this broker (redis://host:6379/0 or amqp://...) instead of "
        "grading here; needs a PostgreSQL --db-url (default: $GRADER_BROKER_URL, else none: grade locally)",
    )
    serve.set_defaults(func=service.serve)
    worker = commands.add_parser("worker", help="grade the jobs a broker announces (scale-out: DEPLOYMENT.md)")
    worker.add_argument("--db-url", help="the PostgreSQL database grader serve uses (default: $GRADER_DB_URL)")
    worker.add_argument(
        "--broker-url",
        help="the broker grader serve publishes to (default: $GRADER_BROKER_URL, else GraderService.broker_url, "
        "else redis://127.0.0.1:6379/0)",
    )
    worker.add_argument(
        "--concurrency", type=int, default=0, help="kernels at a time (default: the CPUs this process may use)"
    )
    worker.add_argument("--name", default="", help="this worker's name in the queue page (default: HOST:PID)")
    worker.set_defaults(func=service.worker)
    db = commands.add_parser("db", help="the service's database schema: show it, or upgrade it (back up first)")
    db.add_argument("action", choices=["current", "upgrade"], help="current: show the schema; upgrade: migrate it")
    db.add_argument("--db-url", help="the database (default: the course's, $GRADER_DB_URL, else gradebook.db)")
    db.set_defaults(func=service.db)
    tokens = commands.add_parser("tokens", help="issue, list or revoke access tokens (stored hashed)")
    tokens.add_argument("action", choices=["issue", "list", "revoke"], help="what to do with tokens")
    tokens.add_argument("users", nargs="*", help="student ids (or staff names)")
    tokens.add_argument(
        "--role", choices=["student", "ta", "admin"], default="student", help="issue: the role (default: student)"
    )
    tokens.add_argument(
        "--expires", help="issue: valid for 30d, 12h, or until a date (2027-01-31); default: until revoked"
    )
    tokens.add_argument("--label", default="", help="issue: what the token is for, shown by `grader tokens list`")
    tokens.add_argument("--id", help="revoke: the one token with this identifier (from `grader tokens list`)")
    tokens.set_defaults(func=service.tokens)
    submit = commands.add_parser("submit", help="submit a notebook to the service and wait for its grade")
    submit.add_argument("path", help="the notebook (.ipynb) to submit")
    submit.add_argument("--assignment", help="default: the notebook's file name without .ipynb")
    submit.add_argument("--confirm-late", action="store_true", help="replace an on-time submission with a late one")
    submit.set_defaults(func=students.submit)
    check = commands.add_parser("check", help="run a notebook's visible tests locally before submitting")
    check.add_argument("path", help="the notebook (.ipynb) to check")
    check.set_defaults(func=students.check)
    roster = commands.add_parser("roster", help="add students from a roster CSV to the gradebook and issue tokens")
    roster.add_argument("csv", help="columns: id (required), first_name, last_name, email")
    roster.set_defaults(func=staff.roster)
    extension = commands.add_parser("extension", help="give a student more time (nbgrader's own extension)")
    extension.add_argument("student", help="the student's id")
    extension.add_argument("assignment", help="the assignment")
    extension.add_argument("--hours", type=float, required=True, help="0 removes the extension")
    extension.set_defaults(func=staff.extension)
    exporting = commands.add_parser(
        "export", help="grades for other systems: nbgrader's CSV, a Canvas gradebook import, Gradescope results.json"
    )
    exporting.add_argument(
        "format", choices=["nbgrader", "canvas", "gradescope"], help="nbgrader's CSV, a Canvas import or Gradescope's"
    )
    exporting.add_argument(
        "--assignment",
        help="gradescope: the assignment whose results to export (default: every assignment, one zip each)",
    )
    exporting.add_argument(
        "--output",
        "-o",
        default="-",
        help="file to write (default: stdout; a zip needs a file; gradescope without --assignment: a folder)",
    )
    exporting.set_defaults(func=staff.export)
    regrading = commands.add_parser(
        "regrade", help="regrade every student's counting attempt after the tests changed (--dry-run: diff only)"
    )
    regrading.add_argument("assignment", help="the assignment whose tests changed")
    regrading.add_argument("--dry-run", action="store_true", help="grade in a scratch copy and show the score diff")
    regrading.add_argument("--jobs", type=int, help="kernels at a time for the dry run")
    regrading.set_defaults(func=staff.regrade)
    from .authoring import cli as validate_cli

    validating = commands.add_parser(
        "validate",
        help="test the hidden tests: grade the assignment's fixtures and automatic mutants, report holes (instructors)",
    )
    validate_cli.add_arguments(validating)
    validating.set_defaults(func=validate_cli.run)
    from .similarity import cli as similarity_cli

    similar = commands.add_parser(
        "similarity", help="pairs of submissions whose answer code looks copied (staff; never changes a grade)"
    )
    similarity_cli.add_arguments(similar)
    similar.set_defaults(func=similarity_cli.run)
    from .variants import cli as variants_cli

    variant = commands.add_parser(
        "variants", help="per-student variants: an assignment's marked values, a student's own, the course secret"
    )
    variants_cli.add_arguments(variant)
    variant.set_defaults(func=variants_cli.run)
    from .service.lti import cli as lti_cli

    lti = commands.add_parser("lti", help="LTI 1.3: register LMSs, sync the roster, send grades (DEPLOYMENT.md)")
    lti_cli.add_arguments(lti)
    lti.set_defaults(func=lti_cli.run)
    return parser


COURSE_HELP = (
    "the course root (default: $GRADER_COURSE_ROOT, else the current directory if it holds nbgrader_config.py, "
    "else the installed course)"
)
STUDENT_COMMANDS = ("check", "submit")  # these work on a student's own notebook, not on a course


def main(argv: list[str] | None = None) -> int:
    deferred_imports.defer()  # before anything imports jsonschema: 3 s less start-up for every command
    # nbgrader creates a gradebook by running `alembic`: this environment's bin must be on PATH.
    course.put_bin_on_path()
    args = build_parser().parse_args(argv)
    previous = os.environ.get("GRADER_COURSE_ROOT")
    if args.command not in STUDENT_COMMANDS:
        # Every command finds the course as nbgrader does, says which, and hands it on (the service's
        # configuration and nbgrader_config.py read $GRADER_COURSE_ROOT).
        root, how = course.locate(getattr(args, "course", None) or args.top_course)
        os.environ["GRADER_COURSE_ROOT"] = str(root)
        print(f"grader: course {root} ({how})", file=sys.stderr)
    try:
        return _run(args)
    finally:
        if previous is None:
            os.environ.pop("GRADER_COURSE_ROOT", None)
        else:
            os.environ["GRADER_COURSE_ROOT"] = previous


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except course.NbgraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 1
    except GraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        reason = _database_unreachable(error)
        if reason is None:
            raise
        print(f"grader: the database did not answer ({reason}): is it running, and is --db-url right?", file=sys.stderr)
        return 2


def _database_unreachable(error: Exception) -> str | None:
    """The driver's reason when ``error`` says the database could not be reached, else None."""
    exc = sys.modules.get("sqlalchemy.exc")  # not imported (0.35 s at start-up): no database was asked
    if exc is None or not isinstance(error, (exc.OperationalError, exc.InterfaceError)):
        return None
    return str(error.orig or error).strip().splitlines()[0]


if __name__ == "__main__":
    sys.exit(main())
