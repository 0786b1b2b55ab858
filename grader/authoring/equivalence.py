"""Equivalent mutants: a surviving mutant that changes nothing the tests can see is not a hole.

The instructor's source notebook (hidden tests included) is run cell by cell in a plain Python
process, once as written and once per surviving mutant, each in a child forked from one warm parent
(torch imported once) with the same seeds. Every function and method the answer cells define is
wrapped (an ``autograd.Function``'s ``backward`` too); each call from outside them (a test's call)
records a fingerprint of what it returned and of its arguments afterwards (values to 5 significant
digits, shape, dtype, device, ``requires_grad``, leaf or not, ``.grad``, a module's ``state_dict``);
the record also holds the names each answer cell leaves behind and how each cell ended. A mutant
whose record is the same as the original's is *equivalent on the tests' inputs*; otherwise the
record's first difference says what changed.

This runs the instructor's own code (trusted), never a student's: no sandbox.

``python -m grader.authoring.equivalence`` reads the job as JSON on stdin and prints the verdicts
as JSON; ``compare`` is the caller's side.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT_S = 60.0
Record = list[list[Any]]
"""One run's events: ["call", cell, function, result, {argument: afterwards}], ["cell", cell, how it ended],
["name", cell, name, value]; each value a ``fingerprint``."""
_FILENAME = "<answer cell {}>"


@dataclass(frozen=True)
class Verdict:
    equivalent: bool
    difference: str
    """The first thing the mutant changed, in words ('' when equivalent)."""


@dataclass(frozen=True)
class Cell:
    kind: str
    """``answer``, ``test`` or ``other``."""
    grade_id: str
    source: str


def compare(
    cells: Sequence[Cell], mutants: Mapping[str, tuple[str, str]], timeout: float = TIMEOUT_S
) -> dict[str, Verdict]:
    """For each mutant id -> (answer cell grade id, mutated code): equivalent on the tests' inputs or not."""
    if not mutants:
        return {}
    job = {
        "cells": [{"kind": c.kind, "grade_id": c.grade_id, "source": c.source} for c in cells],
        "mutants": {k: list(v) for k, v in mutants.items()},
        "timeout": timeout,
    }
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-m", "grader.authoring.equivalence"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout * (len(mutants) + 2) + 60,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the equivalence run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    return {k: Verdict(bool(v["equivalent"]), str(v["difference"])) for k, v in answer.items()}


# --- the child's side: runs with torch imported ------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:.5g}"


def fingerprint(obj: Any, depth: int = 0) -> str:
    """What the tests could observe of ``obj``, as text; equal texts for values equal to 5 digits."""
    import torch

    if depth > 3:
        return type(obj).__qualname__
    if isinstance(obj, torch.Tensor):
        head = (
            f"T{tuple(obj.shape)}:{obj.dtype}:{obj.device.type}:rg={obj.requires_grad}:leaf={obj.is_leaf}"
            f":fn={type(obj.grad_fn).__name__ if obj.grad_fn is not None else None}"
        )
        if obj.device.type == "meta" or (type(obj) is not torch.Tensor and not isinstance(obj, torch.nn.Parameter)):
            return head
        with torch.no_grad():
            data = obj.detach()
            if data.is_complex():
                data = data.abs()
            data = data.to("cpu", torch.float64)
            if data.numel() <= 32:
                values = ",".join(_number(v) for v in data.flatten().tolist())
            else:
                flat = data.flatten()
                weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64) % 97
                values = ",".join(_number(float(v)) for v in (flat.sum(), flat.abs().sum(), (flat * weights).sum()))
        grad = ""
        if obj.is_leaf and obj.requires_grad and obj.grad is not None:
            grad = f":grad={fingerprint(obj.grad, depth + 1)}"
        return f"{head}:[{values}]{grad}"
    if isinstance(obj, torch.nn.Module):
        state = ",".join(f"{k}={fingerprint(v, depth + 1)}" for k, v in obj.state_dict().items())
        return f"{type(obj).__qualname__}(training={obj.training};{state})"
    if isinstance(obj, bool) or obj is None:
        return repr(obj)
    if isinstance(obj, int | float):
        return _number(float(obj))
    if isinstance(obj, str):
        return repr(obj[:200])
    if isinstance(obj, dict):
        items = list(obj.items())[:20]
        return "{" + ",".join(f"{k!r}:{fingerprint(v, depth + 1)}" for k, v in items) + "}"
    if isinstance(obj, list | tuple):
        return type(obj).__name__ + "(" + ",".join(fingerprint(v, depth + 1) for v in obj[:20]) + ")"
    if type(obj).__module__ == "numpy" and hasattr(obj, "shape"):
        return f"ndarray{obj.shape}:{obj.dtype}:" + fingerprint(torch.as_tensor(obj.copy()), depth + 1)
    if isinstance(obj, torch.dtype | torch.device | torch.Size):
        return str(obj)
    return type(obj).__qualname__


def _record(cells: list[dict[str, str]], replace: tuple[str, str] | None, out: Path) -> None:
    """Run the notebook's cells (``replace``: one answer cell's code swapped in) and write the record."""
    import random

    import torch

    record: list[list[Any]] = []
    where = [""]  # the cell running now
    depth = [0]  # only calls from outside the answer cells' own code are recorded: the tests' calls

    def watched(function: Any) -> Any:
        """``function``, recording each return: what it gave back and its arguments afterwards."""
        import functools
        import inspect

        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            raised: BaseException | None = None
            try:
                result = function(*args, **kwargs)
            except BaseException as error:
                raised, result = error, None
            finally:
                depth[0] -= 1
            if not depth[0]:
                try:
                    bound = signature.bind(*args, **kwargs).arguments
                except TypeError:
                    bound = {"args": args, "kwargs": kwargs}
                after = {k: fingerprint(v) for k, v in bound.items() if k not in ("self", "ctx", "cls")}
                gave = f"raised {type(raised).__name__}: {str(raised)[:200]}" if raised else fingerprint(result)
                record.append(["call", where[0], function.__qualname__, gave, after])
            if raised is not None:
                raise raised
            return result

        return wrapper

    def watch(namespace: dict[str, Any], names: set[str], filename: str) -> None:
        """Every function and method the answer cell defined, watched where the tests will find it."""
        for name in names:
            value = namespace[name]
            if callable(value) and getattr(getattr(value, "__code__", None), "co_filename", "") == filename:
                namespace[name] = watched(value)
            elif isinstance(value, type):
                for attr, member in list(vars(value).items()):
                    raw = member.__func__ if isinstance(member, staticmethod | classmethod) else member
                    if getattr(getattr(raw, "__code__", None), "co_filename", "") != filename:
                        continue
                    wrapped = watched(raw)
                    if isinstance(member, staticmethod):
                        setattr(value, attr, staticmethod(wrapped))
                    elif isinstance(member, classmethod):
                        setattr(value, attr, classmethod(wrapped))
                    else:
                        setattr(value, attr, wrapped)

    torch.manual_seed(0)
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for cell in cells:
        source = cell["source"]
        if cell["kind"] == "answer" and replace is not None and cell["grade_id"] == replace[0]:
            source = replace[1]
        filename = _FILENAME.format(cell["grade_id"]) if cell["kind"] == "answer" else f"<cell {cell['grade_id']}>"
        before = set(namespace)
        where[0] = cell["grade_id"]
        try:
            exec(compile(source, filename, "exec"), namespace)
            ended = "ok"
        except BaseException as error:
            ended = f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            torch.set_grad_enabled(True)
        record.append(["cell", cell["grade_id"], ended])
        if cell["kind"] == "answer":
            defined = set(namespace) - before - {"__builtins__"}
            record.extend(["name", cell["grade_id"], name, fingerprint(namespace[name])] for name in sorted(defined))
            watch(namespace, defined, filename)
    out.write_text(json.dumps(record))


class _Child:
    """One run of the notebook in a forked child, writing its record to a file."""

    out: Path

    def __init__(self, cells: list[dict[str, str]], replace: tuple[str, str] | None) -> None:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
            self.out = Path(handle.name)
        self.started = time.monotonic()
        self.pid = os.fork()
        if self.pid == 0:  # the child: quiet, then the notebook
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            try:
                _record(cells, replace, self.out)
                os._exit(0)
            except BaseException:
                os._exit(1)

    def poll(self, timeout: float) -> Record | str | None:
        """The record (or why there is none) once the child has ended; None while it runs."""
        done, status = os.waitpid(self.pid, os.WNOHANG)
        if not done:
            if time.monotonic() - self.started <= timeout:
                return None
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.out.unlink(missing_ok=True)
            return f"ran past {timeout:.0f} s"
        try:
            text = self.out.read_text()
            return list(json.loads(text)) if text else f"exited with status {os.waitstatus_to_exitcode(status)}"
        finally:
            self.out.unlink(missing_ok=True)


def _run_all(
    cells: list[dict[str, str]], runs: dict[str, tuple[str, str] | None], timeout: float, jobs: int
) -> dict[str, Record | str]:
    """Every run (id -> the answer cell swapped in, or None for the original), ``jobs`` children at a time."""
    waiting = list(runs.items())
    running: dict[str, _Child] = {}
    records: dict[str, Record | str] = {}
    while waiting or running:
        while waiting and len(running) < jobs:
            key, replace = waiting.pop(0)
            running[key] = _Child(cells, replace)
        for key, child in list(running.items()):
            record = child.poll(timeout)
            if record is not None:
                records[key] = record
                del running[key]
        time.sleep(0.005)
    return records


def _first_difference(original: Record | str, mutant: Record | str) -> str:
    """The first thing the mutant's run changed, in words ('' when nothing did)."""
    if isinstance(mutant, str):
        return f"the notebook {mutant}"
    if isinstance(original, str):
        return f"the original notebook itself {original}"
    calls: dict[str, int] = {}
    for a, b in zip(original, mutant, strict=False):
        if a[0] == "call":
            calls[a[2]] = calls.get(a[2], 0) + 1
        if a == b:
            continue
        if a[0] == "call" and b[0] == "call" and a[:3] == b[:3]:
            if str(b[3]).startswith("raised ") and a[3] != b[3]:
                return f"call {calls[a[2]]} of {a[2]}() from cell {a[1]} {b[3]}, where the original returned"
            changed = ["what it returned"] if a[3] != b[3] else []
            changed += [f"{arg} afterwards" for arg in a[4] if a[4].get(arg) != b[4].get(arg)]
            verb = "differs" if len(changed) == 1 else "differ"
            return (
                f"call {calls[a[2]]} of {a[2]}() from cell {a[1]}: {' and '.join(changed)} {verb} from the original's"
            )
        if a[0] == "cell" and b[0] == "cell" and a[1] == b[1]:
            return f"cell {a[1]} ended with {b[2]!r} instead of {a[2]!r}"
        if a[0] == "name" and b[0] == "name" and a[:3] == b[:3]:
            return f"{a[2]}, as cell {a[1]} leaves it, differs from the original's"
        return f"the run took another path: {_said(b)} where the original had {_said(a)}"
    if len(original) != len(mutant):
        return f"{len(mutant)} recorded events instead of {len(original)}"
    return ""


def _said(event: list[Any]) -> str:
    if event[0] == "call":
        return f"a call of {event[2]}() from cell {event[1]}"
    if event[0] == "cell":
        return f"the end of cell {event[1]}"
    return f"the name {event[2]} left by cell {event[1]}"


def _warm() -> None:
    """Import once, before the children fork, what every run needs: torch, NumPy, the checks library
    and the fake-tensor machinery its device checks load (seconds each time otherwise)."""
    import warnings

    import numpy  # noqa: F401
    import torch

    import grader.checks as checks

    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks.assert_preserves_device(
            lambda x: x * 2, lambda dtype, device: (torch.ones(2, dtype=dtype, device=device),)
        )


def main() -> int:
    job = json.loads(sys.stdin.read())
    _warm()
    cells, timeout = job["cells"], float(job["timeout"])
    runs: dict[str, tuple[str, str] | None] = {"": None}
    runs.update({mutant: (cell, code) for mutant, (cell, code) in job["mutants"].items()})
    records = _run_all(cells, runs, timeout, int(job.get("jobs") or os.cpu_count() or 1))
    verdicts = {}
    for mutant in job["mutants"]:
        difference = _first_difference(records[""], records[mutant])
        verdicts[mutant] = {"equivalent": not difference, "difference": difference}
    print(json.dumps(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
