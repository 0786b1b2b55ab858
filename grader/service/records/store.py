"""The service's records (``tables``), in the same database as the nbgrader gradebook.

Submissions, their notebooks (when kept in the database) and their grading jobs
are written in one transaction, so an accepted submission always has a job;
the job's state is the queue (``queued -> running -> graded | failed``).
Grades themselves go to nbgrader's tables through its Gradebook API
(``gradebook`` stage).  A job's grade or failure is written only by the claim
that holds it (``attempts`` is the fencing token): a worker that lost its
claim (``leases``) writes nothing.
"""

from __future__ import annotations

import contextlib
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

from ...errors import LostClaim, NotFound
from . import files, pooling, schema
from .finished import Finished
from .models import Grade, Job, Submission, TestResult, TokenInfo, User
from .queue_reads import QueueReads
from .tables import jobs, now, settings, submissions, tokens, users

ROLES = ("student", "ta", "admin")

# what a database that stopped answering raises (the API answers 503; workers wait and retry)
DATABASE_ERRORS: tuple[type[Exception], ...] = (sa.exc.OperationalError, sa.exc.InterfaceError)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Store(QueueReads):
    def __init__(self, db_url: str, create: bool = False) -> None:
        """The records in ``db_url``, whose schema must be this code's (else ``ConfigurationError`` says what
        to run). Nothing here upgrades a schema (``grader db upgrade`` does, after a backup); ``create``
        (``grader serve``'s first run) creates the tables in a database that has none."""
        sqlite = db_url.startswith("sqlite")
        # after the database restarts, a request gets a fresh connection, not an error (``pooling``)
        self.engine: Engine = pooling.create_engine(db_url, connect_args=_connect_args(db_url))
        self.reader: Engine = pooling.reader(self.engine)  # for one-statement reads: no BEGIN, no ROLLBACK
        if sqlite:
            with self.engine.connect() as conn:
                # one writer, many readers, and the nbgrader subprocesses share this file
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        self.created = schema.create_if_empty(self.engine) if create else False
        self.finished = Finished()  # requests of this process waiting for a grade (``finished``)
        if not create:
            schema.check(self.engine)

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

    def issue_token(self, user_id: str, role: str, label: str = "", expires_at: dt.datetime | None = None) -> str:
        """A new token for ``user_id`` (until ``expires_at``, naive UTC, or until revoked); only its hash is stored."""
        self.ensure_user(user_id, role)
        token = secrets.token_urlsafe(24)
        with self.transaction() as conn:
            conn.execute(
                tokens.insert().values(
                    token_hash=hash_token(token), user_id=user_id, created_at=now(), label=label, expires_at=expires_at
                )
            )
        return token

    def revoke_tokens(self, user_id: str) -> int:
        with self.transaction() as conn:
            result = conn.execute(
                tokens.update()
                .where(tokens.c.user_id == user_id, tokens.c.revoked_at.is_(None))
                .values(revoked_at=now())
            )
        return int(result.rowcount)

    def revoke_token_id(self, prefix: str) -> TokenInfo:
        """Revoke the one token whose identifier (its hash's first hex digits) starts with ``prefix``;
        ``NotFound`` when none or several match."""
        prefix = prefix.strip().lower()
        if len(prefix) < 4 or any(c not in "0123456789abcdef" for c in prefix):
            raise NotFound(f"a token identifier is 4 to 64 hex digits, as `grader tokens list` shows, not {prefix!r}")
        with self.transaction() as conn:
            rows = conn.execute(sa.select(tokens).where(tokens.c.token_hash.startswith(prefix))).fetchall()
            if len(rows) != 1:
                many = "several tokens match" if rows else "no token matches"
                raise NotFound(f"{many} the identifier {prefix!r}: see `grader tokens list`")
            if rows[0].revoked_at is None:
                conn.execute(tokens.update().where(tokens.c.token_hash == rows[0].token_hash).values(revoked_at=now()))
            row = conn.execute(
                sa.select(tokens, users.c.role)
                .join(users, tokens.c.user_id == users.c.id)
                .where(tokens.c.token_hash == rows[0].token_hash)
            ).one()
        return _token_info(row, now())

    def list_tokens(self) -> list[TokenInfo]:
        """Every token ever issued (never its secret), oldest first."""
        query = (
            sa.select(tokens, users.c.role)
            .join(users, tokens.c.user_id == users.c.id)
            .order_by(tokens.c.created_at, tokens.c.user_id)
        )
        at = now()
        with self.reader.connect() as conn:
            return [_token_info(row, at) for row in conn.execute(query)]

    def active_tokens(self, user_id: str | None = None) -> int:
        """How many tokens (of ``user_id``, or of everyone) are neither revoked nor expired."""
        query = sa.select(sa.func.count()).select_from(tokens).where(*_usable(now()))
        if user_id is not None:
            query = query.where(tokens.c.user_id == user_id)
        with self.reader.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def token_state(self, token: str) -> str | None:
        """``"active"``, ``"expired"`` or ``"revoked"``; None for a token this store never issued."""
        with self.reader.connect() as conn:
            row = conn.execute(
                sa.select(tokens.c.revoked_at, tokens.c.expires_at).where(tokens.c.token_hash == hash_token(token))
            ).first()
        return None if row is None else _state(row.revoked_at, row.expires_at, now())

    def user_for_token(self, token: str) -> User | None:
        """The holder of ``token``; None when it is unknown, revoked or expired."""
        query = (
            sa.select(users.c.id, users.c.role)
            .select_from(tokens.join(users, tokens.c.user_id == users.c.id))
            .where(tokens.c.token_hash == hash_token(token), *_usable(now()))
        )
        with self.reader.connect() as conn:
            row = conn.execute(query).first()
        return User(row.id, row.role) if row else None

    # --- settings every worker applies ---------------------------------------------------

    def put_setting(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            done = conn.execute(settings.update().where(settings.c.key == key).values(value=value, updated_at=now()))
            if done.rowcount == 0:
                conn.execute(settings.insert().values(key=key, value=value, updated_at=now()))

    def setting(self, key: str) -> str | None:
        with self.reader.connect() as conn:
            value = conn.execute(sa.select(settings.c.value).where(settings.c.key == key)).scalar()
        return None if value is None else str(value)

    # --- submissions and jobs ------------------------------------------------------------

    def add_submission(
        self, student: str, assignment: str, data: bytes, received_at: dt.datetime, kind: str, folder: Path
    ) -> int:
        """The notebook (``files``: in ``folder`` or in the database), its row and its grading job, in one
        transaction: either all of them are stored or none."""
        digest = hashlib.sha256(data).hexdigest()
        location = ""
        try:
            with self.transaction() as conn:
                location = files.put(conn, kind, folder, student, assignment, received_at, digest, data)
                submission = submissions.insert().values(
                    student=student,
                    assignment=assignment,
                    received_at=received_at,
                    path=location,
                    sha256=digest,
                    status="queued",
                    reason="",
                )
                submission_id = _insert_with_job(conn, submission)
        except BaseException:
            if location:
                files.discard(location)
            raise
        return int(submission_id)

    def notebook(self, submission: Submission) -> bytes:
        """The submitted notebook's bytes, wherever they are kept."""
        return files.get(self.engine, submission.location)

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

    def holds(self, job: Job) -> bool:
        """Whether ``job``'s claim is still the one in force (no other worker took the job over)."""
        with self.reader.connect() as conn:
            return conn.execute(sa.select(jobs.c.id).where(*_held(job))).first() is not None

    def finish_job(self, job: Job, grade: Grade, conn: Connection | None = None) -> None:
        """Record the grade, if this claim still holds the job (else ``LostClaim``: the holder records it).

        In ``conn``'s transaction when given (the caller commits it, then calls ``finished.notify``);
        else in a transaction of its own.
        """
        if conn is not None:
            _finish(conn, job, grade)
            return
        with self.transaction() as own:
            _finish(own, job, grade)
        self.finished.notify(job.submission_id)

    def fail_job(self, job: Job, reason: str, retry: bool, told: str = "") -> None:
        """Record a job that could not be graded: requeue it (to be published again), or give up with ``reason``.

        ``reason`` is for staff (the queue page, the student's page); ``told`` what the student reads (else
        ``reason``).  A submission graded before (a regrade) keeps its recorded grade: only the job fails.
        """
        status = "queued" if retry else "failed"
        kept = submissions.c.graded_at.is_not(None)
        with self.transaction() as conn:
            done = conn.execute(
                jobs.update()
                .where(*_held(job))
                .values(status=status, error=reason, finished_at=now(), published_at=None)
            )
            if done.rowcount == 0:
                raise LostClaim(f"job {job.id} was taken over by another worker")
            conn.execute(
                submissions.update()
                .where(submissions.c.id == job.submission_id)
                .values(
                    status=sa.case((kept, "graded"), else_=status) if not retry else status,
                    reason=sa.case((kept, submissions.c.reason), else_=told or reason) if not retry else told or reason,
                )
            )
        if not retry:
            self.finished.notify(job.submission_id)

    def submission(self, submission_id: int) -> Submission | None:
        with self.reader.connect() as conn:
            row = conn.execute(sa.select(*SUBMISSION_COLUMNS).where(submissions.c.id == submission_id)).first()
        return submission_of(row) if row else None

    def results(self, submission_id: int) -> tuple[TestResult, ...]:
        with self.reader.connect() as conn:
            text = conn.execute(sa.select(submissions.c.results).where(submissions.c.id == submission_id)).scalar()
        return tuple(TestResult(**item) for item in json.loads(text or "[]"))

    def submissions(
        self, student: str | None = None, assignment: str | None = None, conn: Connection | None = None
    ) -> list[Submission]:
        """Attempts, oldest first; read on ``conn`` when given (a job's own transaction), else on a connection of
        their own."""
        query = sa.select(*SUBMISSION_COLUMNS).order_by(submissions.c.id)
        if student is not None:
            query = query.where(submissions.c.student == student)
        if assignment is not None:
            query = query.where(submissions.c.assignment == assignment)
        with contextlib.nullcontext(conn) if conn is not None else self.reader.connect() as reading:
            return [submission_of(row) for row in reading.execute(query)]

    def results_of(self, assignment: str) -> dict[int, tuple[TestResult, ...]]:
        """Every graded attempt's per-test results for one assignment, in one query."""
        query = sa.select(submissions.c.id, submissions.c.results).where(
            submissions.c.assignment == assignment, submissions.c.results.isnot(None)
        )
        with self.reader.connect() as conn:
            return {
                row.id: tuple(TestResult(**item) for item in json.loads(row.results or "[]"))
                for row in conn.execute(query)
            }


SUBMISSION_COLUMNS = tuple(c for c in submissions.c if c.name != "results")
"""What a ``Submission`` holds: not the per-test results (``Store.results``), a few kB per graded attempt,
which the rules read for every earlier attempt at each upload and each job."""


def submission_of(row: Any) -> Submission:
    """The ``Submission`` of a row of ``SUBMISSION_COLUMNS``."""
    return Submission(
        id=row.id,
        student=row.student,
        assignment=row.assignment,
        received_at=row.received_at,
        location=row.path,
        sha256=row.sha256,
        status=row.status,
        reason=row.reason or "",
        score=row.score,
        max_score=row.max_score,
        late_penalty=row.late_penalty,
        graded_at=row.graded_at,
    )


def _usable(at: dt.datetime) -> tuple[sa.ColumnElement[bool], ...]:
    return (tokens.c.revoked_at.is_(None), sa.or_(tokens.c.expires_at.is_(None), tokens.c.expires_at > at))


def _state(revoked_at: dt.datetime | None, expires_at: dt.datetime | None, at: dt.datetime) -> str:
    if revoked_at is not None:
        return "revoked"
    return "expired" if expires_at is not None and expires_at <= at else "active"


def _token_info(row: Any, at: dt.datetime) -> TokenInfo:
    return TokenInfo(
        id=row.token_hash[:8],
        user=row.user_id,
        role=row.role,
        label=row.label or "",
        created_at=row.created_at,
        expires_at=row.expires_at,
        state=_state(row.revoked_at, row.expires_at, at),
    )


def _insert_with_job(conn: Connection, submission: sa.Insert) -> int:
    """Insert ``submission`` and its queued job; on PostgreSQL in one statement (a data-modifying ``WITH``)."""
    job = {"status": "queued", "attempts": 0, "enqueued_at": now(), "error": ""}
    if conn.dialect.name != "postgresql":
        submission_id = int(conn.execute(submission).inserted_primary_key[0])  # type: ignore[index]
        conn.execute(jobs.insert().values(submission_id=submission_id, **job))
        return submission_id
    added = submission.returning(submissions.c.id).cte("added")
    values = [sa.literal(value, jobs.c[name].type).label(name) for name, value in job.items()]
    queued = jobs.insert().from_select(["submission_id", *job], sa.select(added.c.id, *values))
    return int(conn.execute(queued.returning(jobs.c.submission_id)).scalar_one())


def _finish(conn: Connection, job: Job, grade: Grade) -> None:
    """The job finished and its submission graded, if ``job``'s claim still holds (else ``LostClaim``); on PostgreSQL in
    one statement (a data-modifying ``WITH``: the submission's row is written only if the job's was)."""
    finished = jobs.update().where(*_held(job)).values(status="graded", finished_at=now())
    graded = submissions.update().values(
        status="graded",
        reason=grade.problem,
        score=grade.score,
        max_score=grade.max_score,
        late_penalty=grade.late_penalty,
        results=json.dumps([t.__dict__ for t in grade.tests]),
        graded_at=now(),
    )
    if conn.dialect.name == "postgresql":
        done = finished.returning(jobs.c.submission_id).cte("finished")
        written = conn.execute(graded.where(submissions.c.id == done.c.submission_id)).rowcount
    else:
        written = conn.execute(finished).rowcount
        if written:
            conn.execute(graded.where(submissions.c.id == job.submission_id))
    if written == 0:
        raise LostClaim(f"job {job.id} was taken over by another worker: its grade is theirs to record")


def _held(job: Job) -> tuple[sa.ColumnElement[bool], ...]:
    return (jobs.c.id == job.id, jobs.c.status == "running", jobs.c.attempts == job.attempts)


def _connect_args(db_url: str) -> dict[str, Any]:
    return {"timeout": 30, "check_same_thread": False} if db_url.startswith("sqlite") else {}
