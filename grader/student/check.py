"""``grader check NOTEBOOK``: run the visible tests locally before submitting.

Executes the notebook top to bottom in a fresh kernel (as the grader will)
and reports every test cell: passed, or the error it raised.  Only the
visible tests are in a student's notebook, so a pass here is necessary, not
sufficient.  A file that is not a notebook is refused with the sentence the
service's upload would give (``NotANotebook``); the kernel talks to this
process over Unix sockets in a private directory (no TCP port for other users
of a shared machine, and no warning about one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CheckResult:
    name: str
    points: float
    passed: bool
    message: str


def run(path: Path, timeout: float = 60) -> list[CheckResult]:
    """Every test cell's result; ``NotANotebook`` (one sentence) for a file that is not a notebook."""
    import tempfile

    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    from .. import notebook_errors
    from ..plugins import kernel_logging

    nb = notebook_errors.read(path.read_bytes(), upgrade=True)
    kernel_name = nb.metadata.get("kernelspec", {}).get("name") or "python3"  # as nbclient picks it
    with tempfile.TemporaryDirectory(prefix="grader-check-") as private:
        manager = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(Path(private) / "kernel"))
        client = NotebookClient(
            nb,
            km=manager,
            timeout=timeout,
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
            extra_arguments=[f"--IPKernelApp.exec_lines={kernel_logging.EXEC_LINE}"],  # logging to stdout, as graded
        )
        # nbclient shuts down only a kernel whose manager it made: ask it to shut this one down too, and wait for it
        # (left running, the kernel outlives the command and prints a warning after the prompt has come back)
        client.execute(cleanup_kc=True)
    results: list[CheckResult] = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        stderr = [  # what nbgrader's IgnorePattern does not drop: warnings do not count, as when graded
            o
            for o in cell.get("outputs", [])
            if o.output_type == "stream" and o.name == "stderr" and not re.search(kernel_logging.WARNING_LINE, o.text)
        ]
        message = ""
        if errors:
            message = notebook_errors.error_text(errors[0].ename, errors[0].evalue)
        elif stderr:
            message = "the cell wrote to stderr, which the grader scores as a failure:\n" + stderr[0].text[-1000:]
        results.append(CheckResult(meta.get("grade_id", "?"), float(meta.get("points", 0)), not message, message))
    return results


NO_TESTS = (
    "This notebook has no test cells, so there is nothing to check: is it the assignment's notebook "
    "(from `nbgrader fetch_assignment` or the course page), with its cells as released?"
)


def points(value: float) -> str:
    """``1 point``, ``2 points``, ``0.5 points``."""
    return f"{value:g} point{'' if value == 1 else 's'}"


def report(results: list[CheckResult]) -> str:
    if not results:
        return NO_TESTS
    lines = []
    for r in results:
        lines.append(f"  {'PASS' if r.passed else 'FAIL'} {r.name} ({points(r.points)})")
        if not r.passed:
            lines.extend("      " + line for line in r.message.splitlines())
    passed = sum(r.passed for r in results)
    lines.append(f"{passed}/{len(results)} visible test cells pass. Hidden tests run only when you submit.")
    return "\n".join(lines)
