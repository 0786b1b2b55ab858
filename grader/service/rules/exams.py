"""Timed exams: the one place a student's exam end is computed, and what is admitted before and after it.

The scheme, up front:

- An assignment is an exam when ``c.GraderService.exams`` names it (``parse``: a window ``opens``-``closes``,
  UTC, a ``duration_minutes`` counted from each student's own start, ``grace_minutes`` after it, whether the
  visible tests may be used, whether scores are shown before staff release them, an optional honour statement).
  A setting that cannot be used stops the service at start with one sentence per problem.
- Accommodations (``grader_accommodations``): per student, for one exam or every exam (``assignment`` empty), a
  time multiplier, extra minutes and an individual window. ``import_csv`` takes the file a disability office
  sends (student id, multiplier, extra minutes, note; optional opens, closes, assignment), all or nothing.
- A student starts their exam once (``start``; a second start returns the first): the server's clock fixes
  their end, ``start + duration x multiplier + extra``, never after their window closes. A wrong laptop clock
  changes nothing; a restart changes nothing (the end is stored).
- ``admit`` is what intake asks of every submission to an exam: refused before the student started, and after
  their end plus the grace, with one sentence saying when their exam ended. Staff may give one student more
  time during the exam (``extend``), which moves the stored end.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ...errors import ConfigurationError, ExamRefused, StudentError
from ..records import tables
from ..records.store import Store

SETTINGS = {
    "opens",
    "closes",
    "duration_minutes",
    "grace_minutes",
    "checks_allowed",
    "scores_before_release",
    "honour",
}


@dataclass(frozen=True)
class Exam:
    assignment: str
    opens: dt.datetime  # naive UTC
    closes: dt.datetime
    duration: dt.timedelta
    grace: dt.timedelta
    checks_allowed: bool = False
    scores_before_release: bool = False
    honour: str = ""  # a statement the student accepts before the clock starts; empty: none


@dataclass(frozen=True)
class Accommodation:
    student: str
    assignment: str  # "": every exam
    multiplier: float
    extra: dt.timedelta
    opens: dt.datetime | None
    closes: dt.datetime | None
    note: str


@dataclass(frozen=True)
class Start:
    assignment: str
    student: str
    started_at: dt.datetime
    ends_at: dt.datetime  # the end of the student's time; submissions until ends_at + grace
    honour_at: dt.datetime | None


def parse(raw: Mapping[str, Any]) -> dict[str, Exam]:
    """``c.GraderService.exams`` as exams; ``ConfigurationError`` with one sentence per problem."""
    found: dict[str, Exam] = {}
    problems: list[str] = []
    for assignment, settings in raw.items():
        where = f"GraderService.exams[{assignment!r}]"
        if not isinstance(settings, Mapping):
            problems.append(f"{where} must be a dict of settings ({', '.join(sorted(SETTINGS))})")
            continue
        unknown = sorted(set(settings) - SETTINGS)
        if unknown:
            problems.append(f"{where} has unknown setting(s) {unknown}; known: {sorted(SETTINGS)}")
        opens = _when(settings.get("opens"), f"{where}['opens']", problems)
        closes = _when(settings.get("closes"), f"{where}['closes']", problems)
        minutes = _float_of(settings.get("duration_minutes"))
        if minutes is None or minutes <= 0:
            given = settings.get("duration_minutes")
            problems.append(f"{where} needs duration_minutes, a number of minutes above 0 (it has {given!r})")
        grace = _float_of(settings.get("grace_minutes", 0))
        if grace is None or grace < 0:
            problems.append(
                f"{where}['grace_minutes'] must be 0 or more minutes (it has {settings.get('grace_minutes')!r})"
            )
        if opens and closes and closes <= opens:
            problems.append(
                f"{where}: the window closes ({closes:%Y-%m-%d %H:%M}) before it opens ({opens:%Y-%m-%d %H:%M})"
            )
        flags = {k: settings.get(k, False) for k in ("checks_allowed", "scores_before_release")}
        problems += [
            f"{where}['{k}'] must be True or False, not {v!r}" for k, v in flags.items() if not isinstance(v, bool)
        ]
        honour = settings.get("honour", "")
        if not isinstance(honour, str):
            problems.append(f"{where}['honour'] must be the statement's text, not {honour!r}")
        if opens and closes and minutes is not None and minutes > 0 and grace is not None and grace >= 0:
            found[assignment] = Exam(
                assignment,
                opens,
                closes,
                dt.timedelta(minutes=minutes),
                dt.timedelta(minutes=grace),
                bool(flags["checks_allowed"]),
                bool(flags["scores_before_release"]),
                honour if isinstance(honour, str) else "",
            )
    if problems:
        raise ConfigurationError("; ".join(problems))
    return found


def end_of(exam: Exam, accommodation: Accommodation | None, started: dt.datetime) -> dt.datetime:
    """The end of a student's time: their start plus the duration times their multiplier plus their extra
    minutes, never after their window closes."""
    multiplier = accommodation.multiplier if accommodation else 1.0
    extra = accommodation.extra if accommodation else dt.timedelta(0)
    closes = accommodation.closes if accommodation and accommodation.closes else exam.closes
    return min(started + exam.duration * multiplier + extra, closes)


def window(exam: Exam, accommodation: Accommodation | None) -> tuple[dt.datetime, dt.datetime]:
    """When the student may start: the exam's window, or their own."""
    if accommodation is None:
        return exam.opens, exam.closes
    return accommodation.opens or exam.opens, accommodation.closes or exam.closes


def accommodation(store: Store, student: str, assignment: str) -> Accommodation | None:
    """The student's accommodation for ``assignment``: one for this exam, else one for every exam, else None."""
    t = tables.accommodations
    with store.reader.connect() as conn:
        rows = sorted(  # this exam's first, then the one for every exam
            conn.execute(sa.select(t).where(t.c.student == student, t.c.assignment.in_([assignment, ""]))),
            key=lambda row: row.assignment == "",
        )
    return _accommodation(rows[0]) if rows else None


def start(
    store: Store,
    exam: Exam,
    student: str,
    now: dt.datetime,
    *,
    honour: bool = False,
    address: str = "",
    agent: str = "",
) -> Start:
    """Start ``student``'s exam now (or return the start they made); refused outside their window, or without the
    honour statement when the exam has one."""
    found = started(store, exam.assignment, student)
    if found is not None:
        return found
    own = accommodation(store, student, exam.assignment)
    opens, closes = window(exam, own)
    if now < opens:
        raise ExamRefused(f"{exam.assignment} opens at {opens:%Y-%m-%d %H:%M} UTC: you cannot start it before then")
    if now >= closes:
        raise ExamRefused(
            f"the window of {exam.assignment} closed at {closes:%Y-%m-%d %H:%M} UTC: it can no longer be started"
        )
    if exam.honour and not honour:
        raise StudentError(f"accept the honour statement of {exam.assignment} to start it: {exam.honour}")
    ends = end_of(exam, own, now)
    t = tables.exam_starts
    try:
        with store.transaction() as conn:
            conn.execute(
                sa.insert(t).values(
                    assignment=exam.assignment,
                    student=student,
                    started_at=now,
                    ends_at=ends,
                    honour_at=now if exam.honour else None,
                    address=address[:64],
                    agent=agent[:256],
                )
            )
            _event(
                conn, exam.assignment, student, now, "start", student, f"ends {ends:%Y-%m-%d %H:%M:%S} UTC; {address}"
            )
    except sa.exc.IntegrityError:  # started in another tab at the same moment: that start counts
        pass
    made = started(store, exam.assignment, student)
    assert made is not None
    return made


def started(store: Store, assignment: str, student: str) -> Start | None:
    t = tables.exam_starts
    with store.reader.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.assignment == assignment, t.c.student == student)).first()
    return None if row is None else Start(row.assignment, row.student, row.started_at, row.ends_at, row.honour_at)


def extend(store: Store, exam: Exam, student: str, minutes: object, actor: str, at: dt.datetime) -> Start:
    """Give ``student`` ``minutes`` more (a technical problem during the exam): their stored end moves."""
    more = _float_of(minutes)
    if more is None or more <= 0:
        raise StudentError(f"give a number of minutes above 0, not {minutes!r}")
    found = started(store, exam.assignment, student)
    if found is None:
        raise StudentError(f"{student} has not started {exam.assignment}: there is no end to move yet")
    t = tables.exam_starts
    ends = found.ends_at + dt.timedelta(minutes=more)
    with store.transaction() as conn:
        conn.execute(sa.update(t).where(t.c.assignment == exam.assignment, t.c.student == student).values(ends_at=ends))
        _event(conn, exam.assignment, student, at, "extend", actor, f"+{more:g} min: ends {ends:%Y-%m-%d %H:%M:%S} UTC")
    return Start(found.assignment, found.student, found.started_at, ends, found.honour_at)


def admit(store: Store, exams: Mapping[str, Exam], student: str, assignment: str, when: dt.datetime) -> None:
    """Refuse a submission to an exam the student has not started, or made after their end plus the grace."""
    exam = exams.get(assignment)
    if exam is None:
        return
    found = started(store, assignment, student)
    if found is None:
        raise ExamRefused(f"{assignment} is an exam: start it first (Start exam on your page of the service, /me)")
    if when > found.ends_at + exam.grace:
        with store.transaction() as conn:
            _event(conn, assignment, student, when, "refused", student, "a submission after the end and the grace")
        raise ExamRefused(
            f"your exam {assignment} ended at {found.ends_at:%Y-%m-%d %H:%M:%S} UTC"
            + (f" (and its {_minutes(exam.grace)} of grace)" if exam.grace else "")
            + ": this submission was not accepted; what you submitted before is kept"
        )


def import_csv(store: Store, text: str, students: set[str], exams: Mapping[str, Exam]) -> int:
    """Accommodations from a disability office's CSV (header: student_id, multiplier, extra_minutes, note; optional
    assignment, opens, closes), all or nothing: one bad line rejects the file with a sentence per bad line.
    A student's accommodation for the same exam (or for every exam) is replaced. How many lines were stored."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = {name.strip() for name in reader.fieldnames or []}
    missing = sorted({"student_id", "multiplier", "extra_minutes"} - header)
    if missing:
        raise StudentError(f"the file has no column {', '.join(missing)}: its first line must name the columns")
    made: list[Accommodation] = []
    problems: list[str] = []
    for number, line in enumerate(reader, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in line.items()}
        student, assignment = row.get("student_id", ""), row.get("assignment", "")
        bad = []
        if student not in students:
            bad.append(f"no student {student!r} in the course")
        if assignment and assignment not in exams:
            bad.append(f"{assignment!r} is not an exam")
        multiplier = _float(row.get("multiplier", "") or "1")
        if multiplier is None or multiplier <= 0:
            bad.append(f"the multiplier must be a number above 0, not {row.get('multiplier')!r}")
        extra = _float(row.get("extra_minutes", "") or "0")
        if extra is None or extra < 0:
            bad.append(f"extra_minutes must be 0 or more, not {row.get('extra_minutes')!r}")
        own = [_when(row.get(k) or None, k, bad) if row.get(k) else None for k in ("opens", "closes")]
        if own[0] and own[1] and own[1] <= own[0]:
            bad.append("its window closes before it opens")
        if bad:
            problems.append(f"line {number}: " + "; ".join(bad))
            continue
        assert multiplier is not None and extra is not None
        made.append(
            Accommodation(
                student, assignment, multiplier, dt.timedelta(minutes=extra), own[0], own[1], row.get("note", "")
            )
        )
    if problems:
        raise StudentError("nothing was imported: " + " ".join(f"{p}." for p in problems))
    t = tables.accommodations
    with store.transaction() as conn:
        for one in made:
            conn.execute(sa.delete(t).where(t.c.student == one.student, t.c.assignment == one.assignment))
            conn.execute(
                sa.insert(t).values(
                    student=one.student,
                    assignment=one.assignment,
                    multiplier=one.multiplier,
                    extra_minutes=one.extra.total_seconds() / 60,
                    opens=one.opens,
                    closes=one.closes,
                    note=one.note,
                )
            )
    return len(made)


def events(store: Store, assignment: str, student: str) -> list[tuple[dt.datetime, str, str, str]]:
    """The student's exam history, oldest first: when (server time), what, who, and the detail."""
    t = tables.exam_events
    query = sa.select(t).where(t.c.assignment == assignment, t.c.student == student).order_by(t.c.id)
    with store.reader.connect() as conn:
        return [(row.at, row.kind, row.actor, row.detail) for row in conn.execute(query)]


def _event(conn: Any, assignment: str, student: str, at: dt.datetime, kind: str, actor: str, detail: str) -> None:
    conn.execute(
        sa.insert(tables.exam_events).values(
            assignment=assignment, student=student, at=at, kind=kind, actor=actor, detail=detail
        )
    )


def _accommodation(row: Any) -> Accommodation:
    return Accommodation(
        row.student,
        row.assignment,
        float(row.multiplier),
        dt.timedelta(minutes=float(row.extra_minutes)),
        row.opens,
        row.closes,
        row.note,
    )


def _when(value: Any, what: str, problems: list[str]) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        problems.append(f"{what} must be a date and time like 2026-12-10T09:00 (UTC), not {value!r}")
        return None
    return parsed.astimezone(dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float_of(value: Any) -> float | None:
    """A number from the settings (not a bool, not infinite), else None."""
    return float(value) if _number(value) else None


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _minutes(delta: dt.timedelta) -> str:
    minutes = delta.total_seconds() / 60
    return f"{minutes:g} minute" + ("" if minutes == 1 else "s")
