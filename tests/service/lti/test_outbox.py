"""The score outbox (``grader.service.lti.outbox``) on SQLite and PostgreSQL: what ``record`` queues, which row
``drain`` sends and which it supersedes, the sender's lease, and what the dashboard reads (``passback``).

No LMS here (``test_ags.py`` sends to the test LMS): a student linked to no LMS user makes ``drain`` fail the
row it would send, which is enough to see which row that is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from grader import course
from grader.service.config import ServiceConfig
from grader.service.lti import outbox, platforms
from grader.service.queue import leases
from grader.service.records.models import Grade
from grader.service.records.store import Store
from grader.service.records.tables import lti_contexts, lti_members, lti_scores, now, settings

from ..conftest import fresh_database

A = "ps1_tensors"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    course.put_bin_on_path()
    if request.param == "sqlite":
        made = Store(f"sqlite:///{tmp_path / 'gradebook.db'}", create=True)
        yield made
        made.engine.dispose()
        return
    with fresh_database("grader_outbox") as url:
        made = Store(url, create=True)
        yield made
        made.engine.dispose()


def config(tmp_path: Path, store: Store, counting: str = "latest") -> ServiceConfig:
    return ServiceConfig(course_root=tmp_path, db_url=str(store.engine.url), counting=counting)


def graded(store: Store, tmp_path: Path, student: str, score: float, penalty: float = 0.0) -> int:
    """An attempt stored and graded through the store's own path (intake's row and job, a claim, the record)."""
    ident = store.add_submission(student, A, b"{}", now(), "database", tmp_path)
    job = leases.claim(store, None, "test", None, 3)
    assert job is not None and job.submission_id == ident
    store.finish_job(job, Grade(submission_id=ident, score=score, max_score=10.0, late_penalty=penalty))
    return ident


def lms_course(store: Store, lineitem_scopes: str = "[]") -> None:
    """An LMS course offering grade passback, as a launch records it."""
    with store.engine.begin() as conn:
        conn.execute(
            lti_contexts.insert().values(
                issuer="https://lms.example",
                context_id="c1",
                deployment_id="d",
                lineitems_url="https://lms.example/c1/lineitems",
                lineitem_scopes=lineitem_scopes,
                updated_at=now(),
            )
        )


def statuses(store: Store, student: str) -> list[str]:
    with store.engine.connect() as conn:
        query = sa.select(lti_scores.c.status).where(lti_scores.c.student == student).order_by(lti_scores.c.id)
        return list(conn.execute(query).scalars())


def test_record_queues_the_counting_final_score(store: Store, tmp_path: Path) -> None:
    settings_ = config(tmp_path, store)
    assert outbox.record(store, settings_, "ann", A) is None  # nothing counts yet: nothing to send
    graded(store, tmp_path, "ann", 8.0, penalty=2.0)
    before = now()
    ident = outbox.record(store, settings_, "ann", A)
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(lti_scores).where(lti_scores.c.id == ident)).one()
    assert (row.score_given, row.score_maximum) == (6.0, 10.0)  # raw less the late penalty
    assert (row.activity_progress, row.grading_progress, row.status, row.attempts) == (
        "Completed",
        "FullyGraded",
        "pending",
        0,
    )
    assert before <= row.recorded_at <= now() and row.next_try_at == row.recorded_at
    # under "best", a worse later attempt does not change what is sent
    graded(store, tmp_path, "ann", 3.0)
    best = outbox.record(store, config(tmp_path, store, "best"), "ann", A)
    latest = outbox.record(store, settings_, "ann", A)
    with store.engine.connect() as conn:
        given = {r.id: r.score_given for r in conn.execute(sa.select(lti_scores.c.id, lti_scores.c.score_given))}
    assert (given[best], given[latest]) == (6.0, 3.0)


def test_drain_sends_only_the_newest_and_never_an_older_after_a_newer(store: Store, tmp_path: Path) -> None:
    settings_ = config(tmp_path, store)
    graded(store, tmp_path, "bob", 5.0)
    for _ in range(3):
        outbox.record(store, settings_, "bob", A)
    done = outbox.drain(store.engine, settings_)
    # the newest was the one tried (here it fails: bob has no LMS user); the two older ones never will be
    assert (done.failed, done.superseded, done.sent, done.retrying) == (1, 2, 0, 0)
    assert statuses(store, "bob") == ["superseded", "superseded", "failed"]
    assert "not linked to an LMS user" in outbox.passback(store.engine, "bob")[("bob", A)].error
    # a pending score older than one already sent is superseded, not sent
    late = outbox.record(store, settings_, "bob", A)
    newer = outbox.record(store, settings_, "bob", A)
    with store.engine.begin() as conn:
        conn.execute(lti_scores.update().where(lti_scores.c.id == newer).values(status="sent", sent_at=now()))
    assert outbox.drain(store.engine, settings_).superseded == 1
    assert statuses(store, "bob")[-2:] == ["superseded", "sent"]
    assert late is not None and outbox.passback(store.engine, "bob")[("bob", A)].status == "sent"


def test_a_score_waits_for_its_next_try_unless_everything_is_asked_for(store: Store, tmp_path: Path) -> None:
    settings_ = config(tmp_path, store)
    graded(store, tmp_path, "cat", 5.0)
    ident = outbox.record(store, settings_, "cat", A)
    with store.engine.begin() as conn:
        later = now() + dt.timedelta(hours=1)
        conn.execute(lti_scores.update().where(lti_scores.c.id == ident).values(attempts=3, next_try_at=later))
    assert outbox.drain(store.engine, settings_) == outbox.Drained(retrying=1)  # not due: untouched
    assert statuses(store, "cat") == ["pending"]
    assert outbox.drain(store.engine, settings_, everything=True).failed == 1  # grader lti send-scores


def test_one_sender_at_a_time_and_a_dead_holders_lease_lapses(store: Store, tmp_path: Path) -> None:
    engine = store.engine
    assert outbox._lease(engine, "serve:1")
    assert outbox._lease(engine, "serve:1")  # renewed
    assert not outbox._lease(engine, "cli:2")
    assert outbox.drain(engine, config(tmp_path, store), holder="cli:2").busy
    outbox._release(engine, "serve:1")
    assert outbox._lease(engine, "cli:2")
    stale = now() - dt.timedelta(seconds=outbox.LEASE_S + 1)
    with engine.begin() as conn:
        conn.execute(settings.update().where(settings.c.key == outbox.LEASE_KEY).values(updated_at=stale))
    assert outbox._lease(engine, "serve:3")  # cli:2 died holding it
    assert not outbox._lease(engine, "cli:2")


def test_an_unexpected_error_fails_the_score_visibly_not_blocking_the_queue(store: Store, tmp_path: Path) -> None:
    """A course whose stored AGS scopes are not the JSON list they should be (a bug): the score fails with the
    error, visibly, and the next student's score is still tried."""
    settings_ = config(tmp_path, store)
    url = "https://lms.example/x"
    platforms.add_platform(store.engine, platforms.Platform("https://lms.example", "tool", url, url, url, ("d",)))
    lms_course(store, lineitem_scopes="[not json")
    with store.engine.begin() as conn:
        conn.execute(
            lti_members.insert().values(
                issuer="https://lms.example", lms_user_id="u-dee", user_id="dee", role="student", synced_at=now()
            )
        )
    graded(store, tmp_path, "dee", 5.0)
    graded(store, tmp_path, "eli", 5.0)
    outbox.record(store, settings_, "dee", A)
    outbox.record(store, settings_, "eli", A)
    done = outbox.drain(store.engine, settings_)
    assert done.failed == 2 and statuses(store, "dee") == ["failed"] and statuses(store, "eli") == ["failed"]
    error = outbox.passback(store.engine, "dee")[("dee", A)].error
    assert error.startswith("the grader failed sending this score (JSONDecodeError: ")
    assert "not linked to an LMS user" in outbox.passback(store.engine, "eli")[("eli", A)].error


def test_reconcile_queues_scores_changed_without_a_recorded_grade(store: Store, tmp_path: Path) -> None:
    """A change of the counting rule changes the counting final score without a recorded grade: ``reconcile`` queues
    it, and leaves a student whose attempt is being graded alone. A regrade that fails for good changes nothing: the
    attempt keeps its recorded grade and still counts (issue 52: a fault of ours is never a score)."""
    latest = config(tmp_path, store)
    graded(store, tmp_path, "fay", 8.0)
    second = graded(store, tmp_path, "fay", 3.0)
    outbox.record(store, latest, "fay", A)
    graded(store, tmp_path, "gus", 4.0)  # never queued (passback was off then): not reconciled
    assert outbox.reconcile(store, latest) == 0  # nothing changed
    assert outbox.reconcile(store, config(tmp_path, store, "best")) == 1  # the rule changed: the 8 counts
    assert outbox.passback(store.engine, "fay")[("fay", A)].score_given == 8.0
    assert outbox.reconcile(store, latest) == 1  # and back
    store.enqueue([second])  # a regrade of the 3 ...
    assert outbox.reconcile(store, latest) == 0  # ... while it runs, nothing is queued
    job = leases.claim(store, None, "test", None, 3)
    assert job is not None and job.submission_id == second
    store.fail_job(job, "the grader could not grade this submission", retry=False)  # ... fails for good
    kept = store.submission(second)
    assert kept is not None and (kept.status, kept.score) == ("graded", 3.0)  # its recorded grade, still counting
    assert outbox.reconcile(store, latest) == 0
    assert outbox.passback(store.engine, "fay")[("fay", A)].score_given == 3.0
    assert statuses(store, "gus") == []


def test_reconcile_queues_a_linked_students_score_that_was_never_queued(store: Store, tmp_path: Path) -> None:
    """Grades recorded before passback was turned on (or before the student was linked to the LMS) reach the LMS:
    ``reconcile`` queues the counting final score of every active LMS-linked student once; a dropped member, an
    unlinked student and a student whose score is already queued are left alone."""
    latest = config(tmp_path, store)
    lms_course(store)
    with store.engine.begin() as conn:
        for lms_user, user, status in (("u-hal", "hal", "active"), ("u-ivy", "ivy", "dropped")):
            conn.execute(
                lti_members.insert().values(
                    issuer="https://lms.example",
                    lms_user_id=lms_user,
                    user_id=user,
                    role="student",
                    status=status,
                    synced_at=now(),
                )
            )
    graded(store, tmp_path, "hal", 6.0, penalty=1.0)  # graded before the hook was on: never queued
    graded(store, tmp_path, "ivy", 7.0)  # dropped from the LMS course
    graded(store, tmp_path, "jon", 7.0)  # not linked to the LMS
    assert outbox.reconcile(store, latest) == 1
    assert statuses(store, "hal") == ["pending"]
    assert outbox.passback(store.engine, "hal")[("hal", A)].score_given == 5.0
    assert statuses(store, "ivy") == [] and statuses(store, "jon") == []
    assert outbox.reconcile(store, latest) == 0  # queued once
