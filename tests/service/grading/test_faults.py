"""No fault of ours is ever a student's score (issue 52).

A raising fault is injected into each step outside the student's own cells (nbgrader's bookkeeping,
its grade step, the late policy, variants, mending, the service's scoring and records), with the real
engine, real nbgrader and a real gradebook on SQLite and on PostgreSQL. Each time: no score row is
written or changed (the service's nor nbgrader's), the job fails with the step named for staff, the
student reads that the submission is stored, the queue page counts it, and the LMS hooks never run.
A regrade that meets a fault leaves the recorded score as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from grader.engine.bookkeeping import bulk
from grader.plugins import mending
from grader.service.config import ServiceConfig
from grader.service.grading import feedback, intake, scoring
from grader.service.grading.pipeline import NOT_GRADED_YET, Pipeline
from grader.service.queue import leases
from grader.service.records.models import Recorded
from grader.service.records.store import Store
from grader.variants import preprocessors as variants

from ..conftest import fixture_bytes, fresh_database
from .course import Graded, started

A = "ps2_autograd"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def course(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    base = tmp_path_factory.mktemp(f"faults-{request.param}")
    if request.param == "sqlite":
        with started(base, A) as graded:
            yield graded
        return
    with fresh_database("grader_faults") as url, started(base, A, db_url=url) as graded:
        yield graded
        graded.store.engine.dispose()


class Broken(RuntimeError):
    pass


def _raise_after(real: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``real``, which does its work (writes its rows), then raises."""

    def step(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise Broken(what)

    return step


def _raise(what: str) -> Callable[..., Any]:
    def step(*args: Any, **kwargs: Any) -> Any:
        raise Broken(what)

    return step


# step -> (what to patch, the name the reason gives staff)
FAULTS: dict[str, tuple[Callable[[pytest.MonkeyPatch], None], str]] = {
    "nbgrader's grade step, after writing": (
        lambda mp: mp.setattr(
            bulk.BulkSaveAutoGrades, "preprocess", _raise_after(bulk.BulkSaveAutoGrades.preprocess, "grade rows")
        ),
        "the autograde step grader.engine.bookkeeping.bulk.BulkSaveAutoGrades raised Broken: grade rows",
    ),
    "the late policy": (
        lambda mp: mp.setattr(bulk.RecordedLatePenalties, "preprocess", _raise("late policy")),
        "the autograde step grader.engine.bookkeeping.bulk.RecordedLatePenalties raised Broken: late policy",
    ),
    "variants": (
        lambda mp: mp.setattr(variants.ApplyVariant, "preprocess", _raise("variant")),
        "the sanitize step grader.variants.preprocessors.ApplyVariant raised Broken: variant",
    ),
    "mending": (
        lambda mp: mp.setattr(mending.MendCells, "preprocess", _raise("mend")),
        "the sanitize step grader.plugins.mending.MendCells raised Broken: mend",
    ),
    "the service's scoring": (
        lambda mp: mp.setattr(scoring, "score", _raise("scoring")),
        "Not graded (a bug in the grader): Broken: scoring",
    ),
    "the service's records": (
        lambda mp: mp.setattr(Store, "finish_job", _raise("records")),
        "Not graded (a bug in the grader): Broken: records",
    ),
}


def _gradebook(config: ServiceConfig, student: str) -> tuple[dict[str, float | None], float | None] | None:
    """``student``'s nbgrader rows of the assignment: each cell's score and the late penalty; None: no submission."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(config.db_url) as book:
        try:
            notebook = book.find_submission(A, student).notebooks[0]
        except MissingEntry:
            return None
        return {g.name: g.auto_score for g in notebook.grades}, notebook.late_submission_penalty


def _grade(course: Graded, student: str, fixture: str, seen: list[Recorded]) -> int:
    submission_id = intake.accept(course.store, course.config, student, A, fixture_bytes(A, fixture)).id
    return _run(course, submission_id, seen)


def _run(course: Graded, submission_id: int, seen: list[Recorded]) -> int:
    job = leases.claim(course.store, None, "test", None, course.config.max_attempts)
    assert job is not None and job.submission_id == submission_id
    Pipeline(course.store, course.config, course.engine, (lambda s, c, r: seen.append(r),)).grade_job(job)
    return submission_id


def _check_failed(course: Graded, submission_id: int, named: str, failed_before: int) -> None:
    submission = course.store.submission(submission_id)
    assert submission is not None
    view = feedback.view(course.config, submission, course.store.results(submission_id))
    assert (view["status"], view["reason"], "score" in view) == ("failed", NOT_GRADED_YET, False)
    assert submission.score is None and course.store.results(submission_id) == ()
    reason = course.store.job_failures(submission.student)[submission_id]
    assert named in reason, reason
    assert course.store.queue_counts().get("failed", 0) == failed_before + 1


@pytest.mark.parametrize("step", list(FAULTS))
def test_a_fault_in_a_new_attempt_changes_no_score(course: Graded, step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    student = f"later-{len(step)}-{abs(hash(step)) % 10_000}"
    seen: list[Recorded] = []
    first = _grade(course, student, "grad-not-zeroed", seen)
    recorded = course.store.submission(first)
    rows = _gradebook(course.config, student)
    assert recorded is not None and recorded.status == "graded" and rows is not None and len(seen) == 1
    failed_before = course.store.queue_counts().get("failed", 0)
    patch, named = FAULTS[step]
    patch(monkeypatch)
    second = _grade(course, student, "correct", seen)
    monkeypatch.undo()
    _check_failed(course, second, named, failed_before)
    assert course.store.submission(first) == recorded  # the attempt that counts, as it was
    assert _gradebook(course.config, student) == rows  # nbgrader's rows, as they were
    assert len(seen) == 1  # no after_record hook (LMS passback, exports) ran for the fault


@pytest.mark.parametrize("step", list(FAULTS))
def test_a_fault_in_a_first_attempt_writes_no_score(course: Graded, step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    student = f"first-{len(step)}-{abs(hash(step)) % 10_000}"
    seen: list[Recorded] = []
    failed_before = course.store.queue_counts().get("failed", 0)
    patch, named = FAULTS[step]
    patch(monkeypatch)
    submission_id = _grade(course, student, "correct", seen)
    monkeypatch.undo()
    _check_failed(course, submission_id, named, failed_before)
    rows = _gradebook(course.config, student)
    assert rows is None or not any(rows[0].values()), rows  # no score in nbgrader's gradebook either
    assert seen == []


def test_a_regrade_that_meets_a_fault_keeps_the_recorded_score(course: Graded, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Recorded] = []
    submission_id = _grade(course, "regraded-rita", "correct", seen)
    recorded = course.store.submission(submission_id)
    results = course.store.results(submission_id)
    rows = _gradebook(course.config, "regraded-rita")
    assert recorded is not None and recorded.score and rows is not None and results
    failed_before = course.store.queue_counts().get("failed", 0)
    course.store.enqueue([submission_id])
    monkeypatch.setattr(bulk.RecordedLatePenalties, "preprocess", _raise("late policy"))
    _run(course, submission_id, seen)
    monkeypatch.undo()
    after = course.store.submission(submission_id)
    assert after is not None and (after.status, after.score, after.late_penalty, after.graded_at) == (
        "graded",
        recorded.score,
        recorded.late_penalty,
        recorded.graded_at,
    )
    assert course.store.results(submission_id) == results
    assert _gradebook(course.config, "regraded-rita") == rows
    assert (
        "RecordedLatePenalties raised Broken: late policy" in course.store.job_failures("regraded-rita")[submission_id]
    )
    assert course.store.queue_counts().get("failed", 0) == failed_before + 1
    assert len(seen) == 1


def test_an_extension_on_an_assignment_without_a_due_date_is_a_fault_not_a_zero(course: Graded) -> None:
    """The gradebook made by hand (``grader extension`` refuses it): nbgrader's own bookkeeping raises."""
    from nbgrader.api import Gradebook

    with Gradebook(course.config.db_url) as book:
        book.update_or_create_student("extended-ed")
        book.add_submission(A, "extended-ed")
        book.grant_extension(A, "extended-ed", minutes=24 * 60)
    failed_before = course.store.queue_counts().get("failed", 0)
    submission_id = _grade(course, "extended-ed", "correct", [])
    named = "nbgrader's Autograde.init_assignment (the student's submission in the gradebook) raised TypeError"
    _check_failed(course, submission_id, named, failed_before)
