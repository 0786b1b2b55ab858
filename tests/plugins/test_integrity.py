"""Stock ``nbgrader autograde`` reports a changed read-only or test cell only where a student changed it.

nbgrader's gradebook holds each test cell with its hidden tests, and its checksum is that cell's; the
release, and so every student's notebook, has the cell without them. Without
``grader.plugins.integrity.RestoreHiddenTests`` before ``OverwriteCells``, every test cell of every
notebook, the release submitted untouched included, was reported as ``Attribute 'checksum' for cell
... has changed!`` (16 lines for ps1). Here the real ``nbgrader autograde`` grades, in a copy of the
course: each assignment's release as it is; for ps3 (hidden tests and a per-student variant cell) the
notebook a student fetches, one with a test cell edited and one with another student's values.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader import course, variants

ASSIGNMENTS = course.assignments()
PS3 = "ps3_regression"
VARIANT_CELL = "shop_values"
EDITED_TEST = "test_fit_result"
CHECKSUM = re.compile(r"Attribute 'checksum' for cell (\S+) has changed!")
SANITIZING = re.compile(r"^\[AutogradeApp \| INFO\] Sanitizing \S*/submitted/([^/\s]+)/", re.M)


def _values(student: str) -> dict[str, object]:
    release = nbformat.read(course.REPO_ROOT / "release" / PS3 / f"{PS3}.ipynb", as_version=4)
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    return dict(variants.student_values(key, PS3, student, variants.find_cells(release, PS3)))


# a student, and another whose variant values differ from theirs
FETCHED = "fetched"
OTHER = next(f"other-{n}" for n in range(500) if _values(f"other-{n}") != _values("copied"))


def _personal(release: nbformat.NotebookNode, student: str) -> nbformat.NotebookNode:
    return variants.personalise(release, os.environ["GRADER_VARIANT_SECRET"].encode(), PS3, student)  # type: ignore[no-any-return]


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _logs(output: str) -> dict[str, str]:
    """Each submission's part of nbgrader's output, from its ``Sanitizing`` line to the next one's."""
    parts = SANITIZING.split(output)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.fixture(scope="module")
def autograded_course(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, str], str]]:
    """The course copy, and nbgrader's output for each (assignment, student) it graded."""
    root = course.copy_course(tmp_path_factory.mktemp("integrity") / "course")
    course.generate_releases(root)
    for assignment in ASSIGNMENTS:
        release = root / "release" / assignment / f"{assignment}.ipynb"
        course.place_submission(root, "untouched", assignment, release)
    release = nbformat.read(root / "release" / PS3 / f"{PS3}.ipynb", as_version=4)
    edited = _personal(release, "edited")
    _cell(edited, EDITED_TEST).source += "\nassert True  # the student's line"
    submissions = {FETCHED: _personal(release, FETCHED), "edited": edited, "copied": _personal(release, OTHER)}
    for student, nb in submissions.items():
        course.place_notebook(root, student, PS3, nbformat.writes(nb).encode())
    logs: dict[tuple[str, str], str] = {}
    for assignment in ASSIGNMENTS:
        output = course.autograde(root, assignment)
        logs |= {(assignment, student): log for student, log in _logs(output).items()}
    return root, logs


def _instructor_tests(root: Path, assignment: str) -> dict[str, str]:
    """The gradebook's test cells, hidden tests included: what a submission's test cells must run."""
    with Gradebook(course.gradebook_url(root)) as gradebook:
        notebook = gradebook.find_notebook(assignment, assignment)
        tests = {c.name for c in notebook.grade_cells if c.cell_type == "code"}
        return {c.name: c.source for c in notebook.source_cells if c.name in tests and c.locked}


def _autograded(root: Path, student: str, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(root / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_release_submitted_untouched_warns_about_nothing(
    autograded_course: tuple[Path, dict[tuple[str, str], str]], assignment: str
) -> None:
    root, logs = autograded_course
    log = logs[(assignment, "untouched")]
    assert "[AutogradeApp | WARNING]" not in log, log
    instructor = _instructor_tests(root, assignment)
    assert instructor and all("### BEGIN HIDDEN TESTS" in source for source in instructor.values())
    autograded = _autograded(root, "untouched", assignment)
    assert {name: _cell(autograded, name).source for name in instructor} == instructor, "hidden tests not run"


def test_the_notebook_a_student_fetched_with_their_own_values_warns_about_nothing(
    autograded_course: tuple[Path, dict[tuple[str, str], str]],
) -> None:
    root, logs = autograded_course
    assert "[AutogradeApp | WARNING]" not in logs[(PS3, FETCHED)], logs[(PS3, FETCHED)]
    expected = variants.personalise(
        nbformat.read(root / "release" / PS3 / f"{PS3}.ipynb", as_version=4),
        os.environ["GRADER_VARIANT_SECRET"].encode(),
        PS3,
        FETCHED,
    )
    assert _cell(_autograded(root, FETCHED, PS3), VARIANT_CELL).source == _cell(expected, VARIANT_CELL).source


def test_an_edited_test_cell_is_reported_and_graded_as_the_instructor_wrote_it(
    autograded_course: tuple[Path, dict[tuple[str, str], str]],
) -> None:
    root, logs = autograded_course
    assert CHECKSUM.findall(logs[(PS3, "edited")]) == [EDITED_TEST], logs[(PS3, "edited")]
    restored = _cell(_autograded(root, "edited", PS3), EDITED_TEST).source
    assert restored == _instructor_tests(root, PS3)[EDITED_TEST]
    assert "the student's line" not in restored


def test_a_variant_cell_with_another_students_values_is_reported(
    autograded_course: tuple[Path, dict[tuple[str, str], str]],
) -> None:
    _, logs = autograded_course
    log = logs[(PS3, "copied")]
    assert CHECKSUM.findall(log) == [VARIANT_CELL], log
    assert f"The cell `{VARIANT_CELL}` in your notebook says" in log
