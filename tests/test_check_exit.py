"""``grader check``'s last words: points counted in English, and nothing printed once the command has exited.

The kernel ``grader check`` starts must be shut down, and waited for, before the command returns: a kernel
left running holds the terminal and, a moment after the prompt has come back, prints
``[IPKernelApp] WARNING | Parent appears to have exited, shutting down.``
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from grader.student import check

GRADER = str(Path(sys.executable).parent / "grader")
CORRECT = Path(__file__).resolve().parent / "fixtures" / "submissions" / "ps1_tensors" / "correct.ipynb"


def test_points_are_counted_in_english() -> None:
    results = [
        check.CheckResult("test_one", 1, True, ""),
        check.CheckResult("test_two", 2, False, "AssertionError: no"),
        check.CheckResult("test_half", 0.5, True, ""),
        check.CheckResult("test_none", 0, True, ""),
    ]
    lines = check.report(results).splitlines()
    assert lines[0] == "  PASS test_one (1 point)"
    assert lines[1] == "  FAIL test_two (2 points)"
    assert lines[2] == "      AssertionError: no"
    assert lines[3] == "  PASS test_half (0.5 points)"
    assert lines[4] == "  PASS test_none (0 points)"


def _holders(paths: set[Path]) -> list[int]:
    """The processes that hold one of ``paths`` open (they can still write to it)."""
    held = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            targets = {os.readlink(fd) for fd in (proc / "fd").iterdir()}
        except OSError:  # gone, or not ours to read
            continue
        if targets & {str(p) for p in paths}:
            held.append(int(proc.name))
    return held


def test_nothing_is_printed_after_the_command_exits(tmp_path: Path) -> None:
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.run([GRADER, "check", str(CORRECT)], stdout=stdout, stderr=stderr, timeout=300)
    at_exit = out.read_text(), err.read_text()
    left = _holders({out, err})  # a kernel still running holds the command's stdout and stderr
    deadline = time.monotonic() + 30
    while _holders({out, err}) and time.monotonic() < deadline:  # let any such kernel say what it says
        time.sleep(0.2)
    assert proc.returncode == 0, at_exit
    assert "1 point)" in at_exit[0] and "16/16 visible test cells pass" in at_exit[0]
    assert (out.read_text(), err.read_text()) == at_exit, "printed after grader check had exited"
    assert not left, f"processes {left} outlived grader check, holding its output"
    assert "WARNING" not in at_exit[1], at_exit[1]
