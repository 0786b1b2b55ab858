"""The grade rows nbgrader wrote, as it wrote them: handed to the caller instead of read back.

``BulkSaveAutoGrades`` and ``RecordedLatePenalties`` (``bulk.py``) note here, per notebook, what
they wrote to the gradebook: every grade cell of the instructor's notebook with its maximum, the
score nbgrader stored for each cell the submission had (``Grade.score``: a TA's manual score, if
any, else the autograder's, plus extra credit, as the gradebook computes it), the late penalty,
and the notebook exactly as it is written to ``autograded/``.  ``grade_one`` returns them with a
completed ``Outcome``, so the service's scoring neither opens the gradebook nor reads the
autograded file again.  A course whose steps do not note both parts returns none, and the
caller reads the gradebook as before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CellGrade:
    """One grade cell of the instructor's notebook and what the gradebook holds for it now."""

    name: str
    max_score: float
    cell_type: str  # "code" or "markdown"
    score: float | None  # None: the submission had no such cell, so nbgrader wrote no score for it


@dataclass(frozen=True)
class NotebookGrades:
    """What nbgrader wrote for one submitted notebook."""

    notebook: str
    cells: tuple[CellGrade, ...]  # in the gradebook's order (``Notebook.grade_cells``)
    late_penalty: float
    autograded: Any = field(compare=False, repr=False)  # the NotebookNode written to autograded/


def grade_score(manual: float | None, auto: float | None, extra: float | None) -> float:
    """``nbgrader.api.Grade.score``'s SQL expression, in Python: manual wins over auto, plus extra credit."""
    bonus = extra if extra is not None else 0.0
    if manual is not None:
        return float(manual + bonus)
    if auto is not None:
        return float(auto + bonus)
    return 0.0


@dataclass
class _Partial:
    cells: tuple[CellGrade, ...] | None = None
    autograded: Any = None
    late_penalty: float | None = None


Instructor = tuple[tuple[str, float, str], ...]  # a notebook's grade cells: (name, max_score, cell_type)


class _Noted(threading.local):
    """This thread's current grading: what the bookkeeping steps wrote, per notebook, and the instructor's
    grade cells as the sanitize pass read them (the autograde pass needs them again)."""

    def __init__(self) -> None:
        self.notebooks: dict[str, _Partial] = {}
        self.instructor: dict[tuple[str, str], Instructor] = {}  # (notebook, assignment) -> its grade cells

    def reset(self) -> None:
        self.notebooks = {}
        self.instructor = {}

    def scores(self, notebook: str, cells: tuple[CellGrade, ...], autograded: Any) -> None:
        self.notebooks.setdefault(notebook, _Partial()).cells, self.notebooks[notebook].autograded = cells, autograded

    def late_penalty(self, notebook: str, penalty: float) -> None:
        self.notebooks.setdefault(notebook, _Partial()).late_penalty = penalty

    def complete(self) -> tuple[NotebookGrades, ...]:
        """The notebooks both steps wrote for, in the order they were graded."""
        return tuple(
            NotebookGrades(name, part.cells, part.late_penalty, part.autograded)
            for name, part in self.notebooks.items()
            if part.cells is not None and part.late_penalty is not None
        )


noted = _Noted()
