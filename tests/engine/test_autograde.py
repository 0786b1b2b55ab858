"""``grader autograde`` writes what stock ``nbgrader autograde`` writes, and is right where stock is wrong."""

from __future__ import annotations

import io
from pathlib import Path

import nbformat
import pytest

from grader import cli, course
from grader.engine.bookkeeping.autograde import Status, Stop
from grader.engine.doors import batch
from grader.engine.engine import Engine
from grader.engine.limits import Limits
from grader.errors import ConfigurationError
from tests.fixtures.build import fixtures
from tests.fixtures.grading import place, results
from tests.graded import ASSIGNMENTS, LATE_STUDENT, Graded, prepare

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "submissions"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_fixture_scores_exactly_as_stock_nbgrader(
    graded: dict[str, Graded], assignment: str, tmp_path: Path
) -> None:
    root = prepare(tmp_path, assignment)
    place(root, assignment, fixtures(assignment))
    result = batch.run(root, assignment, jobs=4, out=io.StringIO())
    assert not result.failed, result.summary()
    ours, stock = results(root, assignment), graded[assignment].results
    assert set(ours) == set(stock)
    for student, cells in stock.items():
        for grade_id, expected in cells.items():
            got = ours[student][grade_id]
            assert (got.score, got.max_score) == (expected.score, expected.max_score), (student, grade_id)
            assert got.errors == expected.errors, (student, grade_id)


def test_late_penalty_is_nbgrader_own(graded: dict[str, Graded], tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    assignment = "ps1_tensors"
    root = prepare(tmp_path, assignment)
    batch.run(root, assignment, [LATE_STUDENT], out=io.StringIO())
    penalties = []
    for where in (root, graded[assignment].root):
        with Gradebook(course.gradebook_url(where)) as gradebook:
            submission = gradebook.find_submission(assignment, LATE_STUDENT)
            penalties.append((submission.score, submission.late_submission_penalty))
    assert penalties[0] == penalties[1] and penalties[0][1] > 0


def _with_cell_before(assignment: str, test_index: int, source: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """The correct submission with a code cell inserted before its ``test_index``-th test cell."""
    nb = nbformat.read(FIXTURES / assignment / "correct.ipynb", as_version=4)
    tests = _test_cells(nb)
    position = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == tests[test_index])
    nb.cells.insert(position, nbformat.v4.new_code_cell(source))
    return nb, tests


def _grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")  # type: ignore[no-any-return]


def _submit(root: Path, student: str, assignment: str, nb: nbformat.NotebookNode) -> None:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


def _test_cells(nb: nbformat.NotebookNode) -> list[str]:
    return [
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade")
    ]


def _tests_of(assignment: str) -> list[str]:
    return _test_cells(nbformat.read(FIXTURES / assignment / "correct.ipynb", as_version=4))


def test_a_kernel_that_dies_keeps_the_points_earned_before_it(tmp_path: Path) -> None:
    """Stock nbgrader loses the whole notebook when the kernel dies; the engine keeps what ran."""
    assignment = "ps2_autograd"
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    nb, tests = _with_cell_before(assignment, 5, "import os\nos._exit(1)")
    _submit(root, "exits-halfway", assignment, nb)

    assert batch.run(root, assignment, out=io.StringIO()).failed == ()
    cells = results(root, assignment)["exits-halfway"]
    before, after = tests[:5], tests[5:]
    assert all(cells[t].score == cells[t].max_score for t in before)
    assert all(cells[t].score == 0 for t in after)
    assert any("DeadKernelError" in cells[t].message or "CellNotRun" in cells[t].message for t in after)

    stock = tmp_path / "stock"
    course.copy_course(stock)
    course.generate_releases(stock, [assignment])
    _submit(stock, "exits-halfway", assignment, nb)
    with pytest.raises(course.NbgraderError, match=r"Kernel died|DeadKernel"):
        course.autograde(stock, assignment)
    assert sum(r.score for r in course.cell_scores(stock, assignment)) == 0


def test_a_notebook_past_its_whole_time_limit_stops_and_keeps_earlier_points(tmp_path: Path) -> None:
    assignment = "ps2_autograd"
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    nb, tests = _with_cell_before(assignment, len(_tests_of(assignment)) - 2, "import time\ntime.sleep(60)")
    _submit(root, "sleeps", assignment, nb)
    with Engine(root, limits=Limits(notebook_timeout_s=8)) as engine:
        outcome = engine.grade(assignment, "sleeps")
    assert outcome.ok and outcome.seconds < 20 and outcome.stopped is Stop.NOTEBOOK_TIMEOUT
    cells = results(root, assignment)["sleeps"]
    assert all(cells[t].score == cells[t].max_score for t in tests[:-2])
    assert cells[tests[-2]].score == 0 and "CellNotRun" in cells[tests[-2]].message
    assert cells[tests[-1]].score == 0 and "CellNotRun" in cells[tests[-1]].message


def test_cli_autograde_prints_progress_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assignment = "ps1_tensors"
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    for name in ("correct", "hard-coded"):
        course.place_submission(root, name, assignment, FIXTURES / assignment / f"{name}.ipynb")
    assert cli.main(["autograde", assignment, "--course", str(root), "--jobs", "2"]) == 0
    out, err = capsys.readouterr()
    assert "Autograded 2 submission(s) of ps1_tensors" in out and "0 failed" in out
    assert "2/2" in err and "/s" in err
    scores = {(r.student, r.grade_id): r.score for r in course.cell_scores(root, assignment)}
    assert sum(v for (s, _), v in scores.items() if s == "correct") == 35

    assert cli.main(["autograde", assignment, "--course", str(root), "--student", "correct", "--no-force"]) == 0
    assert "Autograded 1 submission(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["autograde", "ps9_nothing"], "no assignment 'ps9_nothing'"),
        (["autograde", "ps1_tensors", "--student", "nobody"], "no submission of ps1_tensors for nobody"),
        (["autograde", "ps2_autograd"], "no submissions of ps2_autograd"),
    ],
)
def test_cli_autograde_explains_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, ["ps1_tensors"])
    course.place_submission(root, "someone", "ps1_tensors", FIXTURES / "ps1_tensors" / "correct.ipynb")
    assert cli.main([*argv, "--course", str(root)]) == 2
    assert message in capsys.readouterr().err


def test_cli_autograde_asks_for_a_release_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = course.copy_course(tmp_path / "course")
    course.place_submission(root, "someone", "ps1_tensors", FIXTURES / "ps1_tensors" / "correct.ipynb")
    assert cli.main(["autograde", "ps1_tensors", "--course", str(root)]) == 2
    assert "run `grader release ps1_tensors`" in capsys.readouterr().err


def test_outcomes_are_typed_a_database_failure_is_told_apart_from_the_notebook(tmp_path: Path) -> None:
    """Before, the service searched nbgrader's log for "OperationalError" to tell the two apart."""
    assignment = "ps2_autograd"
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [assignment])
    _submit(root, "dana", assignment, nbformat.read(FIXTURES / assignment / "correct.ipynb", as_version=4))
    with Engine(root, db_url=f"sqlite:///{tmp_path}/no/such/folder/gradebook.db") as engine:
        outcome = engine.grade(assignment, "dana")
    assert outcome.status is Status.DATABASE and not outcome.ok
    assert outcome.reason.startswith("the gradebook database failed: OperationalError")
    with Engine(root) as engine:
        done = engine.grade(assignment, "dana")
    assert done.status is Status.COMPLETED and done.ok and done.stopped is Stop.NONE and done.reason == ""


def test_a_course_config_without_an_execute_step_fails_at_start_up(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    with (root / "nbgrader_config.py").open("a") as config:
        config.write('\nc.Autograde.autograde_preprocessors = ["nbgrader.preprocessors.SaveAutoGrades"]\n')
    with pytest.raises(ConfigurationError, match="has no Execute step for the engine to replace"):
        Engine(root)
