"""Intake: validate an uploaded notebook, store it durably, create its submission and job.

Nothing is half-written: the notebook, its row and its job are stored together
or not at all (``store.add_submission``, ``files``).  Every refusal is a ``StudentError`` whose
message says what to do.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import nbformat
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import notebook_errors
from ...engine.bookkeeping import jobsession
from ...errors import UnknownAssignment, WrongAssignment
from ...plugins import mending
from ..config import ServiceConfig
from ..records import nbgrader_tables
from ..records.store import Store
from ..records.tables import now
from ..rules import deadlines, exams


@dataclass(frozen=True)
class AssignmentCells:
    """One assignment as the gradebook knows it: its name and its (one) notebook's name."""

    name: str
    notebook: str


def assignment_cells(
    db_url: str, assignment: str, job: Connection | None = None, student: str | None = None
) -> AssignmentCells:
    """The assignment's notebook, from nbgrader's gradebook; ``UnknownAssignment`` when it has none.

    One query (the assignment and its first notebook); a second only to list the course's assignments
    when the name is unknown.  Read on ``job`` (a job's one transaction) when the gradebook is in its
    database, into the job's nbgrader session (``jobsession.notebooks_of``: nbgrader's own lookups of the
    assignment and its notebooks then cost no statement, and with ``student`` their row and submission too),
    else on a pooled connection of its own."""
    if job is not None and jobsession.current() is not None:  # the gradebook is in the job's database
        names = jobsession.notebooks_of(assignment, student)
        if names:
            return AssignmentCells(name=assignment, notebook=names[0])
        return _assignment_cells(job, assignment)  # its UnknownAssignment, naming the course's assignments
    with nbgrader_tables.reader(db_url).connect() as conn:
        return _assignment_cells(conn, assignment)


def _assignment_cells(conn: Connection, assignment: str) -> AssignmentCells:
    tables = nbgrader_tables
    a, n = tables.assignment.c, tables.notebook.c
    found = conn.execute(  # nbgrader's Assignment.notebooks[0]: ordered by name
        sa.select(n.name)  # a row, its name None, when the assignment has no notebook yet
        .select_from(tables.assignment.outerjoin(tables.notebook, n.assignment_id == a.id))
        .where(a.name == assignment)
        .order_by(n.name)
        .limit(1)
    ).first()
    if found is None:
        names = conn.execute(sa.select(a.name).order_by(a.name)).scalars()
        raise UnknownAssignment(f"unknown assignment {assignment!r}; this course has: {', '.join(names)}")
    if found.name is None:
        raise UnknownAssignment(f"assignment {assignment!r} has no released notebook yet")
    return AssignmentCells(name=assignment, notebook=found.name)


def parse_notebook(data: bytes, max_bytes: int) -> nbformat.NotebookNode:
    """The uploaded notebook, or ``NotANotebook``/``TooLarge`` with the sentence the batch command also records."""
    nb = notebook_errors.read(data, max_bytes)
    notebook_errors.check_python(nb)
    return nb


def check_cells(nb: nbformat.NotebookNode, cells: AssignmentCells, release: Path) -> tuple[str, ...]:
    """Refuse a notebook with none of the assignment's graded cells; else what grading will mend, for the student."""
    if not release.is_file():
        return ()
    mended = mending.mend(copy.deepcopy(nb), mending.read_release(release))
    if not mended.matched:
        raise WrongAssignment(
            f"this notebook has none of {cells.name}'s answer or test cells: is it the notebook of another "
            f"assignment? Submit release/{cells.name}/{cells.notebook}.ipynb with your answers."
        )
    return mended.notes


@dataclass(frozen=True)
class Accepted:
    """A stored, queued submission, and what the student should know about it now."""

    id: int
    warnings: tuple[str, ...]


def accept(
    store: Store, config: ServiceConfig, student: str, assignment: str, data: bytes, confirm_late: bool = False
) -> Accepted:
    """Validate, check the course's rules, store durably, and queue one submission."""
    cells = assignment_cells(config.db_url, assignment)
    nb = parse_notebook(data, config.max_upload_bytes)
    release = mending.release_path(config.course_root, assignment, cells.notebook, config.release_directory)
    warnings = check_cells(nb, cells, release)
    received = now()
    exams.admit(store, exams.parse(config.exams), student, assignment, received)
    deadlines.admit(store, config, student, assignment, received, confirm_late)
    folder = config.data_dir / "submissions"
    return Accepted(store.add_submission(student, assignment, data, received, config.files, folder), warnings)


def received_at_utc(value: dt.datetime) -> str:
    return value.replace(tzinfo=dt.UTC).isoformat()
