"""``OnePassAutograde`` writes what nbgrader's two passes write: the same autograded notebooks and rows.

The engine grades every ``ps2_autograd`` fixture (correct, wrong, raising, mended, forged, late
and the instructor's own notebook) twice: once with nbgrader's own
``Autograde.convert_single_notebook`` (the sanitized notebook written to ``autograded/`` and read
back), once with the one-pass converter.  The autograded notebooks must be equal field for field,
but for what differs between any two gradings (the cells' run times, and the random ids nbformat
gives the cells a grader adds), and the gradebooks must hold the same scores and penalties.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbgrader.converters import Autograde

from grader import course
from grader.engine.bookkeeping import onepass
from grader.engine.doors import batch
from tests.fixtures.build import fixtures
from tests.fixtures.grading import place
from tests.graded import prepare

ASSIGNMENT = "ps2_autograd"


def _grade(base: Path) -> Path:
    root = prepare(base, ASSIGNMENT)
    # both runs alike, with a 5 s cell limit (the engine counts a cell's own time): the never-ending fixture's
    # loop then burns 5 s of CPU per run instead of the course's 30
    with (root / "nbgrader_config.py").open("a") as config:
        config.write("\nc.Execute.timeout = 5\n")
    place(root, ASSIGNMENT, fixtures(ASSIGNMENT))
    result = batch.run(root, ASSIGNMENT, jobs=4, out=io.StringIO())
    assert not result.failed, result.summary()
    return root


def _comparable(path: Path) -> tuple[Any, list[str | None]]:
    nb = json.loads(path.read_text())
    ids = []
    for cell in nb["cells"]:
        ids.append(cell.pop("id", None))
        cell.get("metadata", {}).pop("execution", None)
    return nb, ids


def _gradebook(root: Path) -> list[tuple[str, str, float, float]]:
    from nbgrader.api import Gradebook

    found = [(r.student, r.grade_id, r.score, 0.0) for r in course.cell_scores(root, ASSIGNMENT)]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for submission in gradebook.find_assignment(ASSIGNMENT).submissions:
            found.append((submission.student_id, "late penalty", float(submission.late_submission_penalty or 0), 0.0))
    return sorted(found)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    one = _grade(tmp_path_factory.mktemp("one-pass"))
    patch = pytest.MonkeyPatch()
    patch.setattr(onepass.OnePassAutograde, "convert_single_notebook", Autograde.convert_single_notebook)
    try:
        two = _grade(tmp_path_factory.mktemp("two-pass"))
    finally:
        patch.undo()
    return one, two


def test_the_autograded_notebooks_are_those_of_nbgraders_two_passes(both: tuple[Path, Path]) -> None:
    one, two = both
    theirs = sorted(p.relative_to(two) for p in (two / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb"))
    ours = sorted(p.relative_to(one) for p in (one / "autograded").glob(f"*/{ASSIGNMENT}/*.ipynb"))
    assert ours == theirs
    assert len(ours) == len(fixtures(ASSIGNMENT)) + 2  # and the instructor's and the late submission
    mended = 0
    for relative in theirs:
        (mine, my_ids), (stock, stock_ids) = _comparable(one / relative), _comparable(two / relative)
        assert mine == stock, relative
        assert len(my_ids) == len(stock_ids), relative
        same = sum(a == b for a, b in zip(my_ids, stock_ids, strict=True))
        mended += same < len(my_ids)
        assert same >= len(my_ids) - 5, relative  # only the cells the grader put back get new ids
    assert mended  # the mended fixtures are among them: the comparison saw inserted cells


def test_the_gradebook_rows_are_the_same(both: tuple[Path, Path]) -> None:
    one, two = both
    assert _gradebook(one) == _gradebook(two)


def test_read_back_is_what_nbformat_reads_from_the_written_file() -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["orig_nbformat"] = 3
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1\ny = 2\n"),
        nbformat.v4.new_markdown_cell(["a list\n", "of lines"]),
    ]
    nb.cells[0].metadata["trusted"] = True
    nb.cells[0].metadata["z"] = {"b": (1, 2), "a": b"\x00bytes"}
    expected = nbformat.reads(nbformat.writes(nb), as_version=4)
    got = onepass.read_back(nb)
    assert got == expected
    assert list(got.cells[0].metadata["z"]) == ["a", "b"]  # sorted, as in the file
    assert isinstance(got.cells[0].metadata["z"], nbformat.NotebookNode)


@pytest.mark.filterwarnings("ignore")  # nbformat warns of each repair
def test_normalized_makes_nbformats_repairs_on_the_notebook_itself() -> None:
    """Duplicate and missing cell ids, repaired as ``nbformat.validator.normalize`` repairs them, without its copy."""
    from nbformat import validator

    def broken() -> Any:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a"), nbformat.v4.new_code_cell("b")])
        nb.cells[1]["id"] = nb.cells[0]["id"] = "same"
        nb.cells.append(nbformat.from_dict({"cell_type": "markdown", "metadata": {}, "source": "no id"}))
        return nb

    expected = validator.normalize(broken())[1]
    nb = broken()
    got = onepass._normalized(nb)
    assert got is nb  # no copy
    assert got.cells[0]["id"] == "same" and len({c.get("id") for c in got.cells} - {None}) == 3
    assert [sorted(c) for c in got.cells] == [sorted(c) for c in expected.cells]
