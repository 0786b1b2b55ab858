"""Shares: which TA grades which question, all of its answers or a range of student ids.

A question with no share is everyone's. A TA with a share of a question sees, on its grading page, the groups
with at least one answer in their range (the whole group: identical answers are graded once), and may still
open every answer; a TA without a share, and every admin, sees them all. Ranges compare student ids as text,
both ends included (``a``-``m``: ids from "a" up to "m", so "m2" is outside); an end left empty is open.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ...errors import StudentError
from ..records import tables
from ..records.store import Store


@dataclass(frozen=True)
class Share:
    assignment: str
    cell: str
    ta: str
    first: str | None
    last: str | None

    def covers(self, student: str) -> bool:
        return (self.first is None or student >= self.first) and (self.last is None or student <= self.last)

    @property
    def words(self) -> str:
        if self.first is None and self.last is None:
            return f"{self.ta}: every answer"
        return f"{self.ta}: students {self.first or '(first)'} to {self.last or '(last)'}"


def assign(store: Store, assignment: str, cell: str, ta: str, first: str = "", last: str = "") -> Share:
    """Give ``ta`` the answers to ``cell`` of students ``first`` to ``last`` (empty: open); replaces their share."""
    ta, first, last = ta.strip(), first.strip(), last.strip()
    if not ta:
        raise StudentError("say which TA (their user id) gets this question")
    if first and last and first > last:
        raise StudentError(f"the range {first!r} to {last!r} is empty: the first id sorts after the last")
    share = Share(assignment, cell, ta, first or None, last or None)
    t = tables.question_shares
    with store.transaction() as conn:
        conn.execute(sa.delete(t).where(t.c.assignment == assignment, t.c.cell == cell, t.c.ta == ta))
        conn.execute(
            sa.insert(t).values(
                assignment=assignment, cell=cell, ta=ta, first_student=share.first, last_student=share.last
            )
        )
    return share


def unassign(store: Store, assignment: str, cell: str, ta: str) -> bool:
    t = tables.question_shares
    with store.transaction() as conn:
        done = conn.execute(sa.delete(t).where(t.c.assignment == assignment, t.c.cell == cell, t.c.ta == ta))
        return bool(done.rowcount)


def of_assignment(store: Store, assignment: str) -> list[Share]:
    t = tables.question_shares
    with store.reader.connect() as conn:
        rows = conn.execute(sa.select(t).where(t.c.assignment == assignment).order_by(t.c.cell, t.c.ta))
        return [Share(r.assignment, r.cell, r.ta, r.first_student, r.last_student) for r in rows]


def mine(store: Store, assignment: str, cell: str, ta: str) -> Share | None:
    """``ta``'s share of ``cell``, if they have one."""
    return next((s for s in of_assignment(store, assignment) if s.cell == cell and s.ta == ta), None)
