"""Malformed notebooks in ``submitted/`` through ``grader autograde``: each is graded or named, none stops the batch.

(The service refuses the unreadable ones at upload: ``tests/service/test_api.py``.)
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.engine.doors import batch
from grader.plugins import mending
from tests.fixtures.grading import results
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"
CORRECT = json.loads((SUBMISSIONS / A / "correct.ipynb").read_text())


def _variant(change: str) -> str:
    nb = json.loads(json.dumps(CORRECT))
    if change == "duplicate-cell-ids":
        nb["cells"][5]["id"] = nb["cells"][6]["id"]
    elif change == "cell-ids-missing":  # nbformat 4.5 requires them; nbformat adds them back
        for cell in nb["cells"]:
            cell.pop("id")
    elif change == "kernel-of-another-language":
        nb["metadata"]["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    return json.dumps(nb)


# Graded normally: nbformat repairs the ids, nbgrader's OverwriteKernelspec puts back the release's kernel.
REPAIRED = ("duplicate-cell-ids", "cell-ids-missing", "kernel-of-another-language")
UNREADABLE = {
    "invalid-json": "this is not json {",
    "number-as-source": json.dumps({**CORRECT, "cells": [{**CORRECT["cells"][3], "source": 42}]}),
    "deeply-nested": "[" * 100_000 + "]" * 100_000,
}


# nbformat converts it to an empty nbformat 4 notebook: every cell is put back from the release, nothing passes.
EMPTY_V3 = json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []})


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, batch.BatchResult]:
    root = course.copy_course(tmp_path_factory.mktemp("malformed") / "course")
    course.generate_releases(root, [A])
    texts = {name: _variant(name) for name in REPAIRED} | UNREADABLE | {"honest": _variant(""), "nbformat-3": EMPTY_V3}
    for student, text in texts.items():
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text(text)
    return root, batch.run(root, A, jobs=4, out=io.StringIO())


def test_repairable_notebooks_are_graded_in_full(outcome: tuple[Path, batch.BatchResult]) -> None:
    root, _ = outcome
    graded = results(root, A)
    for student in ("honest", *REPAIRED):
        assert all(c.score == c.max_score for c in graded[student].values()), student


def test_each_unreadable_notebook_is_named_in_the_summary_and_the_batch_goes_on(
    outcome: tuple[Path, batch.BatchResult],
) -> None:
    _, result = outcome
    assert sorted(o.student for o in result.failed) == sorted(UNREADABLE)
    summary = result.summary()
    assert f"Autograded {len(UNREADABLE) + len(REPAIRED) + 2} submission(s) of {A}" in summary
    for student in UNREADABLE:
        (line,) = [line for line in summary.splitlines() if line.startswith(f"  {student}: ")]
        assert "[ERROR]" in line, line


def test_an_old_empty_notebook_scores_zero_and_says_what_was_missing(outcome: tuple[Path, batch.BatchResult]) -> None:
    root, _ = outcome
    assert all(c.score == 0 for c in results(root, A)["nbformat-3"].values())
    graded = nbformat.read(root / "autograded" / "nbformat-3" / A / f"{A}.ipynb", as_version=4)
    notes = mending.read_notes(graded)
    assert len(notes) == 23  # 9 answer cells (2 of them written answers) and 13 test cells missing, and the curve
    assert "The answer cell `sum_gradient` was not found" in notes[0]  # a written answer, first in the notebook
    assert any("The answer cell `mean_square_loss` (`mean_square_loss`) was not found" in n for n in notes)
    # ps2's curve (grader.variants) was lost with everything else: put back with the student's own value
    assert notes[-1].startswith("The cell `curve_values` with your assignment's values was missing: it was put back")
