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
2. ``rehearse``: the notebooks, each followed by ``State.restore``: what a notebook can change and a
   kernel would see is put back (torch's, NumPy's and ``random``'s generators and settings, the
   warnings filters, the environment, ``sys.path``, the working directory) and the packages it
   imported that the zygote had not are forgotten, so each kernel imports them itself, in its own
   environment, as a fresh kernel would.  The caller's guard then puts back, and names, whatever
   the notebooks changed in the namespaces the guard protects (``remove_added``: and names added).
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
import random
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

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


@dataclass
class State:
    """What a notebook can change in the process and a kernel forked later would see, to put back."""

    settings: dict[str, Any]
    environ: dict[str, str]
    path: list[str]
    cwd: str
    filters: list[Any]
    modules: frozenset[str]

    @classmethod
    def take(cls) -> State:
        return cls(
            settings={name: get() for name, (get, _) in _settings().items()},
            environ=dict(os.environ),
            path=list(sys.path),
            cwd=os.getcwd(),
            filters=list(warnings.filters),
            modules=frozenset(sys.modules),
        )

    def restore(self) -> tuple[list[str], set[str]]:
        """Put everything back: what still differs after that (nothing, unless a setter failed), and the
        packages forgotten."""
        os.chdir(self.cwd)
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.path[:] = self.path
        warnings.filters[:] = self.filters  # type: ignore[index]
        warnings._filters_mutated()  # type: ignore[attr-defined]
        for name, (get, put) in _settings().items():
            try:
                if not _same(get(), self.settings[name]):  # only what changed: some setters do more than set
                    put(self.settings[name])
            except Exception:  # reported below, as a value that differs
                continue
        forgotten = self._forget_new_packages()
        now = State.take()
        differ = [name for name, value in self.settings.items() if not _same(now.settings[name], value)]
        differ += [name for name in ("environ", "path", "cwd") if getattr(now, name) != getattr(self, name)]
        return differ, forgotten

    def _forget_new_packages(self) -> set[str]:
        """Forget the modules of packages the zygote had not imported (torch's own new parts stay); their names."""
        had = {name.partition(".")[0] for name in self.modules}
        stdlib = sys.stdlib_module_names
        forgotten = set()
        for name in [m for m in sys.modules if m not in self.modules]:
            top = name.partition(".")[0]
            if top not in had and top not in stdlib:
                del sys.modules[name]
                forgotten.add(top)
        return forgotten


def remove_added(modules: dict[str, Any], saved: dict[str, dict[str, Any]]) -> list[str]:
    """Names the notebooks added to the guard's modules (``saved``: their namespaces before), removed.

    The guard's check puts back what was replaced or deleted; a name a notebook added (``torch.helper
    = ...``) would be in every kernel's snapshot.  Submodules stay: importing one binds it in its
    package, as torch's lazily imported parts do."""
    import types

    found = []
    for name, module in modules.items():
        namespace, before = vars(module), saved.get(name, {})
        for key in [k for k, v in namespace.items() if k not in before and not isinstance(v, types.ModuleType)]:
            del namespace[key]
            found.append(f"{name}.{key} was added")
    return found


def _same(a: Any, b: Any) -> bool:
    try:
        import torch

        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return bool(torch.equal(a, b))
    except ImportError:
        pass
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        import numpy

        if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
            return bool(numpy.array_equal(a, b))
    except ImportError:
        pass
    return bool(a == b)


def _settings() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """Process-wide settings a notebook may change, each as (get, set)."""
    import numpy
    import torch
    from torch._tensor_str import PRINT_OPTS

    def print_options() -> dict[str, Any]:
        return dict(vars(PRINT_OPTS))

    def set_print_options(values: dict[str, Any]) -> None:
        vars(PRINT_OPTS).update(values)

    def default_device() -> Any:  # None unless a notebook called set_default_device (the getter says "cpu")
        context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
        return None if context is None else context.device

    def deterministic() -> tuple[bool, bool]:
        return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()

    def set_deterministic(value: tuple[bool, bool]) -> None:
        torch.use_deterministic_algorithms(value[0], warn_only=value[1])

    return {
        "torch default dtype": (torch.get_default_dtype, torch.set_default_dtype),
        "torch default device": (default_device, torch.set_default_device),
        "torch grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
        "torch anomaly detection": (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        "torch deterministic algorithms": (deterministic, set_deterministic),
        "torch float32 matmul precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "torch threads": (torch.get_num_threads, torch.set_num_threads),
        "torch print options": (print_options, set_print_options),
        "torch generator": (torch.get_rng_state, torch.set_rng_state),
        "numpy generator": (numpy.random.get_state, numpy.random.set_state),
        "numpy errors": (numpy.geterr, lambda v: numpy.seterr(**v)),
        "numpy print options": (numpy.get_printoptions, lambda v: numpy.set_printoptions(**v)),
        "random generator": (random.getstate, random.setstate),
        "recursion limit": (sys.getrecursionlimit, sys.setrecursionlimit),
    }


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

        import torch

        import grader.checks as checks

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in forgotten:
                importlib.import_module(name)
        _backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checks.assert_preserves_device(
                lambda x: x * 2, lambda dtype, device: (torch.ones(2, dtype=dtype, device=device),)
            )
        return True

    return _in_fork(kernel_work)
