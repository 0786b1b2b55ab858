"""Grading a set of notebooks in a scratch copy of the course, and reading back what each test cell got.

``grade`` uses the engine (``grader autograde``: a warm zygote, parallel kernels, the same rows and
messages as stock nbgrader); ``grade_stock`` the stock ``nbgrader autograde``. Both read the scores
from the gradebook and the messages from the autograded notebooks, as a student's feedback shows them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import nbformat
from nbformat import NotebookNode

from .. import course
from ..notebook_errors import plain
from .edits import grade_id
from .fixtures import read_notebook


@dataclass(frozen=True)
class CellResult:
    score: float
    max_score: float
    message: str
    """Error name, value and traceback text of the autograded test cell ('' when it passed)."""
    errors: tuple[str, ...] = ()
    """``ename: evalue`` of each error output, and each stderr text: what tells two gradings apart."""

    @property
    def lost(self) -> bool:
        return self.score < self.max_score

    @property
    def first_line(self) -> str:
        """What the student reads first: the error's own text, before the traceback."""
        return first_line(self.message)


Results = dict[str, dict[str, CellResult]]
"""student -> test cell grade id -> what it got."""


def first_line(message: str) -> str:
    """The failing check's first sentence: the error's text before the traceback, ``AssertionError: `` cut."""
    text = plain(message).split("\nTraceback")[0].strip()
    line = text.splitlines()[0].strip() if text else ""
    return line.split(": ", 1)[1] if line.startswith("AssertionError: ") else line


@functools.cache
def _messages(notebook: Path, mtime: float) -> dict[str, tuple[str, tuple[str, ...]]]:
    nb = read_notebook(notebook)
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if not gid or not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        texts, errors = [], []
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                texts.append(f"{output.ename}: {output.evalue}\n" + "\n".join(output.traceback))
                errors.append(f"{output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                texts.append(output.text)
                errors.append(output.text)
        out[gid] = ("\n".join(texts), tuple(errors))
    return out


def results(root: Path, assignment: str) -> Results:
    """Every graded submission's test cells: the gradebook's scores, the autograded notebooks' errors."""
    found: Results = {}
    for row in course.cell_scores(root, assignment):
        notebook = root / "autograded" / row.student / assignment / f"{row.notebook}.ipynb"
        message, errors = (
            _messages(notebook, notebook.stat().st_mtime).get(row.grade_id, ("", ())) if notebook.exists() else ("", ())
        )
        found.setdefault(row.student, {})[row.grade_id] = CellResult(row.score, row.max_score, message, errors)
    return found


def scratch_course(base: Path, source: Path, assignment: str) -> Path:
    """A copy at ``base`` of the course at ``source``, with ``assignment`` released from its source notebook."""
    root = course.copy_course(base, source)
    course.generate_releases(root, [assignment])
    return root


def place(root: Path, assignment: str, notebooks: Mapping[str, NotebookNode]) -> None:
    for student, nb in notebooks.items():
        course.place_notebook(root, student, assignment, (nbformat.writes(nb) + "\n").encode())  # type: ignore[no-untyped-call]


def grade(root: Path, assignment: str, notebooks: Mapping[str, NotebookNode], jobs: int | None, out: TextIO) -> Results:
    """Grade ``notebooks`` (student id -> notebook) with the engine, with a progress line on ``out``."""
    from ..engine.doors import batch

    place(root, assignment, notebooks)
    batch.run(root, assignment, sorted(notebooks), jobs=jobs, out=out)
    return {s: cells for s, cells in results(root, assignment).items() if s in notebooks}


def grade_stock(root: Path, assignment: str, notebooks: Mapping[str, NotebookNode]) -> Results:
    """Grade ``notebooks`` with the stock ``nbgrader autograde``."""
    place(root, assignment, notebooks)
    course.autograde(root, assignment)
    return {s: cells for s, cells in results(root, assignment).items() if s in notebooks}
