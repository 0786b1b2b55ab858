"""Job leases: which worker may grade a job, and what happens when a worker disappears.

A worker *claims* a job by one atomic ``UPDATE`` that succeeds only if the
job is queued, or running under a lease that ran out (its holder has not
heartbeaten for ``lease_s``: presumed dead), or running under this worker's
own claim (it is retrying after the database came back).  Every claim by a
new holder counts in ``attempts``; the count is also the fencing token that
``Store.finish_job`` checks, so a presumed-dead worker that wakes up records
nothing.  A job whose lease ran out ``max_attempts`` times has killed every
worker that ran it: it is failed with a message instead of claimed again.

Workers also heartbeat their own row in ``grader_workers``, which is how the
queue page knows who is alive.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..records.models import Job
from ..records.store import SUBMISSION_COLUMNS, Store, submission_of
from ..records.tables import jobs, now, submissions, workers

POISON = (
    "Grading this notebook stopped the grading worker {n} times (each worker that ran it died), so it was not "
    "graded. Your submission is kept: check it for code that uses a lot of memory or output, and ask your TA."
)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim(store: Store, job_id: int | None, worker: str, lease_s: float | None, max_attempts: int) -> Job | None:
    """The one way a job is claimed: job ``job_id`` (or, for None, the oldest queued job) for ``worker``.

    None when there is nothing to take: graded or failed already, or held by a live worker.  With
    ``lease_s`` None (the embedded queue, whose threads die with the service and are requeued at its
    start) only queued jobs are taken; otherwise also running ones whose holder is silent.
    """
    running = jobs.c.status == "running"
    mine = sa.and_(running, jobs.c.worker == worker)
    takeable: sa.ColumnElement[bool] = jobs.c.status == "queued"
    if lease_s is not None:
        stale = now() - dt.timedelta(seconds=lease_s)
        takeable = sa.or_(
            takeable, sa.and_(running, sa.or_(jobs.c.heartbeat_at.is_(None), jobs.c.heartbeat_at < stale))
        )
    if job_id is None:
        oldest = sa.select(jobs.c.id).where(jobs.c.status == "queued").order_by(jobs.c.id).limit(1)
        which = jobs.c.id == oldest.scalar_subquery()
    else:
        which = jobs.c.id == job_id
    claimed = (
        jobs.update()
        .where(which, sa.or_(mine, sa.and_(takeable, jobs.c.attempts < max_attempts)))
        .values(
            status="running",
            attempts=sa.case((mine, jobs.c.attempts), else_=jobs.c.attempts + 1),
            worker=worker,
            started_at=now(),
            heartbeat_at=now(),
        )
        .returning(jobs.c.id, jobs.c.submission_id, jobs.c.attempts)
    )
    with store.transaction() as conn:
        if conn.dialect.name == "postgresql":
            job = _claim_with_submission(conn, claimed)
            if job is not None:
                return job
        else:
            row = conn.execute(claimed).first()
            if row is not None:
                conn.execute(submissions.update().where(submissions.c.id == row.submission_id).values(status="running"))
                return Job(row.id, row.submission_id, row.attempts)
    if job_id is not None and lease_s is not None:
        fail_exhausted(store, lease_s, max_attempts, job_id)
    return None


def _claim_with_submission(conn: Connection, claimed: sa.Update) -> Job | None:
    """``claimed`` and the submission's status in one statement, which returns the submission too (PostgreSQL's
    data-modifying ``WITH``): the job then reads no row of its own before its lock."""
    job = claimed.cte("claimed")
    row = conn.execute(
        submissions.update()
        .where(submissions.c.id == job.c.submission_id)
        .values(status="running")
        .returning(job.c.id.label("job_id"), job.c.attempts.label("job_attempts"), *SUBMISSION_COLUMNS)
    ).first()
    if row is None:
        return None
    return Job(row.job_id, row.id, row.job_attempts, submission_of(row))


def fail_exhausted(store: Store, lease_s: float, max_attempts: int, job_id: int | None = None) -> list[int]:
    """Fail the jobs whose lease ran out ``max_attempts`` times (they kill the workers that run them)."""
    stale = now() - dt.timedelta(seconds=lease_s)
    query = sa.select(jobs.c.id, jobs.c.submission_id, jobs.c.attempts).where(
        jobs.c.status == "running", jobs.c.attempts >= max_attempts, jobs.c.heartbeat_at < stale
    )
    if job_id is not None:
        query = query.where(jobs.c.id == job_id)
    failed: list[tuple[int, int]] = []  # (job, submission)
    with store.transaction() as conn:
        for row in conn.execute(query).all():
            reason = POISON.format(n=row.attempts)
            done = conn.execute(
                jobs.update()
                .where(jobs.c.id == row.id, jobs.c.status == "running", jobs.c.attempts == row.attempts)
                .values(
                    status="failed",
                    error=f"killed every worker that ran it ({row.attempts} attempts)",
                    finished_at=now(),
                )
            )
            if done.rowcount:
                conn.execute(
                    submissions.update()
                    .where(submissions.c.id == row.submission_id)
                    .values(status="failed", reason=reason)
                )
                failed.append((int(row.id), int(row.submission_id)))
    for _, submission_id in failed:
        store.finished.notify(submission_id)
    return [job_id for job_id, _ in failed]


def heartbeat(store: Store, worker: str, held: list[int], concurrency: int) -> None:
    """This worker is alive, and still grading the jobs in ``held``."""
    stamp = now()
    with store.transaction() as conn:
        if held:
            conn.execute(
                jobs.update()
                .where(jobs.c.id.in_(held), jobs.c.worker == worker, jobs.c.status == "running")
                .values(heartbeat_at=stamp)
            )
        updated = conn.execute(
            workers.update().where(workers.c.name == worker).values(heartbeat_at=stamp, stopped_at=None)
        )
        if updated.rowcount == 0:
            conn.execute(
                workers.insert().values(
                    name=worker,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    concurrency=concurrency,
                    started_at=stamp,
                    heartbeat_at=stamp,
                )
            )


def signed_off(store: Store, worker: str) -> None:
    """A worker that stops cleanly says so (the queue page shows it stopped, not lost)."""
    with store.transaction() as conn:
        conn.execute(workers.update().where(workers.c.name == worker).values(stopped_at=now()))


def due(store: Store, lease_s: float) -> list[int]:
    """Jobs whose wake-up must be sent: never published (just accepted, requeued after an error, or the
    broker was down), or held by a worker that stopped heartbeating (a live worker may take them over)."""
    stale = now() - dt.timedelta(seconds=lease_s)
    query = (
        sa.select(jobs.c.id)
        .where(
            sa.or_(
                sa.and_(jobs.c.status == "queued", jobs.c.published_at.is_(None)),
                sa.and_(
                    jobs.c.status == "running",
                    sa.or_(jobs.c.heartbeat_at.is_(None), jobs.c.heartbeat_at < stale),
                    sa.or_(jobs.c.published_at.is_(None), jobs.c.published_at < stale),
                ),
            )
        )
        .order_by(jobs.c.id)
    )
    with store.reader.connect() as conn:
        return [int(r.id) for r in conn.execute(query)]


def waiting(store: Store, published_before: dt.datetime | None = None) -> list[int]:
    """Queued jobs already published (before ``published_before``): their messages should be in the broker."""
    query = sa.select(jobs.c.id).where(jobs.c.status == "queued", jobs.c.published_at.isnot(None))
    if published_before is not None:
        query = query.where(jobs.c.published_at < published_before)
    with store.reader.connect() as conn:
        return [int(r.id) for r in conn.execute(query.order_by(jobs.c.id))]


def waiting_counts(store: Store, published_before: dt.datetime) -> tuple[int, int]:
    """How many of ``waiting``'s jobs were published before ``published_before``, and how many in all: one
    query that counts, where listing them costs a row per job of the backlog on every sweep."""
    old = sa.func.count().filter(jobs.c.published_at < published_before)
    query = sa.select(old, sa.func.count()).where(jobs.c.status == "queued", jobs.c.published_at.isnot(None))
    with store.reader.connect() as conn:
        row = conn.execute(query).one()
    return int(row[0]), int(row[1])


def capacity(store: Store, lease_s: float) -> int:
    """Messages the live workers may hold reserved without having claimed them (one per kernel)."""
    alive = now() - dt.timedelta(seconds=lease_s)
    query = sa.select(sa.func.coalesce(sa.func.sum(workers.c.concurrency), 0)).where(
        workers.c.stopped_at.is_(None), workers.c.heartbeat_at >= alive
    )
    with store.reader.connect() as conn:
        return int(conn.execute(query).scalar() or 0)


def published(store: Store, job_ids: list[int]) -> None:
    with store.transaction() as conn:
        conn.execute(jobs.update().where(jobs.c.id.in_(job_ids)).values(published_at=now()))


def unpublish_queued(store: Store) -> int:
    """Every queued job is to be published again (the broker was unreachable, and may have lost them)."""
    with store.transaction() as conn:
        return int(conn.execute(jobs.update().where(jobs.c.status == "queued").values(published_at=None)).rowcount)


@dataclass(frozen=True)
class WorkerState:
    name: str
    concurrency: int
    started_at: dt.datetime
    heartbeat_at: dt.datetime
    stopped_at: dt.datetime | None
    grading: tuple[int, ...]  # submission ids


def registry(store: Store) -> list[WorkerState]:
    """Every worker that ever registered, newest first, with the submissions it is grading now."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(workers).order_by(workers.c.started_at.desc()).limit(50)).all()
        held = conn.execute(sa.select(jobs.c.worker, jobs.c.submission_id).where(jobs.c.status == "running")).all()
    grading: dict[str, list[int]] = {}
    for worker, submission_id in held:
        grading.setdefault(worker, []).append(int(submission_id))
    return [
        WorkerState(
            r.name, r.concurrency, r.started_at, r.heartbeat_at, r.stopped_at, tuple(sorted(grading.get(r.name, [])))
        )
        for r in rows
    ]
