"""Release: staff show the written answers' grades to students, per question or a whole assignment at once.

Until a question is released its marks are staff's alone: students, the exports and the LMS see nothing of them
(``rules.written``). Releasing says until when students may ask for a regrade of it (``regrades``); releasing
again changes that date and nothing else. Withdrawing hides the question's grades again (a release made by
mistake); the marks stay.

``student_view`` is what a student sees of their released answers, on ``/me``, in the Lab's *Course grades* tab
and on the feedback page: the points, each rubric item applied (its points and text), the TA's comment and the
regrade request with its reply.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from ...errors import NotFound, StudentError
from ..records import tables
from ..records.store import Store
from ..rules import written as rule
from . import marks as recorded
from . import questions, regrades


@dataclass(frozen=True)
class Applied:
    points: float
    text: str


@dataclass(frozen=True)
class Released:
    """One released written answer, as its student sees it."""

    assignment: str
    cell: str
    points: float | None  # None: not graded yet
    max_points: float
    items: tuple[Applied, ...]
    comment: str
    regrades_until: dt.datetime | None
    request: regrades.Request | None

    @property
    def may_ask(self) -> bool:
        """A regrade may be asked now: open, before its date, and not asked already."""
        return self.request is None and self.regrades_until is not None and tables.now() <= self.regrades_until

    def as_json(self) -> dict[str, object]:
        return {
            "assignment": self.assignment,
            "question": self.cell,
            "points": self.points,
            "max_points": self.max_points,
            "items": [{"points": i.points, "text": i.text} for i in self.items],
            "comment": self.comment,
            "regrades_until": None if self.regrades_until is None else f"{self.regrades_until:%Y-%m-%d %H:%M} UTC",
            "regrade_request": None if self.request is None else self.request.as_json(),
        }


def release(
    store: Store,
    course_root: Path,
    assignment: str,
    cells: Sequence[str] | None = None,
    *,
    actor: str,
    regrades_until: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> list[str]:
    """Release ``cells`` of ``assignment`` (None: every written question); the questions released."""
    known = list(questions.written(course_root, assignment))
    if not known:
        raise NotFound(f"{assignment} has no written-answer question to release")
    chosen = known if cells is None else list(dict.fromkeys(cells))
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise NotFound(f"{assignment} has no written-answer question {unknown[0]!r} (it has: {', '.join(known)})")
    at = now or tables.now()
    if regrades_until is not None and regrades_until <= at:
        raise StudentError(
            f"the regrade deadline {regrades_until:%Y-%m-%d %H:%M} UTC has passed already: choose a later one, or none"
        )
    t = tables.mark_releases
    with store.transaction() as conn:
        for cell in chosen:
            where = (t.c.assignment == assignment, t.c.cell == cell)
            updated = conn.execute(sa.update(t).where(*where).values(regrades_until=regrades_until))
            if updated.rowcount == 0:
                conn.execute(
                    sa.insert(t).values(
                        assignment=assignment,
                        cell=cell,
                        released_by=actor,
                        released_at=at,
                        regrades_until=regrades_until,
                    )
                )
    return chosen


def withdraw(store: Store, assignment: str, cell: str) -> bool:
    """Hide ``cell``'s grades from students again; False if it was not released."""
    t = tables.mark_releases
    with store.transaction() as conn:
        return bool(conn.execute(sa.delete(t).where(t.c.assignment == assignment, t.c.cell == cell)).rowcount)


def student_view(store: Store, course_root: Path, student: str, assignments: Sequence[str]) -> list[Released]:
    """``student``'s released written answers of ``assignments``, in each notebook's order."""
    shown: list[Released] = []
    asked = {(r.assignment, r.cell): r for r in regrades.of_student(store, student)}
    for assignment in assignments:
        written = rule.written(store, assignment, student)
        if not any(q.released for q in written.questions):
            continue
        for cell in questions.written(course_root, assignment):
            question = written.question(cell)
            if question is None or not question.released:
                continue
            grading = recorded.rubric(store, course_root, assignment, cell)
            mark = recorded.marks(store, assignment, cell, student).get(student)
            items = (
                () if mark is None else tuple(Applied(i.points, i.text) for i in grading.items if i.key in mark.items)
            )
            if mark is not None and mark.adjustment:
                items += (Applied(mark.adjustment, "adjustment"),)
            shown.append(
                Released(
                    assignment,
                    cell,
                    question.points,
                    question.max_points,
                    items,
                    "" if mark is None else mark.comment.strip(),
                    question.regrades_until,
                    asked.get((assignment, cell)),
                )
            )
    return shown
