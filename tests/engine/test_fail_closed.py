"""A kernel whose sandbox is incomplete runs no student code (issue 17): the sandbox fails closed.

The start-up probe tells which sandbox steps this machine provides; a later kernel that reports one
of them (or a required one) missing is killed before it is sent a cell, and the grading is an
infrastructure failure naming the step.  ``sandbox.FAIL_STEP_VARIABLE`` makes one step fail in one kernel.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.engine.bookkeeping.autograde import Status
from grader.engine.engine import Engine
from grader.engine.inside import sandbox
from grader.engine.kernels import early, forked
from grader.engine.kernels import kernel as kernels
from grader.errors import InfrastructureError
from grader.plugins.isolation import kernel_environment

A = "ps2_autograd"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "submissions"
MARKER = "student-code-ran"


def _applied_at_start(zygote: kernels.Zygote) -> list[str]:
    """The steps the start-up probe applied that may be missing on some machine: the fail-closed
    rule's interesting case (the required ones always are)."""
    off = {sandbox.step_of(m) for m in zygote.sandbox_off}
    optional = [s for s in sandbox.STEPS if s not in sandbox.required_steps()]
    attempted = [sandbox.NAMESPACES] if os.geteuid() == 0 else [sandbox.NETWORK]
    return [s for s in optional if s in attempted and s not in off]


def _forcible(zygote: kernels.Zygote) -> list[str]:
    return sorted(sandbox.required_steps()) + _applied_at_start(zygote)


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    root, workdir, home = kernels.sandbox()
    yield root, workdir, home
    shutil.rmtree(root, ignore_errors=True)


def test_the_rule_allows_only_what_the_probe_already_lacked() -> None:
    at_start = [f"{sandbox.NETWORK} (Operation not permitted)", f"{sandbox.HIDING} (needs root)"]
    same = [f"{sandbox.NETWORK} (Operation not permitted)", f"{sandbox.HIDING} (needs root)"]
    assert sandbox.refused(same, at_start, root=False) == []
    worse = [f"{sandbox.NAMESPACES} (Operation not permitted)"]
    assert sandbox.refused(worse, [], root=True) == worse
    assert sandbox.refused([f"{sandbox.LIMITS} (Invalid argument)"], [f"{sandbox.LIMITS} (x)"], root=False) == [
        f"{sandbox.LIMITS} (Invalid argument)"
    ], "a required step is refused even where the probe lacked it"
    user = f"{sandbox.OWN_USER} (Operation not permitted)"
    assert sandbox.refused([user], [user], root=True) == [user]
    assert sandbox.refused([user], [user], root=False) == []


def test_an_unforced_kernel_reports_no_more_than_the_probe(zygote: kernels.Zygote, private: tuple[Path, ...]) -> None:
    _, workdir, home = private
    kernel = zygote.spawn(str(workdir), str(home), kernel_environment(str(home)), 0)
    try:
        assert [sandbox.step_of(m) for m in kernel.sandbox_off] == [sandbox.step_of(m) for m in zygote.sandbox_off]
        run = kernel.execute(f"import os\nprint({sandbox.FAIL_STEP_VARIABLE!r} in os.environ)", 30, 4)
        assert run.outputs[0]["text"] == "False\n"
    finally:
        kernel.close()


def test_a_kernel_missing_a_step_is_stopped_before_it_gets_a_cell(
    zygote: kernels.Zygote, private: tuple[Path, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, workdir, home = private
    sent: list[str] = []
    monkeypatch.setattr(forked.Kernel, "execute", lambda self, code, *a, **k: sent.append(code))
    steps = _forcible(zygote)
    assert sandbox.LIMITS in steps
    for step in steps:
        env = {**kernel_environment(str(home)), sandbox.FAIL_STEP_VARIABLE: step}
        with pytest.raises(InfrastructureError, match="stopped before running any student code") as refused:
            zygote.spawn(str(workdir), str(home), env, 0)
        assert f"no {step} (forced to fail by {sandbox.FAIL_STEP_VARIABLE})" in str(refused.value), step
    assert sent == [], "a cell was sent to a kernel whose sandbox is incomplete"
    monkeypatch.undo()
    kernel = zygote.spawn(str(workdir), str(home), kernel_environment(str(home)), 0)  # the zygote lives on
    kernel.close()


def _submit(root: Path, student: str) -> None:
    """The correct submission, with a first code cell that leaves a file in the kernel's working directory."""
    nb = nbformat.read(FIXTURES / A / "correct.ipynb", as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first, nbformat.v4.new_code_cell(f"open({MARKER!r}, 'w').close()"))
    folder = root / "submitted" / student / A
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{A}.ipynb")


def test_a_grading_whose_kernel_lacks_a_step_runs_nothing_and_is_an_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    _submit(root, "forced")
    _submit(root, "control")
    # Each kernel's private directory where the test can look after the grading (the engine removes
    # only what ``sandbox()`` calls its root); bound into the kernel's namespace, so a file its code
    # writes in its working directory is seen here, whatever the sandbox hides.
    workdirs: list[Path] = []

    original = kernels.sandbox

    def kept_sandbox() -> tuple[Path, Path, Path]:
        removed, _, _ = original()
        kept = Path(f"{removed}-kept")
        (kept / "work").mkdir(parents=True)
        (kept / "home").mkdir()
        workdirs.append(kept / "work")
        return removed, kept / "work", kept / "home"

    with Engine(root) as engine:
        monkeypatch.setattr(kernels, "sandbox", kept_sandbox)  # after the start-up probe
        step = _forcible(engine.zygote)[-1]  # the probe had it: a namespace step where there is one
        monkeypatch.setattr(
            early,
            "kernel_environment",
            lambda home: {**kernel_environment(home), sandbox.FAIL_STEP_VARIABLE: step},
        )
        forced = engine.grade(A, "forced")
        monkeypatch.setattr(early, "kernel_environment", kernel_environment)
        control = engine.grade(A, "control")
    try:
        assert forced.status is Status.INFRASTRUCTURE, forced.log[-2000:]
        assert f"no {step} (forced to fail" in forced.reason and "before running any student code" in forced.reason
        assert not (workdirs[0] / MARKER).exists(), "student code ran in a kernel whose sandbox is incomplete"
        assert control.status is Status.COMPLETED, control.log[-2000:]
        assert (workdirs[1] / MARKER).exists(), "the marker is not seen even when student code runs: no proof"
    finally:
        for workdir in workdirs:
            shutil.rmtree(workdir.parent, ignore_errors=True)
