"""A grading's kernel is forked as the grading starts (``early``), and never outlives the grading."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from grader import course
from grader.engine.bookkeeping.autograde import Status
from grader.engine.engine import Engine
from grader.engine.kernels import early, forked
from grader.engine.kernels import kernel as kernels

from .processes import gone

A = "ps2_autograd"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / A


def _course(tmp_path: Path) -> Path:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    return root


def _recording_sandboxes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The private directories made for this test's kernels (other xdist workers make their own in the
    same temporary directory, so the test looks only at these)."""
    made: list[Path] = []
    original = kernels.sandbox

    def sandbox() -> tuple[Path, Path, Path]:
        paths = original()
        made.append(paths[0])
        return paths

    monkeypatch.setattr(kernels, "sandbox", sandbox)
    return made


def _recording_spawns(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, forked.Kernel]]:
    spawned: list[tuple[str, forked.Kernel]] = []
    original = kernels.Zygote.spawn

    def spawn(self: kernels.Zygote, *args: object, **kwargs: object) -> forked.Kernel:
        kernel = original(self, *args, **kwargs)  # type: ignore[arg-type]
        spawned.append((threading.current_thread().name, kernel))
        return kernel

    monkeypatch.setattr(kernels.Zygote, "spawn", spawn)
    return spawned


def test_the_kernel_forked_early_is_the_one_that_runs_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _course(tmp_path)
    course.place_submission(root, "correct", A, FIXTURES / "correct.ipynb")
    with Engine(root) as engine:
        spawned = _recording_spawns(monkeypatch)
        sandboxes = _recording_sandboxes(monkeypatch)
        outcome = engine.grade(A, "correct")
    assert outcome.status is Status.COMPLETED, outcome.log[-2000:]
    assert [name.startswith("grader-fork") for name, _ in spawned] == [True]  # one kernel, from the fork thread
    assert outcome.grades and sum(c.score or 0 for c in outcome.grades[0].cells) > 0  # and it ran the cells
    assert len(sandboxes) == 1 and gone(spawned[0][1].pid)
    assert not sandboxes[0].exists(), "the kernel's directory was left behind"


def test_a_notebook_refused_before_execution_leaves_no_kernel_or_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _course(tmp_path)
    folder = root / "submitted" / "garbled" / A
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text('{"cells": [')  # nbgrader cannot read it: its sanitize pass fails
    with Engine(root) as engine:
        spawned = _recording_spawns(monkeypatch)
        sandboxes = _recording_sandboxes(monkeypatch)
        outcome = engine.grade(A, "garbled")
    assert outcome.status is Status.INCOMPLETE
    assert len(spawned) == 1 and len(sandboxes) == 1  # forked early, never used
    assert gone(spawned[0][1].pid), "the unused kernel outlived its grading"
    assert not sandboxes[0].exists(), "the unused kernel's directory was left behind"


def test_a_step_with_other_settings_gets_a_kernel_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _course(tmp_path)
    with Engine(root) as engine:
        settings = engine.config.ForkExecute
        spawned = _recording_spawns(monkeypatch)
        with early.forked_early(engine.config):
            forked = early.take(str(settings.zygote_socket), int(settings.memory_limit) + 4096, 0.0)
            try:
                assert len(spawned) == 2 and forked.kernel is spawned[1][1]
                assert gone(spawned[0][1].pid)  # the early one, forked for other limits, was stopped
                assert forked.kernel.execute("print(6 * 7)", 30, 4).outputs[0]["text"] == "42\n"
            finally:
                forked.close()
