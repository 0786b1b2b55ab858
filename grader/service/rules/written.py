"""The one rule of what written answers add to a student's score, and when it is final.

A written answer is a cell a person grades (nbgrader's manually graded answer: a grade cell with a solution cell
of the same name). Its points are nbgrader's own (the ``manual_score`` a TA gave through
``grader.service.marking``, else nbgrader's ``auto_score``: 0 for an answer left as released). They count
towards what a student sees, what the exports and the LMS receive, only once staff released that question
(``grader_mark_releases``); until then the score is not final: the LMS gets ``PendingManual``.

Every door calls ``written`` (and ``combined`` for a total): ``/me``, the Lab's tab, the feedback page, the
Canvas and Gradescope exports and the LTI passback.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa

from ..records import nbgrader_tables as nb
from ..records import tables
from ..records.store import Store


@dataclass(frozen=True)
class Question:
    """One written question of one student's assignment."""

    cell: str
    max_points: float
    released: bool
    regrades_until: dt.datetime | None  # None: regrade requests are not open (or not released)
    points: float | None  # nbgrader's score; None: not graded yet (waits for a person) or no submission

    @property
    def final(self) -> bool:
        return self.released and self.points is not None


@dataclass(frozen=True)
class Written:
    """The written questions of one student's assignment, and what they add to the score."""

    questions: tuple[Question, ...]

    @property
    def points(self) -> float:
        """The released questions' points: what counts in the student's score now."""
        return sum(q.points or 0.0 for q in self.questions if q.released)

    @property
    def maximum(self) -> float:
        return sum(q.max_points for q in self.questions)

    @property
    def pending(self) -> bool:
        """Some question is not graded or not released yet: the score may still change."""
        return any(not q.final for q in self.questions)

    def question(self, cell: str) -> Question | None:
        return next((q for q in self.questions if q.cell == cell), None)


@dataclass(frozen=True)
class Total:
    """The autograded final score with the written answers' released points."""

    given: float
    maximum: float
    pending: bool

    @property
    def grading_progress(self) -> str:
        """LTI AGS ``gradingProgress``."""
        return "PendingManual" if self.pending else "FullyGraded"


def combined(autograded: float, autograded_max: float, written: Written) -> Total:
    return Total(autograded + written.points, autograded_max + written.maximum, written.pending)


def written(store: Store, assignment: str, student: str) -> Written:
    """``student``'s written questions of ``assignment`` (none: an assignment without written answers)."""
    return everyone(store, assignment, [student])[student]


def everyone(store: Store, assignment: str, students: list[str]) -> dict[str, Written]:
    """``written`` of each of ``students``, with three queries in all."""
    # nbgrader's tables, made if this database has none yet (a service before its first grade)
    gradebook = nb.reader(store.engine.url.render_as_string(hide_password=False))
    with gradebook.connect() as conn:
        cells = {row.name: float(row.max_score or 0.0) for row in conn.execute(_questions(assignment))}
        if not cells:
            return {s: Written(()) for s in students}
        released = {
            row.cell: row.regrades_until
            for row in conn.execute(
                sa.select(tables.mark_releases.c.cell, tables.mark_releases.c.regrades_until).where(
                    tables.mark_releases.c.assignment == assignment
                )
            )
        }
        scored: dict[tuple[str, str], float | None] = {}
        for row in conn.execute(_grades(assignment, students)):
            manual = row.manual_score
            points = manual if manual is not None else (None if row.needs_manual_grade else row.auto_score)
            scored[(row.student_id, row.name)] = None if points is None else float(points)
    return {
        student: Written(
            tuple(
                Question(
                    cell,
                    maximum,
                    cell in released,
                    released.get(cell),
                    scored.get((student, cell)),
                )
                for cell, maximum in cells.items()
            )
        )
        for student in students
    }


def _written_cells() -> sa.Subquery:
    """Grade cells with a solution cell of the same name in their notebook: id, name, notebook id, points."""
    cell, grade_cell = nb.base_cell, nb.grade_cells
    solution = nb.base_cell.alias("solution")
    manual = sa.exists().where(
        solution.c.name == cell.c.name, solution.c.notebook_id == cell.c.notebook_id, solution.c.type == "SolutionCell"
    )
    found = (
        sa.select(cell.c.id, cell.c.name, cell.c.notebook_id, grade_cell.c.max_score)
        .join(grade_cell, grade_cell.c.id == cell.c.id)
        .where(manual)
        .subquery("written")
    )
    return found


def _questions(assignment: str) -> sa.Select[tuple[str, float]]:
    cell = _written_cells()
    notebook, named = nb.notebook, nb.assignment
    return (
        sa.select(cell.c.name, cell.c.max_score)
        .join(notebook, notebook.c.id == cell.c.notebook_id)
        .join(named, named.c.id == notebook.c.assignment_id)
        .where(named.c.name == assignment)
        .order_by(notebook.c.name, cell.c.name)
    )


def _grades(assignment: str, students: list[str]) -> sa.Select[tuple[str, str, float, float, bool]]:
    cell = _written_cells()
    grade, submitted_nb, submitted, named = nb.grade, nb.submitted_notebook, nb.submitted_assignment, nb.assignment
    return (
        sa.select(
            submitted.c.student_id, cell.c.name, grade.c.auto_score, grade.c.manual_score, grade.c.needs_manual_grade
        )
        .join(cell, cell.c.id == grade.c.cell_id)
        .join(submitted_nb, submitted_nb.c.id == grade.c.notebook_id)
        .join(submitted, submitted.c.id == submitted_nb.c.assignment_id)
        .join(named, named.c.id == submitted.c.assignment_id)
        .where(named.c.name == assignment, submitted.c.student_id.in_(students))
    )
