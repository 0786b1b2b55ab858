"""Marks: the rubric items a TA applied to one student's written answer, and the score they give.

The scheme, up front:

- A question's rubric is the instructor's (``source/<assignment>/rubrics.toml``, ``grader.rubrics``) with the
  edits staff made since (``grader_rubric_items``): an item's points or text changed here applies to every
  answer it was applied to (``change_item``: a preview says how many scores change and by how much; nothing is
  written until it is confirmed).
- A mark (``grader_marks``) is the keys applied to one student's answer, a free adjustment and comment, who
  saved it and when, the answer's digest when it was marked, and a version. Saving names the version the TA
  started from (``expected``): if another TA saved meanwhile, ``MarkConflict`` carries both sides and nothing
  is written; the TA chooses and saves again with the new version.
- The score is ``Rubric.score`` of the applied keys, written to nbgrader's own gradebook (the grade's
  ``manual_score`` and the comment's ``manual_comment``), the rows stock formgrader and ``nbgrader export``
  read. The comment lists the items applied, so formgrader and nbgrader's feedback show them.
- Every change is a row of ``grader_mark_audit``: who, when, which student and question, the items applied
  and removed, and the score before and after.
- Saving several students at once (a group of identical answers) is one transaction: all or nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import rubrics
from ...errors import AuthoringError, MarkConflict, NotFound
from ..grading.gradebook import bound
from ..records import tables
from ..records.store import Store
from . import answers


@dataclass(frozen=True)
class Mark:
    assignment: str
    cell: str
    student: str
    notebook: str
    items: tuple[str, ...]
    adjustment: float
    comment: str
    score: float
    digest: str
    version: int
    marked_by: str
    marked_at: dt.datetime
    answer: str | None = None  # the answer's text when it was marked


@dataclass(frozen=True)
class Change:
    """One entry of the audit: a mark saved, or re-scored by an item's edit."""

    at: dt.datetime
    actor: str
    student: str
    cell: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    old_score: float | None
    new_score: float | None
    what: str
    previous_answer: str | None = None  # the answer was changed by a new attempt: what it said when marked


@dataclass(frozen=True)
class ScoreChange:
    student: str
    old: float
    new: float


@dataclass(frozen=True)
class ItemChange:
    """What editing an item does: the item before and after, and each score it changes."""

    cell: str
    before: rubrics.Item
    after: rubrics.Item
    scores: tuple[ScoreChange, ...]

    @property
    def summary(self) -> str:
        if not self.scores:
            return f"Item {self.before.key} of {self.cell} changes no score (no answer has it)."
        deltas = sorted({round(s.new - s.old, 6) for s in self.scores})
        by = ", ".join(f"{d:+g}" for d in deltas)
        return f"{len(self.scores)} score(s) of {self.cell} change, by {by} point(s)."


def rubric(store: Store, course_root: Path, assignment: str, cell: str) -> rubrics.Rubric:
    """The question's rubric as staff use it now: the instructor's file with the items edited since."""
    try:
        loaded = rubrics.load(course_root, assignment, answers.source(course_root, assignment))
    except rubrics.RubricError as error:  # the instructor's file, changed while the service runs: say what to fix
        raise AuthoringError(
            f"the rubrics of {assignment} cannot be used, so nothing can be graded or saved: {error}. Fix "
            f"source/{assignment}/{rubrics.FILENAME} (`grader validate {assignment}` lists the same problems)"
        ) from None
    if cell not in loaded:
        raise NotFound(f"{assignment} has no written-answer question {cell!r} (it has: {', '.join(loaded)})")
    base = loaded[cell]
    with store.engine.connect() as conn:
        edited = {
            row.key: rubrics.Item(row.key, row.points, row.text)
            for row in conn.execute(
                sa.select(tables.rubric_items).where(
                    tables.rubric_items.c.assignment == assignment, tables.rubric_items.c.cell == cell
                )
            )
        }
    return dataclasses.replace(base, items=tuple(edited.get(i.key, i) for i in base.items))


def marks(store: Store, assignment: str, cell: str, student: str | None = None) -> dict[str, Mark]:
    """Every student's mark on one question (or only ``student``'s), by student."""
    with store.engine.connect() as conn:
        return {m.student: m for m in _marks(conn, assignment, cell, student)}


def save(
    store: Store,
    grading: rubrics.Rubric,
    *,
    assignment: str,
    answers: Sequence[Any],
    items: Sequence[str],
    adjustment: float = 0.0,
    comment: str = "",
    actor: str,
    expected: Mapping[str, int],
    now: dt.datetime | None = None,
) -> list[Mark]:
    """Apply ``items`` (keys), ``adjustment`` and ``comment`` to each of ``answers`` (``answers.Answer``: one, or
    a group of identical ones) and write the score to nbgrader's gradebook. ``expected``: each student's mark
    version the TA started from (0: none yet). All or nothing: ``MarkConflict`` if another TA saved meanwhile."""
    keys = tuple(dict.fromkeys(items))
    unknown = [key for key in keys if key not in {i.key for i in grading.items}]
    if unknown:
        have = ", ".join(i.key for i in grading.items)
        raise NotFound(f"{grading.cell} has no rubric item with key {unknown[0]!r} (it has {have})")
    at = now or _now()
    score = grading.score(keys, adjustment)
    saved: list[Mark] = []
    with bound(store) as (conn, gradebook):
        current = {m.student: m for m in _marks(conn, assignment, grading.cell)}
        for answer in answers:
            before = current.get(answer.student)
            version = before.version if before else 0
            if version != expected.get(answer.student, 0):
                assert before is not None
                raise MarkConflict(answer.student, grading.cell, before, expected.get(answer.student, 0))
            mark = Mark(
                assignment,
                grading.cell,
                answer.student,
                answer.notebook,
                keys,
                adjustment,
                comment,
                score,
                answer.digest,
                version + 1,
                actor,
                at,
                answer.text,
            )
            _put(conn, mark, before)
            _audit(conn, mark, before, "marked")
            _to_gradebook(gradebook, mark, grading)
            saved.append(mark)
    return saved


def change_item(
    store: Store,
    grading: rubrics.Rubric,
    *,
    assignment: str,
    key: str,
    points: float | None = None,
    text: str | None = None,
    actor: str,
    confirm: bool = False,
    now: dt.datetime | None = None,
) -> ItemChange:
    """Edit one item of a question's rubric. Without ``confirm``, only says which scores would change; with it,
    stores the item and re-scores every answer it was applied to (nbgrader's gradebook and the audit too)."""
    before = grading.item(key)
    after = rubrics.Item(
        key, before.points if points is None else float(points), before.text if text is None else text.strip()
    )
    if not after.text:
        raise ValueError("an item needs a text saying what it rewards or deducts")
    edited = dataclasses.replace(grading, items=tuple(after if i.key == key else i for i in grading.items))
    with store.engine.connect() as conn:
        applied = [m for m in _marks(conn, assignment, grading.cell) if key in m.items]
    scores = tuple(
        ScoreChange(m.student, m.score, new) for m in applied if (new := edited.score(m.items, m.adjustment)) != m.score
    )
    change = ItemChange(grading.cell, before, after, scores)
    if not confirm:
        return change
    at = now or _now()
    with bound(store) as (conn, gradebook):
        _put_item(conn, assignment, grading.cell, after)
        for mark in _marks(conn, assignment, grading.cell):
            if key not in mark.items:
                continue
            rescored = dataclasses.replace(
                mark, score=edited.score(mark.items, mark.adjustment), version=mark.version + 1, marked_at=at
            )
            _put(conn, rescored, mark)
            what = f"item {key} edited by {actor}: {before.points:g} -> {after.points:g} points"
            if after.text != before.text:
                what += f", text {before.text!r} -> {after.text!r}"
            _audit(conn, dataclasses.replace(rescored, marked_by=actor), mark, what)
            _to_gradebook(gradebook, rescored, edited)
    return change


def history(store: Store, assignment: str, cell: str, student: str | None = None) -> list[Change]:
    """The audit of one question (of one student's answer), oldest first."""
    audit = tables.mark_audit
    query = sa.select(audit).where(audit.c.assignment == assignment, audit.c.cell == cell)
    if student is not None:
        query = query.where(audit.c.student == student)
    with store.engine.connect() as conn:
        return [
            Change(
                row.at,
                row.actor,
                row.student,
                row.cell,
                tuple(json.loads(row.added)),
                tuple(json.loads(row.removed)),
                row.old_score,
                row.new_score,
                row.what,
                row.previous_answer,
            )
            for row in conn.execute(query.order_by(audit.c.id))
        ]


def comment_text(mark: Mark, grading: rubrics.Rubric) -> str:
    """The comment nbgrader keeps for the cell: each applied item with its points, then the TA's own words."""
    lines = [f"[{i.points:+g}] {i.text}" for i in grading.items if i.key in mark.items]
    if mark.adjustment:
        lines.append(f"[{mark.adjustment:+g}] adjustment")
    if mark.comment.strip():
        lines.append(mark.comment.strip())
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- storage


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def _marks(conn: Connection, assignment: str, cell: str, student: str | None = None) -> list[Mark]:
    t = tables.marks
    query = sa.select(t).where(t.c.assignment == assignment, t.c.cell == cell)
    if student is not None:
        query = query.where(t.c.student == student)
    rows = conn.execute(query.order_by(t.c.student))
    return [
        Mark(
            row.assignment,
            row.cell,
            row.student,
            row.notebook,
            tuple(json.loads(row.items)),
            row.adjustment,
            row.comment,
            row.score,
            row.digest,
            row.version,
            row.marked_by,
            row.marked_at,
            row.answer,
        )
        for row in rows
    ]


def _put(conn: Connection, mark: Mark, before: Mark | None) -> None:
    t = tables.marks
    values = {
        "notebook": mark.notebook,
        "items": json.dumps(list(mark.items)),
        "adjustment": mark.adjustment,
        "comment": mark.comment,
        "score": mark.score,
        "digest": mark.digest,
        "version": mark.version,
        "marked_by": mark.marked_by,
        "marked_at": mark.marked_at,
        "answer": mark.answer,
    }
    if before is None:
        conn.execute(sa.insert(t).values(assignment=mark.assignment, cell=mark.cell, student=mark.student, **values))
        return
    done = conn.execute(
        sa.update(t)
        .where(t.c.assignment == mark.assignment, t.c.cell == mark.cell, t.c.student == mark.student)
        .where(t.c.version == before.version)
        .values(**values)
    )
    if done.rowcount != 1:  # another transaction saved between our read and this write
        raise MarkConflict(mark.student, mark.cell, before, before.version)


def _put_item(conn: Connection, assignment: str, cell: str, item: rubrics.Item) -> None:
    t = tables.rubric_items
    where = (t.c.assignment == assignment, t.c.cell == cell, t.c.key == item.key)
    if conn.execute(sa.update(t).where(*where).values(points=item.points, text=item.text)).rowcount == 0:
        conn.execute(
            sa.insert(t).values(assignment=assignment, cell=cell, key=item.key, points=item.points, text=item.text)
        )


def _audit(conn: Connection, mark: Mark, before: Mark | None, what: str) -> None:
    old = set(before.items) if before else set()
    conn.execute(
        sa.insert(tables.mark_audit).values(
            at=mark.marked_at,
            actor=mark.marked_by,
            assignment=mark.assignment,
            cell=mark.cell,
            student=mark.student,
            added=json.dumps(sorted(set(mark.items) - old)),
            removed=json.dumps(sorted(old - set(mark.items))),
            old_score=before.score if before else None,
            new_score=mark.score,
            what=what,
        )
    )


def _to_gradebook(gradebook: Any, mark: Mark, grading: rubrics.Rubric) -> None:
    """The score and comment in nbgrader's own rows, as formgrader writes them."""
    from nbgrader.api import MissingEntry

    try:
        grade = gradebook.find_grade(mark.cell, mark.notebook, mark.assignment, mark.student)
        comment = gradebook.find_comment(mark.cell, mark.notebook, mark.assignment, mark.student)
    except MissingEntry:
        raise NotFound(
            f"nbgrader's gradebook has no {mark.cell} of {mark.assignment} for {mark.student}: "
            f"only an autograded submission's answers can be graded"
        ) from None
    grade.manual_score = mark.score
    grade.needs_manual_grade = False
    comment.manual_comment = comment_text(mark, grading)
