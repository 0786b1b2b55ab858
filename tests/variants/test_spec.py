"""Marking, drawing and writing per-student values (``grader.variants.spec``), and bad marks."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from grader import variants
from grader.errors import AuthoringError
from grader.variants import spec

REPO = Path(__file__).resolve().parents[2]
PS3 = "ps3_regression"
KEY = b"a-test-secret-of-enough-length"


def release() -> nbformat.NotebookNode:
    return nbformat.read(REPO / "release" / PS3 / f"{PS3}.ipynb", as_version=4)  # type: ignore[no-untyped-call]


def locked(source: str, **nbgrader: object) -> dict[str, object]:
    meta = {"grade": False, "grade_id": "values", "locked": True, "solution": False, **nbgrader}
    return {"cell_type": "code", "source": source, "metadata": {"nbgrader": meta}}


def test_ps3_marks_the_shop_and_nothing_else() -> None:
    (cell,) = variants.find_cells(release(), PS3)
    assert cell.grade_id == "shop_values"
    assert [(v.name, v.default, v.choices) for v in cell.variants] == [
        ("TRUE_SLOPE", 3.0, (2.0, 2.5, 3.0, 3.5, 4.0)),
        ("TRUE_INTERCEPT", 5.0, (3.0, 4.0, 5.0, 6.0, 7.0)),
    ]
    assert cell.combinations == 25


def test_range_choices_and_other_lines_kept() -> None:
    source = "# the run\nSTEPS = 100  # variant: range(80, 121, 10)\nprint(STEPS)"
    (v,) = spec.parse(source, "cell")
    assert v.choices == (80, 90, 100, 110, 120)
    cell = spec.VariantCell(0, "values", source, (v,))
    assert spec.render(cell, {"STEPS": 110}) == "# the run\nSTEPS = 110\nprint(STEPS)"


def test_the_same_student_always_draws_the_same_values_and_students_spread() -> None:
    cells = variants.find_cells(release(), PS3)
    first = variants.student_values(KEY, PS3, "ada", cells)
    assert all(variants.student_values(KEY, PS3, "ada", cells) == first for _ in range(3))
    drawn = Counter(tuple(variants.student_values(KEY, PS3, f"s{n:03}", cells).values()) for n in range(300))
    assert len(drawn) == 25  # every combination is someone's
    assert max(drawn.values()) < 30  # 300 students over 25 combinations: none gets a crowd
    other_key = Counter(
        tuple(variants.student_values(b"another-secret-entirely", PS3, "ada", cells).values()) for _ in "x"
    )
    assert sum(other_key.values()) == 1  # deterministic under any key; which one depends on the key


def test_a_personalised_release_differs_only_in_the_marked_cell() -> None:
    nb = release()
    mine = variants.personalise(nb, KEY, PS3, "ada")
    values = variants.student_values(KEY, PS3, "ada", variants.find_cells(nb, PS3))
    changed = [i for i, (a, b) in enumerate(zip(nb.cells, mine.cells, strict=True)) if a != b]
    (cell,) = variants.find_cells(nb, PS3)
    assert changed == [cell.index]
    text = mine.cells[cell.index].source
    assert "variant:" not in text
    assert (
        f"TRUE_SLOPE = {values['TRUE_SLOPE']!r}\n" in text
        and f"TRUE_INTERCEPT = {values['TRUE_INTERCEPT']!r}\n" in text
    )
    assert nb == release()  # the release itself is untouched


def test_a_notebook_without_marks_is_returned_as_it_is() -> None:
    nb = nbformat.read(REPO / "release" / "ps1_tensors" / "ps1_tensors.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    assert variants.find_cells(nb) == []
    assert variants.personalise(nb, KEY, "ps1_tensors", "ada") is nb


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("LR = 0.1  # variant: []", "LR: [] gives no value to choose from"),
        ("N = 5  # variant: range(5, 5)", "N: range(5, 5) gives no value to choose from"),
        ("N = 5  # variant: range(1, 9, 0)", "takes one to three whole numbers, the step not 0"),
        ("LR = 0.5  # variant: [0.1, 0.2]", "LR: its value 0.5 is not one of its choices [0.1, 0.2]"),
        ("LR = 0.1  # variant: [0.1, 0.1]", "lists a value twice"),
        ("LR = 0.1  # variant: 0.1 or 0.2", "'0.1 or 0.2' is not a Python literal"),
        ("LR = 0.1  # variant: {'a': 1}", "the choices must be a list, a tuple or range(...)"),
        ("LR = [0.1]  # variant: [[0.1], [0.2]]", "is not a number, a string or a bool"),
        ("LR, N = 0.1, 2  # variant: [0.1]", "a variant is marked as `NAME = value  # variant: [choices]`"),
        ("LR = 0.1  # variant: [0.1]\nLR = 0.1  # variant: [0.1, 0.2]", "the variant LR is marked twice"),
    ],
)
def test_bad_marks_are_refused_with_the_cell_and_the_reason(source: str, says: str) -> None:
    nb = nbformat.from_dict({"cells": [locked(source)]})
    with pytest.raises(AuthoringError) as caught:
        variants.find_cells(nb, "source/x/x.ipynb")
    assert str(caught.value).startswith("source/x/x.ipynb, cell `values`")
    assert says in str(caught.value)


def test_marks_outside_a_read_only_cell_are_refused() -> None:
    answer = locked("LR = 0.1  # variant: [0.1, 0.2]", locked=False, solution=True)
    nb = nbformat.from_dict({"cells": [answer]})
    with pytest.raises(AuthoringError, match=r"must be in a read-only cell \(nbgrader 'Read-only'\)"):
        variants.find_cells(nb, "source/x/x.ipynb")


def test_one_name_marked_in_two_cells_is_refused() -> None:
    cells = [locked("LR = 0.1  # variant: [0.1, 0.2]"), locked("LR = 0.2  # variant: [0.1, 0.2]", grade_id="again")]
    nb = nbformat.from_dict({"cells": cells})
    with pytest.raises(AuthoringError, match=r"the variant\(s\) \['LR'\] are marked in more than one cell"):
        variants.find_cells(nb, "source/x/x.ipynb")


def test_submitted_values_reads_constants_and_survives_broken_code() -> None:
    assert spec.submitted_values("A = 1\nB = 'x'\nC = A + 1\nprint(A)") == {"A": 1, "B": "x", "C": "A + 1"}
    assert spec.submitted_values("A = (") == {"A": "("}  # unparsable: read line by line
    assert spec.submitted_values("%matplotlib inline\nA = 2.5") == {"A": 2.5}  # an IPython magic in the cell
    assert spec.submitted_values("d = {[0, 1]: 'a'}\nB: float = 2.0") == {"d": "{[0, 1]: 'a'}", "B": 2.0}
    assert copy.deepcopy(spec.submitted_values("")) == {}


def test_the_course_fixtures_are_graded_under_many_variants() -> None:
    """tests/graded.py grades each fixture as the student named after it (stock nbgrader and the engine, compared
    cell by cell in tests/engine/test_autograde.py): under the suite's secret those students hold many variants."""
    import os

    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    for assignment, at_least in (("ps2_autograd", 5), (PS3, 15)):
        nb = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)  # type: ignore[no-untyped-call]
        cells = variants.find_cells(nb, assignment)
        students = [p.stem for p in (REPO / "tests" / "fixtures" / "submissions" / assignment).glob("*.ipynb")]
        drawn = {tuple(variants.student_values(key, assignment, s, cells).values()) for s in students}
        assert len(drawn) >= at_least, (assignment, len(drawn))
