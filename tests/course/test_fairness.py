"""The hidden tests grade fairly, proven with the stock ``nbgrader autograde``.

Every correct solution (the instructor's and the alternative styles) gets full
marks; every misconception fixture loses exactly the test cells aimed at it,
with a message that names the misconception, and keeps every other point.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.checks import misconceptions
from grader.engine.doors import batch
from tests.fixtures.build import fixtures
from tests.fixtures.grading import place, results
from tests.fixtures.spec import Fixture, instructor_solutions
from tests.graded import ASSIGNMENTS, LATE_STUDENT, SOURCE_STUDENT, Graded

CASES = [(a, f) for a in ASSIGNMENTS for f in fixtures(a)]

# The misconceptions the course promises to catch (issue 1/6), by code.
REQUIRED = {
    "grad-not-zeroed",
    "grad-zeroed-before-update",
    "sum-instead-of-mean",
    "update-outside-no-grad",
    "param-replaced",
    "graph-cut",
    "grad-before-backward",
    "integer-requires-grad",
    "dtype-changed",
    "device-not-kept",
    "unintended-broadcast",
    "view-non-contiguous",
    "input-mutated",
    "hard-coded",
    "not-manual",
}

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize(("assignment", "fixture"), CASES, ids=[f"{a}/{f.name}" for a, f in CASES])
def test_fixture_loses_exactly_the_points_aimed_at_it(
    graded: dict[str, Graded], assignment: str, fixture: Fixture
) -> None:
    cells = graded[assignment].cells(fixture.name)
    assert set(fixture.fails) <= set(cells), f"unknown test cells in fails: {set(fixture.fails) - set(cells)}"
    for gid, cell in sorted(cells.items()):
        expected = fixture.fails.get(gid)
        if expected is None:
            assert cell.score == cell.max_score, f"{gid} lost points:\n{ANSI.sub('', cell.message)[-3000:]}"
        else:
            assert cell.score == 0, f"{gid} should fail ({expected}) but scored {cell.score}/{cell.max_score}"
            assert expected in cell.message, f"{gid}: message lacks {expected!r}:\n{ANSI.sub('', cell.message)}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_as_a_submission_gets_full_marks(graded: dict[str, Graded], assignment: str) -> None:
    cells = graded[assignment].cells(SOURCE_STUDENT)
    assert cells
    lost = {gid: ANSI.sub("", c.message)[-2000:] for gid, c in cells.items() if c.score != c.max_score}
    assert not lost


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_is_worth_25_to_40_points(graded: dict[str, Graded], assignment: str) -> None:
    total = sum(c.max_score for c in graded[assignment].cells(SOURCE_STUDENT).values())
    assert 25 <= total <= 40


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_late_submission_loses_ten_percent_per_started_day(graded: dict[str, Graded], assignment: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded[assignment].root / 'gradebook.db'}") as gradebook:
        late = gradebook.find_submission(assignment, LATE_STUDENT)
        on_time = gradebook.find_submission(assignment, "correct")
        assert late.total_seconds_late == pytest.approx(44 * 3600)
        autograded = sum(c.max_score for c in graded[assignment].cells("correct").values())
        # nbgrader's max_score holds the written answers' points too, which a person gives (0 until then)
        assert late.score == on_time.score == autograded < on_time.max_score
        assert late.late_submission_penalty == pytest.approx(0.2 * late.score)
        assert on_time.late_submission_penalty == 0


def test_every_promised_misconception_has_a_fixture_that_names_it() -> None:
    named = {code for _, f in CASES for text in f.fails.values() for code in REQUIRED if code in text}
    assert named == REQUIRED
    assert REQUIRED <= {m.code for m in misconceptions.ALL}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_solution_cell_has_three_alternative_correct_fixtures(assignment: str) -> None:
    alternatives: dict[str, int] = {gid: 0 for gid in instructor_solutions(assignment)}
    for fixture in fixtures(assignment):
        if not fixture.fails:
            for gid in fixture.solutions:
                alternatives[gid] += 1
    assert {gid: n for gid, n in alternatives.items() if n < 3} == {}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_correct_solution_gets_full_marks_under_both_graders(
    graded: dict[str, Graded], assignment: str, tmp_path: Path
) -> None:
    """Zero false failures: each alternative-correct fixture (and the instructor's solution) scores full
    marks under stock ``nbgrader autograde`` and under ``grader autograde`` (the service's engine)."""
    correct = [f for f in fixtures(assignment) if not f.fails]
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    place(root, assignment, correct)
    assert not batch.run(root, assignment, jobs=2, out=io.StringIO()).failed
    engine = results(root, assignment)
    lost = {}
    for grader, graded_by in (("stock nbgrader", graded[assignment].results), ("grader autograde", engine)):
        for fixture in correct:
            cells = graded_by[fixture.name]
            assert cells, f"{fixture.name} was not graded by {grader}"
            for gid, cell in cells.items():
                if cell.score != cell.max_score:
                    lost[(grader, fixture.name, gid)] = ANSI.sub("", cell.message)[-1500:]
    assert lost == {}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_is_aimed_at_by_some_fixture(assignment: str) -> None:
    nb = nbformat.read(course.REPO_ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    graded_by = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    test_cells = {m["grade_id"] for m in graded_by if m.get("grade") and not m.get("solution")}  # written answers: TAs'
    aimed = {gid for f in fixtures(assignment) for gid in f.fails}
    assert test_cells - aimed == set()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_failure_messages_never_print_a_hidden_value(graded: dict[str, Graded], assignment: str) -> None:
    """No failing message contains a number that appears only in the hidden tests."""
    nb = nbformat.read(course.REPO_ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    release = nbformat.read(course.REPO_ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    hidden = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
    number = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")
    hidden_numbers = {n for c in nb.cells for block in hidden.findall(c.source) for n in number.findall(block)}
    visible_numbers = {n for c in release.cells for n in number.findall(c.source)}
    secret = hidden_numbers - visible_numbers
    for student, cells in graded[assignment].results.items():
        for gid, cell in cells.items():
            evalue = cell.message.split("\x1b")[0]  # the error text, before the (coloured) traceback
            leaked = {n for n in secret if n in number.findall(evalue)}
            assert not leaked, f"{student}/{gid} prints hidden value(s) {leaked}: {evalue}"


def test_warning_fixture_really_warns_and_only_ignore_pattern_saves_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Without the course's IgnorePattern, the correct-but-warning submission would lose points."""
    from tests.fixtures.grading import grade as grade_fixtures

    assignment = "ps2_autograd"
    (warning_fixture,) = [f for f in fixtures(assignment) if f.name == "float-loss-warning"]
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    (root / "nbgrader_config.py").write_text(
        (root / "nbgrader_config.py").read_text() + "\nc.IgnorePattern.enabled = False\n"
    )
    cells = grade_fixtures(root, assignment, [warning_fixture])[warning_fixture.name]
    lost = {gid: c.message for gid, c in cells.items() if c.score < c.max_score}
    assert lost, "the fixture no longer makes torch warn inside a test cell"
    assert all("UserWarning: Converting a tensor with requires_grad=True to a scalar" in m for m in lost.values())


def test_skip_execution_fixture_really_dodges_tests_and_only_run_every_test_cell_stops_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Without ``grader.plugins.integrity.RunEveryTestCell``, tagging a test cell would win its points unrun."""
    from tests.fixtures.grading import grade as grade_fixtures

    assignment = "ps3_regression"
    (tagged,) = [f for f in fixtures(assignment) if f.name == "test-cell-tagged-skip-execution"]
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    config = (root / "nbgrader_config.py").read_text()
    assert '    "grader.plugins.integrity.RunEveryTestCell",\n' in config
    (root / "nbgrader_config.py").write_text(config.replace('    "grader.plugins.integrity.RunEveryTestCell",\n', ""))
    cells = grade_fixtures(root, assignment, [tagged])[tagged.name]
    assert all(c.score == c.max_score for c in cells.values()), "the tag no longer makes stock nbgrader skip the test"


MISCONCEPTION_TABLE = "docs/reference/misconception-table.md"  # the site's misconception catalogue is built from it


def test_the_docs_keep_the_current_misconception_table(graded: dict[str, Graded]) -> None:
    """``python -m tests.fixtures.table`` prints it; the documentation's copy, from which the misconception
    catalogue (docs/reference/misconceptions.md) is built, must be what it prints now."""
    from tests.fixtures import table

    rows = sorted(row for a in ASSIGNMENTS for row in table.rows(a, graded[a].results))
    kept = (course.REPO_ROOT / MISCONCEPTION_TABLE).read_text()
    wanted = table.render(rows)
    missing = [line for line in wanted.splitlines() if line not in kept.splitlines()]
    stale = f"{MISCONCEPTION_TABLE} is stale (.venv/bin/python -m tests.fixtures.table > {MISCONCEPTION_TABLE}):\n"
    assert missing == [], stale + "\n".join(missing)
    assert kept == wanted, stale + "it holds rows the table no longer prints, or other text"
