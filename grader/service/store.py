"""The service's own tables, in the same database as the nbgrader gradebook.

Submissions and their grading jobs are written in one transaction, so an
accepted submission always has a job; the job's state is the queue
(``queued -> running -> graded | failed``).  Grades themselves go to nbgrader's
tables through its Gradebook API (``gradebook`` stage).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .models import Grade, Job, Submission, TestResult, User

metadata = sa.MetaData()

users = sa.Table(
    "grader_users",
    metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
)
tokens = sa.Table(
    "grader_tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(128), sa.ForeignKey("grader_users.id"), nullable=False, index=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("revoked_at", sa.DateTime, nullable=True),
)
submissions = sa.Table(
    "grader_submissions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("student", sa.String(128), nullable=False, index=True),
    sa.Column("assignment", sa.String(128), nullable=False, index=True),
    sa.Column("received_at", sa.DateTime, nullable=False),
    sa.Column("path", sa.String(1024), nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("score", sa.Float, nullable=True),
    sa.Column("max_score", sa.Float, nullable=True),
    sa.Column("late_penalty", sa.Float, nullable=True),
    sa.Column("results", sa.Text, nullable=True),
    sa.Column("graded_at", sa.DateTime, nullable=True),
)
jobs = sa.Table(
    "grader_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("submission_id", sa.Integer, sa.ForeignKey("grader_submissions.id"), nullable=False, index=True),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("enqueued_at", sa.DateTime, nullable=False),
    sa.Column("started_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    sa.Column("error", sa.Text, nullable=False, default=""),
)

ROLES = ("student", "ta", "admin")


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Store:
    def __init__(self, db_url: str) -> None:
        self.engine: Engine = sa.create_engine(db_url, connect_args=_connect_args(db_url))
        if db_url.startswith("sqlite"):
            with self.engine.connect() as conn:
                # one writer, many readers, and the nbgrader subprocesses share this file
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        metadata.create_all(self.engine)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # --- users and tokens ------------------------------------------------------------

    def ensure_user(self, user_id: str, role: str) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        with self.transaction() as conn:
            existing = conn.execute(sa.select(users.c.role).where(users.c.id == user_id)).scalar()
            if existing is None:
                conn.execute(users.insert().values(id=user_id, role=role))
            elif existing != role:
                conn.execute(users.update().where(users.c.id == user_id).values(role=role))

    def issue_token(self, user_id: str, role: str) -> str:
        """A new token for ``user_id``; only its hash is stored."""
        self.ensure_user(user_id, role)
        token = secrets.token_urlsafe(24)
        with self.transaction() as conn:
            conn.execute(tokens.insert().values(token_hash=hash_token(token), user_id=user_id, created_at=now()))
        return token

    def revoke_tokens(self, user_id: str) -> int:
        with self.transaction() as conn:
            result = conn.execute(
                tokens.update()
                .where(tokens.c.user_id == user_id, tokens.c.revoked_at.is_(None))
                .values(revoked_at=now())
            )
        return int(result.rowcount)

    def user_for_token(self, token: str) -> User | None:
        query = (
            sa.select(users.c.id, users.c.role)
            .select_from(tokens.join(users, tokens.c.user_id == users.c.id))
            .where(tokens.c.token_hash == hash_token(token), tokens.c.revoked_at.is_(None))
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return User(row.id, row.role) if row else None

    # --- submissions and jobs ------------------------------------------------------------

    def add_submission(self, student: str, assignment: str, path: Path, sha256: str, received_at: dt.datetime) -> int:
        """The submission row and its grading job, in one transaction."""
        with self.transaction() as conn:
            submission_id = conn.execute(
                submissions.insert().values(
                    student=student,
                    assignment=assignment,
                    received_at=received_at,
                    path=str(path),
                    sha256=sha256,
                    status="queued",
                    reason="",
                )
            ).inserted_primary_key[0]  # type: ignore[index]
            conn.execute(
                jobs.insert().values(submission_id=submission_id, status="queued", enqueued_at=now(), error="")
            )
        return int(submission_id)

    def enqueue(self, submission_ids: list[int]) -> int:
        """A new grading job for each submission (a regrade)."""
        with self.transaction() as conn:
            for submission_id in submission_ids:
                conn.execute(
                    jobs.insert().values(submission_id=submission_id, status="queued", enqueued_at=now(), error="")
                )
                conn.execute(
                    submissions.update().where(submissions.c.id == submission_id).values(status="queued", reason="")
                )
        return len(submission_ids)

    def claim_job(self) -> Job | None:
        """Atomically move the oldest queued job to running."""
        oldest = sa.select(jobs.c.id).where(jobs.c.status == "queued").order_by(jobs.c.id).limit(1).scalar_subquery()
        with self.transaction() as conn:
            row = conn.execute(
                jobs.update()
                .where(jobs.c.id == oldest, jobs.c.status == "queued")
                .values(status="running", attempts=jobs.c.attempts + 1, started_at=now())
                .returning(jobs.c.id, jobs.c.submission_id, jobs.c.attempts)
            ).first()
            if row is None:
                return None
            conn.execute(submissions.update().where(submissions.c.id == row.submission_id).values(status="running"))
        return Job(row.id, row.submission_id, row.attempts)

    def requeue_running(self) -> int:
        """Jobs left running by a process that died: back to the queue (start-up of the embedded service)."""
        with self.transaction() as conn:
            ids = [
                r.submission_id for r in conn.execute(sa.select(jobs.c.submission_id).where(jobs.c.status == "running"))
            ]
            conn.execute(jobs.update().where(jobs.c.status == "running").values(status="queued"))
            if ids:
                conn.execute(submissions.update().where(submissions.c.id.in_(ids)).values(status="queued"))
        return len(ids)

    def finish_job(self, job: Job, grade: Grade) -> None:
        results = json.dumps([t.__dict__ for t in grade.tests])
        with self.transaction() as conn:
            conn.execute(jobs.update().where(jobs.c.id == job.id).values(status="graded", finished_at=now()))
            conn.execute(
                submissions.update()
                .where(submissions.c.id == job.submission_id)
                .values(
                    status="graded",
                    reason=grade.problem,
                    score=grade.score,
                    max_score=grade.max_score,
                    late_penalty=grade.late_penalty,
                    results=results,
                    graded_at=now(),
                )
            )

    def fail_job(self, job: Job, reason: str, retry: bool) -> None:
        """Record an infrastructure failure: requeue the job, or give up with ``reason``."""
        status = "queued" if retry else "failed"
        with self.transaction() as conn:
            conn.execute(
                jobs.update().where(jobs.c.id == job.id).values(status=status, error=reason, finished_at=now())
            )
            conn.execute(
                submissions.update().where(submissions.c.id == job.submission_id).values(status=status, reason=reason)
            )

    def submission(self, submission_id: int) -> Submission | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(submissions).where(submissions.c.id == submission_id)).first()
        return _submission(row) if row else None

    def results(self, submission_id: int) -> tuple[TestResult, ...]:
        with self.engine.connect() as conn:
            text = conn.execute(sa.select(submissions.c.results).where(submissions.c.id == submission_id)).scalar()
        return tuple(TestResult(**item) for item in json.loads(text or "[]"))

    def submissions(self, student: str | None = None, assignment: str | None = None) -> list[Submission]:
        query = sa.select(submissions).order_by(submissions.c.id)
        if student is not None:
            query = query.where(submissions.c.student == student)
        if assignment is not None:
            query = query.where(submissions.c.assignment == assignment)
        with self.engine.connect() as conn:
            return [_submission(row) for row in conn.execute(query)]

    def results_of(self, assignment: str) -> dict[int, tuple[TestResult, ...]]:
        """Every graded attempt's per-test results for one assignment, in one query."""
        query = sa.select(submissions.c.id, submissions.c.results).where(
            submissions.c.assignment == assignment, submissions.c.results.isnot(None)
        )
        with self.engine.connect() as conn:
            return {
                row.id: tuple(TestResult(**item) for item in json.loads(row.results or "[]"))
                for row in conn.execute(query)
            }

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
        with self.engine.connect() as conn:
            return [
                (r.id, r.submission_id, f"{r.student} / {r.assignment}", r.error or "", r.finished_at)
                for r in conn.execute(query)
            ]

    def latencies_since(self, since: dt.datetime) -> list[float]:
        """Seconds from upload to recorded grade of every submission graded since ``since``."""
        query = sa.select(submissions.c.received_at, submissions.c.graded_at).where(
            submissions.c.graded_at.isnot(None), submissions.c.graded_at >= since
        )
        with self.engine.connect() as conn:
            return [(r.graded_at - r.received_at).total_seconds() for r in conn.execute(query)]

    def oldest_queued(self) -> dt.datetime | None:
        query = sa.select(sa.func.min(jobs.c.enqueued_at)).where(jobs.c.status == "queued")
        with self.engine.connect() as conn:
            value = conn.execute(query).scalar()
        return value if isinstance(value, dt.datetime) or value is None else None

    def queue_counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(jobs.c.status, sa.func.count()).group_by(jobs.c.status))
            return {status: int(count) for status, count in rows}


def _submission(row: Any) -> Submission:
    return Submission(
        id=row.id,
        student=row.student,
        assignment=row.assignment,
        received_at=row.received_at,
        path=Path(row.path),
        sha256=row.sha256,
        status=row.status,
        reason=row.reason or "",
        score=row.score,
        max_score=row.max_score,
        late_penalty=row.late_penalty,
        graded_at=row.graded_at,
    )


def _connect_args(db_url: str) -> dict[str, Any]:
    return {"timeout": 30, "check_same_thread": False} if db_url.startswith("sqlite") else {}
