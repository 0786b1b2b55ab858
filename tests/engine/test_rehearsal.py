"""The zygote rehearses the course's source notebooks once; every kernel forked after it starts as pristine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from grader.engine.forking import rehearsal
from grader.engine.forking.process_state import State
from grader.engine.kernels.kernel import Zygote

from .conftest import fresh, stdout

CHANGES_EVERYTHING = """
import os, random, sys, warnings
import numpy, torch
import mistune  # a package the zygote had not imported
torch.manual_seed(123); numpy.random.seed(5); random.seed(9)
torch.set_default_dtype(torch.float64)
torch.set_printoptions(precision=2)
torch.set_default_device("meta")
numpy.seterr(all="raise")
warnings.simplefilter("error")
os.environ["LEFT_BEHIND"] = "1"
sys.path.append("/nowhere")
sys.setrecursionlimit(123456)
with open("written.txt", "w") as f:
    f.write("a file in the rehearsal's folder")
os.chdir("/")
torch.allclose = lambda *args, **kwargs: True
torch.expected_answer = 42
HIDDEN_ANSWER = 42
"""

LOOKS_AROUND = """
import os, sys, warnings
import numpy, torch
print(torch.get_default_dtype(), torch.get_default_device(), torch._tensor_str.PRINT_OPTS.precision)
print(torch.allclose(torch.ones(1), torch.zeros(1)), 'HIDDEN_ANSWER' in globals(), 'mistune' in sys.modules)
errors = any(f[0] == 'error' and f[2] is Warning for f in warnings.filters)
print(numpy.geterr()['divide'], errors, '/nowhere' in sys.path)
print(sys.getrecursionlimit() == 123456, hasattr(torch, 'expected_answer'))
"""

BACKWARD_AND_DEVICE_CHECK = """
import torch
from grader import checks
x = torch.ones(3, requires_grad=True)
(x * x).sum().backward()
def scale(t):
    return t * 3
checks.assert_preserves_device(scale, lambda dtype, device: (torch.ones(5, 7, dtype=dtype, device=device),))
"""


def _course(root: Path, **notebooks: list[str]) -> Path:
    for name, cells in notebooks.items():
        folder = root / "source" / name
        folder.mkdir(parents=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        nbformat.write(nb, folder / f"{name}.ipynb")
    return root


@contextmanager
def _started(root: Path, rehearse: tuple[str, ...] = ()) -> Iterator[tuple[Zygote, str]]:
    """A zygote of the course at ``root``, started, and what it logged while starting."""
    with Zygote(root, rehearse=rehearse) as zygote:
        with open(zygote.log_path) as log:
            yield zygote, log.read()


def test_what_a_source_notebook_changes_is_put_back_before_any_kernel_is_forked(tmp_path: Path) -> None:
    root = _course(tmp_path / "course", hw=[CHANGES_EVERYTHING])
    with _started(root) as (zygote, log):
        with fresh(zygote) as kernel:
            seen = stdout(kernel.run(LOOKS_AROUND))
        left = os.listdir(os.path.dirname(zygote.socket_path))
    assert "rehearsed source notebooks: hw " in log
    put_back = "put back: torch.allclose was replaced, torch.expected_answer was added"
    assert f"1 cell(s), 0 failed; forgotten: mistune; {put_back}" in log
    assert seen == "torch.float32 cpu 4\nFalse False False\nwarn False False\nFalse False\n"
    assert "written.txt" not in left


def test_kernels_forked_after_a_rehearsed_backward_pass_and_device_check_run_both_with_its_caches(
    tmp_path: Path, zygote: Zygote
) -> None:
    count = "from torch._subclasses.fake_tensor import FakeTensorMode\nprint(len(FakeTensorMode.cache))"
    with fresh(zygote) as kernel:  # a zygote without a course rehearses nothing
        unrehearsed = int(stdout(kernel.run(count)))
    root = _course(tmp_path / "course", hw=[BACKWARD_AND_DEVICE_CHECK])
    with _started(root) as (rehearsed, log):
        with fresh(rehearsed) as kernel:
            cached = int(stdout(kernel.run(count)))
            run = kernel.run(BACKWARD_AND_DEVICE_CHECK + "print(x.grad.tolist())")
    assert "1 cell(s), 0 failed" in log
    assert cached > unrehearsed  # the device check's fake-tensor operations are in every fork's cache
    assert run.error is None and stdout(run) == "[2.0, 2.0, 2.0]\n"


def test_a_batch_rehearses_only_the_assignment_it_grades(tmp_path: Path) -> None:
    root = _course(tmp_path / "course", hw=["x = 1"], other=["y = 2", "z = 3"])
    with _started(root, rehearse=("other",)) as (_, log):
        assert "rehearsed source notebooks: other " in log and "hw" not in log
        assert "2 cell(s), 0 failed" in log
    with _started(root) as (_, log):
        assert "rehearsed source notebooks: hw " in log and ", other " in log


def test_a_rehearsal_after_which_forks_fail_restarts_the_zygote_without_it(tmp_path: Path) -> None:
    breaks_forks = "import os\nos.register_at_fork(after_in_child=lambda exit=os._exit: exit(3))"
    root = _course(tmp_path / "course", hw=[breaks_forks])
    with _started(root) as (zygote, log):
        with fresh(zygote) as kernel:
            run = kernel.run("print(6 * 7)")
    assert "restarting without the rehearsal: a fork could no longer run a backward pass and a device check" in log
    assert "not rehearsed: an earlier rehearsal could not be undone (a fork could no longer" in log
    assert stdout(run) == "42\n"


def test_a_package_that_cannot_be_imported_twice_restarts_the_zygote_without_the_rehearsal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rehearsal forgets the packages a notebook imported, so that each kernel imports its own; one
    # that registers something with torch (a pytree node, an operator) refuses a second import.
    packages = tmp_path / "packages"
    packages.mkdir()
    (packages / "registers_once.py").write_text(
        "import fractions\n"
        "import torch.utils._pytree as pytree\n"
        "pytree.register_pytree_node(\n"  # a second registration raises ValueError
        "    fractions.Fraction, lambda f: ([], (f.numerator, f.denominator)), lambda _, c: fractions.Fraction(*c)\n"
        ")\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(packages))  # the zygote's (a kernel's sandbox has a /tmp of its own)
    root = _course(tmp_path / "course", hw=["import registers_once"])
    with _started(root) as (zygote, log):
        with fresh(zygote) as kernel:
            run = kernel.run("import torch.utils._pytree as pytree\nprint(pytree.tree_leaves([1, 2]))")
    assert "rehearsed source notebooks: hw " in log and "; forgotten: registers_once" in log
    assert "restarting without the rehearsal: a fork could no longer run a backward pass and a device check, " in log
    assert "not rehearsed: an earlier rehearsal could not be undone" in log
    assert stdout(run) == "[1, 2]\n", run.error


def test_a_package_a_notebook_imported_is_forgotten_and_imported_again_by_each_kernel(tmp_path: Path) -> None:
    root = _course(tmp_path / "course", hw=["import mistune\nmistune.SEEN_BY_THE_REHEARSAL = True"])
    with _started(root) as (zygote, log):
        with fresh(zygote) as kernel:
            run = kernel.run("import mistune\nprint(hasattr(mistune, 'SEEN_BY_THE_REHEARSAL'))")
    assert "1 cell(s), 0 failed; forgotten: mistune" in log and "restarting" not in log
    assert stdout(run) == "False\n"


def test_a_notebook_that_never_ends_is_cut_short_and_the_next_one_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rehearsal, "NOTEBOOK_SECONDS", 0.5)
    State.take()  # imports torch and NumPy, not part of what is timed
    started = time.monotonic()
    done, differ = rehearsal.rehearse(
        [("stuck", ["x = 1", "while True:\n    pass", "never = 1"]), ("next", ["%matplotlib inline", "y = 2"])]
    )
    assert time.monotonic() - started < 10 and differ == []
    assert [name for name, _ in done.notebooks] == ["stuck", "next"]
    assert (done.cells, done.failed) == (4, 2)  # the loop cut short, the magic skipped; "never" not reached


@pytest.mark.parametrize("fake_cuda_first", [False, True])
def test_the_zygote_runs_its_first_backward_pass_only_where_forks_can_still_run_theirs(fake_cuda_first: bool) -> None:
    # A backward pass after torch's first fake CUDA tensor starts autograd's device threads, and every
    # fork of such a process refuses autograd: the probe must see it and say so.
    code = (
        "import warnings, torch\n"
        "from grader import checks\n"
        "if FIRST:\n"
        "    with warnings.catch_warnings():\n"
        "        warnings.simplefilter('ignore')\n"
        "        checks.assert_preserves_device(lambda x: x * 2, lambda d, v: (torch.ones(2, dtype=d, device=v),))\n"
        "from grader.engine.forking import rehearsal\n"
        "print(repr(rehearsal.autograd_first()))\n"
    ).replace("FIRST", str(fake_cuda_first))
    env = {**os.environ, "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "OMP_NUM_THREADS": "1"}
    env.pop(rehearsal.RESTART, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    said = out.stdout.strip().splitlines()[-1]
    refused = "a fork of a process that ran a backward pass cannot run one here (autograd's device threads)"
    assert said == (repr(refused) if fake_cuda_first else "''")
