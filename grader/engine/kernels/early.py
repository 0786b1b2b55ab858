"""A grading's kernel, forked as the grading starts, while nbgrader does its bookkeeping.

Before a cell can run, nbgrader checks the student and the assignment, creates the submission's
rows and makes its sanitize pass (``autograde.grade_one`` to ``ForkExecute``: ~40-70 ms of the
grading process's CPU), and the zygote forks a kernel into its sandbox (~20 ms, in the zygote
and the child).  The two need nothing from each other, so ``forked_early`` asks the zygote for
the kernel first, from a helper thread, and ``ForkExecute`` takes it (``take``): an idle
grader answers sooner by the fork's time, and no CPU is added or saved.

The kernel is the one ``ForkExecute`` would have forked itself: the same zygote, sandbox
directories, environment and limits (``fork``), and it runs nothing until ``ForkExecute`` sends
it the first cell.  A grading that ends before its Execute step (nbgrader refused the notebook,
the database failed) stops the kernel and removes its directory; a fork that failed raises its
error where ``ForkExecute`` takes the kernel, as its own fork would have.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

from ...plugins.isolation import kernel_environment
from . import kernel as kernels
from .forked import Kernel


@dataclass(frozen=True)
class Forked:
    """A kernel in its own sandbox: ``root`` is removed when the kernel is done."""

    root: Path
    kernel: Kernel

    def close(self) -> None:
        try:
            self.kernel.close()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def fork(zygote_socket: str, memory_limit: int, notebook_timeout: float) -> Forked:
    """A fresh kernel from the zygote at ``zygote_socket``, in a private directory, with the limits of a notebook."""
    zygote = kernels.find(zygote_socket)
    root, workdir, home = kernels.sandbox()
    try:
        env = {**kernel_environment(str(home)), "NBGRADER_EXECUTION": "autograde"}
        cpu = int(notebook_timeout) + 10 if notebook_timeout > 0 else 0
        kernel = zygote.spawn(str(workdir), str(home), env, memory_limit, cpu)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Forked(root, kernel)


Request = tuple[str, int, float]  # fork's arguments: the zygote's socket, the memory limit, the notebook's time limit


class _Pending(threading.local):
    def __init__(self) -> None:
        self.future: Future[Forked] | None = None
        self.request: Request | None = None


_pending = _Pending()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forker() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="grader-fork")
        return _pool


def _discard(future: Future[Forked]) -> None:
    """Wait for a kernel nobody will use, then stop it and remove its directory (a failed fork: nothing to do)."""
    if future.exception() is None:
        future.result().close()


@contextmanager
def forked_early(config: Config) -> Iterator[None]:
    """While the body runs, this thread's grading has its kernel forking (``ForkExecute`` takes it)."""
    settings = config.ForkExecute
    request = (str(settings.zygote_socket), int(settings.memory_limit), float(settings.notebook_timeout))
    future = _forker().submit(fork, *request)
    _pending.future, _pending.request = future, request
    try:
        yield
    finally:
        taken = _pending.future is not future
        _pending.future = _pending.request = None
        if not taken:  # nbgrader stopped before its Execute step: no kernel outlives the grading
            _discard(future)


def take(zygote_socket: str, memory_limit: int, notebook_timeout: float) -> Forked:
    """This grading's kernel: the one forked early when there is one (waiting for it), else a new one."""
    future, request = _pending.future, _pending.request
    _pending.future = _pending.request = None
    if future is not None and request == (zygote_socket, memory_limit, notebook_timeout):
        return future.result()
    if future is not None:  # forked for other settings than this step's: not this step's kernel
        _discard(future)
    return fork(zygote_socket, memory_limit, notebook_timeout)
