"""Truncating output never changes a verdict (issue 17): a flood of stdout cannot hide a test's stderr.

nbgrader scores a test cell 0 when it wrote to stderr, and its ``LimitOutput`` drops every stream
output past ``max_lines`` lines: nbgrader alone gives full points to a test whose student code prints
a few thousand lines and then writes to stderr.  ``grader.plugins.output_limit.KeepStderr`` (in the course's
autograde pipeline, so for stock ``nbgrader autograde`` and the engine alike) cuts the stdout of such
a test cell first, so the stderr output is kept.
"""

from __future__ import annotations

import copy
import io
import itertools
from pathlib import Path

import nbformat
import pytest
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import IgnorePattern, LimitOutput

from grader import course
from grader.engine.doors import batch
from grader.plugins import output_limit
from grader.plugins.kernel_logging import WARNING_LINE
from grader.plugins.output_limit import TRUNCATED_LINE, keep_stderr
from tests.fixtures.grading import results
from tests.fixtures.spec import Fixture, build, instructor_solutions

A = "ps2_autograd"
FLOODED = "make_trainable"  # the answer whose function floods; test_make_trainable is its one test
TEST = "test_make_trainable"
FLOOD = "    import sys\n    for _line in range(5000):\n        print('step', _line)\n"
STDERR = "    print('something went wrong', file=sys.stderr)\n"
WARNING = "/x/y.py:3: UserWarning: converting a tensor that requires grad\n"


def _stream(name: str, lines: int, text: str = "line") -> NotebookNode:
    body = "".join(f"{text} {i}\n" for i in range(lines))
    return nbformat.v4.new_output("stream", name=name, text=body)


def _test_cell(outputs: list[NotebookNode]) -> NotebookNode:
    cell = nbformat.v4.new_code_cell("check()")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "points": 1, "grade_id": "t"}
    cell.outputs = copy.deepcopy(outputs)
    return cell


def _nbgrader_score(outputs: list[NotebookNode], max_lines: int, pattern: str) -> float | None:
    """What nbgrader's own IgnorePattern, LimitOutput and determine_grade make of a test cell's outputs."""
    cell = _test_cell(outputs)
    cell, _ = IgnorePattern(pattern=pattern, enabled=True).preprocess_cell(cell, {}, 0)
    cell, _ = LimitOutput(max_lines=max_lines).preprocess_cell(cell, {}, 0)
    return utils.determine_grade(cell)[0]


def _ignored(output: NotebookNode) -> bool:
    import re

    return output.get("name") == "stderr" and re.search(WARNING_LINE, output.get("text", "")) is not None


def test_the_hole_in_stock_nbgrader_and_that_keep_stderr_closes_it() -> None:
    outputs = [_stream("stdout", 5000), _stream("stderr", 1, "something went wrong")]
    assert _nbgrader_score(outputs, 1000, WARNING_LINE) == 1, "nbgrader's LimitOutput no longer hides this stderr"
    kept = keep_stderr(outputs, 1000, _ignored)
    assert _nbgrader_score(kept, 1000, WARNING_LINE) == 0
    assert kept[0].text.endswith(TRUNCATED_LINE) and kept[1] == outputs[1]


@pytest.mark.parametrize("max_lines", [1, 2, 3, 10, 1000])
def test_whether_a_test_wrote_to_stderr_is_decided_before_anything_is_dropped(max_lines: int) -> None:
    """Every mix of stdout floods, warnings and stderr: nbgrader's verdict on the cut outputs is the
    verdict on the whole output (stderr that counts: 0 points), whatever the limit drops."""
    pieces = {
        "out-short": _stream("stdout", 2),
        "out-flood": _stream("stdout", 3 * max_lines + 5),
        "err-short": _stream("stderr", 1, "oops"),
        "err-flood": _stream("stderr", 2 * max_lines + 3, "oops"),
        "warning": nbformat.v4.new_output("stream", name="stderr", text=WARNING),
        "result": nbformat.v4.new_output("display_data", data={"text/plain": "x"}),
    }
    for combination in itertools.product(pieces, repeat=3):
        outputs = [pieces[name] for name in combination]
        wrote = any(o.get("name") == "stderr" and not _ignored(o) for o in outputs)
        kept = keep_stderr(outputs, max_lines, _ignored)
        assert _nbgrader_score(kept, max_lines, WARNING_LINE) == (0 if wrote else 1), (combination, max_lines)
        if _nbgrader_score(outputs, max_lines, WARNING_LINE) == (0 if wrote else 1):
            assert kept == outputs, f"{combination}: outputs changed where the limit hid nothing"


def _flooding(student: str, then_stderr: bool) -> NotebookNode:
    solution = instructor_solutions(A)[FLOODED]
    signature, body = solution.split('"""\n', 1)  # after the docstring
    flooded = f'{signature}"""\n{FLOOD}{STDERR if then_stderr else ""}{body}'
    return build(A, Fixture(student, "flood", solutions={FLOODED: flooded}))


def test_a_flood_then_stderr_in_a_test_scores_0_under_the_engine_and_stock_nbgrader(tmp_path: Path) -> None:
    students = {"floods-then-stderr": True, "floods-only": False}
    graded = {}
    for name in ("engine", "stock"):
        root = course.copy_course(tmp_path / name)
        course.generate_releases(root, [A])
        for student, then_stderr in students.items():
            folder = root / "submitted" / student / A
            folder.mkdir(parents=True)
            nbformat.write(_flooding(student, then_stderr), folder / f"{A}.ipynb")
        if name == "engine":
            assert batch.run(root, A, out=io.StringIO()).failed == ()
        else:
            course.autograde(root, A)
        graded[name] = results(root, A)
    for name, cells in graded.items():
        flooded = cells["floods-then-stderr"][TEST]
        assert flooded.score == 0, (name, flooded)
        assert [e.split("\n")[0] for e in flooded.errors] == ["something went wrong"], (name, flooded)
    engine, stock = graded["engine"], graded["stock"]
    for student in students:  # every other test, and the flood without stderr: full marks, as stock
        for grade_id, cell in engine[student].items():
            if (student, grade_id) == ("floods-then-stderr", TEST):
                # Scored 0 with the stderr line on both sides (above). The rest of the text may differ:
                # ipykernel flushes stdout and stderr on their own timers, so under stock nbgrader the
                # stderr output can arrive amid the flood, and where it lands decides whether
                # LimitOutput ends it with its truncation mark (CI saw both).
                assert cell.score == stock[student][grade_id].score
                continue
            assert (cell.score, cell.errors) == (stock[student][grade_id].score, stock[student][grade_id].errors)
            assert cell.score == cell.max_score, (student, grade_id, cell.message[:300])


def test_the_engine_keeps_the_defence_where_a_course_left_it_out(tmp_path: Path) -> None:
    """A course whose own autograde list lacks ``KeepStderr`` still gets it, right after the execution."""
    from grader.engine.bookkeeping import autograde
    from grader.engine.kernels.kernel import Zygote

    root = course.copy_course(tmp_path / "course")
    config_file = root / "nbgrader_config.py"
    config_file.write_text(config_file.read_text().replace('    "grader.plugins.output_limit.KeepStderr",\n', ""))
    assert "KeepStderr" not in config_file.read_text().split("c.Autograde.autograde_preprocessors")[1].split("]")[0]
    steps = list(autograde.load_config(root, None, Zygote(root)).Autograde.autograde_preprocessors)
    assert steps[steps.index(autograde.FORK_EXECUTE) + 1] == output_limit.STEP
    assert steps.count(output_limit.STEP) == 1
