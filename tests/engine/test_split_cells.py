"""An answer cell split in two (JupyterLab's Split Cell) is graded as the one answer it is (issue 17).

Split Cell leaves two consecutive cells with the answer's nbgrader metadata.  Split inside a
function, neither half defines it: ``grader.plugins.mending`` joins such halves back before grading (for the
engine and for stock ``nbgrader autograde`` alike, both run ``MendCells`` first) and tells the student.
Halves that stand alone (a split between two definitions) keep running as two cells, in order.
"""

from __future__ import annotations

import io
from pathlib import Path

import nbformat
import pytest
from nbformat import NotebookNode

from grader import course
from grader.engine.doors import batch
from grader.plugins import mending
from tests.fixtures.grading import results
from tests.fixtures.spec import Fixture, build, split_cell

A = "ps2_autograd"
ANSWER = "loss_and_grad"
RELEASE = mending.release_cells(nbformat.read(course.REPO_ROOT / "release" / A / f"{A}.ipynb", as_version=4))
HELPER = (
    "def _fresh_leaf(x):\n    return x.detach().clone().requires_grad_(True)\n\n\n"
    "def loss_and_grad(x):\n    leaf = _fresh_leaf(x)\n    loss = (leaf**2).mean()\n"
    "    loss.backward()\n    return loss.item(), leaf.grad\n"
)
# (student, their answer, the line JupyterLab's cursor was on when they split the cell, joined back?)
SPLITS = {
    "split-inside-function": (HELPER, "    loss.backward()", True),
    "split-after-def-line": (HELPER, "    leaf = _fresh_leaf(x)", True),
    "split-between-definitions": (HELPER, "def loss_and_grad(x):", False),
}


def _split(student: str) -> NotebookNode:
    answer, line, _ = SPLITS[student]
    return build(A, Fixture(student, "split", solutions={ANSWER: answer}, edits=(split_cell(ANSWER, line),)))


def _answer_cells(nb: NotebookNode) -> list[NotebookNode]:
    return [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ANSWER]


@pytest.mark.parametrize("student", sorted(SPLITS))
def test_mend_joins_the_halves_that_do_not_stand_alone_and_says_so(student: str) -> None:
    nb = _split(student)
    assert len(_answer_cells(nb)) == 2, "the fixture edit did not split the answer cell"
    cells_before = len(nb.cells)
    notes = mending.mend(nb, RELEASE).notes
    joined = SPLITS[student][2]
    answer = _answer_cells(nb)
    assert len(answer) == 1, f"{len(answer)} cells kept the nbgrader metadata of `{ANSWER}`"
    if joined:
        assert len(nb.cells) == cells_before - 1
        assert answer[0].source == HELPER.strip("\n"), "the joined cell is not the student's answer before the split"
        assert len(notes) == 1 and "split into 2 cells" in notes[0] and "joined back into one cell" in notes[0]
        assert f"`{ANSWER}`" in notes[0]
    else:
        assert len(nb.cells) == cells_before
        assert notes == (
            f"The answer cell `{ANSWER}` (`{ANSWER}`) appears in 2 cells (split or copied): all of them run, in order.",
        )


def test_the_note_names_the_cells_as_the_student_numbers_them() -> None:
    nb = _split("split-inside-function")
    first = next(i for i, c in enumerate(nb.cells) if "def _fresh_leaf" in c.source)
    notes = mending.mend(nb, RELEASE).notes
    assert f"(cells {first + 1}, {first + 2})" in notes[0], notes


def test_a_split_inside_brackets_and_before_an_else_are_joined() -> None:
    answer = (
        "def loss_and_grad(x):\n    leaf = x.detach().clone().requires_grad_(\n        True\n    )\n"
        "    if leaf.dim() == 0:\n        loss = leaf**2\n    else:\n        loss = (leaf**2).mean()\n"
        "    loss.backward()\n    return loss.item(), leaf.grad"
    )
    for line in ("        True", "    else:"):
        nb = build(A, Fixture("s", "split", solutions={ANSWER: answer}, edits=(split_cell(ANSWER, line),)))
        mending.mend(nb, RELEASE)
        assert [c.source for c in _answer_cells(nb)] == [answer], line


def test_a_split_written_answer_is_joined() -> None:
    meta = {"solution": True, "grade": True, "locked": False, "points": 1, "grade_id": "explain"}
    release = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("YOUR ANSWER HERE")])
    release.cells[0].metadata["nbgrader"] = meta
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(t) for t in ("my answer", "more of it")])
    for cell in nb.cells:
        cell.metadata["nbgrader"] = dict(meta)
    notes = mending.mend(nb, mending.release_cells(release)).notes
    assert [c.source for c in nb.cells] == ["my answer\nmore of it"]
    assert notes == (
        "The answer cell `explain` had been split into 2 cells (cells 1, 2): they were joined back into one cell "
        "and graded as your one answer.",
    )


def _submit(root: Path, student: str, nb: NotebookNode) -> None:
    folder = root / "submitted" / student / A
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{A}.ipynb")


def test_split_answers_score_full_marks_under_the_engine_and_stock_nbgrader(tmp_path: Path) -> None:
    gradings = {}
    for name in ("engine", "stock"):
        root = course.copy_course(tmp_path / name)
        course.generate_releases(root, [A])
        for student in SPLITS:
            _submit(root, student, _split(student))
        if name == "engine":
            assert batch.run(root, A, out=io.StringIO()).failed == ()
        else:
            course.autograde(root, A)
        gradings[name] = (root, results(root, A))
    for student, (_, _, joined) in SPLITS.items():
        for name, (root, graded) in gradings.items():
            cells = graded[student]
            lost = {gid: c.message[:300] for gid, c in cells.items() if c.score != c.max_score}
            assert lost == {}, f"{name}: {student} lost points on {sorted(lost)}: {lost}"
            notebook = nbformat.read(root / "autograded" / student / A / f"{A}.ipynb", as_version=4)
            notes = mending.read_notes(notebook)
            expected = "joined back into one cell" if joined else "appears in 2 cells (split or copied)"
            assert any(expected in n for n in notes), f"{name}: {student}: {expected!r} not in {notes}"
        engine, stock = (gradings[n][1][student] for n in ("engine", "stock"))
        assert {g: (c.score, c.errors) for g, c in engine.items()} == {g: (c.score, c.errors) for g, c in stock.items()}
