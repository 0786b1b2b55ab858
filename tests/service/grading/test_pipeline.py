"""The pipeline (issue 16): ``STAGES`` drives the run, nbgrader's grade rows have one writer,
``after_record`` hooks see every recorded grade, and the retry policy follows the exception's type.

In process, with the real engine (a warm zygote), a real SQLite gradebook and real nbgrader rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from grader.errors import ConfigurationError, InfrastructureError
from grader.service import config as service_config
from grader.service import hooks
from grader.service.config import ServiceConfig
from grader.service.grading import gradebook, intake, pipeline, scoring
from grader.service.grading.pipeline import Pipeline
from grader.service.queue import leases
from grader.service.records.models import Recorded
from grader.service.records.store import Store

from ..conftest import fixture_bytes
from .course import Graded, started

A = "ps2_autograd"


class Course(Graded):
    def pipeline(self, *after_record: Any, **overrides: Any) -> Pipeline:
        config = self.config if not overrides else service_config.load(self.root, **overrides)
        return Pipeline(self.store, config, self.engine, after_record)

    def graded(self, student: str, fixture: str, run: Pipeline | None = None) -> int:
        """Submit ``fixture`` as ``student`` and grade it through ``run`` (the plain pipeline by default)."""
        accepted = intake.accept(self.store, self.config, student, A, fixture_bytes(A, fixture))
        job = leases.claim(self.store, None, "test", None, self.config.max_attempts)
        assert job is not None and job.submission_id == accepted.id
        (run or self.pipeline()).grade_job(job)
        return accepted.id


@pytest.fixture(scope="module")
def grading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    with started(tmp_path_factory.mktemp("pipeline"), A) as graded:
        yield Course(graded.root, graded.config, graded.store, graded.engine)


def _gradebook_points(config: ServiceConfig, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(config.db_url) as book:
        notebook = book.find_submission(A, student).notebooks[0]
        written = {c.name for c in notebook.notebook.solution_cells}  # the written answers: a person's
        return {g.name: float(g.score) for g in notebook.grades if g.name not in written}


def _spy_on_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The submissions whose grade the gradebook stage writes from now on."""
    writes: list[int] = []
    real = gradebook._write

    def spy(config: ServiceConfig, submission: Any, name: str, grade: Any) -> None:
        writes.append(submission.id)
        real(config, submission, name, grade)

    monkeypatch.setattr(gradebook, "_write", spy)
    return writes


def test_the_stages_run_in_the_order_written_once(grading: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    assert [s.name for s in pipeline.STAGES] == ["execution", "scoring", "gradebook", "record"]
    ran: list[str] = []

    def traced(stage: pipeline.Stage) -> pipeline.Stage:
        def run(r: pipeline.Run) -> None:
            ran.append(stage.name)
            stage.run(r)

        return pipeline.Stage(stage.name, run)

    monkeypatch.setattr(pipeline, "STAGES", tuple(traced(s) for s in pipeline.STAGES))
    submission_id = grading.graded("order-olga", "correct")
    assert ran == ["execution", "scoring", "gradebook", "record"]
    assert grading.store.submission(submission_id).status == "graded"  # type: ignore[union-attr]


def test_a_completed_run_leaves_nbgraders_rows_as_nbgrader_wrote_them(
    grading: Course, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, ``gradebook.record`` rewrote every row ``SaveAutoGrades`` had just written."""
    writes = _spy_on_writes(monkeypatch)
    submission_id = grading.graded("once-omar", "grad-not-zeroed")
    assert writes == []
    results = {t.name: t.points for t in grading.store.results(submission_id)}
    assert _gradebook_points(grading.config, "once-omar") == results and 0 < sum(results.values())


def test_when_an_older_attempt_counts_the_gradebook_gets_it_back(
    grading: Course, monkeypatch: pytest.MonkeyPatch
) -> None:
    best = grading.pipeline(counting="best")
    first = grading.graded("best-bo", "correct", best)
    writes = _spy_on_writes(monkeypatch)
    worse = grading.graded("best-bo", "grad-not-zeroed", best)
    assert writes == [first]  # the better, older attempt written back, once
    older, newer = grading.store.submission(first), grading.store.submission(worse)
    assert older is not None and newer is not None and newer.status == "graded"
    assert (newer.score or 0) < (older.score or 0)
    assert _gradebook_points(grading.config, "best-bo") == {t.name: t.points for t in grading.store.results(first)}


def test_an_incomplete_run_is_written_by_the_gradebook_stage(grading: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    """nbgrader gave up on the notebook: the gradebook must not keep the older attempt's rows."""
    grading.graded("gone-gus", "correct")
    real_run = pipeline.execution.run

    def incomplete(*args: Any) -> Any:
        ran = real_run(*args)
        return type(ran)(notebook=None, log=ran.log, problem="Your notebook could not be graded to the end.")

    monkeypatch.setattr(pipeline.execution, "run", incomplete)
    second = grading.graded("gone-gus", "correct")
    assert grading.store.submission(second).score == 0  # type: ignore[union-attr]
    assert set(_gradebook_points(grading.config, "gone-gus").values()) == {0.0}


def test_after_record_hooks_see_each_grade_and_a_failing_one_does_not_undo_it(grading: Course) -> None:
    seen: list[Recorded] = []

    def broken(store: Store, config: ServiceConfig, recorded: Recorded) -> None:
        raise RuntimeError("the LMS is down")

    run = grading.pipeline(broken, lambda store, config, recorded: seen.append(recorded))
    submission_id = grading.graded("hook-hana", "correct", run)
    assert [r.submission.id for r in seen] == [submission_id]
    assert seen[0].grade.score == seen[0].grade.max_score > 0
    assert grading.store.submission(submission_id).status == "graded"  # type: ignore[union-attr]


def test_the_built_in_export_hook_keeps_the_canvas_csv_current(grading: Course) -> None:
    run = grading.pipeline(*hooks.after_record(service_config.load(grading.root, after_record=("canvas-csv",))))
    grading.graded("csv-cleo", "correct", run)
    lines = (grading.root / "exports" / "canvas.csv").read_text().splitlines()
    assert lines[0].startswith("Student,ID,SIS User ID") and any(",csv-cleo,csv-cleo," in line for line in lines)
    assert not list((grading.root / "exports").glob(".*partial"))


def test_a_hook_that_does_not_exist_fails_at_start_up(grading: Course) -> None:
    for name, says in (
        ("canvas", "neither a built-in hook (canvas-csv, grades-csv, lti-ags) nor package.module:function"),
        ("no_such_module:f", "cannot import 'no_such_module'"),
        ("grader.service.dashboard.export:nothing", "has no function 'nothing'"),
    ):
        with pytest.raises(ConfigurationError, match=r"GraderService\.after_record") as raised:
            service_config.load(grading.root, after_record=(name,))
        assert says in str(raised.value)


def test_infrastructure_is_retried_a_bug_fails_at_once(grading: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    def flaky(*args: Any) -> Any:
        raise InfrastructureError("the zygote went away")

    monkeypatch.setattr(pipeline.execution, "run", flaky)
    retried = intake.accept(grading.store, grading.config, "flaky-fay", A, fixture_bytes(A, "correct")).id
    job = leases.claim(grading.store, None, "test", None, 3)
    assert job is not None
    grading.pipeline().grade_job(job)
    assert grading.store.submission(retried).status == "queued"  # type: ignore[union-attr]
    job = leases.claim(grading.store, None, "test", None, 3)
    assert job is not None and job.submission_id == retried

    def bug(*args: Any) -> Any:
        raise KeyError("grade_id")

    monkeypatch.setattr(scoring, "score", bug)
    monkeypatch.setattr(
        pipeline.execution, "run", lambda *args: type("E", (), {"problem": "", "log": "", "completed": False})()
    )
    grading.pipeline().grade_job(job)
    failed = grading.store.submission(retried)
    assert failed is not None and failed.status == "failed" and failed.reason == pipeline.NOT_GRADED_YET
    assert grading.store.job_failures("flaky-fay")[retried] == (
        "Not graded (a bug in the grader): KeyError: 'grade_id'. Regrade it once this is fixed."
    )


def test_the_local_queue_claims_through_leases(grading: Course) -> None:
    """One claim path: the embedded threads take the oldest queued job with ``leases.claim``."""
    first = intake.accept(grading.store, grading.config, "queue-quinn", A, fixture_bytes(A, "correct")).id
    job = leases.claim(grading.store, None, "local", None, 3)
    assert job is not None and job.submission_id == first and job.attempts == 1
    assert leases.claim(grading.store, None, "local", None, 3) is None  # nothing else queued
    assert leases.claim(grading.store, job.id, "other", None, 3) is None  # running: no lease to run out
    grading.pipeline().grade_until_recorded(job, lambda: job, threading.Event())
    assert grading.store.submission(first).status == "graded"  # type: ignore[union-attr]


def test_a_kernel_whose_sandbox_is_incomplete_is_retried_then_failed_with_the_step_named(
    grading: Course, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox fails closed through the service (issue 17): every attempt's kernel lacks one step the
    start-up probe had, so no attempt runs student code; each is retried, the last fails with the step."""
    from grader.engine.inside import sandbox
    from grader.engine.kernels import early
    from grader.plugins.isolation import kernel_environment
    from tests.engine.test_fail_closed import _forcible

    step = _forcible(grading.engine.zygote)[-1]
    monkeypatch.setattr(
        early, "kernel_environment", lambda home: {**kernel_environment(home), sandbox.FAIL_STEP_VARIABLE: step}
    )
    sid = intake.accept(grading.store, grading.config, "unsandboxed-uma", A, fixture_bytes(A, "correct")).id
    seen = []
    for attempt in range(1, grading.config.max_attempts + 1):
        job = leases.claim(grading.store, None, "test", None, grading.config.max_attempts)
        assert job is not None and job.submission_id == sid and job.attempts == attempt
        grading.pipeline().grade_job(job)
        submission = grading.store.submission(sid)
        assert submission is not None
        seen.append((submission.status, submission.reason))
    assert seen[:-1] == [("queued", pipeline.RETRYING)] * (len(seen) - 1)
    assert seen[-1] == ("failed", pipeline.NOT_GRADED_YET), seen
    reason = grading.store.job_failures("unsandboxed-uma")[sid]  # for staff
    assert reason.startswith(f"Not graded after {grading.config.max_attempts} attempts (infrastructure)")
    assert f"no {step} (forced to fail by {sandbox.FAIL_STEP_VARIABLE})" in reason
    assert "stopped before running any student code" in reason and reason.endswith("Regrade it once this is fixed.")
    assert leases.claim(grading.store, None, "test", None, grading.config.max_attempts) is None
    monkeypatch.undo()
    assert grading.graded("sandboxed-sam", "correct") and grading.store.submissions(student="sandboxed-sam")[
        0
    ].status == ("graded")
