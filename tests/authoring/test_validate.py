"""``grader validate`` from the command line, as an instructor runs it, on small courses written here.

Each test runs the real command in a subprocess on a real course (the course's own nbgrader_config.py,
nbgrader's generate_assignment, the engine's kernels): the exit status, the lines printed and the JSON
report are what an instructor (and a course's CI) would read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import minicourse
from .conftest import Validated, validate


def test_a_strong_hidden_test_kills_every_mutant_a_student_could_write(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    code, out, err, report = validate(root, minicourse.NAME, "--stock")
    assert code == 0, out + err
    assert report is not None
    assert report["failures"] == []
    assert report["survivors"] == 0
    operators = {m["operator"] for m in report["mutants"] if m["status"] == "caught"}
    assert {"sign-flipped", "sum-for-mean", "grad-never-zeroed", "backward-forgotten"} <= operators
    assert report["stock"] == []  # stock nbgrader gives the probes and the solution the same scores
    assert "PASSED: 0 finding(s) fail this validation." in out
    html = (root / "validation" / f"{minicourse.NAME}.html").read_text()
    assert "<strong>PASSED</strong>" in html and '<th scope="row"><code>test_sgd_step</code></th>' in html


def test_a_gradient_check_weakened_to_a_shape_check_fails_and_names_the_survivors(weakened: Validated) -> None:
    code, out, err, report = weakened.result
    assert code == 1, out + err
    assert report is not None
    survivors = [m for m in report["mutants"] if m["status"] == "survived"]
    assert {"sign-flipped", "sum-for-mean", "grad-never-zeroed"} <= {m["operator"] for m in survivors}
    (flipped,) = [m for m in survivors if m["diff"] == ["- w -= lr * w.grad", "+ w += lr * w.grad"]]
    assert flipped["operator"] == "sign-flipped" and flipped["function"] == "sgd_step" and flipped["line"] == 6
    # what it changed that no test noticed: w after the test's first call
    unnoticed = "call 1 of sgd_step() from cell test_sgd_step: w afterwards differs from the original's"
    assert flipped["difference"] == unnoticed
    assert f"      changes, unnoticed: {unnoticed}" in out
    assert "Surviving mutants (holes in the hidden tests):" in out
    assert f"{flipped['id']} sign-flipped (-= -> +=) in sgd_step() in cell sgd_step, line 6:" in out
    assert "      + w += lr * w.grad" in out
    assert out.rstrip().endswith("the dashboard's assignment page shows it to staff.")
    assert f"FAILED: {len(report['failures'])} finding(s) fail this validation." in out


def test_a_test_that_credits_the_unanswered_release_fails_with_that_finding(tmp_path: Path) -> None:
    tests = (("test_sgd_step", minicourse.STRONG, 4), ("test_free_points", minicourse.CREDITS_RELEASE, 1))
    root = minicourse.make(tmp_path / "course", *tests)
    code, out, err, report = validate(root, minicourse.NAME, "--no-mutants")
    assert code == 1, out + err
    assert report is not None
    assert {(c["probe"], c["grade_id"]) for c in report["credits"]} == {
        ("probe-release", "test_free_points"),
        ("probe-anything", "test_free_points"),
    }
    assert "test_free_points credits probe-release (1/1): it passes without a working answer" in report["failures"]
    assert "Test cells that credit a notebook answering nothing:" in out


def test_an_answer_cell_the_mutator_cannot_parse_is_reported_and_skipped(tmp_path: Path) -> None:
    solution = "%config Completer.use_jedi = False\n" + minicourse.SOLUTION
    root = minicourse.make(tmp_path / "course", solution=solution)
    code, out, err, report = validate(root, minicourse.NAME)
    assert code == 0, out + err
    assert report is not None
    assert report["unparsable"] == [{"cell": "sgd_step", "error": "line 1: invalid syntax"}]
    assert report["mutants"] == []
    assert "Skipped answer cell sgd_step: the mutator cannot parse it (line 1: invalid syntax)." in err
    assert "Traceback" not in err


def _fixture(root: Path, name: str, text: str) -> None:
    folder = root / "source" / minicourse.NAME / "fixtures"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


SIGN_FLIPPED = """why = "the update climbs the loss instead of descending it"

[fails]
test_sgd_step = "the change of w made by step 1"

[solutions]
sgd_step = '''
def sgd_step(w, x, y, lr):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w += lr * w.grad
    w.grad = None
    return loss.item()
'''
"""


def test_a_fixture_is_graded_as_it_declares_and_a_wrong_declaration_fails(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    _fixture(root, "gradient-ascent.toml", SIGN_FLIPPED)
    claims_full = (
        SIGN_FLIPPED.split("[fails]")[0] + "full_marks = true\n\n[solutions]" + SIGN_FLIPPED.split("[solutions]")[1]
    )
    _fixture(root, "claims-full-marks.toml", claims_full)
    code, out, err, report = validate(root, minicourse.NAME, "--no-mutants")
    assert code == 1, out + err
    assert report is not None
    verdicts = {f["name"]: f for f in report["fixtures"]}
    assert verdicts["gradient-ascent"]["ok"] is True
    assert verdicts["claims-full-marks"]["ok"] is False
    assert verdicts["claims-full-marks"]["problems"][0].startswith(
        "test_sgd_step lost 4 point(s): the change of w made by step 1"
    )
    assert report["tests"][0]["fixtures"] == ["gradient-ascent"]


@pytest.mark.parametrize(
    ("name", "text", "sentence"),
    [
        (
            "wrong-cell.toml",
            'why = "x"\n[fails]\ntest_nothing = "[graph-cut]"\n',
            "[fails] names test_nothing, which is not a test cell of the source notebook "
            "(its test cells: test_sgd_step)",
        ),
        ("broken.ipynb", "this is not JSON", "broken.ipynb is not a notebook nbformat can read"),
        ("notes.txt", "a note", "a fixture is a .toml cell-replacement file or an .ipynb notebook, not a .txt file"),
        ("no-verdict.toml", 'why = "x"\n', "say what it must score: either `full_marks = true` or a [fails] table"),
        ("bad.toml", "why = \n", "bad.toml is not valid TOML"),
    ],
)
def test_a_bad_fixture_gets_one_sentence_and_a_non_zero_exit(
    tmp_path: Path, name: str, text: str, sentence: str
) -> None:
    root = minicourse.make(tmp_path / "course")
    _fixture(root, name, text)
    code, out, err, report = validate(root, minicourse.NAME)
    assert code == 2
    assert sentence in err
    assert "Traceback" not in err
    assert report is None and out == ""


def test_an_assignment_without_a_source_notebook_gets_one_sentence(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    (root / "source" / "empty").mkdir()
    code, _, err, _ = validate(root, "empty")
    assert code == 2
    assert f"empty: no source notebook at {root / 'source' / 'empty' / 'empty.ipynb'}" in err
    code, _, err, _ = validate(root, "nowhere")
    assert code == 2
    assert (
        "no assignment 'nowhere': an assignment is a folder source/<name>/ holding <name>.ipynb (found: empty, gd_step)"
        in err
    )
    assert "Traceback" not in err


def _with_written_answer(root: Path, rubric: str | None) -> None:
    import nbformat

    path = root / "source" / minicourse.NAME / f"{minicourse.NAME}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = nbformat.v4.new_markdown_cell("The update moves against the gradient because ...")
    cell.id = "why-minus"
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "why_minus",
        "locked": False,
        "points": 2,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    nb.cells.append(cell)
    nbformat.write(nb, path)
    if rubric is not None:
        (path.parent / "rubrics.toml").write_text(rubric)


def test_a_rubric_that_cannot_reach_the_points_fails_with_one_sentence_and_a_good_one_passes(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    _with_written_answer(root, '[why_minus]\nitems = [{ points = 1, text = "descent subtracts" }]\n')
    code, out, err, report = validate(root, minicourse.NAME, "--no-mutants")
    assert code == 1, out + err
    assert report is not None
    sentence = (
        "rubrics: source/gd_step/rubrics.toml [why_minus]: the items cannot reach the cell's 2 points: the most an "
        "answer can score is 1"
    )
    assert report["failures"] == [sentence]
    assert "Rubrics of the written answers (source/<assignment>/rubrics.toml):" in out
    assert "Traceback" not in out + err
    good = root / "source" / minicourse.NAME / "rubrics.toml"
    good.write_text('[why_minus]\nitems = [{ points = 1, text = "descent subtracts" }, { points = 1, text = "why" }]\n')
    code, out, err, report = validate(root, minicourse.NAME, "--no-mutants")
    assert code == 0, out + err
    assert report is not None and report["rubrics"] == []
