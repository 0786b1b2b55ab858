"""Gradebook: make nbgrader's gradebook hold exactly the grade the service recorded.

``nbgrader autograde`` already wrote the scores of a run that completed; when a
run could not complete (whole-notebook limit, dead kernel) the gradebook could
still hold an older attempt's scores, so every grade is written again here.
The write is idempotent: recording the same grade twice changes nothing.
"""

from __future__ import annotations

from ..config import ServiceConfig
from ..records.models import Grade, Submission
from ..records.store import Store


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
        graded.late_submission_penalty = grade.late_penalty
        gradebook.db.commit()


def counting(attempts: list[Submission], rule: str) -> Submission | None:
    """Of one student's attempts, the one whose grade counts: the latest graded one, or the best
    (``GraderService.counting``)."""
    graded = [s for s in attempts if s.status == "graded"]
    if not graded:
        return None
    if rule == "best":
        return max(graded, key=lambda s: ((s.score or 0.0) - (s.late_penalty or 0.0), s.received_at))
    return max(graded, key=lambda s: s.received_at)


def counting_attempt(store: Store, config: ServiceConfig, student: str, assignment: str) -> Submission | None:
    """The attempt whose grade counts, from the store."""
    return counting(store.submissions(student=student, assignment=assignment), config.counting)


def record_counting(store: Store, config: ServiceConfig, submission: Submission, notebook_name: str) -> None:
    """After grading ``submission``, make sure the gradebook holds the attempt that counts.

    Grading an attempt writes its grade to the gradebook; when another attempt
    counts (an older one regraded, or a better one under ``counting = "best"``),
    that attempt's recorded grade is written back.
    """
    counting = counting_attempt(store, config, submission.student, submission.assignment)
    if counting is None or counting.id == submission.id:
        return
    grade = Grade(
        submission_id=counting.id,
        score=counting.score or 0.0,
        max_score=counting.max_score or 0.0,
        late_penalty=counting.late_penalty or 0.0,
        tests=store.results(counting.id),
    )
    record(config, counting, notebook_name, grade)
