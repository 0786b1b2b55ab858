"""Whose doing a failed grading was (``grader.engine.bookkeeping.faults``), via ``grader autograde`` and stock nbgrader.

Issue 52: an extension on an assignment without a due date made nbgrader's own bookkeeping raise, which the
engine recorded as the student's notebook failing: 0 points. Now a step of ours that raises is a fault: that
student is not graded, their gradebook rows are put back as they were, everyone else is graded, and the command
exits 1 naming the student and the step. Only the student's notebook (unreadable, metadata nbgrader refuses)
can earn a 0 by itself.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader import course
from grader.engine.bookkeeping import bulk, faults
from grader.engine.bookkeeping.autograde import Status
from grader.engine.doors import batch
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"
CORRECT = SUBMISSIONS / A / "correct.ipynb"
NO_DUE_DATE = (
    "nbgrader's Autograde.init_assignment (the student's submission in the gradebook) raised TypeError: "
    "unsupported operand type(s) for +: 'NoneType' and 'datetime.timedelta'"
)


def _course(tmp_path: Path) -> Path:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    for student in ("student-c", "student-d"):
        course.place_submission(root, student, A, CORRECT)
        (root / "submitted" / student / A / "timestamp.txt").write_text(course.timestamp_text(_now()))
    return root


def _now() -> Any:
    import datetime as dt

    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _extend_without_due_date(root: Path, student: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(root)) as book:  # by hand: `grader extension` refuses it
        book.update_or_create_student(student)
        book.add_submission(A, student)
        book.grant_extension(A, student, minutes=24 * 60)


def _rows(root: Path, student: str) -> tuple[Any, ...] | None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.gradebook_url(root)) as book:
        try:
            submission = book.find_submission(A, student)
        except MissingEntry:
            return None
        notebook = submission.notebooks[0]
        written = {c.name for c in notebook.notebook.solution_cells}  # the written answers, graded by a person
        return (
            submission.timestamp,
            submission.extension,
            notebook.late_submission_penalty,
            tuple((g.name, g.auto_score, g.needs_manual_grade) for g in notebook.grades if g.name not in written),
            tuple((c.name, c.auto_comment) for c in notebook.comments),
        )


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GRADER_COURSE_ROOT": str(root),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }


def test_the_batch_command_grades_everyone_else_and_exits_1_naming_the_student_and_the_step(tmp_path: Path) -> None:
    root = _course(tmp_path)
    _extend_without_due_date(root, "student-c")
    before = _rows(root, "student-c")
    failures = tmp_path / "failures.json"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "grader"), "autograde", A, "--own-engine", "--failures-json", str(failures)],
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = (
        "  student-c: [FAULT] not graded: a fault of the grader, not of the notebook; its gradebook rows are as they "
        f"were: {NO_DUE_DATE}"
    )
    assert said in done.stdout.splitlines(), done.stdout
    assert json.loads(failures.read_text()) == {"student-c": said.split(": ", 1)[1]}
    assert _rows(root, "student-c") == before  # no score written: the rows as they were
    graded = _rows(root, "student-d")
    assert graded is not None and all(score for _, score, _ in graded[3])


def test_stock_nbgrader_autograde_on_the_same_repository_also_exits_1_naming_the_student(tmp_path: Path) -> None:
    root = _course(tmp_path)
    _extend_without_due_date(root, "student-c")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "autograde", A],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "There was an error processing assignment 'ps2_autograd' for student 'student-c'" in output
    assert "TypeError: unsupported operand type(s) for +: 'NoneType' and 'datetime.timedelta'" in output
    graded = _rows(root, "student-d")  # graded after the failure
    assert graded is not None and all(score for _, score, _ in graded[3])


def _raise_after(real: Callable[..., Any]) -> Callable[..., Any]:
    def step(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # its rows written and committed
        raise RuntimeError("the late policy broke")

    return step


def test_a_fault_after_nbgrader_wrote_its_rows_puts_them_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _course(tmp_path)
    first = batch.run(root, A, students=["student-c"], jobs=1, out=io.StringIO(), borrow=False)
    assert first.ok
    graded = _rows(root, "student-c")
    course.place_submission(root, "student-c", A, SUBMISSIONS / A / "grad-not-zeroed.ipynb")  # a worse attempt
    monkeypatch.setattr(bulk.BulkSaveAutoGrades, "preprocess", _raise_after(bulk.BulkSaveAutoGrades.preprocess))
    second = batch.run(root, A, students=["student-c"], jobs=1, out=io.StringIO(), borrow=False)
    (outcome,) = second.outcomes
    assert outcome.status is Status.FAULT and not outcome.zeroed
    assert outcome.reason == (
        "the autograde step grader.engine.bookkeeping.bulk.BulkSaveAutoGrades raised RuntimeError: "
        "the late policy broke"
    )
    assert _rows(root, "student-c") == graded  # its earlier grade, not the half-written one


def test_only_the_notebook_itself_is_the_students_doing() -> None:
    """The rule, on the exceptions the steps raise: nbgrader's refusal of the metadata, or nbformat's of the
    notebook, in the sanitize pass is the notebook's doing (final, 0 with the reason); the same in the autograde
    pass, or anything else anywhere, is ours; an ``OSError`` is ours and worth a retry. (nbgrader and the mending
    plug-in repair what a student can do to the metadata, so the sanitize refusal is rare: ``test_malformed``.)"""
    from nbformat import ValidationError as NotebookInvalid
    from nbgrader.nbgraderformat import ValidationError as MetadataInvalid

    cases: list[tuple[BaseException, bool, tuple[int, int, int]]] = [
        (MetadataInvalid("Notebook failed to validate"), True, (1, 0, 0)),
        (NotebookInvalid("not a notebook"), True, (1, 0, 0)),
        (MetadataInvalid("Notebook failed to validate"), False, (0, 1, 0)),
        (TypeError("None + timedelta"), True, (0, 1, 0)),
        (OSError(28, "No space left on device"), False, (0, 1, 1)),
    ]
    for error, sanitizing, counts in cases:
        faults.noted.reset()
        with pytest.raises(type(error)), faults.attributed("the step S", sanitizing):
            raise error
        noted = faults.noted
        assert (len(noted.refused), len(noted.faults), len(noted.retryable)) == counts, (error, sanitizing)
        assert (noted.refused or noted.faults)[0].startswith(f"the step S raised {type(error).__name__}: ")
    faults.noted.reset()
    with pytest.raises(ValueError), faults.reading():
        raise ValueError("Notebook does not appear to be JSON")
    assert faults.noted.refused == ["the notebook cannot be read: ValueError: Notebook does not appear to be JSON"]
    faults.noted.reset()
