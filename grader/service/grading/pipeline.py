"""The grading of one job: the stages in order, written once as data (``STAGES``), and what runs after.

A submission's whole path, and where each step lives:

    intake     validate, store durably, create submission + job     (grading.intake.accept, at upload)
    queue      a worker claims the job                                (queue: local threads, or broker + workers)
    execution  nbgrader autograde, cells in a forked, limited kernel  (grading.execution.run)
    scoring    per test cell: points and the student-safe message     (grading.scoring.score)
    gradebook  nbgrader's gradebook holds the attempt that counts     (grading.gradebook.record)
    record     the service's records: the grade, the job finished   (records.store.finish_job)
    feedback   what the student sees, by policy                       (grading.feedback.view, when asked)

``STAGES`` holds the four that run for a claimed job; ``Pipeline.grade`` runs them in that
order and nothing else does.  After the record stage the ``after_record`` hooks run (exports,
and later grade passback: ``hooks``), each with the recorded grade; a hook that fails is logged
and does not undo the grade.

The stages run inside ``execution.grading``: the student lock and, on PostgreSQL, one transaction
that holds nbgrader's rows and the service's for this job, committed once after the record stage
(or rolled back whole: a claim found lost at the record stage leaves no row of its grade behind).

Every job ends with a recorded result: a grade, or ``failed`` with a reason.  Outcomes are
typed (``grader.errors``): an ``InfrastructureError`` is retried up to ``max_attempts``; a
database outage is waited out, not counted as an attempt (``grade_until_recorded``); a
``GradingFault`` (a step of ours raised: ``grader.engine.bookkeeping.faults``) and any other exception (a bug
in the grader) would be repeated by a retry, so the job is failed at once.

No fault of ours is ever a score (``_failed``): the job fails with the reason for staff (the queue
page, the student's page), the student reads that the submission is stored and could not be graded
yet, and a submission graded before (a regrade) keeps its recorded grade; nbgrader's gradebook is put
back to the attempt that counts (``gradebook.put_back``), where the job had no transaction to roll
back (SQLite).  The ``after_record`` hooks (LMS passback) run only after a recorded grade.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Connection

from ...engine.engine import Engine
from ...errors import DatabaseUnavailable, GradingFault, InfrastructureError, LostClaim
from ..config import ServiceConfig
from ..records.models import Execution, Grade, Job, Recorded, Submission
from ..records.store import DATABASE_ERRORS, Store
from . import execution, gradebook, scoring
from .intake import assignment_cells

log = logging.getLogger("grader.service")

# what a student whose submission could not be graded reads; the reason goes to staff
NOT_GRADED_YET = (
    "Your submission is stored, but it could not be graded yet because of a problem on our side, not in your "
    "notebook. The course staff have been told and will grade it; you do not need to submit again."
)
RETRYING = "Your submission is stored; the grader had a problem on our side and will try again shortly."

# not the submission's fault, and not to be recorded as its failure
PASS_THROUGH: tuple[type[Exception], ...] = (LostClaim, DatabaseUnavailable, *DATABASE_ERRORS)

Hook = Callable[[Store, ServiceConfig, Recorded], None]


@dataclass
class Run:
    """One claimed job on its way through the stages; each stage fills in its part."""

    pipeline: Pipeline
    job: Job
    submission: Submission
    notebook_name: str
    data: bytes
    connection: Connection | None = None  # the job's one transaction, on PostgreSQL (``execution.grading``)
    execution: Execution | None = None
    grade: Grade | None = None
    recorded: Recorded | None = None


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Run], None]


def _execute(run: Run) -> None:
    p = run.pipeline
    run.execution = execution.run(p.config, p.engine, run.submission, run.notebook_name, run.data)
    if run.execution.problem:
        log.warning("submission %s: %s\n%s", run.submission.id, run.execution.problem, run.execution.log[-4000:])


def _score(run: Run) -> None:
    assert run.execution is not None
    run.grade = scoring.score(run.pipeline.config, run.submission, run.notebook_name, run.execution)


def _gradebook(run: Run) -> None:
    assert run.execution is not None and run.grade is not None
    p = run.pipeline
    # in one transaction, a lost claim rolls these rows back with the rest (``finish_job`` finds it lost)
    if run.connection is None and not p.store.holds(run.job):
        raise LostClaim(f"job {run.job.id} was taken over by another worker while it was graded here")
    written = run.execution.written
    gradebook.record(
        p.store,
        p.config,
        run.submission,
        run.notebook_name,
        run.grade,
        run.execution.completed,
        run.connection,
        autograded=written.autograded if written is not None else _autograded(run.execution),
    )


def _autograded(execution: Execution) -> object:
    """The autograded notebook as read back from ``autograded/`` (a course whose steps do not note it)."""
    import nbformat

    if execution.notebook is None or not execution.completed:
        return None
    return nbformat.read(execution.notebook, as_version=4)  # type: ignore[no-untyped-call]


def _record(run: Run) -> None:
    assert run.grade is not None
    run.pipeline.store.finish_job(run.job, run.grade, run.connection)
    run.recorded = Recorded(run.submission, run.grade)


STAGES: tuple[Stage, ...] = (
    Stage("execution", _execute),
    Stage("scoring", _score),
    Stage("gradebook", _gradebook),
    Stage("record", _record),
)


@dataclass
class Pipeline:
    """The stages bound to one service: its store, configuration, engine and hooks."""

    store: Store
    config: ServiceConfig
    engine: Engine
    after_record: Sequence[Hook] = field(default_factory=tuple)

    def grade_job(self, job: Job) -> None:
        """Grade ``job`` through the stages and record its result.

        Raises ``DatabaseUnavailable`` when the database stopped answering: nothing more could be
        recorded, and the caller grades the job again once it is back (``grade_until_recorded``).
        A claim taken over by another worker records nothing and returns.
        """
        try:
            self._grade(job)
        except LostClaim as lost:
            log.warning("%s", lost)
        except DATABASE_ERRORS as error:
            raise DatabaseUnavailable(f"the database did not answer: {error}") from error

    def grade_until_recorded(self, job: Job, reclaim: Callable[[], Job | None], stopping: threading.Event) -> None:
        """``grade_job``, again after each database outage, while ``reclaim`` says the job is still ours.

        Waits 1, 2, 4 ... up to 30 s between tries; gives up only when the worker is stopping (the
        job's lease then runs out and another worker takes it).
        """
        delay = 1.0
        while True:
            try:
                self.grade_job(job)
                return
            except DatabaseUnavailable as error:
                log.warning("job %s: %s; trying again in %.0f s", job.id, error, delay)
            while True:
                if stopping.wait(delay):
                    return
                delay = min(2 * delay, 30.0)
                try:
                    again = reclaim()
                    break
                except DATABASE_ERRORS:
                    log.warning("job %s: the database is still unavailable", job.id)
            if again is None:
                log.warning("job %s was taken over or finished meanwhile: leaving it", job.id)
                return
            job = again

    def _grade(self, job: Job) -> None:
        store, config = self.store, self.config
        submission = job.submission or store.submission(job.submission_id)  # the claim's, where it read it
        if submission is None:
            store.fail_job(job, "the submission record is missing", retry=False)
            return
        run: Run | None = None
        try:
            with execution.grading(store, config.db_url, submission.student, submission.assignment) as connection:
                cells = assignment_cells(config.db_url, submission.assignment, connection, submission.student)
                notebook = cells.notebook
                run = Run(self, job, submission, notebook, store.notebook(submission), connection)
                for stage in STAGES:
                    stage.run(run)
            if run.connection is not None:  # committed: the grade is there to be read
                store.finished.notify(submission.id)
        except PASS_THROUGH:
            raise
        except Exception as error:
            if run is not None and run.connection is None and run.execution is not None and run.execution.completed:
                self._put_back(run)  # nbgrader wrote this attempt's rows; a later stage failed
            self._failed(job, submission, error)
            return
        assert run.recorded is not None and run.grade is not None
        log.info(
            "graded submission %s (%s/%s): %g/%g",
            submission.id,
            submission.student,
            submission.assignment,
            run.grade.score,
            run.grade.max_score,
        )
        for hook in self.after_record:
            try:
                hook(store, config, run.recorded)
            except Exception:
                log.error(
                    "after_record hook %s failed for submission %s:\n%s",
                    _name(hook),
                    submission.id,
                    traceback.format_exc(),
                )

    def _put_back(self, run: Run) -> None:
        try:
            gradebook.put_back(self.store, self.config, run.submission, run.notebook_name)
        except Exception:
            log.error("putting back %s's gradebook rows failed:\n%s", run.submission.student, traceback.format_exc())

    def _failed(self, job: Job, submission: Submission, error: Exception) -> None:
        """The retry policy, apart from the work: infrastructure faults again, a fault of ours or a bug not.

        Never a score: staff get the reason, the student is told their submission is stored."""
        infrastructure = isinstance(error, (InfrastructureError, OSError))  # OSError: a full disk, a lost mount
        retry = infrastructure and job.attempts < self.config.max_attempts
        kind = (
            "infrastructure"
            if infrastructure
            else "a fault of the grader"
            if isinstance(error, GradingFault)
            else "a bug in the grader"
        )
        log.error(
            "grading submission %s failed (%s, attempt %d): %s",
            submission.id,
            kind,
            job.attempts,
            traceback.format_exc(),
        )
        if retry:
            reason = f"Attempt {job.attempts} failed ({kind}): {error}; trying again."
        elif infrastructure:
            reason = f"Not graded after {job.attempts} attempts ({kind}): {error}. Regrade it once this is fixed."
        else:
            reason = f"Not graded ({kind}): {type(error).__name__}: {error}. Regrade it once this is fixed."
        self.store.fail_job(job, reason, retry=retry, told=RETRYING if retry else NOT_GRADED_YET)


def _name(hook: Hook) -> str:
    return f"{getattr(hook, '__module__', '?')}.{getattr(hook, '__qualname__', repr(hook))}"
