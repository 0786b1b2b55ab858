"""The grader's side of one forked kernel: send it cells and wait for them with nbclient's timeout rules.

``kernel.Zygote.spawn`` forks the kernel; a ``Kernel`` runs one notebook's cells in it, in order,
yields the CPU when a cell runs long, stops it past its memory limit, interrupts and kills it.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from .. import protocol

# A cell still running after this long yields the CPU to short ones: its kernel's process group and
# scheduler autogroup are reniced (weight 110 against 1024: about a tenth of a core's share when all
# cores are busy, and all of an idle one). A never-ending loop then slows the submissions graded beside
# it little: it takes a tenth of a core instead of a whole one.
LONG_CELL_S = 1.0
LONG_CELL_NICE = 10
# Yielding must not cost the cell its limit. A cell's time limit counts the time its kernel ran or
# waited for something of its own (sleep, I/O), not the time it was ready to run while the scheduler
# gave the CPU to others: the run-queue wait of the kernel's main thread (/proc/PID/schedstat, second
# field, in ns) from the cell's first WATCH_S on is taken off the clock (most cells end sooner). On an
# idle machine nothing is held back and the limit is nbclient's wall clock; on one oversubscribed at a
# deadline, a cell needing 2 s of CPU no longer times out at 10 s because it got a tenth of a core. A
# cell still ends by a wall-clock bound: the whole notebook's limit where there is one (it bounds a
# job's time, and the broker's redelivery timeout counts on it), else WALL_CAP times its own limit.
WALL_CAP = 10
# While a cell runs, its kernel's resident memory is read this often; past ``Kernel.resident_limit`` the
# kernel is stopped. The address-space limit (setrlimit) stops one huge allocation at once, but not a
# loop of small ones that really fills memory: a few such kernels at once would exhaust the machine.
WATCH_S = 0.2
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class CellRun:
    """What one cell did in a forked kernel."""

    outputs: list[dict[str, Any]]
    execution_count: int | None
    error: tuple[str, str] | None = None  # (ename, evalue) of the exception the cell raised
    timed_out: bool = False
    died: bool = False  # the kernel is gone: no later cell can run
    started: float = 0.0
    finished: float = field(default_factory=time.time)
    tampered: tuple[str, ...] = ()  # for a test cell: what student code had changed of what tests rely on
    over_memory: bool = False  # died because its resident memory passed the limit
    wall_limited: bool = False  # timed out at the wall-clock bound rather than at the cell's own limit


class Kernel:
    """One forked child running one notebook's cells, in order."""

    def __init__(self, sock: socket.socket, pid: int, language_info: dict[str, Any]) -> None:
        self.sock = sock
        self.pid = pid
        self.language_info = language_info
        self._next_id = 0
        self.dead = False
        self.deprioritised = False
        self.sandbox_off: list[str] = []
        self.resident_limit = 0  # bytes of resident memory the kernel may use; 0 for no limit
        self.over_memory = False
        self._selector = selectors.DefaultSelector()  # one per kernel: every cell waits on it
        self._selector.register(sock, selectors.EVENT_READ)

    @classmethod
    def connect(
        cls, path: str, workdir: str, capture: str, env: dict[str, str], memory_bytes: int, cpu_seconds: int = 0
    ) -> Kernel:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(60)
            sock.connect(path)
            request = {
                "workdir": workdir,
                "capture": capture,
                "env": env,
                "memory_bytes": memory_bytes,
                "cpu_seconds": cpu_seconds,
            }
            protocol.send(sock, request)
            hello = protocol.receive(sock)
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        if hello.get("op") != "ready" or not isinstance(hello.get("pid"), int):
            sock.close()
            raise protocol.ProtocolError(f"unexpected first message from a kernel: {str(hello)[:200]}")
        kernel = cls(sock, hello["pid"], dict(hello.get("language_info") or {}))
        kernel.sandbox_off = [str(item) for item in hello.get("sandbox_off") or []]
        return kernel

    def _readable(self, timeout: float | None) -> bool:
        return bool(self._selector.select(timeout))

    def _reply(self, expected_id: int) -> dict[str, Any]:
        self.sock.settimeout(60)  # a reply that has started arriving arrives whole
        try:
            reply = protocol.receive(self.sock)
        finally:
            self.sock.settimeout(None)
        if reply.get("op") != "executed" or reply.get("id") != expected_id:
            raise protocol.ProtocolError("a reply out of sequence")
        return reply

    def execute(
        self,
        code: str,
        timeout: float | None,
        interrupt_grace: float,
        test: bool = False,
        wall_limit: float | None = None,
    ) -> CellRun:
        """Run one cell; on timeout interrupt it (as nbclient does), then kill the kernel if it will not stop.

        ``timeout`` counts the cell's own time (see ``WALL_CAP``); ``wall_limit`` bounds its wall-clock
        time (``WALL_CAP * timeout`` when not given). A ``test`` cell (an nbgrader test cell) runs
        guarded: see ``grader.engine.inside.guard``.
        """
        if wall_limit is None and timeout is not None:
            wall_limit = WALL_CAP * timeout
        started = time.time()
        self._next_id += 1
        expected = self._next_id
        try:
            protocol.send(self.sock, {"op": "execute", "id": expected, "code": code, "test": test})
            ended = self._wait(timeout, wall_limit)
            if ended is None:
                return self._cell_run(self._reply(expected), started)
            if self.over_memory:
                self.kill()
                return CellRun([], None, died=True, started=started, over_memory=True)
            self.interrupt()
            if self._readable(interrupt_grace):
                return self._cell_run(self._reply(expected), started, timed_out=True, wall_limited=ended == "wall")
        except (protocol.ProtocolError, OSError):
            pass
        else:
            self.kill()
            return CellRun([], None, timed_out=True, died=True, started=started, wall_limited=ended == "wall")
        self.kill()
        return CellRun([], None, died=True, started=started)

    def _wait(self, timeout: float | None, wall_limit: float | None) -> str | None:
        """Wait for the reply: None when it came, else which limit ended the wait ("cell", "wall" or
        "memory"). The kernel is deprioritised once the cell runs long, and the wait stops
        (``over_memory``) if its resident memory passes the limit."""
        started = time.monotonic()
        held_since: float | None = None  # read once the cell outlasts its first wait: short cells never pay
        while True:
            waited = time.monotonic() - started
            if wall_limit is not None and waited >= wall_limit:
                return "wall"
            own = waited if held_since is None else waited - (self.held_back_s() - held_since)
            if timeout is not None and own >= timeout:
                return "cell"
            # the cell's own time advances no faster than the wall clock: waiting what is left of it is never late
            wait = WATCH_S
            if timeout is not None:
                wait = min(wait, timeout - own)
            if wall_limit is not None:
                wait = min(wait, wall_limit - waited)
            if self._readable(wait):
                return None
            if held_since is None:
                held_since = self.held_back_s()
            if not self.deprioritised and waited + WATCH_S >= LONG_CELL_S:
                self.deprioritise()
            if self.resident_limit and self.resident_bytes() > self.resident_limit:
                self.over_memory = True
                return "memory"

    def held_back_s(self) -> float:
        """Seconds the kernel's main thread has spent ready to run but waiting for a CPU; 0.0 where the
        machine does not say (the cell's limit is then plain wall clock, as nbclient's)."""
        try:
            with open(f"/proc/{self.pid}/schedstat") as schedstat:
                return int(schedstat.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def resident_bytes(self) -> int:
        try:
            with open(f"/proc/{self.pid}/statm") as statm:
                return int(statm.read().split()[1]) * PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return 0

    def deprioritise(self) -> None:
        """Renice the kernel and whatever it started (its process group) to ``LONG_CELL_NICE``."""
        self.deprioritised = True
        try:
            os.setpriority(os.PRIO_PGRP, self.pid, LONG_CELL_NICE)
            # With scheduler autogroups (on in most distributions' kernels), each session (the kernel
            # called setsid) is scheduled as one group and a task's nice value only ranks it within
            # its group: the group's own nice value is what yields to the other kernels.
            if os.path.exists(f"/proc/{self.pid}/autogroup"):
                with open(f"/proc/{self.pid}/autogroup", "w") as autogroup:
                    autogroup.write(str(LONG_CELL_NICE))
        except OSError:  # already gone (the reply, or its absence, tells what happened), or not allowed
            pass

    @staticmethod
    def _cell_run(
        reply: dict[str, Any], started: float, timed_out: bool = False, wall_limited: bool = False
    ) -> CellRun:
        outputs = reply.get("outputs")
        if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
            raise protocol.ProtocolError("outputs must be a list of objects")
        error = reply.get("error")
        raised = (str(error[0]), str(error[1])) if isinstance(error, list) and len(error) >= 2 else None
        count = reply.get("execution_count")
        tampered = tuple(str(t) for t in reply.get("tampered") or [])
        return CellRun(
            outputs,
            count if isinstance(count, int) else None,
            raised,
            timed_out,
            False,
            started,
            tampered=tampered,
            wall_limited=wall_limited,
        )

    def interrupt(self) -> None:
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """The kernel and everything it started (its own process group)."""
        self.dead = True
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._selector.close()
        self.sock.close()

    def close(self) -> None:
        if not self.dead:
            try:
                protocol.send(self.sock, {"op": "exit"})
            except OSError:
                pass
        self.kill()
