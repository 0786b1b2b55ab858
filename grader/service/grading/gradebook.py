"""Gradebook: the one place the service writes nbgrader's grade rows.

nbgrader's own ``SaveAutoGrades`` and ``AssignLatePenalties`` (run by the engine, exactly as
``nbgrader autograde`` runs them) write the rows of the attempt they graded.  That is the
normal case, and then this stage writes nothing.  It writes only what they could not:

- the run did not complete (nbgrader gave up on the notebook), so the gradebook may still hold
  an older attempt's rows: the grade the service recorded is written;
- another attempt counts (an older one regraded, or a better one under ``counting = "best"``):
  that attempt's recorded grade is written back.

``record`` decides, before the grade is stored, so the gradebook and the service never disagree
about which attempt counts.  Writing the same grade twice changes nothing.
"""

from __future__ import annotations

import dataclasses

from sqlalchemy.engine import Connection

from ..config import ServiceConfig
from ..records.models import Grade, Submission
from ..records.store import Store
from ..rules.counting import counting


def record(
    store: Store,
    config: ServiceConfig,
    submission: Submission,
    notebook_name: str,
    grade: Grade,
    written: bool,
    conn: Connection | None = None,
) -> bool:
    """Make nbgrader's gradebook hold the attempt that counts once ``grade`` is recorded for ``submission``.

    ``written``: nbgrader already wrote ``grade``'s rows (the run completed).  ``conn``: the job's one
    transaction, where there is one (the attempts are read in it).  Returns whether anything was written here.
    """
    graded = dataclasses.replace(
        submission, status="graded", score=grade.score, max_score=grade.max_score, late_penalty=grade.late_penalty
    )
    attempts = [
        graded if s.id == submission.id else s
        for s in store.submissions(submission.student, submission.assignment, conn)
    ]
    counts = counting(attempts, config.counting) or graded
    if counts.id == submission.id:
        if written:
            return False
        _write(config, submission, notebook_name, grade)
        return True
    kept = Grade(
        submission_id=counts.id,
        score=counts.score or 0.0,
        max_score=counts.max_score or 0.0,
        late_penalty=counts.late_penalty or 0.0,
        tests=store.results(counts.id),
    )
    _write(config, counts, notebook_name, kept)
    return True


def _write(config: ServiceConfig, submission: Submission, notebook_name: str, grade: Grade) -> None:
    from nbgrader.api import Gradebook

    points = {t.name: t.points for t in grade.tests}
    with Gradebook(config.db_url) as gradebook:
        gradebook.update_or_create_student(submission.student)
        gradebook.update_or_create_submission(
            submission.assignment, submission.student, timestamp=submission.received_at
        )
        notebook = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
        for cell_grade in notebook.grades:
            if cell_grade.name in points:
                cell_grade.auto_score = points[cell_grade.name]
                cell_grade.needs_manual_grade = False
        notebook.late_submission_penalty = grade.late_penalty
        gradebook.db.commit()
