"""The order of the stages, written down once, and the grading of one job through them.

    intake     validate, store durably, create submission + job   (intake.accept)
    queue      a worker claims the job                              (queue.LocalWorkers / store.claim_job)
    execution  nbgrader autograde, cells in a forked, limited kernel (execution.run)
    scoring    per test cell: points and the student-safe message  (scoring.score)
    gradebook  the nbgrader gradebook holds exactly that grade      (gradebook.record)
    feedback   what the student sees, by policy                     (feedback.view, export)

Every job ends with a recorded result: a grade, or (after ``max_attempts``
infrastructure failures) ``failed`` with a reason.
"""

from __future__ import annotations

import logging
import traceback

from ..engine.engine import Engine
from . import execution, gradebook, scoring
from .config import ServiceConfig
from .errors import InfrastructureError
from .intake import assignment_cells
from .models import Job
from .store import Store

STAGES = ("intake", "queue", "execution", "scoring", "gradebook", "feedback")

log = logging.getLogger("grader.service")


def grade_job(store: Store, config: ServiceConfig, engine: Engine, job: Job) -> None:
    submission = store.submission(job.submission_id)
    if submission is None:
        store.fail_job(job, "the submission record is missing", retry=False)
        return
    try:
        notebook_name = assignment_cells(config.db_url, submission.assignment).notebook
        with execution.student_lock(submission.student, submission.assignment):
            ran = execution.run(config, engine, submission, notebook_name)
            if ran.problem:
                log.warning("submission %s: %s\n%s", submission.id, ran.problem, ran.log[-4000:])
            grade = scoring.score(config, submission, notebook_name, ran)
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
