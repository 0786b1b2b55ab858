"""Regrade requests: after a written answer's grade is released, its student may ask once for it to be looked at.

The scheme, up front:

- A request names one released question and gives a reason. It is accepted only while the question is released
  and before the regrade deadline staff set when releasing it (``release``), and only once per student and
  question (a unique row: two tabs asking at once make one request, the other is told it exists).
- Staff see the open requests as a queue, oldest first, reply in words and may change the grade on the
  grading page (``marks.save``: the audit shows the change). The reply records the score at that moment, so both
  sides see what the request changed. A reply closes the request; it can be edited, never removed.
- Nothing a request does changes a score by itself.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from ...errors import NotFound, RegradeAlreadyAsked, RegradeRefused, StudentError
from ..records import tables
from ..records.store import Store
from ..rules import written as rule

MAX_TEXT = 4000  # characters of a reason or a reply


@dataclass(frozen=True)
class Request:
    id: int
    assignment: str
    cell: str
    student: str
    reason: str
    asked_at: dt.datetime
    score_asked: float | None
    reply: str | None
    replied_by: str | None
    replied_at: dt.datetime | None
    score_replied: float | None

    @property
    def open(self) -> bool:
        return self.reply is None

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "reason": self.reason,
            "asked_at": f"{self.asked_at:%Y-%m-%d %H:%M} UTC",
            "score_asked": self.score_asked,
            "reply": self.reply,
            "replied_at": None if self.replied_at is None else f"{self.replied_at:%Y-%m-%d %H:%M} UTC",
            "score_replied": self.score_replied,
        }


def ask(store: Store, assignment: str, cell: str, student: str, reason: str, now: dt.datetime | None = None) -> Request:
    """``student`` asks for a regrade of their answer to ``cell``; refused with one sentence when it may not be."""
    text = _text(reason, "the reason for your request", "say in a sentence or two what you think was graded wrongly")
    at = now or tables.now()
    question = rule.written(store, assignment, student).question(cell)
    if question is None:
        raise NotFound(f"{assignment} has no written-answer question {cell!r}")
    if not question.released:
        raise RegradeRefused(
            f"the grade of {cell} ({assignment}) has not been released: there is nothing to regrade yet"
        )
    if question.regrades_until is None:
        raise RegradeRefused(f"staff did not open regrade requests for {cell} ({assignment})")
    if at > question.regrades_until:
        raise RegradeRefused(
            f"regrade requests for {cell} ({assignment}) closed at {question.regrades_until:%Y-%m-%d %H:%M} UTC"
        )
    t = tables.regrade_requests
    try:
        with store.transaction() as conn:
            ident = conn.execute(
                sa.insert(t).values(
                    assignment=assignment,
                    cell=cell,
                    student=student,
                    reason=text,
                    asked_at=at,
                    score_asked=question.points,
                )
            ).inserted_primary_key[0]  # type: ignore[index]
    except IntegrityError:
        before = next(r for r in of_student(store, student) if (r.assignment, r.cell) == (assignment, cell))
        raise RegradeAlreadyAsked(
            f"you asked for a regrade of {cell} ({assignment}) on {before.asked_at:%Y-%m-%d %H:%M} UTC already: "
            f"one request per question"
        ) from None
    found = get(store, int(ident))
    assert found is not None
    return found


def reply(store: Store, ident: int, actor: str, text: str, now: dt.datetime | None = None) -> Request:
    """Staff's reply to request ``ident`` (closing it, or editing the reply), with the question's score now."""
    words = _text(text, "the reply", "say what was looked at and what, if anything, changed")
    request = get(store, ident)
    if request is None:
        raise NotFound(f"no regrade request {ident}")
    score = rule.written(store, request.assignment, request.student).question(request.cell)
    t = tables.regrade_requests
    with store.transaction() as conn:
        conn.execute(
            sa.update(t)
            .where(t.c.id == ident)
            .values(
                reply=words,
                replied_by=actor,
                replied_at=now or tables.now(),
                score_replied=None if score is None else score.points,
            )
        )
    found = get(store, ident)
    assert found is not None
    return found


def get(store: Store, ident: int) -> Request | None:
    found = _read(store, tables.regrade_requests.c.id == ident)
    return found[0] if found else None


def queue(store: Store, *, open_only: bool = True) -> list[Request]:
    """The requests staff answer, oldest first (the open ones only, unless ``open_only`` is False)."""
    t = tables.regrade_requests
    return _read(store, t.c.reply.is_(None) if open_only else sa.true())


def of_student(store: Store, student: str) -> list[Request]:
    return _read(store, tables.regrade_requests.c.student == student)


def _read(store: Store, where: sa.ColumnElement[bool]) -> list[Request]:
    t = tables.regrade_requests
    with store.reader.connect() as conn:
        rows = conn.execute(sa.select(t).where(where).order_by(t.c.asked_at, t.c.id))
        return [
            Request(
                row.id,
                row.assignment,
                row.cell,
                row.student,
                row.reason,
                row.asked_at,
                row.score_asked,
                row.reply,
                row.replied_by,
                row.replied_at,
                row.score_replied,
            )
            for row in rows
        ]


def _text(value: str, what: str, hint: str) -> str:
    text = value.strip()
    if not text:
        raise StudentError(f"{what} is empty: {hint}")
    if len(text) > MAX_TEXT:
        raise StudentError(f"{what} is {len(text)} characters long: keep it under {MAX_TEXT}")
    return text
