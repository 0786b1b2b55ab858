"""Export: the course-wide grade table for staff, and nbgrader's own CSV."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .config import ServiceConfig
from .intake import received_at_utc
from .store import Store


def grade_table(store: Store, config: ServiceConfig) -> list[dict[str, Any]]:
    """Every student x assignment: raw score, late penalty, final score, attempts, last submission."""
    from nbgrader.api import Gradebook, MissingEntry

    attempts: dict[tuple[str, str], list[Any]] = {}
    for submission in store.submissions():
        attempts.setdefault((submission.student, submission.assignment), []).append(submission)
    rows: list[dict[str, Any]] = []
    with Gradebook(config.db_url) as gradebook:
        for assignment in gradebook.assignments:
            for student in gradebook.students:
                own = attempts.get((student.id, assignment.name), [])
                row: dict[str, Any] = {
                    "student": student.id,
                    "assignment": assignment.name,
                    "max_score": float(assignment.max_score),
                    "raw_score": None,
                    "late_penalty": None,
                    "final_score": None,
                    "attempts": len(own),
                    "last_submission": received_at_utc(own[-1].received_at) if own else None,
                }
                try:
                    graded = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    rows.append(row)
                    continue
                row.update(
                    raw_score=float(graded.score),
                    late_penalty=float(graded.late_submission_penalty or 0.0),
                    final_score=float(graded.score) - float(graded.late_submission_penalty or 0.0),
                )
                rows.append(row)
    return rows


def nbgrader_csv(config: ServiceConfig) -> str:
    """Exactly what ``nbgrader export`` writes (its own CsvExportPlugin)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "grades.csv"
        plugin = CsvExportPlugin(to=str(target))
        with Gradebook(config.db_url) as gradebook:
            plugin.export(gradebook)
        return target.read_text()
