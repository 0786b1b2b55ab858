"""Gradebook: make nbgrader's gradebook hold exactly the grade the service recorded.

``nbgrader autograde`` already wrote the scores of a run that completed; when a
run could not complete (whole-notebook limit, dead kernel) the gradebook could
still hold an older attempt's scores, so every grade is written again here.
The write is idempotent: recording the same grade twice changes nothing.
"""

from __future__ import annotations

from .config import ServiceConfig
from .models import Grade, Submission


def record(config: ServiceConfig, submission: Submission, notebook_name: str, grade: Grade) -> None:
    from nbgrader.api import Gradebook

    points = {t.name: t.points for t in grade.tests}
    with Gradebook(config.db_url) as gradebook:
        gradebook.update_or_create_student(submission.student)
        gradebook.update_or_create_submission(
            submission.assignment, submission.student, timestamp=submission.received_at
        )
        graded = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
        for cell_grade in graded.grades:
            if cell_grade.name in points:
                cell_grade.auto_score = points[cell_grade.name]
                cell_grade.needs_manual_grade = False
        gradebook.db.commit()
