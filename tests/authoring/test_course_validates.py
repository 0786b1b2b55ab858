"""The course's own assignments pass ``grader validate``: the gate an instructor's CI would use.

For each assignment under ``source/``: the instructor's solution keeps full marks, every fixture in
``source/<assignment>/fixtures/`` scores as it declares, no mutant of the answer cells survives that
changes what the tests can observe, no test cell credits a notebook that answers nothing, and no
message shows a hidden value. Run as an instructor runs it: the real command, on a copy of the course.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import course

from .conftest import validate


@pytest.mark.parametrize("assignment", course.assignments())
def test_the_assignment_passes_grader_validate(tmp_path: Path, assignment: str) -> None:
    root = course.copy_course(tmp_path / "course")
    code, out, err, report = validate(root, assignment)
    assert report is not None, err[-3000:]
    assert report["failures"] == [], out
    assert code == 0
    assert report["survivors"] == 0
    assert report["fixtures"] and all(f["ok"] for f in report["fixtures"])
    caught = sum(1 for m in report["mutants"] if m["status"] == "caught")
    assert caught >= len(report["mutants"]) // 2, "most mutants change what the tests observe"
