"""What the queue page and the staff's student page read of the jobs: counts, failures, latencies.

A part of ``Store`` (its base class), kept apart: reads only, each one statement on the store's
autocommit reader (``pooling.reader``).
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .tables import jobs, submissions


class QueueReads:
    reader: Engine  # set by ``Store``

    def failed_jobs(self, limit: int = 50) -> list[tuple[int, int, str, str, dt.datetime | None]]:
        """The latest failed jobs: (job id, submission id, "student / assignment", error, finished at)."""
        query = (
            sa.select(
                jobs.c.id,
                jobs.c.submission_id,
                submissions.c.student,
                submissions.c.assignment,
                jobs.c.error,
                jobs.c.finished_at,
            )
            .join(submissions, submissions.c.id == jobs.c.submission_id)
            .where(jobs.c.status == "failed")
            .order_by(jobs.c.id.desc())
            .limit(limit)
        )
        with self.reader.connect() as conn:
            return [
                (r.id, r.submission_id, f"{r.student} / {r.assignment}", r.error or "", r.finished_at)
                for r in conn.execute(query)
            ]

    def job_failures(self, student: str) -> dict[int, str]:
        """``student``'s submissions whose latest job failed, with its reason for staff: by submission id."""
        query = (
            sa.select(jobs.c.submission_id, jobs.c.status, jobs.c.error)
            .join(submissions, submissions.c.id == jobs.c.submission_id)
            .where(submissions.c.student == student)
            .order_by(jobs.c.id)
        )
        with self.reader.connect() as conn:
            latest = {r.submission_id: r for r in conn.execute(query)}
        return {sid: r.error or "" for sid, r in latest.items() if r.status == "failed"}

    def latencies_since(self, since: dt.datetime) -> list[float]:
        """Seconds from upload to recorded grade of every submission graded since ``since``."""
        query = sa.select(submissions.c.received_at, submissions.c.graded_at).where(
            submissions.c.graded_at.isnot(None), submissions.c.graded_at >= since
        )
        with self.reader.connect() as conn:
            return [(r.graded_at - r.received_at).total_seconds() for r in conn.execute(query)]

    def oldest_queued(self) -> dt.datetime | None:
        query = sa.select(sa.func.min(jobs.c.enqueued_at)).where(jobs.c.status == "queued")
        with self.reader.connect() as conn:
            value = conn.execute(query).scalar()
        return value if isinstance(value, dt.datetime) or value is None else None

    def queue_counts(self) -> dict[str, int]:
        with self.reader.connect() as conn:
            rows = conn.execute(sa.select(jobs.c.status, sa.func.count()).group_by(jobs.c.status))
            return {status: int(count) for status, count in rows}
