"""The similarity report finds disguised copies in a class of independent students, and nothing else."""

from __future__ import annotations

import nbformat
import pytest

from grader.course import REPO_ROOT
from grader.similarity import compare, report, sources
from grader.similarity.sources import SimilarityError

from .planted import ASSIGNMENT, independent, notebook, renamed, reordered, respaced


@pytest.fixture(scope="module")
def plate() -> sources.Boilerplate:
    return sources.boilerplate(REPO_ROOT, ASSIGNMENT)


@pytest.fixture(scope="module")
def students() -> dict[str, dict[str, str]]:
    found = independent()
    assert len(found) == 30
    return found


def submission(student: str, nb: nbformat.NotebookNode, plate: sources.Boilerplate) -> sources.Submission:
    return sources.parse(student, nbformat.writes(nb), plate)  # type: ignore[no-untyped-call]


def class_of(students: dict[str, dict[str, str]], plate: sources.Boilerplate) -> list[sources.Submission]:
    return [submission(name, notebook(cells), plate) for name, cells in students.items()]


def test_thirty_independent_solutions_are_not_flagged(
    students: dict[str, dict[str, str]], plate: sources.Boilerplate
) -> None:
    found = report.build(REPO_ROOT, ASSIGNMENT, class_of(students, plate), compare.THRESHOLD, "the test", plate)
    assert found.submissions == 30
    assert found.pairs == (), report.table(found)


def test_planted_copies_are_found_and_only_they(
    students: dict[str, dict[str, str]], plate: sources.Boilerplate
) -> None:
    ada, ben, cy, dee = students["student-01"], students["student-02"], students["student-03"], students["student-10"]
    planted = [
        # every variable renamed, comments and layout gone
        submission("copy-renamed", notebook({g: renamed(c) for g, c in ada.items()}), plate),
        # the same cells in reverse order, re-spaced, with a comment of the copier's own
        submission("copy-reordered", reordered(notebook({g: respaced(c) for g, c in ben.items()})), plate),
        # student-10's notebook with one function taken from student-03, renamed
        submission("copy-one-function", notebook({**dee, "train_step": renamed(cy["train_step"])}), plate),
    ]
    found = report.build(
        REPO_ROOT, ASSIGNMENT, class_of(students, plate) + planted, compare.THRESHOLD, "the test", plate
    )
    pairs = {frozenset((p.a, p.b)): p for p in found.pairs}
    assert set(pairs) == {
        frozenset(("student-01", "copy-renamed")),
        frozenset(("student-02", "copy-reordered")),
        frozenset(("student-03", "copy-one-function")),
        frozenset(("student-10", "copy-one-function")),
    }, report.table(found)
    assert pairs[frozenset(("student-01", "copy-renamed"))].score > 0.9
    assert pairs[frozenset(("student-02", "copy-reordered"))].score > 0.9
    one = pairs[frozenset(("student-03", "copy-one-function"))]
    # found by the cell it lies in: of the two notebooks as a whole, well under half is shared
    assert one.cells == ("train_step",) and one.score > 0.9
    assert max(one.share_a, one.share_b) < compare.THRESHOLD


def test_the_side_by_side_view_marks_the_copied_function_only(
    students: dict[str, dict[str, str]], plate: sources.Boilerplate
) -> None:
    cy = submission("student-03", notebook(students["student-03"]), plate)
    copier = submission(
        "copy-one-function", notebook({"train_step": renamed(students["student-03"]["train_step"])}), plate
    )
    views = {view.name: view for view in compare.side_by_side(cy, copier, plate)}
    assert [name for name, view in views.items() if view.matched] == ["train_step"]
    marked = "".join(s.text for s in views["train_step"].b if s.matched)
    assert "backward()" in marked
    assert "".join(s.text for s in views["train_step"].b) == copier.cells[5].code


def test_notebooks_that_share_only_the_starter_code_or_the_solution_do_not_match(plate: sources.Boilerplate) -> None:
    release = sources.answers(
        "unanswered-1", nbformat.read(REPO_ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4), plate
    )  # type: ignore[no-untyped-call]
    unanswered = sources.Submission("unanswered-2", release.cells)
    solution = submission("as-the-instructor-1", notebook({}), plate)
    also = sources.Submission("as-the-instructor-2", solution.cells)
    found = report.build(REPO_ROOT, ASSIGNMENT, [release, unanswered, solution, also], 0.2, "the test", plate)
    assert found.pairs == () and found.below == 0


def test_fewer_than_two_submissions_is_one_sentence(plate: sources.Boilerplate) -> None:
    one = submission("ada", notebook({}), plate)
    with pytest.raises(SimilarityError) as raised:
        report.build(REPO_ROOT, ASSIGNMENT, [one], 0.5, "submitted/", plate)
    assert str(raised.value) == (
        "ps3_regression: a similarity report needs at least two submissions; submitted/ has 1 (ada)"
    )
    with pytest.raises(SimilarityError, match=r"submitted/ has none$"):
        report.build(REPO_ROOT, ASSIGNMENT, [], 0.5, "submitted/", plate)


def test_the_csv_of_a_report_without_pairs_is_its_header_line() -> None:
    empty = report.Report(ASSIGNMENT, 2, 0.5, (), 0)
    assert report.csv_text(empty) == "student_a,student_b,score,share_a,share_b,shared_chars,cells\n"


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, 0.5), ("", 0.5), ("0.7", 0.7), ("35%", 0.35), ("80", 0.8), ("1", 1.0)],
)
def test_thresholds_read_as_shares_or_percentages(given: str | None, expected: float) -> None:
    assert report.threshold_of(given) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("high", "the threshold must be a number such as 0.5 or 50%, not 'high'"),
        ("0.1", "the threshold must lie between 0.2 and 1 (or 20% and 100%), not 0.1"),
        ("150%", "the threshold must lie between 0.2 and 1 (or 20% and 100%), not 150%"),
    ],
)
def test_a_bad_threshold_is_refused_in_one_sentence(given: str, message: str) -> None:
    with pytest.raises(SimilarityError) as raised:
        report.threshold_of(given)
    assert str(raised.value) == message
