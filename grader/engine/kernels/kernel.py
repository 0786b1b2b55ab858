"""The grader's side of the engine: start the zygote, fork kernels from it (``forked.py`` runs cells in them)."""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path

from ...errors import InfrastructureError
from .. import protocol
from ..forking.zygote import die_with_parent
from ..inside.sandbox import kill_kernel_processes, refused, required_steps, step_of
from . import leftovers
from .forked import Kernel

START_TIMEOUT_S = 180.0
ZYGOTE_ENVIRONMENT = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",  # asking whether CUDA exists must not initialise it before fork
    "PYTHONDONTWRITEBYTECODE": "1",
    "MPLBACKEND": "Agg",
}

_running: dict[str, Zygote] = {}


def _remove_folder(folder: str, owner: int) -> None:
    """A zygote's folder and what it holds (socket, log), only in the process that made it: a process
    forked from that one (a test's child, a prefork worker) exits without touching it."""
    if os.getpid() != owner or not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)


def find(socket_path: str) -> Zygote:
    """The zygote this process started at ``socket_path`` (nbgrader's config names it by its socket)."""
    try:
        return _running[socket_path]
    except KeyError:
        raise InfrastructureError(f"no grading zygote is running at {socket_path}") from None


class Zygote:
    """A running zygote process (see ``grader.engine.forking.zygote``); one per grading process."""

    def __init__(self, course_root: Path | None = None, rehearse: tuple[str, ...] = ()) -> None:
        """``rehearse``: the assignments whose source notebooks the zygote runs once as it starts (every one
        if none is named; ``rehearsal.py``), those a batch grades."""
        self.course_root = course_root
        self.rehearse = rehearse
        leftovers.sweep()  # the folders of grading processes that were killed outright
        self._dir = tempfile.mkdtemp(prefix=leftovers.PREFIX)
        os.chmod(self._dir, 0o700)
        leftovers.mark(self._dir)
        # removed by close(), or when this object is dropped or the process exits without one (an engine
        # built and never started): no empty folder is left in $TMPDIR
        self._remove_folder = weakref.finalize(self, _remove_folder, self._dir, os.getpid())
        self.socket_path = os.path.join(self._dir, "zygote.sock")
        self.log_path = os.path.join(self._dir, "zygote.log")
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self.sandbox_off: list[str] = []  # parts of the kernel sandbox this machine cannot provide (the probe's)

    def start(self) -> Zygote:
        """Start the zygote and wait until it has warmed up (a few seconds: it imports torch)."""
        self.launch()
        with self._lock:
            self._start()
        return self

    def launch(self) -> None:
        """Start the zygote without waiting for it: the caller can prepare meanwhile, then ``start()``."""
        with self._lock:
            self._launch()
        _running[self.socket_path] = self

    def _start(self) -> None:
        self._launch()
        if not self._ready:
            self._wait_ready()

    def _launch(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._ready = False
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        # never the course secret of per-student variants: a forked kernel could read it in /proc/self/environ
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "GRADER_VARIANT_SECRET")}
        env.update(ZYGOTE_ENVIRONMENT)
        try:
            with open(self.log_path, "ab") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "grader.engine.forking.zygote", self.socket_path]
                    + ([str(self.course_root), *self.rehearse] if self.course_root else []),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=env,
                    cwd=self._dir,
                    preexec_fn=die_with_parent,
                )
        except OSError as error:
            raise InfrastructureError(f"could not start the grading zygote: {error}") from error

    def _wait_ready(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            ready = bool(selector.select(START_TIMEOUT_S)) and self._proc.stdout.readline().strip() == b"ready"
        if not ready:
            self._proc.kill()
            self._proc.communicate()
            with open(self.log_path, "rb") as log:
                err = log.read()[-4000:].decode(errors="replace")
            raise InfrastructureError(f"the grading zygote did not start:\n{err}")
        self._ready = True
        self._probe()

    def _probe(self) -> None:
        """Fork one kernel to learn which parts of the sandbox this machine provides."""
        root, workdir, home = sandbox()
        try:
            kernel = Kernel.connect(self.socket_path, str(workdir), str(home), {}, 0)
            kernel.close()
        except (OSError, protocol.ProtocolError) as error:
            raise InfrastructureError(f"the grading zygote cannot fork a kernel: {error}") from error
        finally:
            shutil.rmtree(root, ignore_errors=True)
        missing = [m for m in kernel.sandbox_off if step_of(m) in required_steps()]
        if missing:
            raise InfrastructureError(f"the kernel sandbox cannot apply what every kernel needs: {'; '.join(missing)}")
        self.sandbox_off = kernel.sandbox_off

    def _checked(self, kernel: Kernel) -> Kernel:
        """``kernel`` if its sandbox is complete (all the probe had, and the required steps); else it is
        killed before it is sent any cell (see ``grader.engine.inside.sandbox``: fail closed)."""
        missing = refused(kernel.sandbox_off, self.sandbox_off)
        if missing:
            kernel.kill()
            raise InfrastructureError(
                f"a kernel could not enter its whole sandbox and was stopped before running any student code: "
                f"no {'; no '.join(missing)} (the kernel probed at start-up had "
                f"{'every step' if not self.sandbox_off else 'all but: ' + '; '.join(self.sandbox_off)})"
            )
        return kernel

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self, workdir: str, capture: str, env: dict[str, str], memory_bytes: int, cpu_seconds: int = 0) -> Kernel:
        """A fresh kernel forked from the zygote (the zygote is restarted if it died)."""
        for attempt in (1, 2):
            with self._lock:
                self._start()
            try:
                kernel = Kernel.connect(self.socket_path, workdir, capture, env, memory_bytes, cpu_seconds)
            except (OSError, protocol.ProtocolError) as error:
                if attempt == 2 or self.alive():
                    raise InfrastructureError(f"could not fork a kernel: {error}") from error
            else:
                return self._checked(kernel)
        raise AssertionError("unreachable")

    def close(self) -> None:
        _running.pop(self.socket_path, None)
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.communicate()
            if self._proc is not None:  # what kernels started and hid from their process group
                kill_kernel_processes(self._proc.pid)
            self._proc = None
        self._remove_folder()

    def __enter__(self) -> Zygote:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def sandbox() -> tuple[Path, Path, Path]:
    """A private directory for one kernel: (root, working directory, home)."""
    root = Path(tempfile.mkdtemp(prefix="grader-kernel-"))
    os.chmod(root, 0o700)
    (root / "work").mkdir()
    (root / "home").mkdir()
    return root, root / "work", root / "home"
