"""Each student graded on their own variant values, by stock ``nbgrader autograde`` and by the engine alike.

ps3's shop (``TRUE_SLOPE``, ``TRUE_INTERCEPT``) is drawn per student from the course secret. A
correct answer keeps full marks under every student's values; a student who edits the values (or
lost the cell) is graded on their own and told so; an answer that hard-codes the lesson's numbers
loses the data task only for a student whose shop differs, with a hint that says why.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest

from grader import course, variants
from grader.authoring import grading
from grader.plugins import mending
from tests.fixtures.spec import SUBMISSIONS

PS3 = "ps3_regression"
LESSON = (3.0, 5.0)
CELL = "shop_values"


def key() -> bytes:
    return os.environ["GRADER_VARIANT_SECRET"].encode()


def cells() -> list[variants.VariantCell]:
    return variants.find_cells(nbformat.read(SUBMISSIONS / PS3 / "correct.ipynb", as_version=4), PS3)  # type: ignore[no-untyped-call]


def shop(student: str) -> tuple[float, float]:
    values = variants.student_values(key(), PS3, student, cells())
    return float(values["TRUE_SLOPE"]), float(values["TRUE_INTERCEPT"])


def student(prefix: str, lesson: bool) -> str:
    """The first id ``prefix-N`` whose shop is (``lesson``) or is not the lesson's."""
    return next(f"{prefix}-{n}" for n in range(500) if (shop(f"{prefix}-{n}") == LESSON) == lesson)


def personal(student: str) -> nbformat.NotebookNode:
    correct = nbformat.read(SUBMISSIONS / PS3 / "correct.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    return variants.personalise(correct, key(), PS3, student)


def at(nb: nbformat.NotebookNode, grade_id: str) -> int:
    return next(
        i for i, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id
    )


def lesson_numbers(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    answer = nb.cells[at(nb, "make_data")]
    assert "TRUE_SLOPE * footfall + TRUE_INTERCEPT" in answer.source
    answer.source = answer.source.replace("TRUE_SLOPE * footfall + TRUE_INTERCEPT", "3.0 * footfall + 5.0")
    return nb


EDITED = student("edited", lesson=False)
GONE = student("gone", lesson=False)
CORRECT = student("correct", lesson=False)
HARD_CODED = student("hard-coded", lesson=False)
HARD_CODED_LESSON = student("hard-coded", lesson=True)
REASSIGNS = student("reassigns", lesson=False)
STRIPPED = student("stripped", lesson=False)
CHOOSES = student("chooses", lesson=False)


def notebooks() -> dict[str, nbformat.NotebookNode]:
    edited = personal(EDITED)
    edited.cells[at(edited, CELL)].source = "TRUE_SLOPE = 3.0\nTRUE_INTERCEPT = 5.0\n"
    gone = personal(GONE)
    del gone.cells[at(gone, CELL)]
    reassigns = personal(REASSIGNS)
    helper = nbformat.v4.new_code_cell("TRUE_SLOPE = 3.0")  # type: ignore[no-untyped-call]
    reassigns.cells.insert(at(reassigns, "make_data"), helper)
    stripped = personal(STRIPPED)  # an editor dropped the cell's metadata, and the student edited the values
    stripped.cells[at(stripped, CELL)].source = "TRUE_SLOPE = 3.0\nTRUE_INTERCEPT = 5.0\n"
    stripped.cells[at(stripped, CELL)].metadata = {}
    chooses = lesson_numbers(personal(CHOOSES))  # the lesson's numbers, and a cell that makes them "hers"
    chooses.cells.insert(at(chooses, "make_data"), nbformat.v4.new_code_cell("TRUE_SLOPE, TRUE_INTERCEPT = 3.0, 5.0"))  # type: ignore[no-untyped-call]
    return {
        CHOOSES: chooses,
        STRIPPED: stripped,
        CORRECT: personal(CORRECT),
        EDITED: edited,
        GONE: gone,
        HARD_CODED: lesson_numbers(personal(HARD_CODED)),
        HARD_CODED_LESSON: lesson_numbers(personal(HARD_CODED_LESSON)),
        REASSIGNS: reassigns,
    }


@pytest.fixture(scope="module")
def variant_graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, grading.Results]]:
    found = {}
    for how in ("stock", "engine"):
        root = grading.scratch_course(tmp_path_factory.mktemp(how), course.REPO_ROOT, PS3)
        if how == "stock":
            found[how] = (root, grading.grade_stock(root, PS3, notebooks()))
        else:
            found[how] = (root, grading.grade(root, PS3, notebooks(), None, open(os.devnull, "w")))
    return found


def notes(root: Path, student: str) -> list[str]:
    nb = nbformat.read(root / "autograded" / student / PS3 / f"{PS3}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    return mending.read_notes(nb)


def test_the_students_cover_several_shops() -> None:
    shops = {shop(s) for s in notebooks()}
    assert len(shops) >= 4 and LESSON in shops


@pytest.mark.parametrize("how", ["stock", "engine"])
def test_a_correct_answer_keeps_full_marks_on_any_shop(
    variant_graded: dict[str, tuple[Path, grading.Results]], how: str
) -> None:
    root, results = variant_graded[how]
    for who in (CORRECT, EDITED, GONE, HARD_CODED_LESSON, STRIPPED, REASSIGNS):
        lost = {cell: r.first_line for cell, r in results[who].items() if r.lost}
        assert not lost, (who, shop(who), lost)
    assert notes(root, CORRECT) == []
    assert notes(root, HARD_CODED_LESSON) == []


@pytest.mark.parametrize("how", ["stock", "engine"])
def test_edited_values_are_graded_as_the_students_own_and_said(
    variant_graded: dict[str, tuple[Path, grading.Results]], how: str
) -> None:
    root, _ = variant_graded[how]
    slope, intercept = shop(EDITED)
    assert notes(root, EDITED) == [
        f"The cell `{CELL}` in your notebook says TRUE_SLOPE = 3.0, TRUE_INTERCEPT = 5.0, but your assignment's "
        f"values are TRUE_SLOPE = {slope!r}, TRUE_INTERCEPT = {intercept!r}: you were graded on yours. Fetch the "
        "assignment again to see them."
    ]
    autograded = nbformat.read(root / "autograded" / EDITED / PS3 / f"{PS3}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    assert f"TRUE_SLOPE = {slope!r}\n" in autograded.cells[at(autograded, CELL)].source
    slope, intercept = shop(STRIPPED)
    assert notes(root, STRIPPED) == [
        f"The cell `{CELL}` in your notebook says TRUE_SLOPE = 3.0, TRUE_INTERCEPT = 5.0, but your assignment's "
        f"values are TRUE_SLOPE = {slope!r}, TRUE_INTERCEPT = {intercept!r}: you were graded on yours. Fetch the "
        "assignment again to see them."
    ]
    (gone_note,) = notes(root, GONE)
    assert gone_note.startswith(f"The cell `{CELL}` with your assignment's values was missing: it was put back")


@pytest.mark.parametrize("how", ["stock", "engine"])
def test_the_lessons_numbers_lose_the_data_task_only_where_the_shop_differs(
    variant_graded: dict[str, tuple[Path, grading.Results]], how: str
) -> None:
    _, results = variant_graded[how]
    lost = {cell: r.first_line for cell, r in results[HARD_CODED].items() if r.lost}
    assert list(lost) == ["test_make_data"]
    assert [cell for cell, r in results[CHOOSES].items() if r.lost] == ["test_make_data"]  # no easier variant
    assert lost["test_make_data"] == (
        "sales of make_data(n=37, seed=5) (a tensor of shape (37, 1), dtype torch.float32, device cpu) "
        "does not match the reference."
    )
    message = results[HARD_CODED]["test_make_data"].message
    assert "these are the lesson's shop (3 and 5), not yours: write sales with the names TRUE_SLOPE" in message


@pytest.mark.parametrize("how", ["stock", "engine"])
def test_a_cell_that_assigns_a_variant_name_is_named_in_the_notes(
    variant_graded: dict[str, tuple[Path, grading.Results]], how: str
) -> None:
    root, _ = variant_graded[how]
    assert any(
        "assigns TRUE_SLOPE, which hold your assignment's own values: the tests set your own values again before "
        "each test, whatever that cell assigns." in n
        for n in notes(root, REASSIGNS)
    )
    slope, intercept = shop(REASSIGNS)
    pins = [c.source for c in autograded(root, REASSIGNS).cells if c.metadata.get("grader_variant_pin")]
    graded_cells = [c.metadata.get("nbgrader", {}) for c in autograded(root, REASSIGNS).cells]
    tests = [m for m in graded_cells if m.get("grade") and not m.get("solution")]  # not the written answers
    pin = f"TRUE_SLOPE, TRUE_INTERCEPT = {slope!r}, {intercept!r}  # your own values (grader.variants)"
    assert pins == [pin] * len(tests)
    assert not [c for c in autograded(root, CORRECT).cells if c.metadata.get("grader_variant_pin")]


def autograded(root: Path, student: str) -> nbformat.NotebookNode:
    return nbformat.read(root / "autograded" / student / PS3 / f"{PS3}.ipynb", as_version=4)  # type: ignore[no-untyped-call]


def test_stock_nbgrader_and_the_engine_agree_cell_by_cell(
    variant_graded: dict[str, tuple[Path, grading.Results]],
) -> None:
    stock, engine = variant_graded["stock"][1], variant_graded["engine"][1]
    assert set(stock) == set(engine) == set(notebooks())
    for who in stock:
        assert {c: (r.score, r.max_score, r.first_line) for c, r in stock[who].items()} == {
            c: (r.score, r.max_score, r.first_line) for c, r in engine[who].items()
        }, who
