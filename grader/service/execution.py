"""Sandboxed execution: grade one submission in a fresh process, within limits.

The stock ``nbgrader autograde`` runs in a new process for every submission
(so scores are nbgrader's own), under resource limits set before it starts:
address space (memory), file size, no core dumps, and a whole-notebook
wall-clock limit enforced here.  nbgrader's per-cell timeout
(``Execute.timeout``) interrupts a runaway cell.  The kernel runs in a private
empty directory with a clean environment (``grader.isolation.PrivateExecute``).
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from .. import course
from .config import ServiceConfig
from .errors import InfrastructureError
from .models import Execution, Submission

# One grading at a time per course folder and student: nbgrader keeps one
# submitted/ and autograded/ folder per student and assignment.
_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()

OUTPUT_LIMIT_BYTES = 2_000_000
PR_SET_PDEATHSIG = 1


def _lock(student: str, assignment: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((student, assignment), threading.Lock())


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the service dies, so a killed service leaves no grading behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _limits(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        _die_with_parent()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024**2, 256 * 1024**2))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def place(config: ServiceConfig, submission: Submission, notebook_name: str) -> Path:
    """Put the attempt where nbgrader looks, with its time stamp (for the late policy)."""
    folder = config.course_root / "submitted" / submission.student / submission.assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    target = folder / f"{notebook_name}.ipynb"
    shutil.copyfile(submission.path, target)
    (folder / "timestamp.txt").write_text(f"{submission.received_at.isoformat(sep=' ')} UTC\n")
    return target


def run(config: ServiceConfig, submission: Submission, notebook_name: str) -> Execution:
    """Autograde one attempt; the autograded notebook is in ``autograded/`` afterwards."""
    with _lock(submission.student, submission.assignment):
        place(config, submission, notebook_name)
        autograded = config.course_root / "autograded" / submission.student / submission.assignment
        shutil.rmtree(autograded, ignore_errors=True)
        command = [
            str(Path(sys.executable).parent / "nbgrader"),
            "autograde",
            submission.assignment,
            "--student",
            submission.student,
            "--create",
            "--force",
        ]
        try:
            proc = subprocess.Popen(
                command,
                cwd=config.course_root,
                env=course.environment(config.course_root, config.db_url),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                preexec_fn=_limits(config.memory_limit_bytes),
                start_new_session=True,
            )
        except OSError as error:
            raise InfrastructureError(f"could not start nbgrader: {error}") from error
        try:
            output, _ = proc.communicate(timeout=config.notebook_timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            output = b""
            return Execution(
                notebook=None,
                log="",
                problem=(
                    f"Grading stopped after {config.notebook_timeout_s:g} s, the limit for a whole notebook. "
                    "Look for a loop that never ends or a computation far larger than the task needs."
                ),
            )
        log = output[-OUTPUT_LIMIT_BYTES:].decode("utf-8", "replace")
        notebook = autograded / f"{notebook_name}.ipynb"
        if proc.returncode != 0 or not notebook.exists():
            return Execution(notebook=notebook if notebook.exists() else None, log=log, problem=_explain(log))
        return Execution(notebook=notebook, log=log)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _explain(log: str) -> str:
    if "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log:
        return (
            "Your notebook crashed the Python kernel (it used too much memory, or exited): "
            "the tests after the crash could not run and score 0."
        )
    if "MemoryError" in log:
        return "Your notebook ran out of memory; tests that could not run score 0."
    return "Your notebook could not be graded to the end; tests that could not run score 0."
