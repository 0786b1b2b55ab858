"""Export: the course-wide grade table, nbgrader's own CSV, a Canvas gradebook import and Gradescope results."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import NotFound
from ..config import ServiceConfig
from ..grading.intake import received_at_utc
from ..records.models import Recorded, Submission
from ..records.store import Store
from ..rules.counting import final_score
from ..rules.written import Written, everyone, written

if TYPE_CHECKING:
    from .stats import Standings


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
                    final_score=final_score(graded.score, graded.late_submission_penalty),
                )
                rows.append(row)
    return rows


def nbgrader_csv(config: ServiceConfig) -> str:
    """Exactly what ``nbgrader export`` writes: its own CsvExportPlugin, with the submissions looked up in bulk.

    The plugin asks the gradebook for each student's submission of each assignment, one query
    and two lazy loads (score, penalty) at a time: 6.6 s for 500 students x 3 assignments. Here
    the same plugin code runs against a gradebook that answers ``find_submission`` from one
    query that also computes those two (nbgrader's own SQL expressions for them).
    """
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "grades.csv"
        plugin = CsvExportPlugin(to=str(target))
        with Gradebook(config.db_url) as gradebook:
            plugin.export(_BulkSubmissions(gradebook))
        return target.read_text()


class _BulkSubmissions:
    """A Gradebook whose ``find_submission`` answers from one query made up front."""

    def __init__(self, gradebook: Any) -> None:
        from nbgrader.api import Assignment, SubmittedAssignment

        self._gradebook = gradebook
        from sqlalchemy.orm import undefer

        rows = (
            gradebook.db.query(SubmittedAssignment, Assignment.name)
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .options(undefer(SubmittedAssignment.score), undefer(SubmittedAssignment.late_submission_penalty))
            .all()
        )
        self._found = {(name, submission.student_id): submission for submission, name in rows}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_submission(self, assignment: str, student: str) -> Any:
        from nbgrader.api import MissingEntry

        try:
            return self._found[(assignment, student)]
        except KeyError:
            raise MissingEntry() from None


# --- for other systems -----------------------------------------------------------------------------


def canvas_csv(store: Store, config: ServiceConfig) -> str:
    """A Canvas gradebook import: one row per student, one column per assignment (final scores).

    Canvas matches students on ``SIS User ID`` (here the course's student id) when ``ID`` is empty;
    a column without a Canvas id becomes a new assignment, with its points from ``Points Possible``.
    """
    import csv
    import io

    from nbgrader.api import Gradebook as NbGradebook
    from nbgrader.api import Student

    from . import stats

    book = stats.standings(store, config)
    with NbGradebook(config.db_url) as gradebook:
        names = {s.id: (s.last_name or "", s.first_name or "") for s in gradebook.db.query(Student)}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [a.name for a in book.assignments])
    writer.writerow(["Points Possible", "", "", "", ""] + [f"{a.max_score:g}" for a in book.assignments])
    for student in book.students:
        last, first = names.get(student, ("", ""))
        display = f"{last}, {first}" if last or first else student
        finals = [book.entries[(student, a.name)].final for a in book.assignments]
        writer.writerow([display, "", student, student, ""] + ["" if f is None else f"{f:g}" for f in finals])
    return out.getvalue()


GRADESCOPE_VISIBILITY = {"immediate": "visible", "after_deadline": "after_due_date", "score_only": "hidden"}


def gradescope_results(
    store: Store, config: ServiceConfig, submission: Submission, marked: Written | None = None
) -> dict[str, Any]:
    """One graded submission in Gradescope's autograder ``results.json`` format.

    ``score`` is the final score (after the late penalty) with the released written answers' points
    (``rules.written``; ``marked``: already read for this student); each test cell is a test with its points,
    status and message, each released written answer one more; visibility follows the assignment's feedback policy.
    """
    if submission.status != "graded":
        raise NotFound(f"submission {submission.id} is {submission.status}, not graded")
    penalty = submission.late_penalty or 0.0
    visibility = GRADESCOPE_VISIBILITY[config.policy(submission.assignment)]
    lines = [f"Raw score {submission.score or 0.0:g} of {submission.max_score or 0.0:g}."]
    if penalty:
        lines.append(f"Late penalty: -{penalty:g}.")
    if submission.reason:
        lines.append(submission.reason)
    tests = store.results(submission.id)
    if marked is None:
        marked = written(store, submission.assignment, submission.student)
    answers = [q for q in marked.questions if q.released]
    extra = [
        {
            "name": f"written answer {q.cell}",
            "number": str(len(tests) + number),
            "score": q.points or 0.0,
            "max_score": q.max_points,
            "status": "passed" if (q.points or 0.0) >= q.max_points else "failed",
            "output": "graded by a person (see the course's feedback for the rubric items and comment)",
            "visibility": "visible",
        }
        for number, q in enumerate(answers, start=1)
    ]
    return {
        "score": (submission.score or 0.0) - penalty + sum(q.points or 0.0 for q in answers),
        "output": "\n".join(lines),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": test.name,
                "number": str(number),
                "score": test.points,
                "max_score": test.max_points,
                "status": "passed" if test.passed else "failed",
                "output": test.message,
                "visibility": visibility,
            }
            for number, test in enumerate(tests, start=1)
        ]
        + extra,
    }


def gradescope_zip_name(assignment: str) -> str:
    """The file name of ``assignment``'s Gradescope zip: the dashboard's download and ``grader export`` alike."""
    return f"{assignment}-gradescope-results.zip"


def gradescope_zip(store: Store, config: ServiceConfig, assignment: str) -> bytes:
    """``<student>/results.json`` for the counting attempt of every student of ``assignment``."""
    from . import stats

    book = stats.standings(store, config)
    if assignment not in {a.name for a in book.assignments}:
        raise NotFound(f"no assignment {assignment!r}")
    return _gradescope_zip(store, config, book, assignment)


def gradescope_zips(store: Store, config: ServiceConfig, folder: Path) -> list[Path]:
    """Every assignment's ``gradescope_zip``, written into ``folder`` (made if missing) under
    ``gradescope_zip_name``; the files written, in the gradebook's order of assignments."""
    from . import stats

    book = stats.standings(store, config)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for assignment in book.assignments:
        path = folder / gradescope_zip_name(assignment.name)
        path.write_bytes(_gradescope_zip(store, config, book, assignment.name))
        written.append(path)
    return written


def _gradescope_zip(store: Store, config: ServiceConfig, book: Standings, assignment: str) -> bytes:
    import io
    import json
    import zipfile

    buffer = io.BytesIO()
    marked = everyone(store, assignment, list(book.students))  # three queries, not three a student
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for student in book.students:
            chosen = book.entries[(student, assignment)].counting
            if chosen is not None:
                body = gradescope_results(store, config, chosen, marked[student])
                archive.writestr(f"{student}/results.json", json.dumps(body, indent=2))
    return buffer.getvalue()


def _keep(config: ServiceConfig, name: str, text: str) -> None:
    """Replace ``exports/NAME`` in one step: a reader sees the old file or the new one, never half."""
    folder = config.course_root / "exports"
    folder.mkdir(exist_ok=True)
    partial = folder / f".{name}.{os.getpid()}.partial"
    partial.write_text(text)
    os.replace(partial, folder / name)


def keep_canvas_csv(store: Store, config: ServiceConfig, recorded: Recorded) -> None:
    """``after_record`` hook ``canvas-csv``: ``exports/canvas.csv`` is the Canvas import as of this grade."""
    _keep(config, "canvas.csv", canvas_csv(store, config))


def keep_grades_csv(store: Store, config: ServiceConfig, recorded: Recorded) -> None:
    """``after_record`` hook ``grades-csv``: ``exports/grades.csv`` is ``nbgrader export``'s CSV as of this grade."""
    _keep(config, "grades.csv", nbgrader_csv(config))
