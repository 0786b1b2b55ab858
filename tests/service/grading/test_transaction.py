"""On PostgreSQL a job's grade is written in one transaction (issue 30): nbgrader's rows and the
service's, committed once, or not at all when the claim was lost.

In process, with the real engine (a warm zygote), a real nbgrader gradebook in a database of its
own on the machine's PostgreSQL, and the service's tables beside it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from grader.service.dashboard import roster as roster_import
from grader.service.grading import execution, intake
from grader.service.grading.pipeline import Pipeline
from grader.service.queue import leases
from grader.service.records.tables import jobs
from grader.service.rules import deadlines
from tests.fixtures.sql import sent_statements

from ..conftest import fixture_bytes, fresh_database
from .course import Graded, started

A = "ps2_autograd"
LEASE = 30.0


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    with fresh_database("grader_txn") as url, started(tmp_path_factory.mktemp("txn"), A, db_url=url) as graded:
        yield graded
        graded.store.engine.dispose()


def _submit(course: Graded, student: str, fixture: str = "correct") -> int:
    return intake.accept(course.store, course.config, student, A, fixture_bytes(A, fixture)).id


def _gradebook_submissions(course: Graded, student: str) -> int:
    with course.store.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM submitted_assignment WHERE student_id = :s"), {"s": student}
            ).scalar_one()
        )


class _Commits:
    """Every commit on any SQLAlchemy engine in this process, while counting."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> _Commits:
        sa.event.listen(sa.engine.Engine, "commit", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(sa.engine.Engine, "commit", self._seen)

    def _seen(self, conn: Any) -> None:
        self.count += 1


def test_a_jobs_grade_and_nbgraders_rows_are_committed_once(postgres: Graded) -> None:
    ident = _submit(postgres, "txn-ann")
    job = leases.claim(postgres.store, None, "w:1", LEASE, postgres.config.max_attempts)
    assert job is not None and job.submission_id == ident
    with _Commits() as commits:
        Pipeline(postgres.store, postgres.config, postgres.engine).grade_job(job)
    submission = postgres.store.submission(ident)
    assert submission is not None and submission.status == "graded"
    assert submission.score == submission.max_score and submission.max_score
    assert _gradebook_submissions(postgres, "txn-ann") == 1  # nbgrader wrote its rows, in the same commit
    assert commits.count == 1


def test_a_job_reads_the_instructors_notebook_and_grade_cells_once(postgres: Graded) -> None:
    """nbgrader's steps ask for the assignment twice, its notebook three times and the grade cells twice per
    grading; in the job's one session the assignment and its notebooks are read once, with the notebook's name
    the job needs, and the repeats are answered without a statement (``inprocess``, ``bulk``)."""
    pipeline = Pipeline(postgres.store, postgres.config, postgres.engine)
    for student in ("txn-warm", "txn-sql"):  # the first job in a process checks the course row: count the next
        ident = _submit(postgres, student)
        job = leases.claim(postgres.store, None, "w:1", LEASE, postgres.config.max_attempts)
        assert job is not None and job.submission_id == ident
        with sent_statements() as sent:
            pipeline.grade_job(job)
    assert postgres.store.submission(ident).status == "graded"  # type: ignore[union-attr]
    flat = [" ".join(s.split()) for s in sent]
    loads = [s for s in flat if "LEFT OUTER JOIN notebook AS" in s]  # the assignment with its notebooks, ...
    students = [s for s in flat if s.startswith("SELECT student.id AS student_id")]  # ... nbgrader's find_student
    submissions = [s for s in flat if "FROM submitted_assignment JOIN assignment" in s]  # ... and find_submission
    assignments = [s for s in flat if "FROM assignment WHERE assignment.name" in s]  # nbgrader's find_assignment
    finds = [s for s in flat if "FROM notebook JOIN assignment" in s]  # ... and find_notebook
    cells = [s for s in flat if "FROM base_cell LEFT OUTER JOIN grade_cells" in s]
    assert (len(loads), len(assignments), len(finds), len(cells)) == (1, 0, 0, 1), "\n".join(flat)
    assert "LEFT OUTER JOIN student" in loads[0] and "LEFT OUTER JOIN submitted_assignment" in loads[0]
    # a first submission: found missing without a statement; only the late penalty's look-up, after it was added
    assert (len(students), len(submissions)) == (0, 1), "\n".join(flat)
    # a job's statements, the claim apart (scale.py prints them): 14 before the written answers, whose rows
    # nbgrader writes too, and the job now asks for the TAs' marks of the student's written answers, which a new
    # attempt keeps or loses (carry_marks)
    assert len(sent) <= 16, "\n".join(sent)


def test_a_job_is_claimed_with_its_submission_locked_and_recorded_in_one_statement_each(postgres: Graded) -> None:
    """The claim returns the submission it marked running (the job reads no row of its own before its lock); the
    advisory lock and the student's gradebook row are one statement; the job finished and its grade are one."""
    pipeline = Pipeline(postgres.store, postgres.config, postgres.engine)
    ident = _submit(postgres, "txn-one")
    with sent_statements() as claimed:
        job = leases.claim(postgres.store, None, "w:1", LEASE, postgres.config.max_attempts)
    assert job is not None and job.submission is not None
    assert (job.submission.id, job.submission.student, job.submission.status) == (ident, "txn-one", "running")
    assert len(claimed) == 1, "\n".join(claimed)
    with sent_statements() as sent:
        pipeline.grade_job(job)
    flat = [" ".join(s.split()) for s in sent]
    reads = [s for s in flat if s.startswith("SELECT") and "FROM grader_submissions WHERE grader_submissions.id" in s]
    locks = [s for s in flat if "pg_advisory_xact_lock" in s]
    finished = [s for s in flat if "UPDATE grader_jobs" in s]
    assert reads == [], "\n".join(flat)
    assert len(locks) == 1 and "INSERT INTO student" in locks[0] and flat.index(locks[0]) == 0, "\n".join(flat)
    assert len(finished) == 1 and "UPDATE grader_submissions" in finished[0], "\n".join(flat)
    submission = postgres.store.submission(ident)
    assert submission is not None and submission.status == "graded" and submission.score == submission.max_score


def test_a_lost_claim_leaves_no_row_of_its_grade_and_the_holder_records_it(postgres: Graded) -> None:
    ident = _submit(postgres, "txn-bob")
    store, config = postgres.store, postgres.config
    dead = leases.claim(store, None, "w:dead", LEASE, config.max_attempts)
    assert dead is not None and dead.submission_id == ident
    silent = leases.now() - dt.timedelta(seconds=LEASE + 1)
    with store.transaction() as conn:  # the first worker went silent: its lease ran out, another took the job
        conn.execute(jobs.update().where(jobs.c.id == dead.id).values(heartbeat_at=silent))
    alive = leases.claim(store, dead.id, "w:alive", LEASE, config.max_attempts)
    assert alive is not None

    Pipeline(store, config, postgres.engine).grade_job(dead)  # the silent worker wakes up and finishes grading
    assert _gradebook_submissions(postgres, "txn-bob") == 0  # nbgrader's rows went back with the refused grade
    assert store.submission(ident).status != "graded"  # type: ignore[union-attr]

    Pipeline(store, config, postgres.engine).grade_job(alive)
    assert store.submission(ident).status == "graded"  # type: ignore[union-attr]
    assert _gradebook_submissions(postgres, "txn-bob") == 1


def test_a_new_students_first_jobs_on_two_assignments_do_not_collide_on_the_student_row(postgres: Graded) -> None:
    """Both jobs insert the student's gradebook row; the second waits for the first's commit, then finds it."""
    from nbgrader.api import Gradebook

    store, url = postgres.store, postgres.config.db_url
    inserted, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        with execution.grading(store, url, "txn-new", "first"), Gradebook(url) as gradebook:
            gradebook.update_or_create_student("txn-new")
            inserted.set()
            release.wait(30)

    def second() -> None:
        try:
            with execution.grading(store, url, "txn-new", "second"), Gradebook(url) as gradebook:
                gradebook.update_or_create_student("txn-new")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert inserted.wait(30)
    threads[1].start()
    deadline = time.monotonic() + 30
    while not _waiting_on_a_lock(postgres) and time.monotonic() < deadline:  # the second job waits on the row
        time.sleep(0.05)
    assert _waiting_on_a_lock(postgres)
    release.set()
    for thread in threads:
        thread.join(30)
    assert errors == []
    with Gradebook(url) as gradebook:
        assert gradebook.find_student("txn-new").id == "txn-new"


@pytest.mark.parametrize("door", ["extension", "roster-import"])
def test_an_admin_adding_a_student_during_their_first_job_waits_for_it_then_succeeds(
    postgres: Graded, door: str, tmp_path: Path
) -> None:
    """The job holds the new student's row uncommitted; the admin's door waits for the job, then finds the row.

    Without ``records.students.add`` nbgrader's insert fails on the unique key once the job commits."""
    from nbgrader.api import Gradebook

    store, config = postgres.store, postgres.config
    student = f"txn-{door}"
    roster = tmp_path / "roster.csv"
    roster.write_text(f"id,first_name,last_name,email\n{student},Ada,Lovelace,ada@example.org\n")
    inserted, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    if door == "extension":  # an extension needs a due date, and a student the service knows (a token)
        store.issue_token(student, "student")
        deadlines.set_due_date(config, A, dt.datetime(2099, 1, 1))

    def job() -> None:
        with execution.grading(store, config.db_url, student, A), Gradebook(config.db_url) as gradebook:
            gradebook.update_or_create_student(student)
            inserted.set()
            release.wait(30)

    def admin() -> None:
        try:
            if door == "extension":
                deadlines.grant_extension(config, A, student, hours=24)
            else:
                roster_import.import_roster(config, roster)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=job), threading.Thread(target=admin)]
    threads[0].start()
    assert inserted.wait(30)
    threads[1].start()
    deadline = time.monotonic() + 30
    while not _waiting_on_a_lock(postgres) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _waiting_on_a_lock(postgres)
    release.set()
    for thread in threads:
        thread.join(30)
    assert errors == []
    with Gradebook(config.db_url) as gradebook:
        found = gradebook.find_student(student)
        assert found.id == student
        if door == "roster-import":
            assert (found.first_name, found.email) == ("Ada", "ada@example.org")
    if door == "extension":  # as the other tests found it: no extension, no due date
        deadlines.grant_extension(config, A, student, hours=0)
        deadlines.set_due_date(config, A, None)


def _waiting_on_a_lock(course: Graded) -> bool:
    with course.store.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        return bool(conn.execute(sa.text(query)).scalar_one())


def test_an_upload_reads_earlier_attempts_only_when_a_rule_needs_them_and_stores_its_job_in_one_statement(
    postgres: Graded,
) -> None:
    """No rate limit, no cap on attempts, not late: the rules need no earlier attempt, so none is read; the
    submission and its queued job are one ``INSERT``.  A late upload reads them (it may replace an on-time one)."""
    with sent_statements() as sent:
        ident = _submit(postgres, "txn-upload")
    flat = [" ".join(s.split()) for s in sent]
    inserts = [s for s in flat if "INSERT INTO grader_submissions" in s]
    assert not [s for s in flat if s.startswith("SELECT") and "FROM grader_submissions" in s], "\n".join(flat)
    assert len(inserts) == 1 and "INSERT INTO grader_jobs" in inserts[0], "\n".join(flat)
    assert len(flat) == 3, "\n".join(flat)  # the notebook's name, the due date with the extension, the insert
    with postgres.store.engine.connect() as conn:
        job = conn.execute(sa.select(jobs.c.status, jobs.c.attempts).where(jobs.c.submission_id == ident)).one()
    assert tuple(job) == ("queued", 0)
    deadlines.set_due_date(postgres.config, A, dt.datetime(2020, 1, 1))
    try:
        with sent_statements() as late:
            _submit(postgres, "txn-upload")
    finally:
        deadlines.set_due_date(postgres.config, A, None)
        with postgres.store.transaction() as conn:  # later tests claim the oldest queued job: not these
            conn.execute(jobs.update().where(jobs.c.status == "queued").values(status="failed"))
    assert [s for s in late if " ".join(s.split()).startswith("SELECT") and "FROM grader_submissions" in s]
