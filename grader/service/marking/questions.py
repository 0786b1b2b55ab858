"""What the grading page shows: an assignment's written questions, and one question's answers one group at a time.

Groups of identical answers are graded together (``answers.groups``); answers left as released are not
shown (nbgrader scored them 0 already). A group counts as graded when every member has a mark.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from ... import rubrics
from ...errors import StudentError
from ..records import tables
from ..records.store import Store
from . import answers, shares
from . import marks as recorded
from .marks import Change, Mark
from .shares import Share


@dataclass(frozen=True)
class Summary:
    cell: str
    points: float
    answers: int
    graded: int
    groups: int
    released: bool = False
    regrades_until: dt.datetime | None = None
    shares: tuple[Share, ...] = ()


@dataclass(frozen=True)
class Shown:
    """One group of one question, as the page shows it."""

    assignment: str
    rubric: rubrics.Rubric
    index: int
    groups: tuple[answers.Group, ...]
    marks: dict[str, Mark]
    history: tuple[Change, ...]
    share: Share | None = None  # the TA's share of the question: only its groups are in ``groups``
    everyone: int = 0  # how many groups the question has in all

    @property
    def group(self) -> answers.Group:
        return self.groups[self.index]

    @property
    def mark(self) -> Mark | None:
        """The group's mark: its first member's (a group is saved whole)."""
        return self.marks.get(self.group.answers[0].student)

    @property
    def graded_groups(self) -> int:
        return sum(1 for g in self.groups if all(s in self.marks for s in g.students))

    @property
    def versions(self) -> list[int]:
        """The mark version of each member of the group, in order (0: not graded yet)."""
        return [self.marks[s].version if s in self.marks else 0 for s in self.group.students]

    def find(self, same_as: str, size: int) -> answers.Group:
        """The group a form was filled in for, as it is now; ``StudentError`` if it changed meanwhile."""
        for group in self.groups:
            if group.same_as == same_as and len(group.answers) == size:
                return group
        raise StudentError(
            "the answers of this group changed since the page was opened (a student submitted again): nothing was "
            "saved; open the question again"
        )


def written(course_root: Path, assignment: str) -> dict[str, rubrics.WrittenCell]:
    return rubrics.written_cells(answers.source(course_root, assignment))


def overview(store: Store, course_root: Path, assignment: str) -> list[Summary]:
    """Each written question of ``assignment``: its answers, how many are graded, in how many groups."""
    found = []
    shown = released(store, assignment)
    given_out = shares.of_assignment(store, assignment)
    for cell in written(course_root, assignment).values():
        given = [a for a in answers.read(course_root, assignment, cell.grade_id) if not a.blank]
        apart = splits(store, assignment, cell.grade_id)
        marked = recorded.marks(store, assignment, cell.grade_id)
        found.append(
            Summary(
                cell.grade_id,
                cell.points,
                len(given),
                sum(1 for a in given if a.student in marked),
                len(answers.groups(given, apart)),
                cell.grade_id in shown,
                shown.get(cell.grade_id),
                tuple(s for s in given_out if s.cell == cell.grade_id),
            )
        )
    return found


def splits(store: Store, assignment: str, cell: str) -> set[str]:
    """The students whose answer to ``cell`` a TA took out of its group of identical answers."""
    t = tables.answer_splits
    with store.reader.connect() as conn:
        rows = conn.execute(sa.select(t.c.student).where(t.c.assignment == assignment, t.c.cell == cell))
        return set(rows.scalars())


def split(store: Store, assignment: str, cell: str, student: str, actor: str) -> None:
    """Grade ``student``'s answer to ``cell`` on its own from now on (its mark, if any, stays)."""
    t = tables.answer_splits
    if student in splits(store, assignment, cell):
        return
    with store.transaction() as conn:
        conn.execute(
            sa.insert(t).values(
                assignment=assignment, cell=cell, student=student, split_by=actor, split_at=tables.now()
            )
        )


def released(store: Store, assignment: str) -> dict[str, dt.datetime | None]:
    """The questions of ``assignment`` released to students, with until when regrades may be asked."""
    t = tables.mark_releases
    with store.reader.connect() as conn:
        rows = conn.execute(sa.select(t.c.cell, t.c.regrades_until).where(t.c.assignment == assignment))
        return {row.cell: row.regrades_until for row in rows}


def show(
    store: Store,
    course_root: Path,
    assignment: str,
    cell: str,
    index: int = 0,
    student: str | None = None,
    same_as: str | None = None,
    share: Share | None = None,
) -> Shown | None:
    """Group ``index`` (clamped; or the group of ``student``'s answer, or the group ``same_as``) of the answers to
    ``cell``, with the rubric and the marks; only the groups of ``share`` (a TA's) if given; None: no answer."""
    rubric = recorded.rubric(store, course_root, assignment, cell)
    given = (a for a in answers.read(course_root, assignment, cell) if not a.blank)
    every = tuple(answers.groups(given, splits(store, assignment, cell)))
    groups = every if share is None else tuple(g for g in every if any(share.covers(s) for s in g.students))
    if not groups:
        return None
    if student is not None:
        index = next((i for i, g in enumerate(groups) if student in g.students), index)
    if same_as is not None:
        index = next((i for i, g in enumerate(groups) if g.same_as == same_as), index)
    index = min(max(index, 0), len(groups) - 1)
    members = set(groups[index].students)
    history = tuple(c for c in recorded.history(store, assignment, cell) if c.student in members)
    marked = recorded.marks(store, assignment, cell)
    return Shown(assignment, rubric, index, groups, marked, history, share, len(every))
