"""The zygote: one process that imports torch once and forks a fresh kernel per submission.

Run as ``python -m grader.engine.forking.zygote SOCKET [COURSE_ROOT [ASSIGNMENT...]]``.  It pays every one-off
cost before it forks, then never runs student code itself:

- imports torch, NumPy, IPython and ``grader.checks``; sets torch's intra-op
  and inter-op threads to 1 (a forked child of a multi-threaded torch process
  deadlocks), which is also what a kernel started with ``OMP_NUM_THREADS=1``
  uses, so results are bit-for-bit the same;
- runs the checks library once on the ``meta`` device and a fake CUDA tensor
  (the first such operation costs over a second in every new process), after
  one backward pass on the CPU where its forks can still run theirs
  (``rehearsal.autograd_first``: after a fake CUDA tensor, a backward pass
  makes torch refuse autograd in every later fork);
- builds the IPython shell, so a child starts with a pristine one, formats a
  few typical tracebacks with it, and transforms the course's own code cells
  (magics and all) once, for every child to reuse;
- runs the course's source notebooks once, outside that shell, and puts back
  what they changed (``rehearsal.py``): what a notebook costs the first time
  in a process is paid here, not in every kernel;
- seeds torch, ``random`` and NumPy with 0 in every child, so a regrade
  draws the same numbers (a fresh kernel seeds them from the OS, so stock
  nbgrader may not).

Then it accepts connections on ``SOCKET``; each one carries a request (the
child's private directories, environment and memory limit) and becomes the
channel to a new child.  A child lives for one notebook and exits.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import os
import random
import select
import signal
import socket
import sys
import warnings
from typing import Any

from grader.plugins import kernel_logging

from .. import protocol
from ..inside import audit, sandbox
from . import process_state, rehearsal
from .memory import HugePages, huge_pages

PR_SET_PDEATHSIG = 1
SEED = 0  # of torch's, NumPy's and random's generators in every kernel
LANGUAGE_INFO = {
    "name": "python",
    "version": ".".join(map(str, sys.version_info[:3])),
    "mimetype": "text/x-python",
    "codemirror_mode": {"name": "ipython", "version": 3},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
    "file_extension": ".py",
}


def die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class Warm:
    """What the zygote prepared: torch, the checks library and a pristine shell."""

    def __init__(self, course_root: str | None = None, assignments: tuple[str, ...] = ()) -> None:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        # before torch's first fake CUDA tensor, or a backward pass here would break autograd in every fork
        not_rehearsing = rehearsal.autograd_first() if course_root else "no course"
        import IPython  # noqa: F401
        import numpy  # noqa: F401

        import grader.checks as checks

        rehearsal.device_check()
        # Pickling a tensor (torch.save of a state_dict, copy.deepcopy) caches __slotnames__ on its class the
        # first time: cache it here, so an honest checkpoint is not a change to torch.Tensor the guard reports.
        import copyreg

        for cls in (torch.Tensor, torch.nn.Parameter, torch.nn.Module, torch.Size):
            copyreg._slotnames(cls)  # type: ignore[attr-defined]
        from ..inside.recorder import Recorder
        from ..inside.shell import create, prime

        self.shell = create(Recorder())
        self._warm_tracebacks(checks, torch)
        sources = course_cells(course_root) if course_root else []
        if sources:
            prime(self.shell, sources)
        self.hidden = sandbox.hidden_paths(course_root)
        from ..inside.guard import Guard

        self.rehearsed = self._rehearse(course_root, assignments, not_rehearsing, Guard)
        torch.manual_seed(SEED)  # every fork inherits it (a fresh process seeds torch from the OS)
        self.guard = Guard(self.shell)  # the snapshot every kernel starts from (see guard.py)
        self.guard.prime(sources)
        assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()
        gc.collect()
        gc.freeze()  # children share these pages instead of copying them when the collector runs

    def _rehearse(
        self, course_root: str | None, assignments: tuple[str, ...], skipped: str, guard: Any
    ) -> rehearsal.Rehearsed:
        """Run the course's source notebooks once (``rehearsal.py``); restart without if it cannot be undone.
        What it did goes to the zygote's log."""
        if skipped or course_root is None:
            done = rehearsal.Rehearsed((), 0, 0, skipped=skipped or "no course")
            _log(done.line())
            return done
        before = guard(self.shell)
        done, differ = rehearsal.rehearse(rehearsal.source_notebooks(course_root, assignments))
        # what the notebooks changed of what the guard protects: put back, and names they added removed
        put_back = before.check() + process_state.remove_added(before.modules, before.module_dicts)
        done = dataclasses.replace(done, put_back=tuple(put_back))
        _log(done.line())
        if differ:
            restart(f"the source notebooks changed {', '.join(differ)}")
        if not rehearsal.forks_work(done.forgotten):
            restart("a fork could no longer run a backward pass and a device check, or import what was forgotten")
        return done

    def _warm_tracebacks(self, checks: Any, torch: Any) -> None:
        """Format a few typical failures: the first traceback costs ~50 ms of lazy imports and source parsing."""
        failures = (
            lambda: checks.assert_close(torch.ones(3), torch.zeros(3)),
            lambda: checks.assert_grad_zeroed(torch.ones(2)),
            lambda: torch.ones(2) @ torch.ones(3),
            lambda: compile("x = (", "<warm-up>", "exec"),
        )
        for failure in failures:
            try:
                failure()
            except SyntaxError:
                self.shell.SyntaxTB.structured_traceback(*sys.exc_info())
            except Exception:
                self.shell.InteractiveTB.structured_traceback(*sys.exc_info())
        self.shell.transform_cell("x = 1\nx")  # type: ignore[no-untyped-call]


def course_cells(root: str) -> list[str]:
    """The code cells of the course's source and release notebooks (what every submission runs)."""
    import glob
    from pathlib import Path

    from grader.course import release_directory

    paths = glob.glob(os.path.join(root, "source", "*", "*.ipynb"))
    try:
        paths += glob.glob(os.path.join(str(release_directory(Path(root))), "*", "*.ipynb"))
    except Exception:  # a configuration the zygote cannot read: warm up on source/ alone
        pass
    return [source for path in paths for source, _ in rehearsal.code_cells(path)]


def _send_quietly(conn: socket.socket, message: dict[str, Any]) -> None:
    """Send with SIGINT held back, so a late interrupt cannot cut a message in half."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        protocol.send(conn, message)
    finally:
        _unblock_interrupt()


def _unblock_interrupt() -> None:
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except KeyboardInterrupt:  # one that arrived while blocked: the cell is over, nothing to stop
        pass


def child(conn: socket.socket, warm: Warm, request: dict[str, Any], slot: int) -> None:
    """The forked kernel: set up its sandbox, then run cells until told to stop."""
    from ..inside.shell import attach, run_cell

    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a huge file write fails in the cell instead of killing it
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    workdir = str(request["workdir"])
    limits = sandbox.Limits(
        memory_bytes=int(request.get("memory_bytes", 0)), cpu_seconds=int(request.get("cpu_seconds", 0))
    )
    off = sandbox.enter(warm.hidden, os.path.dirname(workdir), limits, sandbox.kernel_uids(os.getppid())[slot])
    die_with_parent()  # after setuid, which clears the parent-death signal
    os.chdir(workdir)
    # every kernel, every run: a regrade draws the numbers the first grading drew. torch's generators were
    # seeded in the zygote (``Warm``: torch.manual_seed records a stack trace per device kind, ~2 ms); random
    # reseeds itself from the OS in every fork (random.py registers that), so it is seeded here, with NumPy
    random.seed(SEED)
    try:
        import numpy

        numpy.random.seed(SEED)
    except ImportError:
        pass
    warnings._filters_mutated()  # type: ignore[attr-defined]  # warnings seen while warming up show again
    warnings.onceregistry.clear()  # type: ignore[attr-defined]
    shell = warm.shell
    shell.recorder.watch_descriptors(request["capture"])
    attach(shell)
    kernel_logging.configure()  # as stock kernels do (plugins.isolation.PrivateExecute): log records go to stdout
    guard = warm.guard  # the snapshot: everything as the zygote built it, before any student code
    guard.attached()
    testing = audit.deny_hooks()
    pending: list[str] = []  # changes found after cells that were not tests, named at the next test
    checked = False  # the last cell was a test, fully checked after it ran
    _send_quietly(conn, {"op": "ready", "pid": os.getpid(), "language_info": LANGUAGE_INFO, "sandbox_off": off})
    while True:
        try:
            request = protocol.receive(conn)
        except KeyboardInterrupt:
            continue
        except (protocol.ProtocolError, OSError):
            return
        if request.get("op") != "execute":
            return
        code, test = str(request["code"]), bool(request.get("test"))
        tampered: list[str] = []
        before: dict[str, Any] = {}
        if test:  # what the test relies on is as the zygote built it; changes since the last test are named
            found = [] if checked else guard.check()  # nothing ran since the last test's check
            tampered, pending = pending + [c for c in found if c not in pending], []
            before = dict(shell.user_ns)
            testing(True)
        try:
            count, outputs, error = run_cell(shell, code, hide_source=test)
        except KeyboardInterrupt:  # arrived after the shell finished the cell
            count, outputs, error = shell.execution_count - 1, list(shell.recorder.outputs), None
        except Exception:  # the cell broke the shell itself (it replaced builtins IPython relies on, say)
            pending += [c for c in guard.check() if c not in pending]
            count, outputs, error = shell.execution_count - 1, list(shell.recorder.outputs), None
        testing(False)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:  # after a test everything is checked; after any cell the builtins our own code needs
            changes = guard.check() if test else guard.check_builtins()
            checked = test
            if test:
                tampered += [c for c in changes if c not in tampered]
                guard.forget(before, code)
            else:
                pending += [c for c in changes if c not in pending]
        finally:
            _unblock_interrupt()
        reply = {
            "op": "executed",
            "id": request["id"],
            "execution_count": count,
            "outputs": outputs,
            "error": error,
            "tampered": tampered,
        }
        try:
            _send_quietly(conn, reply)
        except (protocol.ProtocolError, OSError):
            return


class Slots:
    """Which kernel uid slots are in use: one uid per kernel alive at once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pids: dict[int, int] = {}

    def take(self) -> int:
        for slot in range(self.size):
            pid = self.pids.get(slot)
            if pid is None or not _alive(pid):
                self.pids.pop(slot, None)
                return slot
        raise OSError("every kernel uid slot is in use")

    def hold(self, slot: int, pid: int) -> None:
        self.pids[slot] = pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # children are reaped as they exit (SIGCHLD ignored): a dead one is gone
    except ProcessLookupError:
        return False
    except PermissionError:  # the pid was reused by a process that is not ours: the slot is free
        return False
    return True


def _log(line: str) -> None:
    print(f"zygote {os.getpid()}: {line}", file=sys.stderr, flush=True)


def restart(reason: str) -> None:
    """Start this zygote again from scratch, without rehearsing: a process the rehearsal changed forks nothing."""
    _log(f"restarting without the rehearsal: {reason}")
    sys.stdout.flush()
    os.environ[rehearsal.RESTART] = reason
    os.execv(sys.executable, [sys.executable, "-m", "grader.engine.forking.zygote", *sys.argv[1:]])


def serve(path: str, course_root: str | None = None, assignments: tuple[str, ...] = ()) -> None:
    die_with_parent()
    warm = Warm(course_root, assignments)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    slots = Slots(sandbox.KERNEL_SLOTS)
    collapse = HugePages()
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            conn.settimeout(30)
            request = protocol.receive(conn)
            conn.settimeout(None)
        except (protocol.ProtocolError, OSError):
            conn.close()
            continue
        try:
            slot = slots.take()
            pid = os.fork()
        except OSError:  # out of memory, processes or uid slots: this request fails, the zygote lives on
            conn.close()
            continue
        if pid == 0:
            status = 0
            try:
                listener.close()
                child(conn, warm, request, slot)
            except BaseException:
                status = 1
            finally:
                os._exit(status)
        slots.hold(slot, pid)
        conn.close()
        if collapse.forked(idle=not select.select([listener], [], [], 0)[0]):
            _log(f"{huge_pages()} MiB in huge pages after {collapse.forks} kernels")


if __name__ == "__main__":
    # As this module, not ``__main__`` (IPython's shell's namespace): the guard's snapshot holds the kernels' code.
    from grader.engine.forking import zygote as _zygote

    _zygote.serve(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, tuple(sys.argv[3:]))
