"""``grader check`` on a student's own copy: the visible tests run on the student's values, with no secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from grader import variants
from tests.fixtures.spec import SUBMISSIONS

GRADER = str(Path(sys.executable).with_name("grader"))
PS2 = "ps2_autograd"


def test_the_visible_tests_use_the_students_own_values(tmp_path: Path) -> None:
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    correct = nbformat.read(SUBMISSIONS / PS2 / "correct.ipynb", as_version=4)  # type: ignore[no-untyped-call]
    cells = variants.find_cells(correct, PS2)
    student = next(
        f"chk-{n}" for n in range(100) if variants.student_values(key, PS2, f"chk-{n}", cells)["LINEAR_COEF"] != 2.0
    )
    coef = variants.student_values(key, PS2, student, cells)["LINEAR_COEF"]
    mine = variants.personalise(correct, key, PS2, student)
    lesson = nbformat.from_dict(mine)
    for cell in lesson.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "cubic_slope":
            cell.source = "def cubic_slope(x0):\n    return 14.0\n"  # the lesson's visible answer
    env = {k: v for k, v in os.environ.items() if k != "GRADER_VARIANT_SECRET"}  # a student's machine has none
    results = {}
    for name, nb in (("mine", mine), ("lesson", lesson)):
        path = tmp_path / name / f"{PS2}.ipynb"
        path.parent.mkdir()
        nbformat.write(nb, path)  # type: ignore[no-untyped-call]
        results[name] = subprocess.run(
            [GRADER, "check", str(path)], env=env, capture_output=True, text=True, timeout=300
        )
    assert results["mine"].returncode == 0, results["mine"].stdout + results["mine"].stderr
    assert "PASS test_cubic_slope (3 points)" in results["mine"].stdout
    assert results["lesson"].returncode == 1
    assert "FAIL test_cubic_slope (3 points)" in results["lesson"].stdout
    assert f"dy/dx of x^3 + {coef}x at x = 2 is {12.0 + coef}" in results["lesson"].stdout
