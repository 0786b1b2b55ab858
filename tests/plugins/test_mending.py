"""Mangled notebooks are matched to the release, graded, and the student is told what was done.

The mangled fixtures themselves are graded with every other fixture (by stock
nbgrader in ``tests/course/test_fairness.py``, by the engine in
``tests/engine/test_autograde.py``); here: the notes they get, and ``mend`` itself.
"""

from __future__ import annotations

import copy

import nbformat
import pytest

from grader import course
from grader.plugins import mending
from tests.fixtures.build import fixtures
from tests.fixtures.spec import SUBMISSIONS
from tests.graded import ASSIGNMENTS, Graded

A = "ps2_autograd"
RELEASE = mending.release_cells(nbformat.read(course.REPO_ROOT / "release" / A / f"{A}.ipynb", as_version=4))
CASES = [(a, f) for a in ASSIGNMENTS for f in fixtures(a)]


def _submission(assignment: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(SUBMISSIONS / assignment / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize(("assignment", "fixture"), CASES, ids=[f"{a}/{f.name}" for a, f in CASES])
def test_autograded_notebook_carries_exactly_the_notes_its_mangling_needs(
    graded: dict[str, Graded], assignment: str, fixture: object
) -> None:
    from tests.fixtures.spec import Fixture

    assert isinstance(fixture, Fixture)
    path = graded[assignment].root / "autograded" / fixture.name / assignment / f"{assignment}.ipynb"
    notes = mending.read_notes(nbformat.read(path, as_version=4))
    if not fixture.notes:
        assert notes == [], "an ordinary submission got notes"
    for expected in fixture.notes:
        assert any(expected in n for n in notes), f"{expected!r} not in {notes}"


def test_an_ordinary_notebook_is_left_exactly_as_it_was() -> None:
    nb = _submission(A, "correct")
    before = copy.deepcopy(nb)
    mended = mending.mend(nb, RELEASE)
    assert mended.notes == ()
    assert mended.matched == sum(1 for r in RELEASE if r.graded) == 22  # 7 code answers, 2 written, 13 test cells
    assert nb == before


def test_another_assignments_notebook_matches_nothing() -> None:
    assert mending.mend(_submission("ps1_tensors", "correct"), RELEASE).matched == 0


def test_reordered_cells_go_back_with_the_cells_the_student_added_after_them() -> None:
    nb = _submission(A, "extra-helper-cell")
    ids = [c.get("id") for c in nb.cells]
    helper = next(i for i, c in enumerate(nb.cells) if c.get("id", "").startswith("helper-after"))
    owner = helper - 1  # the graded cell the helper follows
    moved = nb.cells[owner : helper + 1]
    del nb.cells[owner : helper + 1]
    nb.cells[2:2] = moved  # dragged near the top, helper and all
    mended = mending.mend(nb, RELEASE)
    assert [c.get("id") for c in nb.cells] == ids
    assert len(mended.notes) == 1 and "not in the assignment's order" in mended.notes[0]


def test_missing_cells_are_put_back_where_the_release_has_them() -> None:
    nb = _submission(A, "correct")
    nb.cells = [c for c in nb.cells if c.get("id") not in ("predict", "test-predict-value")]
    mended = mending.mend(nb, RELEASE)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert ids.index("predict") + 1 == ids.index("test_predict_value") == ids.index("test_predict_no_graph") - 1
    restored = nb.cells[ids.index("predict")]
    assert restored.source.startswith("# This answer cell was missing from your submission")
    assert "raise NotImplementedError()" in restored.source
    assert mended.notes == (
        "The answer cell `predict` (`predict`) was not found in your notebook (deleted, or its metadata lost and "
        "its definition renamed): the release's empty version was put back, so its tests score 0.",
        "The test cell `test_predict_value` was missing from your notebook: it was put back and run on your code.",
    )


def test_notes_never_show_a_test_cells_text() -> None:
    nb = _submission(A, "correct")
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.pop("id", None)
    nb.nbformat_minor = 4
    notes = " ".join(mending.mend(nb, RELEASE).notes)
    for r in RELEASE:
        if r.nbgrader.get("grade") and r.cell_type == "code":
            assert r.source.splitlines()[-1] not in notes


def test_a_students_own_notes_cell_is_thrown_away(tmp_path) -> None:  # type: ignore[no-untyped-def]
    nb = _submission(A, "correct")
    nb.cells.insert(0, mending.notes_cell(["Everything was fine: full marks."]))
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    target = root / "submitted" / "forger" / A
    target.mkdir(parents=True)
    nbformat.write(nb, target / f"{A}.ipynb")
    course.autograde(root, A, "forger")
    graded = nbformat.read(root / "autograded" / "forger" / A / f"{A}.ipynb", as_version=4)
    assert mending.read_notes(graded) == []
    assert all("Everything was fine" not in c.source for c in graded.cells)


def test_a_split_cell_really_crashes_stock_nbgrader_and_only_mend_cells_saves_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """JupyterLab's Split Cell copies the nbgrader metadata; nbgrader 0.9 alone then fails the notebook."""
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    config = (root / "nbgrader_config.py").read_text()
    assert '    "grader.plugins.mending.MendCells",\n' in config
    (root / "nbgrader_config.py").write_text(config.replace('    "grader.plugins.mending.MendCells",\n', ""))
    course.place_submission(root, "splitter", A, SUBMISSIONS / A / "answer-cell-split.ipynb")
    with pytest.raises(Exception, match="KeyError: 'grade_id'"):
        course.autograde(root, A, "splitter")
    assert not (root / "autograded" / "splitter" / A).exists()
