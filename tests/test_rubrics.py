"""Rubrics of written answers: the file an instructor writes, its scores, and one sentence per mistake in it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader import course, rubrics
from grader.rubrics import Grading, Item, Rubric, RubricError, WrittenCell

CELLS = {
    "explain-sum": WrittenCell("explain-sum", 2.0, "markdown"),
    "predict-shape": WrittenCell("predict-shape", 1.0, "markdown"),
}
OTHER = '\n[predict-shape]\nitems = [{ points = 1, text = "b" }]'
GOOD = """
[explain-sum]
grading = "positive"
items = [
  { points = 1, text = "Derives the gradient of the sum, 2x" },
  { points = 1, text = "Says why it is four times the mean's" },
  { points = -0.5, text = "Gives the mean's gradient instead", key = "m" },
]

[predict-shape]
grading = "negative"
items = [
  { points = -1, text = "Predicts the wrong shape" },
  { points = -0.5, text = "Says the dtype changes" },
]
"""


def _problems(text: str | None, cells: dict[str, WrittenCell] = CELLS) -> list[str]:
    return rubrics.problems(text, cells, autograded=("test-sum",), where="rubrics.toml")


def test_a_good_file_has_no_problem_and_keys_are_given_in_order() -> None:
    assert _problems(GOOD) == []
    loaded, _ = rubrics._read(GOOD, CELLS, frozenset(), "rubrics.toml")
    assert loaded["explain-sum"].items == (
        Item("1", 1.0, "Derives the gradient of the sum, 2x"),
        Item("2", 1.0, "Says why it is four times the mean's"),
        Item("m", -0.5, "Gives the mean's gradient instead"),
    )
    assert [i.key for i in loaded["predict-shape"].items] == ["1", "2"]


def test_positive_grading_adds_from_zero_and_negative_subtracts_from_the_points_within_floor_and_ceiling() -> None:
    positive = Rubric(
        "c", 2.0, Grading.POSITIVE, 0.0, 2.0, (Item("1", 1.5, "a"), Item("2", 1.5, "b"), Item("m", -1, "c"))
    )
    assert positive.score([]) == 0.0
    assert positive.score(["1"]) == 1.5
    assert positive.score(["1", "2"]) == 2.0  # the ceiling
    assert positive.score(["m"]) == 0.0  # the floor
    assert positive.score(["1", "1"]) == 1.5  # an item counts once
    assert positive.score(["1"], adjustment=0.25) == 1.75
    negative = Rubric("c", 1.0, Grading.NEGATIVE, 0.0, 1.0, (Item("1", -1, "a"), Item("2", -0.5, "b")))
    assert negative.score([]) == 1.0
    assert negative.score(["2"]) == 0.5
    assert negative.score(["1", "2"]) == 0.0
    with pytest.raises(KeyError, match="c has no rubric item with key 'x'"):
        negative.item("x")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[explain-sum\nitems = []",
            "rubrics.toml does not parse as TOML: Expected ']' at the end of a table declaration "
            "(at line 1, column 13)",
        ),
        (
            '[explain-sum]\nitems = [{ points = 1, text = "a" }]' + OTHER,
            "rubrics.toml [explain-sum]: the items cannot reach the cell's 2 points: the most an answer can score is 1",
        ),
        (
            '[explain-sum]\nceiling = 3\nitems = [{ points = 2, text = "a" }]' + OTHER,
            "rubrics.toml [explain-sum]: the ceiling (3) is above the cell's 2 points",
        ),
        (
            '[explain-sum]\nitems = [{ points = 1, text = "Derives  it" }, { points = 1, text = "derives it" }]'
            + OTHER,
            "rubrics.toml [explain-sum]: items 1 and 2 say the same thing ('derives it')",
        ),
        (
            '[explain-sum]\nitems = [{ points = 1, text = "a", key = "x" }, { points = 1, text = "b", key = "x" }]'
            + OTHER,
            "rubrics.toml [explain-sum]: items 1 and 2 have the same key 'x'",
        ),
        (
            '[explain-sum]\nitems = [{ points = 2, text = "a", key = "n" }]' + OTHER,
            "rubrics.toml [explain-sum]: item 1's key 'n' is kept by the grading page (?, a, c, g, n, p, s)",
        ),
        (
            '[explain-sum]\nitems = [{ point = 2, text = "a" }]' + OTHER,
            "rubrics.toml [explain-sum]: item 1 has unknown field(s) 'point': an item has points, text, key",
        ),
        (
            '[explain-sum]\ngrading = "partial"\nitems = [{ points = 2, text = "a" }]' + OTHER,
            'rubrics.toml [explain-sum]: grading must be "positive" or "negative", not \'partial\'',
        ),
        (
            '[explain-sum]\ngrading = "negative"\nitems = [{ points = 2, text = "a" }]' + OTHER,
            "rubrics.toml [explain-sum]: negative grading subtracts from the cell's points, but no item has "
            "negative points",
        ),
        (
            GOOD + '\n[test-sum]\nitems = [{ points = 1, text = "a" }]',
            "rubrics.toml has a rubric for [test-sum], which is an autograded test cell: rubrics are for written "
            "answers (cells nbgrader grades by hand: explain-sum, predict-shape)",
        ),
        (
            GOOD + '\n[explain-mean]\nitems = [{ points = 1, text = "a" }]',
            "rubrics.toml has a rubric for [explain-mean], which is no cell of the notebook: rubrics are for "
            "written answers (cells nbgrader grades by hand: explain-sum, predict-shape)",
        ),
        (
            '[explain-sum]\nitems = [{ points = 2, text = "a" }]',
            "written-answer cell predict-shape (1 points) has no rubric in rubrics.toml",
        ),
        (None, "written-answer cell explain-sum (2 points) has no rubric: rubrics.toml does not exist"),
        (
            '[explain-sum]\nitems = [{ points = 2, text = "a" }, { points = 0, text = "b" }]' + OTHER,
            "rubrics.toml [explain-sum]: item 2 is worth 0 points: give it points or make it a comment",
        ),
    ],
    ids=[
        "does-not-parse",
        "cannot-reach-points",
        "ceiling-above-points",
        "duplicate-text",
        "duplicate-key",
        "reserved-key",
        "unknown-field",
        "unknown-grading",
        "negative-without-deductions",
        "rubric-for-a-test-cell",
        "rubric-for-no-cell",
        "cell-without-rubric",
        "no-file",
        "zero-points",
    ],
)
def test_each_mistake_is_one_sentence(text: str | None, expected: str) -> None:
    assert expected in _problems(text)


def test_the_course_rubrics_fit_their_notebooks() -> None:
    for assignment in course.assignments():
        notebook = nbformat.read(course.REPO_ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
        cells = rubrics.written_cells(notebook)
        assert len(cells) >= 2, f"{assignment} asks for fewer than two written answers"
        loaded = rubrics.load(course.REPO_ROOT, assignment, notebook)
        assert set(loaded) == set(cells)


def test_load_raises_one_error_holding_every_sentence(tmp_path: Path) -> None:
    (tmp_path / "source" / "a").mkdir(parents=True)
    (tmp_path / "source" / "a" / "rubrics.toml").write_text('[explain-sum]\nitems = [{ points = 1, text = "a" }]')
    nb = nbformat.v4.new_notebook()
    for gid, points in (("explain-sum", 2), ("predict-shape", 1)):
        cell = nbformat.v4.new_markdown_cell("YOUR ANSWER HERE")
        cell.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": gid, "points": points}
        nb.cells.append(cell)
    with pytest.raises(RubricError) as raised:
        rubrics.load(tmp_path, "a", nb)
    assert raised.value.problems == (
        "source/a/rubrics.toml [explain-sum]: the items cannot reach the cell's 2 points: the most an answer can "
        "score is 1",
        "written-answer cell predict-shape (1 points) has no rubric in source/a/rubrics.toml",
    )


def test_neither_the_rubrics_nor_the_model_answers_are_released() -> None:
    config = course.read_config(course.REPO_ROOT)
    assert "rubrics.toml" in config.CourseDirectory.ignore  # nbgrader copies nothing of that name
    for assignment in course.assignments():
        assert not (course.REPO_ROOT / "release" / assignment / "rubrics.toml").exists()
        released = nbformat.read(course.REPO_ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        written = rubrics.written_cells(released)
        assert len(written) >= 2
        for cell in released.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in written:
                assert cell.source == "YOUR ANSWER HERE", assignment
