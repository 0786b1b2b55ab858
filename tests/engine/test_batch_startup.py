"""``grader autograde`` from cold: the zygote's start-up (torch, the checks' warm-up) runs while the
command imports nbgrader, and a zygote launched for a batch that then cannot start is not left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader import cli, course
from grader.engine.kernels import kernel
from tests.engine.processes import gone
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"

LAUNCH_FIRST = """
import json, sys
from pathlib import Path
from grader.engine.doors import batch
from grader.engine.kernels import kernel

def launch(self):
    print(json.dumps([m for m in ("nbgrader", "nbconvert", "sqlalchemy", "torch") if m in sys.modules]))
    raise SystemExit(0)

kernel.Zygote.launch = launch
batch.run(Path(sys.argv[1]), sys.argv[2])
raise SystemExit("the batch did not launch its zygote")
"""


def test_the_zygote_is_launched_before_nbgrader_is_imported(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    course.place_submission(root, "dana", A, SUBMISSIONS / A / "correct.ipynb")
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCH_FIRST, str(root), A], capture_output=True, text=True, timeout=120, check=False
    )
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "[]", "")


def test_a_batch_that_cannot_start_closes_the_zygote_it_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = course.copy_course(tmp_path / "course")  # not released: the gradebook does not know the assignment
    course.place_submission(root, "dana", A, SUBMISSIONS / A / "correct.ipynb")
    launched: list[kernel.Zygote] = []
    launch = kernel.Zygote.launch

    def recorded(self: kernel.Zygote) -> None:
        launch(self)
        launched.append(self)

    monkeypatch.setattr(kernel.Zygote, "launch", recorded)
    assert cli.main(["autograde", A, "--course", str(root)]) == 2
    assert "run `grader release ps2_autograd`" in capsys.readouterr().err
    [zygote] = launched
    assert zygote._proc is None and not Path(zygote.socket_path).parent.exists()
    assert kernel._running.get(zygote.socket_path) is None


def test_a_closed_zygotes_process_is_gone(tmp_path: Path) -> None:
    """What the test above relies on: ``close`` kills a zygote that was launched and never waited for."""
    zygote = kernel.Zygote(tmp_path)
    zygote.launch()
    assert zygote._proc is not None
    pid = zygote._proc.pid
    zygote.close()
    assert gone(pid)
