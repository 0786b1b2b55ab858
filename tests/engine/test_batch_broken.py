"""Broken notebooks in a batch (issue 17): each student is graded 0 with the reason, the batch goes on,
the summary says who and why, and the exit status says some could not be graded."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import cli, course, notebook_errors
from grader.errors import NotANotebook
from tests.fixtures.grading import results
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"
CORRECT = (SUBMISSIONS / A / "correct.ipynb").read_bytes()
_NB = json.loads(CORRECT)

# Each broken kind: its bytes, and what the summary and the gradebook's reason must say.
BROKEN: dict[str, tuple[bytes, str]] = {
    "truncated": (CORRECT[: len(CORRECT) // 2], "it ends early, as if cut off"),
    "empty": (b"", "the file is empty (0 bytes)"),
    "not-utf8": (CORRECT.replace(b'"cells"', b'"c\xe9lls"', 1), "the file is not UTF-8 text (byte 5)"),
    "utf16-bom": (CORRECT.decode().encode("utf-16"), "the file is not UTF-8 text but UTF-16"),
    "deeply-nested": (b"[" * 100_000 + b"]" * 100_000, "it is nested too deeply to read"),
    "schema-violating": (
        json.dumps({**_NB, "cells": [{**_NB["cells"][3], "source": 42}]}).encode(),
        "the notebook is not valid nbformat 4",
    ),
}


@dataclass(frozen=True)
class Run:
    root: Path
    status: int
    stdout: str


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = course.copy_course(tmp_path_factory.mktemp("broken") / "course")
    course.generate_releases(root, [A])
    course.place_notebook(root, "honest", A, CORRECT)
    for student, (data, _) in BROKEN.items():
        course.place_notebook(root, student, A, data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["autograde", A, "--course", str(root), "--jobs", "4"])
    return Run(root, status, out.getvalue())


def test_every_student_has_gradebook_rows_zero_for_the_broken_full_marks_for_the_correct(run: Run) -> None:
    graded = results(run.root, A)
    assert set(graded) == {"honest", *BROKEN}
    assert all(c.score == c.max_score > 0 for c in graded["honest"].values())
    for student in BROKEN:
        assert graded[student] and all(c.score == 0 for c in graded[student].values()), student
        assert set(graded[student]) == set(graded["honest"]), student


def test_the_summary_names_each_broken_student_and_why_and_the_exit_status_says_so(run: Run) -> None:
    assert run.status == 1, run.stdout
    assert f"Autograded {len(BROKEN) + 1} submission(s) of {A}" in run.stdout
    assert f"{len(BROKEN)} failed ({len(BROKEN)} unreadable, recorded as 0)." in run.stdout
    for student, (_, why) in BROKEN.items():
        (line,) = [line for line in run.stdout.splitlines() if line.startswith(f"  {student}: ")]
        assert f"could not be graded, recorded as 0: {A}.ipynb: " in line and why in line, line
    assert "  honest: " not in run.stdout


def test_the_gradebook_holds_the_reason_and_nothing_waits_for_a_manual_grade(run: Run) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(run.root)) as gradebook:
        for student in BROKEN:
            submission = gradebook.find_submission(A, student)
            assert submission.score == 0 and submission.max_score > 0
            assert not submission.needs_manual_grade, student
            (notebook,) = submission.notebooks
            assert notebook.flagged and notebook.comments, student
            for comment in notebook.comments:  # the reason, where the formgrader shows it
                assert comment.auto_comment.startswith(f"Not graded: {A}.ipynb: "), comment.auto_comment
                assert BROKEN[student][1] in comment.auto_comment


@pytest.mark.parametrize("student", sorted(BROKEN))
def test_the_reason_is_the_sentence_the_upload_would_refuse_with(student: str) -> None:
    data, why = BROKEN[student]
    assert why in notebook_errors.problem(data)
    with pytest.raises(NotANotebook, match=r"\w"):
        notebook_errors.read(data)


def test_notebooks_nbgrader_grades_are_readable() -> None:
    """What the engine grades is never called unreadable (the check runs only after nbgrader gave up)."""
    v3 = json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}).encode()
    for path in sorted(SUBMISSIONS.glob("*/*.ipynb")):
        assert notebook_errors.problem(path.read_bytes()) == "", path
    assert notebook_errors.problem(v3) == ""
    assert notebook_errors.problem(v3, upgrade=False) != ""  # the service's upload takes nbformat 4 only
