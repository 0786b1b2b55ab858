"""Job leases on a real database, SQLite and PostgreSQL (whose claim and record are one statement each): who may
grade a job."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from grader.errors import LostClaim
from grader.service.queue import leases
from grader.service.records.models import Grade
from grader.service.records.store import Store
from grader.service.records.tables import jobs
from tests.fixtures.sql import sent_statements

from ..conftest import fresh_database

LEASE = 10.0


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield Store(f"sqlite:///{tmp_path / 'g.db'}", create=True)
        return
    with fresh_database("grader_leases") as url:
        store = Store(url, create=True)
        yield store
        store.engine.dispose()


def add(store: Store, tmp_path: Path, kind: str = "database") -> int:
    store.add_submission("ann", "ps1", b'{"cells": []}', dt.datetime(2026, 11, 30), kind, tmp_path / "files")
    with store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.max(jobs.c.id))).scalar() or 0)


def age_heartbeat(store: Store, job_id: int, seconds: float) -> None:
    with store.transaction() as conn:
        conn.execute(
            jobs.update().where(jobs.c.id == job_id).values(heartbeat_at=leases.now() - dt.timedelta(seconds=seconds))
        )


def grade(job_submission: int) -> Grade:
    return Grade(submission_id=job_submission, score=1.0, max_score=1.0, late_penalty=0.0, tests=())


def test_one_claim_wins_and_a_live_holder_keeps_its_job(store: Store, tmp_path: Path) -> None:
    job_id = add(store, tmp_path)
    with sent_statements() as sent:
        first = leases.claim(store, job_id, "a:1", LEASE, 3)
    assert first is not None and first.attempts == 1
    assert store.submission(first.submission_id).status == "running"  # type: ignore[union-attr]
    if store.engine.dialect.name == "postgresql":  # one statement, which returns the submission too
        assert len(sent) == 1 and first.submission is not None and first.submission.status == "running"
        assert first.submission == store.submission(first.submission_id)
    assert leases.claim(store, job_id, "b:2", LEASE, 3) is None  # duplicate delivery: nothing to do
    again = leases.claim(store, job_id, "a:1", LEASE, 3)  # the holder, after a database outage
    assert again is not None and again.attempts == 1


def test_a_silent_holder_is_taken_over_and_its_late_grade_refused(store: Store, tmp_path: Path) -> None:
    job_id = add(store, tmp_path)
    dead = leases.claim(store, job_id, "a:1", LEASE, 3)
    assert dead is not None
    age_heartbeat(store, job_id, LEASE + 1)
    assert leases.due(store, LEASE) == [job_id]  # serve publishes it again
    alive = leases.claim(store, job_id, "b:2", LEASE, 3)
    assert alive is not None and alive.attempts == 2
    with pytest.raises(LostClaim, match=f"job {job_id} was taken over by another worker"):
        store.finish_job(dead, grade(dead.submission_id))
    assert not store.holds(dead) and store.holds(alive)
    store.finish_job(alive, grade(alive.submission_id))
    assert leases.claim(store, job_id, "c:3", LEASE, 3) is None  # graded: later deliveries do nothing
    assert store.submission(alive.submission_id).status == "graded"  # type: ignore[union-attr]


def test_a_job_that_kills_every_worker_fails_after_max_attempts(store: Store, tmp_path: Path) -> None:
    job_id = add(store, tmp_path)
    for n in range(3):
        held = leases.claim(store, job_id, f"w:{n}", LEASE, 3)
        assert held is not None and held.attempts == n + 1
        age_heartbeat(store, job_id, LEASE + 1)  # ... and the worker died
    assert leases.claim(store, job_id, "w:9", LEASE, 3) is None
    submission = store.submissions()[-1]
    assert submission.status == "failed"
    assert submission.reason == (
        "Grading this notebook stopped the grading worker 3 times (each worker that ran it died), so it was not "
        "graded. Your submission is kept: check it for code that uses a lot of memory or output, and ask your TA."
    )
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(jobs.c.error).where(jobs.c.id == job_id)).scalar() == (
            "killed every worker that ran it (3 attempts)"
        )
    assert leases.due(store, LEASE) == []


def test_publishing_bookkeeping(store: Store, tmp_path: Path) -> None:
    first, second = add(store, tmp_path), add(store, tmp_path)
    assert leases.due(store, LEASE) == [first, second]  # never published
    leases.published(store, [first, second])
    assert leases.due(store, LEASE) == []
    assert leases.waiting(store) == [first, second]  # their messages should be in the broker
    assert leases.waiting(store, published_before=leases.now() - dt.timedelta(seconds=60)) == []
    # the dispatcher's every sweep counts them; only a sweep that finds some lost lists them
    assert leases.waiting_counts(store, published_before=leases.now() - dt.timedelta(seconds=60)) == (0, 2)
    assert leases.waiting_counts(store, published_before=leases.now() + dt.timedelta(seconds=1)) == (2, 2)
    assert leases.unpublish_queued(store) == 2  # the broker was unreachable: publish them all again
    assert leases.due(store, LEASE) == [first, second]
    assert leases.capacity(store, LEASE) == 0
    leases.heartbeat(store, "w:1", [], concurrency=2)
    leases.heartbeat(store, "w:2", [], concurrency=1)
    assert leases.capacity(store, LEASE) == 3  # messages the live workers may hold reserved
    leases.signed_off(store, "w:2")
    assert leases.capacity(store, LEASE) == 2


def test_notebooks_kept_in_the_database_or_a_folder_read_back_the_same(store: Store, tmp_path: Path) -> None:
    add(store, tmp_path, "database")
    add(store, tmp_path, "folder")
    in_db, on_disk = store.submissions()
    assert in_db.location.startswith("database:") and Path(on_disk.location).is_file()
    assert store.notebook(in_db) == store.notebook(on_disk) == b'{"cells": []}'


def test_a_failed_transaction_keeps_no_file(store: Store, tmp_path: Path) -> None:
    with store.transaction() as conn:
        conn.exec_driver_sql("DROP TABLE grader_jobs")  # the job cannot be written
    with pytest.raises((sa.exc.OperationalError, sa.exc.ProgrammingError)):  # SQLite's, PostgreSQL's
        add(store, tmp_path, "folder")
    assert not list((tmp_path / "files").rglob("*.ipynb"))
    assert store.submissions() == []
