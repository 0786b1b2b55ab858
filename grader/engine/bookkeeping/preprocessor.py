"""``ForkExecute``: nbgrader's ``Execute`` step, run in a kernel forked from the warm zygote.

It takes ``Execute``'s place in ``Autograde.autograde_preprocessors`` and
keeps its configuration (``c.Execute.timeout``, ``interrupt_on_timeout``,
``error_on_timeout``, ``skip_cells_with_tag``).  Everything before it
(ClearOutput, OverwriteCells, ...) and after it (IgnorePattern, LimitOutput,
SaveAutoGrades, AssignLatePenalties) is nbgrader's own code, unchanged.

It records what nbclient records: each code cell's outputs and a sequential
``execution_count``; on a timeout, the kernel's own output of the interrupt
followed by ``error_on_timeout``.  Where nbclient gives up on the whole
notebook (a kernel that died, or would not stop after the interrupt), this
keeps every cell that did run and gives each cell that could not run an
error output saying why, so earned points are kept and the rest score 0.

Truncating output never changes a verdict: ``grader.plugins.output_limit.KeepStderr`` runs right
after this step (``autograde.load_config`` puts it there where the course's list lacks it).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Float, Integer, Unicode

from ...errors import InfrastructureError
from ...plugins import mending
from ..inside.guard import TAMPERING, tampering_output
from ..kernels import early
from ..kernels.forked import Kernel

# nbgrader's bookkeeping (gradebook reads and writes) runs under this lock, so
# grading threads never write the gradebook at the same time; only the kernel
# runs in parallel.  ``autograde.grade_one`` holds it; ``ForkExecute`` lets go
# of it while the kernel runs.
BOOKKEEPING = threading.RLock()
_holding = threading.local()


class _Report(threading.local):
    """What this thread's current grading tells ``grade_one`` besides the notebook."""

    def __init__(self) -> None:
        self.failures: list[str] = []  # infrastructure failures (zygote, fork): worth a retry
        self.stopped = ""  # the error name of the cell after which no cell ran, if any

    def reset(self) -> None:
        self.failures = []
        self.stopped = ""


report = _Report()


@contextmanager
def bookkeeping() -> Iterator[None]:
    with BOOKKEEPING:
        _holding.depth = getattr(_holding, "depth", 0) + 1
        try:
            yield
        finally:
            _holding.depth -= 1


@contextmanager
def _released() -> Iterator[None]:
    depth = getattr(_holding, "depth", 0)
    for _ in range(depth):
        BOOKKEEPING.release()
    try:
        yield
    finally:
        for _ in range(depth):
            BOOKKEEPING.acquire()


# Error names this step writes itself, for cells the kernel could not finish or never ran; their
# evalue is a complete sentence for the student.
NOT_RUN = "CellNotRun"
NOTEBOOK_TIMEOUT = "NotebookTimeout"
KERNEL_DIED = "DeadKernelError"
ENGINE_ERRORS = frozenset({NOT_RUN, NOTEBOOK_TIMEOUT, KERNEL_DIED, TAMPERING})


def _stamp(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")


def _error(ename: str, evalue: str) -> NotebookNode:
    return _notebook_node(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class ForkExecute(Execute):  # type: ignore[misc]
    zygote_socket = Unicode("", help="Socket of the zygote that forks the kernels (set by the grader).").tag(
        config=True
    )
    notebook_timeout = Float(0.0, help="Wall-clock limit for the whole notebook in seconds; 0 for none.").tag(
        config=True
    )
    memory_limit = Integer(0, help="Address-space limit of a kernel in bytes; 0 for none.").tag(config=True)
    resident_limit = Integer(0, help="Resident-memory limit of a kernel in bytes; 0 for none.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None) -> tuple[NotebookNode, Any]:
        try:
            return self._preprocess(nb, resources)
        except InfrastructureError as error:
            report.failures.append(str(error))
            raise

    def _preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        started = time.monotonic()
        with _released():
            forked = early.take(self.zygote_socket, self.memory_limit, self.notebook_timeout)
            try:
                forked.kernel.resident_limit = self.resident_limit
                self._run_cells(nb, forked.kernel, started)
            finally:
                forked.close()
        nb.metadata["language_info"] = forked.kernel.language_info
        return nb, resources

    def _remaining(self, started: float) -> float | None:
        if self.notebook_timeout <= 0:
            return None
        return self.notebook_timeout - (time.monotonic() - started)

    def _past_notebook_limit(self) -> str:
        report.stopped = NOTEBOOK_TIMEOUT
        return (
            f"Grading stopped after {self.notebook_timeout:g} s, the limit for a whole notebook; this cell did not run."
        )

    def _run_cells(self, nb: NotebookNode, kernel: Kernel, started: float) -> None:
        executed = 0
        stopped: str | None = None  # why no further cell can run
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            if self.skip_cells_with_tag in cell.metadata.get("tags", []):
                continue
            executed += 1
            cell.outputs = []
            if stopped is None:
                remaining = self._remaining(started)
                if remaining is not None and remaining <= 0:
                    stopped = self._past_notebook_limit()
            if stopped is not None:
                cell.outputs = [_error(NOT_RUN, stopped)]
                continue
            timeout = self._get_timeout(cell)  # the cell's own time (grader.engine.kernels.forked.WALL_CAP)
            remaining = self._remaining(started)  # the notebook's wall clock
            test = utils.is_grade(cell)
            run = kernel.execute(cell.source, timeout, float(self.iopub_timeout), test=test, wall_limit=remaining)
            limited_by_notebook = run.timed_out and run.wall_limited and remaining is not None
            cell.execution_count = executed
            if self.record_timing:
                cell.metadata["execution"] = {
                    "iopub.execute_input": _stamp(run.started),
                    "iopub.status.busy": _stamp(run.started),
                    "iopub.status.idle": _stamp(run.finished),
                    "shell.execute_reply": _stamp(run.finished),
                }
            cell.outputs = [_node(o) for o in run.outputs]
            if run.tampered:
                cell.outputs.insert(0, _node(tampering_output(list(run.tampered))))
            if limited_by_notebook:
                stopped = self._past_notebook_limit()
                cell.outputs.append(
                    _error(
                        NOTEBOOK_TIMEOUT,
                        f"Grading stopped in this cell: the whole notebook may run for {self.notebook_timeout:g} s.",
                    )
                )
            elif run.timed_out:
                self._record_timeout(cell)
                if run.died:
                    report.stopped = NOT_RUN
                    stopped = (
                        f"{_where(nb, index).capitalize()} ran past the {timeout:g} s limit and could not be "
                        "interrupted, so the Python process running your notebook was stopped; this cell did not run."
                    )
            elif run.died:
                why = (
                    f"it used more than {self.resident_limit / 1024**3:g} GiB of memory and was stopped"
                    if run.over_memory
                    else "it ran out of memory, crashed, or exited"
                )
                cell.outputs.append(
                    _error(KERNEL_DIED, f"The Python process running your notebook died in this cell ({why}).")
                )
                report.stopped = KERNEL_DIED
                where = _where(nb, index)
                stopped = f"The Python process running your notebook died in {where}; this cell did not run."

    def _record_timeout(self, cell: NotebookNode) -> None:
        """What nbgrader's ``Execute.on_cell_executed`` appends after nbclient's interrupt."""
        timeout_error = self.error_on_timeout or {
            "ename": "CellTimeoutError",
            "evalue": "",
            "traceback": ["CellTimeoutError: No reply from kernel before timeout"],
        }
        if not any(o.get("output_type") == "error" and o.get("ename") == timeout_error["ename"] for o in cell.outputs):
            error = _notebook_node(output_type="error")
            error.ename = timeout_error["ename"]
            error.evalue = timeout_error["evalue"]
            error.traceback = list(timeout_error["traceback"]) or [
                "ERROR: An error occurred while showtraceback was disabled"
            ]
            cell.outputs.append(error)


def _where(nb: NotebookNode, index: int) -> str:
    """A cell as the student can find it: its number in their notebook, and the graded cell it is or follows."""
    first = 1 if nb.cells and mending.NOTES_KEY in nb.cells[0].get("metadata", {}) else 0
    number = f"cell {index - first + 1}"
    grade_id = nb.cells[index].get("metadata", {}).get("nbgrader", {}).get("grade_id")
    if grade_id:
        return f"{number} (`{grade_id}`)"
    for earlier in reversed(nb.cells[first:index]):
        grade_id = earlier.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id:
            return f"{number} (after `{grade_id}`)"
    return number


def _notebook_node(*args: Any, **kwargs: Any) -> NotebookNode:
    return NotebookNode(*args, **kwargs)  # type: ignore[no-untyped-call]


def _node(value: Any) -> Any:
    if isinstance(value, dict):
        return _notebook_node({str(k): _node(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_node(v) for v in value]
    return value
