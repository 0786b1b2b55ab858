"""The order of the stages, written down once, and the grading of one job through them.

    intake     validate, store durably, create submission + job   (intake.accept)
    queue      a worker claims the job        (queue.LocalWorkers, or dispatch + broker -> worker + leases)
    execution  nbgrader autograde, cells in a forked, limited kernel (execution.run)
    scoring    per test cell: points and the student-safe message  (scoring.score)
    gradebook  the nbgrader gradebook holds exactly that grade      (gradebook.record)
    feedback   what the student sees, by policy                     (feedback.view, export)

Every job ends with a recorded result: a grade, or (after ``max_attempts``
infrastructure failures, or workers that died running it) ``failed`` with a
reason.  A database outage is waited out, not counted as an attempt.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable

from ...engine.engine import Engine
from ...errors import DatabaseUnavailable, InfrastructureError, LostClaim
from ..config import ServiceConfig
from ..records.models import Job
from ..records.store import DATABASE_ERRORS, Store
from . import execution, gradebook, scoring
from .intake import assignment_cells

STAGES = ("intake", "queue", "execution", "scoring", "gradebook", "feedback")

log = logging.getLogger("grader.service")

# not the submission's fault, and not to be recorded as its failure
PASS_THROUGH: tuple[type[Exception], ...] = (LostClaim, DatabaseUnavailable, *DATABASE_ERRORS)


def grade_job(store: Store, config: ServiceConfig, engine: Engine, job: Job) -> None:
    """Grade ``job`` through the stages and record its result.

    Raises ``DatabaseUnavailable`` when the database stopped answering: nothing
    more could be recorded, and the caller grades the job again once it is back
    (``grade_until_recorded``).  A claim taken over by another worker records
    nothing and returns.
    """
    try:
        _grade(store, config, engine, job)
    except LostClaim as lost:
        log.warning("%s", lost)
    except DATABASE_ERRORS as error:
        raise DatabaseUnavailable(f"the database did not answer: {error}") from error


def grade_until_recorded(
    store: Store,
    config: ServiceConfig,
    engine: Engine,
    job: Job,
    reclaim: Callable[[], Job | None],
    stopping: threading.Event,
) -> None:
    """``grade_job``, again after each database outage, while ``reclaim`` says the job is still ours.

    Waits 1, 2, 4 ... up to 30 s between tries; gives up only when the worker is stopping (the job's
    lease then runs out and another worker takes it).
    """
    delay = 1.0
    while True:
        try:
            grade_job(store, config, engine, job)
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


def _grade(store: Store, config: ServiceConfig, engine: Engine, job: Job) -> None:
    submission = store.submission(job.submission_id)
    if submission is None:
        store.fail_job(job, "the submission record is missing", retry=False)
        return
    try:
        notebook_name = assignment_cells(config.db_url, submission.assignment).notebook
        data = store.notebook(submission)
        with execution.student_lock(store, submission.student, submission.assignment):
            ran = execution.run(config, engine, submission, notebook_name, data)
            if ran.problem:
                log.warning("submission %s: %s\n%s", submission.id, ran.problem, ran.log[-4000:])
            grade = scoring.score(config, submission, notebook_name, ran)
            if not store.holds(job):
                raise LostClaim(f"job {job.id} was taken over by another worker while it was graded here")
            gradebook.record(config, submission, notebook_name, grade)
            store.finish_job(job, grade)
            gradebook.record_counting(store, config, submission, notebook_name)
        log.info(
            "graded submission %s (%s/%s): %g/%g",
            submission.id,
            submission.student,
            submission.assignment,
            grade.score,
            grade.max_score,
        )
    except PASS_THROUGH:
        raise
    except Exception as error:
        retry = job.attempts < config.max_attempts
        kind = "infrastructure" if isinstance(error, InfrastructureError) else "internal"
        log.error(
            "grading submission %s failed (%s, attempt %d): %s",
            submission.id,
            kind,
            job.attempts,
            traceback.format_exc(),
        )
        reason = (
            "The grader had a problem and will try again."
            if retry
            else f"The grader could not grade this submission after {job.attempts} attempts ({type(error).__name__}); "
            "your submission is kept: ask your TA to regrade it."
        )
        store.fail_job(job, reason, retry=retry)
