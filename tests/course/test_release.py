"""The committed student releases are current and give nothing away."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from grader import course
from tests import released
from tests.fixtures.spec import grade_id

ASSIGNMENTS = course.assignments()


@pytest.fixture(scope="module")
def fresh_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = course.copy_course(tmp_path_factory.mktemp("release"))
    for assignment in ASSIGNMENTS:
        (root / "release" / assignment / f"{assignment}.ipynb").unlink()
    released.uncached(root)  # nbgrader itself, never the session's cache of releases
    return root


def test_the_course_has_its_four_assignments_in_order() -> None:
    assert ASSIGNMENTS == ["ps1_tensors", "ps2_autograd", "ps3_regression", "ps4_functions"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_matches_a_fresh_generate_assignment(fresh_release: Path, assignment: str) -> None:
    name = f"{assignment}/{assignment}.ipynb"
    committed = json.loads((course.REPO_ROOT / "release" / name).read_text())
    fresh = json.loads((fresh_release / "release" / name).read_text())
    assert committed == fresh, f"release/{name} is out of date: run `grader release` and commit the result"


def _source_and_release(assignment: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    path = f"{assignment}/{assignment}.ipynb"
    return (
        nbformat.read(course.REPO_ROOT / "source" / path, as_version=4),
        nbformat.read(course.REPO_ROOT / "release" / path, as_version=4),
    )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_has_no_solution_code_and_no_hidden_test(assignment: str) -> None:
    source, release = _source_and_release(assignment)
    released = "\n".join(cell.source for cell in release.cells)
    assert "BEGIN SOLUTION" not in released and "END SOLUTION" not in released
    assert "HIDDEN TESTS" not in released
    solution = re.compile(r"### BEGIN SOLUTION(.*?)### END SOLUTION", re.S)
    hidden = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
    secret_lines = {
        line.strip()
        for cell in source.cells
        for pattern in (solution, hidden)
        for block in pattern.findall(cell.source)
        for line in block.splitlines()
        if len(line.strip()) > 12 and not line.strip().startswith("#")
    }
    # A line the lesson itself shows (a worked example in markdown, a visible test) is no secret.
    shown_lines = {
        line.strip() for cell in source.cells for line in hidden.sub("", solution.sub("", cell.source)).splitlines()
    }
    visible_lines = {line.strip() for line in released.splitlines()}
    assert (secret_lines - shown_lines) & visible_lines == set()
    assert secret_lines, "the source notebook has solution and hidden-test code"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_graded_task_has_a_visible_and_a_hidden_test(assignment: str) -> None:
    source, release = _source_and_release(assignment)
    visible = {grade_id(c): c.source for c in release.cells}
    tests = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")]
    tests = [c for c in tests if not c.metadata["nbgrader"].get("solution")]  # written answers are graded by TAs
    assert tests
    for cell in tests:
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{grade_id(cell)} has no hidden test"
        assert visible[grade_id(cell)].strip(), f"{grade_id(cell)} has no visible test"
        assert cell.metadata["nbgrader"]["points"] > 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_use_standard_nbgrader_metadata(assignment: str) -> None:
    source, _ = _source_and_release(assignment)
    ids = [grade_id(c) for c in source.cells if "nbgrader" in c.metadata]
    assert len(ids) == len(set(ids)), "grade_ids must be unique"
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        assert meta["schema_version"] == 3
        assert {"grade", "solution", "locked", "grade_id"} <= set(meta)
        if meta["solution"]:
            assert "### BEGIN SOLUTION" in cell.source or cell.cell_type == "markdown"
    assert source.metadata["kernelspec"]["name"] == "python3"
