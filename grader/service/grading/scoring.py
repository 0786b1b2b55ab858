"""Scoring: per test cell, what the gradebook recorded and what the student may read.

Scores come from nbgrader's gradebook (written by ``nbgrader autograde``);
messages are the error text of each test cell's output, without the traceback,
which would show the hidden test's source.
"""

from __future__ import annotations

import nbformat

from ...engine.bookkeeping.preprocessor import ENGINE_ERRORS
from ...notebook_errors import error_text, plain
from ...plugins import mending
from ..config import ServiceConfig
from ..records.models import Execution, Grade, Submission, TestResult


def messages(nb: nbformat.NotebookNode | None) -> dict[str, str]:
    if nb is None:
        return {}
    found: dict[str, str] = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("grade") or cell.cell_type != "code":
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.output_type == "error" and output.ename in ENGINE_ERRORS:
                texts.append(str(output.evalue))  # the engine's own sentence: why this cell did not finish
            elif output.output_type == "error":
                texts.append(error_text(output.ename, output.evalue))
            elif output.output_type == "stream" and output.name == "stderr":
                texts.append(plain(output.text)[-2000:])
        found[meta["grade_id"]] = "\n".join(texts)
    return found


def score(config: ServiceConfig, submission: Submission, notebook_name: str, execution: Execution) -> Grade:
    """Each code test cell's points and message, and the late penalty: from the rows nbgrader has just
    written (``Execution.written``), else read back from the gradebook and ``autograded/``."""
    written = execution.written if execution.notebook is not None else None
    if written is not None:
        nb: nbformat.NotebookNode | None = written.autograded
        cells = [(c.name, c.max_score, c.cell_type, c.score) for c in written.cells]
        late_penalty = written.late_penalty
    else:
        nb = None if execution.notebook is None else nbformat.read(execution.notebook, as_version=4)  # type: ignore[no-untyped-call]
        cells, late_penalty = _read_back(config, submission, notebook_name)
    texts = messages(nb)
    notes = mending.read_notes(nb) if nb is not None else []
    tests: list[TestResult] = []
    for name, max_score, cell_type, stored in cells:
        if cell_type != "code":
            continue
        ran = nb is not None and name in texts
        points = float(stored) if stored is not None and ran else 0.0
        message = texts.get(name, "") if ran else (execution.problem or "This test did not run.")
        tests.append(TestResult(name, points, max_score, points >= max_score, message))
    total = sum(t.points for t in tests)
    return Grade(
        submission_id=submission.id,
        score=total,
        max_score=sum(t.max_points for t in tests),
        late_penalty=min(late_penalty, total),
        tests=tuple(tests),
        problem="\n".join([execution.problem, *notes]).strip(),
    )


def _read_back(
    config: ServiceConfig, submission: Submission, notebook_name: str
) -> tuple[list[tuple[str, float, str, float | None]], float]:
    """The grade cells (name, max score, type, the student's stored score) and the late penalty, from the
    gradebook: for a run that did not complete, or a course whose steps do not note what they wrote."""
    from nbgrader.api import Gradebook, MissingEntry

    late_penalty = 0.0
    with Gradebook(config.db_url) as gradebook:
        notebook = gradebook.find_notebook(notebook_name, submission.assignment)
        try:
            graded = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
            grades = {g.name: float(g.score) for g in graded.grades}
            late_penalty = float(graded.late_submission_penalty or 0.0)
        except MissingEntry:
            grades = {}
        cells = [(c.name, float(c.max_score), str(c.cell_type), grades.get(c.name)) for c in notebook.grade_cells]
    return cells, late_penalty
