"""Scoring: per test cell, what the gradebook recorded and what the student may read.

Scores come from nbgrader's gradebook (written by ``nbgrader autograde``);
messages are the error text of each test cell's output, without the traceback,
which would show the hidden test's source.
"""

from __future__ import annotations

import re

import nbformat

from ... import mending
from ...engine.preprocessor import ENGINE_ERRORS
from ..config import ServiceConfig
from ..records.models import Execution, Grade, Submission, TestResult

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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
                texts.append(f"{output.ename}: {ANSI.sub('', str(output.evalue))}".rstrip(": "))
            elif output.output_type == "stream" and output.name == "stderr":
                texts.append(ANSI.sub("", output.text)[-2000:])
        found[meta["grade_id"]] = "\n".join(texts)
    return found


def score(config: ServiceConfig, submission: Submission, notebook_name: str, execution: Execution) -> Grade:
    from nbgrader.api import Gradebook, MissingEntry

    nb = None if execution.notebook is None else nbformat.read(execution.notebook, as_version=4)  # type: ignore[no-untyped-call]
    texts = messages(nb)
    notes = mending.read_notes(nb) if nb is not None else []
    tests: list[TestResult] = []
    late_penalty = 0.0
    with Gradebook(config.db_url) as gradebook:
        notebook = gradebook.find_notebook(notebook_name, submission.assignment)
        try:
            graded = gradebook.find_submission_notebook(notebook_name, submission.assignment, submission.student)
            grades = {g.name: g for g in graded.grades}
            late_penalty = float(graded.late_submission_penalty or 0.0)
        except MissingEntry:
            grades = {}
        for cell in notebook.grade_cells:
            if cell.cell_type != "code":
                continue
            grade = grades.get(cell.name)
            ran = execution.notebook is not None and cell.name in texts
            points = float(grade.score) if grade is not None and ran else 0.0
            message = texts.get(cell.name, "") if ran else (execution.problem or "This test did not run.")
            tests.append(TestResult(cell.name, points, float(cell.max_score), points >= float(cell.max_score), message))
    total = sum(t.points for t in tests)
    return Grade(
        submission_id=submission.id,
        score=total,
        max_score=sum(t.max_points for t in tests),
        late_penalty=min(late_penalty, total),
        tests=tuple(tests),
        problem="\n".join([execution.problem, *notes]).strip(),
    )
