"""The zygote rehearses the course once, so that no kernel pays what a notebook costs the first time.

Every kernel is a fork of the zygote, and every kernel used to pay again what its notebook made torch
do for the first time in a process: the dispatch cache of the fake CUDA tensors the device checks run
on (keyed by each operation's shapes and dtypes), the meta functions and decompositions looked up on
the way, the parts of torch imported on first use.  The warm engine's CPU per submission, kernels
included, fell from 219-254 to 177-223 ms on ps1 and from 273-274 to 211-221 ms on ps3
(``benchmarks/ab_commits.py 91bf56d 20c3811 -n 60 --assignment A``, two interleaved runs each).

So, while it warms up, the zygote runs each of the course's source notebooks (the instructor's
solutions and tests: ``source/*/*.ipynb``, a batch's own assignment's only; the cells
``skip-execution`` does not exclude, as the engine runs them) once, in a namespace of its own,
never in the shell kernels inherit, with its output discarded and a time limit.  A cell that fails
is skipped, as is a cell that is not plain Python (a magic); the rehearsal only warms, it grades
nothing.  In order:

1. ``autograd_first`` (before torch's first fake CUDA tensor): one backward pass on the CPU.  A
   backward pass in a process whose autograd engine started threads for a device makes autograd
   refuse to run in every later fork of it, and the engine decides whether it needs such threads on
   its first backward pass, once.  Made with no device in use, that decision is "none", and the
   notebooks' backward passes can then be rehearsed.  A forked probe checks first that a fork of a
   process that ran a backward pass can still run one; where it cannot (where torch sees a GPU, the
   engine starts device threads on its first pass), nothing is rehearsed.
2. ``rehearse``: the notebooks, each followed by ``State.restore`` (``process_state.py``): what a
   notebook can change and a kernel would see is put back (torch's, NumPy's and ``random``'s
   generators and settings, the warnings filters, the environment, ``sys.path``, the working
   directory) and the packages it imported that the zygote had not are forgotten, so each kernel
   imports them itself, in its own environment, as a fresh kernel would.  The caller's guard then
   puts back, and names, whatever the notebooks changed in the namespaces the guard protects
   (``process_state.remove_added``: and the names they added).
3. ``forks_work``: a fork still runs a backward pass and a device check, and imports the forgotten
   packages again (one that registers itself with torch refuses to).  If not, or if the state could
   not be put back, the zygote starts again from scratch without rehearsing (``RESTART``): a
   rehearsal never ships a changed zygote.

The source notebooks hold the hidden tests; the zygote already held their text (``shell.prime``
compiles them), never in reach of a kernel's names, and the rehearsal keeps no name either.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .process_state import State

# Set by a zygote that restarts itself after a rehearsal it could not undo (the reason): it then skips it.
RESTART = "GRADER_ZYGOTE_NO_REHEARSAL"
NOTEBOOK_SECONDS = 30.0  # a source notebook still running after this long is left where it got to
PROBE_SECONDS = 60.0


@dataclass(frozen=True)
class Rehearsed:
    """What a rehearsal did, for the zygote's log."""

    notebooks: tuple[tuple[str, float], ...]  # each notebook's assignment and the seconds it took
    cells: int
    failed: int  # cells that raised (or were not plain Python): skipped, as a kernel would go on
    forgotten: tuple[str, ...] = ()  # packages the notebooks imported that the zygote had not: forgotten
    skipped: str = ""  # why nothing was rehearsed, if so
    put_back: tuple[str, ...] = ()  # what the notebooks changed that the guard protects (the guard put it back)

    def line(self) -> str:
        if self.skipped:
            return f"not rehearsed: {self.skipped}"
        each = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.notebooks) or "none"
        forgotten = f"; forgotten: {', '.join(self.forgotten)}" if self.forgotten else ""
        put_back = f"; put back: {', '.join(self.put_back)}" if self.put_back else ""
        return f"rehearsed source notebooks: {each}; {self.cells} cell(s), {self.failed} failed{forgotten}{put_back}"


def source_notebooks(root: str, assignments: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """Each source notebook of ``assignments`` (all if none) and the code cells the engine would run of it."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, "source", "*", "*.ipynb"))):
        assignment = os.path.basename(os.path.dirname(path))
        if assignments and assignment not in assignments:
            continue
        cells = code_cells(path)
        found.append((assignment, [source for source, skipped in cells if not skipped and source.strip()]))
    return found


def code_cells(path: str) -> list[tuple[str, bool]]:
    """Each code cell's source and whether it is tagged ``skip-execution``; none if the file cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return []
    found = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        tags = (cell.get("metadata") or {}).get("tags") or []
        found.append(("".join(source) if isinstance(source, list) else str(source), "skip-execution" in tags))
    return found


# --- 1. the autograd engine -------------------------------------------------------------------------


def autograd_first() -> str:
    """Run the zygote's first backward pass on the CPU, if its forks can then still run theirs; else why not."""
    if os.environ.get(RESTART):
        return f"an earlier rehearsal could not be undone ({os.environ[RESTART]})"
    if not _in_fork(_backward_then_fork):
        return "a fork of a process that ran a backward pass cannot run one here (autograd's device threads)"
    _backward()
    return ""


def _backward() -> bool:
    import torch

    leaf = torch.ones(2, requires_grad=True)
    (leaf * 2).sum().backward()  # type: ignore[no-untyped-call]
    return leaf.grad is not None


def _backward_then_fork() -> bool:
    return _backward() and _in_fork(_backward)


def _in_fork(test: Callable[[], bool]) -> bool:
    """Whether ``test()`` returns True in a forked child (which exits without cleaning up)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                ok = bool(test())
        except BaseException:  # the answer is the exit status
            pass
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + PROBE_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return False


# --- 2. the notebooks ------------------------------------------------------------------------------


class _OutOfTime(BaseException):
    """A source notebook ran past ``NOTEBOOK_SECONDS``."""


def rehearse(notebooks: list[tuple[str, list[str]]]) -> tuple[Rehearsed, list[str]]:
    """Run each notebook's cells once; what could not be put back afterwards (empty: all of it)."""
    state = State.take()
    done: list[tuple[str, float]] = []
    cells = failed = 0
    differ: list[str] = []
    forgotten: set[str] = set()
    folder = tempfile.mkdtemp(prefix="grader-rehearsal-")
    try:
        with _quiet():
            for name, sources in notebooks:
                started = time.monotonic()
                os.chdir(folder)
                ran, raised = _run(sources)
                cells, failed = cells + ran, failed + raised
                done.append((name, time.monotonic() - started))
                differ, more = state.restore()
                forgotten |= more
                if differ:
                    break
    finally:
        os.chdir(state.cwd)
        shutil.rmtree(folder, ignore_errors=True)
    return Rehearsed(tuple(done), cells, failed, tuple(sorted(forgotten))), differ


def _run(sources: list[str]) -> tuple[int, int]:
    """(cells run, cells that raised) of one notebook, in a namespace dropped afterwards."""
    import builtins
    import gc

    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    ran = raised = 0
    previous = signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, NOTEBOOK_SECONDS, 1.0)  # and every second after, if one is swallowed
    try:
        try:
            for source in sources:
                ran += 1
                try:
                    with warnings.catch_warnings():
                        exec(compile(source, "<rehearsal>", "exec"), namespace)  # the instructor's own notebook
                except _OutOfTime:
                    raise
                except BaseException:  # a cell that fails (or is IPython syntax) is skipped, as a kernel goes on
                    raised += 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:  # the rest of this notebook is not rehearsed (also one that struck as the loop ended)
        raised += 1
    finally:
        signal.signal(signal.SIGALRM, previous)
        namespace.clear()
        gc.collect()
    return ran, raised


def _out_of_time(signum: int, frame: Any) -> None:
    raise _OutOfTime


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Nothing the notebooks print reaches the zygote's stdout (the engine reads "ready" there) or its log."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 1)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


# --- 3. the forks ----------------------------------------------------------------------------------


def forks_work(forgotten: tuple[str, ...] = ()) -> bool:
    """A fork of this process runs a backward pass and a device check, as every kernel may, and imports
    the packages the rehearsal forgot (one that registers itself with torch or NumPy may refuse to again)."""

    def kernel_work() -> bool:
        import importlib

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in forgotten:
                importlib.import_module(name)
        _backward()
        device_check()
        return True

    return _in_fork(kernel_work)


def device_check() -> None:
    """One device check on a two-element tensor, as a kernel's first would run it (the zygote warms up
    ``grader.checks``' fake CUDA tensors with it; ``forks_work`` checks that a fork still can)."""
    import torch

    import grader.checks as checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks.assert_preserves_device(
            lambda x: x * 2, lambda dtype, device: (torch.ones(2, dtype=dtype, device=device),)
        )
