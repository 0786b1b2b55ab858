"""The score outbox: every change of a student's counting final score, kept in the database until the LMS has it.

``record`` is the one way in: the ``after_record`` hook ``lti-ags`` calls it after every recorded
grade (a first grade, a resubmission, a regrade: a regrade is a recorded grade). It reads the
counting final score (``rules.counting``) with the released written answers' points (``rules.written``: while
a written answer is ungraded or unreleased the score goes as ``PendingManual``, then ``FullyGraded``) and
inserts one row; no HTTP happens there, so grading
never waits for the LMS. Extensions, due dates and the late policy change a score only through a
regrade (the penalty is recorded with the grade), so they arrive by the hook too. What changes the
counting score without a recorded grade (a regrade that fails for good, so another attempt counts;
the counting rule changed between two starts; written answers' grades released or changed) is found by
``reconcile``, which the sender runs at
start and every ``RECONCILE_S``, and which calls ``record`` as well.

``drain`` sends (``ags.send``), one sender at a time across processes (a lease in
``grader_settings``): ``grader serve``'s background ``Sender``, or ``grader lti send-scores``.
Per student and assignment only the newest pending score is sent, with the time it was recorded as
the AGS ``timestamp``; older pending ones are ``superseded``, and none older than one already sent
is ever sent after it. The LMS down, timing out or answering 5xx (``LmsError``): the row stays
``pending``, its attempts counted and its next try put off (``lti_retry_s``, doubling up to
``lti_retry_max_s``). A refusal (``LmsRefused``: a 4xx) is ``failed`` with the LMS's answer, which
the dashboard shows (``passback``).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ...errors import LmsError, LmsRefused
from ..records.store import DATABASE_ERRORS
from ..records.tables import lti_contexts, lti_members, lti_scores, now, settings
from ..rules import written
from ..rules.counting import counting, counting_attempt, final_score
from . import ags

if TYPE_CHECKING:
    from ..config import ServiceConfig
    from ..records.models import Recorded, Submission
    from ..records.store import Store

log = logging.getLogger("grader.service")

LEASE_KEY = "lti_score_sender"  # its row in grader_settings: who drains the outbox, until when
LEASE_S = 120.0  # a sender that died holding it delays sending by at most this long
RECONCILE_S = 300.0  # how often the sender compares the counting scores with what it last queued
WAKE = threading.Event()  # set by ``record``: the sender in this process looks at once


@dataclass(frozen=True)
class Drained:
    """What one ``drain`` did."""

    sent: int = 0
    failed: int = 0
    retrying: int = 0  # the LMS did not take them now: tried again later
    superseded: int = 0
    busy: bool = False  # another process holds the sender's lease: nothing was done here

    def words(self) -> str:
        if self.busy:
            return "another sender (grader serve, or another grader lti send-scores) is sending the scores now"
        return (
            f"sent {self.sent}, failed {self.failed}, still pending {self.retrying}, "
            f"superseded by a newer score {self.superseded}"
        )


@dataclass(frozen=True)
class Passback:
    """Where a student's score of one assignment stands with the LMS (the newest one that matters)."""

    student: str
    assignment: str
    status: str  # pending | sent | failed
    score_given: float
    score_maximum: float
    grading_progress: str
    recorded_at: dt.datetime
    attempts: int
    next_try_at: dt.datetime
    error: str
    sent_at: dt.datetime | None


def record(store: Store, config: ServiceConfig, student: str, assignment: str) -> int | None:
    """Queue the student's counting final score of ``assignment`` for the LMS; the outbox row's id, or None
    when no attempt counts (nothing to send)."""
    at = now()  # taken before the read: a later reader of a newer state always has a later timestamp
    counts = counting_attempt(store, config, student, assignment)
    if counts is None:
        return None
    total = _total(store, counts)
    with store.engine.begin() as conn:
        ident = conn.execute(
            lti_scores.insert().values(
                student=student,
                assignment=assignment,
                score_given=total.given,
                score_maximum=total.maximum,
                activity_progress="Completed",
                grading_progress=total.grading_progress,
                recorded_at=at,
                status="pending",
                attempts=0,
                next_try_at=at,
                error="",
            )
        ).inserted_primary_key[0]  # type: ignore[index]
    WAKE.set()
    return int(ident)


def _total(store: Store, counts: Submission) -> written.Total:
    """The counting attempt's final score with the written answers' released points (``rules.written``)."""
    return written.combined(
        final_score(counts.score, counts.late_penalty),
        float(counts.max_score or 0.0),
        written.written(store, counts.assignment, counts.student),
    )


def after_record(store: Store, config: ServiceConfig, recorded: Recorded) -> None:
    """``after_record`` hook ``lti-ags``: queue the counting final score after this recorded grade."""
    record(store, config, recorded.submission.student, recorded.submission.assignment)


def backoff(config: ServiceConfig, attempts: int) -> float:
    """Seconds before the next try after ``attempts`` failed ones: ``lti_retry_s``, doubling, at most
    ``lti_retry_max_s``."""
    return float(min(config.lti_retry_s * 2 ** max(0, attempts - 1), config.lti_retry_max_s))


def drain(engine: Engine, config: ServiceConfig, everything: bool = False, holder: str = "") -> Drained:
    """Send what is due (``everything``: every pending score, whatever its next try), one score per student and
    assignment, oldest change first; stops at the first ``LmsError`` (the LMS is down: the rest wait)."""
    holder = holder or f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
    if not _lease(engine, holder):
        return Drained(busy=True)
    sent = failed = retrying = superseded = 0
    try:
        for row in _due(engine, everything):
            if not _lease(engine, holder):
                break
            newest, older = _newest(engine, row.student, row.assignment)
            superseded += _supersede(engine, older)
            if newest is None:
                continue
            score = ags.Score(
                newest.student,
                newest.assignment,
                newest.score_given,
                newest.score_maximum,
                newest.activity_progress,
                newest.grading_progress,
                newest.recorded_at,
            )
            try:
                ags.send(engine, score)
            except LmsRefused as error:
                _finish(engine, newest.id, "failed", str(error))
                failed += 1
                log.warning("grade passback of %s/%s failed: %s", newest.student, newest.assignment, error)
            except DATABASE_ERRORS:
                raise  # the database is away: the sender tries again later, nothing is lost
            except LmsError as error:
                attempts = newest.attempts + 1
                wait = backoff(config, attempts)
                with engine.begin() as conn:
                    conn.execute(
                        lti_scores.update()
                        .where(lti_scores.c.id == newest.id)
                        .values(attempts=attempts, error=str(error), next_try_at=now() + dt.timedelta(seconds=wait))
                    )
                what = f"{newest.student}/{newest.assignment}"
                log.warning("grade passback of %s: %s; trying again in %.3g s", what, error, wait)
                retrying += 1
                break
            except Exception as error:  # a bug (or an LMS answer nothing here expected): shown, not retried forever
                log.exception("grade passback of %s/%s: the sender failed", newest.student, newest.assignment)
                _finish(
                    engine,
                    newest.id,
                    "failed",
                    f"the grader failed sending this score ({type(error).__name__}: {error})",
                )
                failed += 1
            else:
                _finish(engine, newest.id, "sent", "")
                sent += 1
        with engine.connect() as conn:
            retrying = int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(lti_scores).where(lti_scores.c.status == "pending")
                ).scalar_one()
            )
    finally:
        _release(engine, holder)
    return Drained(sent, failed, retrying, superseded)


def passback(engine: Engine, student: str | None = None) -> dict[tuple[str, str], Passback]:
    """Per (student, assignment): the newest score that is not superseded, and how it stands."""
    query = sa.select(lti_scores).where(lti_scores.c.status != "superseded").order_by(lti_scores.c.id)
    if student is not None:
        query = query.where(lti_scores.c.student == student)
    found: dict[tuple[str, str], Any] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            key = (row.student, row.assignment)
            if key not in found or (row.recorded_at, row.id) >= (found[key].recorded_at, found[key].id):
                found[key] = row
    return {
        key: Passback(
            r.student,
            r.assignment,
            r.status,
            r.score_given,
            r.score_maximum,
            r.grading_progress,
            r.recorded_at,
            r.attempts,
            r.next_try_at,
            r.error or "",
            r.sent_at,
        )
        for key, r in found.items()
    }


def reconcile(store: Store, config: ServiceConfig) -> int:
    """Queue the counting final score of every student and assignment whose score was queued before and has
    changed since without a recorded grade (a regrade that failed for good, so another attempt counts; the
    counting rule changed between two starts), and of every active LMS-linked student whose score was never
    queued (graded before passback was turned on, or before the student was linked). A student with an attempt
    still being graded is left until it is recorded (the hook queues it then). How many were queued."""
    latest = passback(store.engine)
    linked = _linked(store.engine)
    attempts: dict[tuple[str, str], list[Submission]] = {}
    for submission in store.submissions():
        if (submission.student, submission.assignment) in latest or submission.student in linked:
            attempts.setdefault((submission.student, submission.assignment), []).append(submission)
    queued = 0
    for (student, assignment), own in attempts.items():
        if any(a.status in ("queued", "running") for a in own):
            continue
        counts = counting(own, config.counting)
        known = latest.get((student, assignment))
        if counts is None:
            continue
        total = _total(store, counts)
        if known is None or (total.given, total.maximum, total.grading_progress) != (
            known.score_given,
            known.score_maximum,
            known.grading_progress,
        ):
            queued += record(store, config, student, assignment) is not None
    return queued


class Sender:
    """``grader serve``'s background sender: drains the outbox when a score is queued, and every ``lti_retry_s``;
    looks for counting scores changed without a recorded grade (``reconcile``) at start and every
    ``RECONCILE_S``."""

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        self.store = store
        self.engine = store.engine
        self.config = config
        self.reconciled = -RECONCILE_S
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="grader-lti-scores", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        WAKE.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            WAKE.clear()
            try:
                if time.monotonic() - self.reconciled >= RECONCILE_S:
                    self.reconciled = time.monotonic()
                    reconcile(self.store, self.config)
                drain(self.engine, self.config)
            except Exception:  # the database away, a bug: logged, and the loop goes on (the rows are kept)
                log.exception("grade passback: the sender failed; trying again in %.0f s", self.config.lti_retry_s)
            WAKE.wait(self.config.lti_retry_s)


# --- the rows ---------------------------------------------------------------------------------------------


def _linked(engine: Engine) -> set[str]:
    """Course users linked to an active LMS user of a platform that has a course offering grade passback."""
    query = (
        sa.select(lti_members.c.user_id)
        .join(lti_contexts, lti_contexts.c.issuer == lti_members.c.issuer)
        .where(lti_members.c.status == "active", lti_contexts.c.lineitems_url.isnot(None))
    )
    with engine.connect() as conn:
        return set(conn.execute(query).scalars())


def _due(engine: Engine, everything: bool) -> list[Any]:
    """One pending row per student and assignment that has one due now, oldest first."""
    query = sa.select(lti_scores).where(lti_scores.c.status == "pending").order_by(lti_scores.c.id)
    if not everything:
        query = query.where(lti_scores.c.next_try_at <= now())
    seen: set[tuple[str, str]] = set()
    rows = []
    with engine.connect() as conn:
        for row in conn.execute(query):
            if (row.student, row.assignment) not in seen:
                seen.add((row.student, row.assignment))
                rows.append(row)
    return rows


def _newest(engine: Engine, student: str, assignment: str) -> tuple[Any | None, list[int]]:
    """The pending row to send for this student and assignment (None: none newer than what was sent), and the
    ids of the other pending rows, which it supersedes."""
    mine = (lti_scores.c.student == student, lti_scores.c.assignment == assignment)
    with engine.connect() as conn:
        pending = conn.execute(
            sa.select(lti_scores)
            .where(*mine, lti_scores.c.status == "pending")
            .order_by(lti_scores.c.recorded_at, lti_scores.c.id)
        ).fetchall()
        last_sent = conn.execute(
            sa.select(sa.func.max(lti_scores.c.recorded_at)).where(*mine, lti_scores.c.status == "sent")
        ).scalar()
    if not pending:
        return None, []
    newest = pending[-1]
    older = [r.id for r in pending[:-1]]
    if last_sent is not None and newest.recorded_at < last_sent:
        return None, [*older, newest.id]
    return newest, older


def _supersede(engine: Engine, ids: list[int]) -> int:
    if not ids:
        return 0
    with engine.begin() as conn:
        conn.execute(
            lti_scores.update()
            .where(lti_scores.c.id.in_(ids), lti_scores.c.status == "pending")
            .values(status="superseded", error="a newer score of this assignment was sent instead")
        )
    return len(ids)


def _finish(engine: Engine, ident: int, status: str, error: str) -> None:
    at = now()
    with engine.begin() as conn:
        conn.execute(
            lti_scores.update()
            .where(lti_scores.c.id == ident)
            .values(status=status, error=error, sent_at=at if status == "sent" else None, next_try_at=at)
        )


def _lease(engine: Engine, holder: str) -> bool:
    """Take or renew the sender's lease: one process drains at a time (a holder that died loses it after
    ``LEASE_S``)."""
    at = now()
    stale = at - dt.timedelta(seconds=LEASE_S)
    mine = sa.or_(settings.c.value == holder, settings.c.value == "", settings.c.updated_at < stale)
    try:
        with engine.begin() as conn:
            taken = conn.execute(
                settings.update().where(settings.c.key == LEASE_KEY, mine).values(value=holder, updated_at=at)
            ).rowcount
            if taken:
                return True
            if conn.execute(sa.select(settings.c.key).where(settings.c.key == LEASE_KEY)).first() is not None:
                return False
            conn.execute(settings.insert().values(key=LEASE_KEY, value=holder, updated_at=at))
    except sa.exc.IntegrityError:  # another process inserted it first
        return False
    return True


def _release(engine: Engine, holder: str) -> None:
    with engine.begin() as conn:
        conn.execute(settings.update().where(settings.c.key == LEASE_KEY, settings.c.value == holder).values(value=""))
