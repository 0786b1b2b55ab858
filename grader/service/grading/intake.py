"""Intake: validate an uploaded notebook, store it durably, create its submission and job.

Nothing is half-written: the notebook, its row and its job are stored together
or not at all (``store.add_submission``, ``files``).  Every refusal is a ``StudentError`` whose
message says what to do.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ... import mending
from ...errors import NotANotebook, TooLarge, UnknownAssignment, WrongAssignment
from ..config import ServiceConfig
from ..records.store import Store
from ..records.tables import now
from ..rules import deadlines


@dataclass(frozen=True)
class AssignmentCells:
    """One assignment as the gradebook knows it: its name and its (one) notebook's name."""

    name: str
    notebook: str


def assignment_cells(db_url: str, assignment: str) -> AssignmentCells:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        try:
            found = gradebook.find_assignment(assignment)
        except MissingEntry:
            names = sorted(a.name for a in gradebook.assignments)
            raise UnknownAssignment(f"unknown assignment {assignment!r}; this course has: {', '.join(names)}") from None
        if not found.notebooks:
            raise UnknownAssignment(f"assignment {assignment!r} has no released notebook yet")
        return AssignmentCells(name=assignment, notebook=found.notebooks[0].name)


def parse_notebook(data: bytes, max_bytes: int) -> nbformat.NotebookNode:
    if len(data) > max_bytes:
        raise TooLarge(
            f"the notebook is {len(data) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB. "
            "Clear large outputs (Edit > Clear Outputs of All Cells) and submit again."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotANotebook(f"the file is not UTF-8 text (byte {error.start}): upload the .ipynb file itself") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise NotANotebook(f"the file is not valid JSON ({error}): upload the .ipynb file saved by Jupyter") from None
    if not isinstance(raw, dict) or "cells" not in raw or "nbformat" not in raw:
        raise NotANotebook("the file is JSON but not a Jupyter notebook (no 'cells' or 'nbformat')")
    if raw.get("nbformat") != 4:
        raise NotANotebook(
            f"the notebook uses nbformat {raw.get('nbformat')}; open it in JupyterLab 4 and save it again (nbformat 4)"
        )
    try:
        nb = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
        nbformat.validate(nb)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise NotANotebook(f"the notebook is not valid nbformat 4: {first}") from None
    language = nb.metadata.get("kernelspec", {}).get("language") or nb.metadata.get("language_info", {}).get("name")
    if language not in (None, "python"):
        raise NotANotebook(f"the notebook's kernel language is {language!r}; this course grades Python notebooks")
    return nb  # type: ignore[no-any-return]


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
    deadlines.admit(store, config, student, assignment, received, confirm_late)
    folder = config.data_dir / "submissions"
    return Accepted(store.add_submission(student, assignment, data, received, config.files, folder), warnings)


def received_at_utc(value: dt.datetime) -> str:
    return value.replace(tzinfo=dt.UTC).isoformat()
