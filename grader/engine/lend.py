"""A running ``grader serve`` lends its warm engine to ``grader autograde`` of the same course.

From cold, ``grader autograde`` spends seconds on its own engine before the first notebook: the zygote
imports torch and rehearses the course. ``grader serve`` on the embedded queue keeps one warm all day. So the
serve listens on a Unix socket (``Lender``), and the command asks there first (``Borrowed``):

- **Where.** The socket is in the abstract namespace, named from the course root and its gradebook (``address``):
  the same course on the same database finds it, any other misses it at once, and a killed serve leaves no
  file behind.
- **Who.** Both ends check the other's user with ``SO_PEERCRED``. The serve answers only its own user: an
  abstract socket has no file permissions to keep others out. The command talks only to a process of its own
  user: anyone may bind an abstract name first.
- **What.** The serve lends only an engine that grades as the command's own would: the same course root,
  gradebook, ``nbgrader_config.py`` (its digest when the engine read it) and limits. Otherwise it refuses and
  says why, and the command starts its own engine. It lends to one batch at a time.
- **Messages.** ``protocol``'s length-prefixed JSON. The command sends one ``grade`` request. The serve
  answers ``lent`` (or ``refused``), then one ``outcome`` per submission as each is graded, then ``done``.
- **Endings.** A command that hangs up stops the batch: submissions not yet started are not graded there. A
  serve that goes away mid-batch leaves the rest to the command's own engine (``batch.run``). A serve that
  stops (``Lender.close``), or whose zygote dies under a grading (a signal to its process group), hands the
  batch back before it reports that grading: a kernel that died with the zygote is not the submission's doing.

The gradebook rows and autograded notebooks are the serve's engine's, written by the same nbgrader
code in the same course: what the command would have written itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import protocol
from .limits import Limits

if TYPE_CHECKING:
    from .autograde import Outcome
    from .engine import Engine

log = logging.getLogger("grader.engine")

VERSION = 1
_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid
REQUEST_TIMEOUT_S = 10.0  # a connection that sends no request in this time is dropped
MAX_JOBS = 64  # kernels at a time a borrowed batch may ask for (the zygote's uid slots)


class LendingRefused(Exception):
    """The serve will not grade this batch for a reason the command must fix (the message says how)."""


def address(root: Path, gradebook: str) -> bytes:
    """The abstract socket name of the engine of the course at ``root`` grading into ``gradebook``."""
    key = f"{Path(root).resolve()}\0{gradebook}".encode("utf-8", "surrogateescape")
    return b"\0grader-engine-" + hashlib.sha256(key).hexdigest()[:32].encode()


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket."""
    pid, uid, _ = _CREDENTIALS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size))
    return pid, uid


@dataclass(frozen=True)
class Request:
    """One batch, as ``grader autograde`` would grade it with its own engine."""

    assignment: str
    students: tuple[str, ...]
    jobs: int
    force: bool
    root: str
    gradebook: str
    config: str  # ``config_digest`` of the course as the command sees it
    limits: Limits

    def message(self) -> dict[str, Any]:
        return {
            "op": "grade",
            "version": VERSION,
            "assignment": self.assignment,
            "students": list(self.students),
            "jobs": self.jobs,
            "force": self.force,
            "root": self.root,
            "gradebook": self.gradebook,
            "config": self.config,
            "limits": [
                self.limits.notebook_timeout_s,
                self.limits.memory_limit_bytes,
                self.limits.resident_limit_bytes,
            ],
        }

    @classmethod
    def of(cls, message: dict[str, Any]) -> Request:
        """The request in ``message``; ``ValueError`` when it is not one this version understands."""
        if message.get("op") != "grade" or message.get("version") != VERSION:
            raise ValueError(f"not a version-{VERSION} grade request")
        students = message.get("students")
        limits = message.get("limits")
        if not isinstance(students, list) or not all(isinstance(s, str) for s in students):
            raise ValueError("students must be a list of names")
        if not isinstance(limits, list) or len(limits) != 3:
            raise ValueError("limits must be [notebook_timeout_s, memory_limit_bytes, resident_limit_bytes]")
        fields = {k: message.get(k) for k in ("assignment", "root", "gradebook", "config")}
        if not all(isinstance(v, str) for v in fields.values()):
            raise ValueError("assignment, root, gradebook and config must be strings")
        jobs = message.get("jobs")
        if not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= MAX_JOBS:
            raise ValueError(f"jobs must be a whole number from 1 to {MAX_JOBS}")
        return cls(
            assignment=str(fields["assignment"]),
            students=tuple(students),
            jobs=jobs,
            force=bool(message.get("force", True)),
            root=str(fields["root"]),
            gradebook=str(fields["gradebook"]),
            config=str(fields["config"]),
            limits=Limits(float(limits[0]), int(limits[1]), int(limits[2])),
        )


def outcome_message(outcome: Outcome) -> dict[str, Any]:
    """An ``Outcome`` as the serve reports it (its grade rows stay in the gradebook, not in the message)."""
    return {
        "op": "outcome",
        "student": outcome.student,
        "assignment": outcome.assignment,
        "status": outcome.status.value,
        "log": outcome.log,
        "seconds": outcome.seconds,
        "reason": outcome.reason,
        "stopped": outcome.stopped.value,
        "zeroed": outcome.zeroed,
    }


def outcome_of(message: dict[str, Any]) -> Outcome:
    """The ``Outcome`` in a serve's ``outcome`` message; ``ProtocolError`` when it is malformed."""
    from .autograde import Outcome, Status, Stop

    try:
        return Outcome(
            student=str(message["student"]),
            assignment=str(message["assignment"]),
            status=Status(message["status"]),
            log=str(message["log"]),
            seconds=float(message["seconds"]),
            reason=str(message["reason"]),
            stopped=Stop(message["stopped"]),
            zeroed=bool(message["zeroed"]),
        )
    except (KeyError, ValueError, TypeError) as error:
        raise protocol.ProtocolError(f"a malformed outcome: {error!r}") from error


# --- the serve's side ----------------------------------------------------------------------------------------


class Lender:
    """The serve's side: lends ``engine`` (started) to ``grader autograde`` of its course, one batch at a time."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.gradebook = str(engine.config.CourseDirectory.db_url)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._busy = threading.Lock()
        self._lent: dict[socket.socket, threading.Event] = {}  # the batch being graded: its connection, its stop

    def start(self) -> bool:
        """Listen; False (logged) when another process already lends an engine for this course and gradebook."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(address(self.engine.root, self.gradebook))
        except OSError as error:
            sock.close()
            log.info("not lending this engine to `grader autograde`: %s (another grader serve of this course?)", error)
            return False
        sock.listen(8)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept, name="grader-lender", daemon=True)
        self._thread.start()
        return True

    def close(self) -> None:
        """Stop listening, and hand a batch being graded back to its command, which grades the rest itself
        (what is in flight included: the engine closes next)."""
        for conn, stop in list(self._lent.items()):
            stop.set()
            _hang_up(conn)
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        if self._thread is not None:
            self._thread.join(5)

    def _accept(self) -> None:
        while self._sock is not None:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), name="grader-lent", daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        from .engine import unregistered

        with conn:
            pid, uid = peer(conn)
            if uid != os.getuid():
                log.warning("refused to lend the engine to process %d of user %d (not this service's user)", pid, uid)
                return
            conn.settimeout(REQUEST_TIMEOUT_S)
            try:
                message = protocol.receive(conn)
            except (protocol.ProtocolError, OSError):
                return
            try:
                request = Request.of(message)
            except ValueError as error:
                _send(conn, {"op": "refused", "reason": f"a request this serve cannot read ({error})"})
                return
            reason = self.refusal(request)
            if reason is not None:
                _send(conn, {"op": "refused", "reason": reason})
                return
            problem = unregistered(self.gradebook, request.assignment)
            if problem is not None:
                _send(conn, {"op": "error", "reason": problem})
                return
            if not self._busy.acquire(blocking=False):
                _send(conn, {"op": "refused", "reason": "it is grading another `grader autograde` batch"})
                return
            try:
                log.info(
                    "lending the engine to `grader autograde` (pid %d): %d submission(s) of %s",
                    pid,
                    len(request.students),
                    request.assignment,
                )
                self._lend(conn, request)
            finally:
                self._busy.release()

    def refusal(self, request: Request) -> str | None:
        """Why this engine would not grade ``request`` as the command's own engine would, or None."""
        if Path(request.root).resolve() != self.engine.root.resolve() or request.gradebook != self.gradebook:
            return "it grades another course or gradebook"
        if request.config != self.engine.config_digest:
            return "nbgrader_config.py changed since it read it (restart `grader serve` to use the new one)"
        if request.limits != self.engine.limits:
            return f"it grades with other limits ({self.engine.limits}; this command: {request.limits})"
        return None

    def _lend(self, conn: socket.socket, request: Request) -> None:
        from .autograde import Stop, grade_many

        hung_up = threading.Event()

        def report(outcome: Outcome) -> None:
            if hung_up.is_set():
                return
            if (not outcome.ok or outcome.stopped is Stop.KERNEL_DIED) and not self.engine.zygote.alive():
                # the kernel died with the zygote (the serve is stopping), not by the submission's doing: the
                # command grades this one again, and the rest
                hung_up.set()
                _hang_up(conn)
            elif not _send(conn, outcome_message(outcome)):
                hung_up.set()  # the command is gone: what has not started is not graded

        conn.settimeout(60)
        if not _send(conn, {"op": "lent", "pid": os.getpid()}):
            return
        self._lent[conn] = hung_up
        try:
            grade_many(
                self.engine.config,
                request.assignment,
                request.students,
                jobs=request.jobs,
                force=request.force,
                progress=report,
                zero_unreadable=True,
                stop=hung_up,
            )
        except Exception:  # the command sees the connection close and grades the rest itself
            log.exception("a batch lent to `grader autograde` failed")
            return
        finally:
            self._lent.pop(conn, None)
        if not hung_up.is_set():
            _send(conn, {"op": "done"})


def _hang_up(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _send(conn: socket.socket, message: dict[str, Any]) -> bool:
    try:
        protocol.send(conn, message)
    except (protocol.ProtocolError, OSError):
        return False
    return True


# --- the command's side --------------------------------------------------------------------------------------


class Serve:
    """The command's side: a connection to the ``grader serve`` of this user lending an engine for the course."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid

    def ask(self, request: Request) -> str | None:
        """None when the serve grades ``request`` (then read ``outcomes``), else why not, in a sentence.
        ``LendingRefused`` when the serve says the request itself is wrong (the assignment is not in the
        gradebook): the command's own engine would say so too."""
        try:
            protocol.send(self.sock, request.message())
            answer = protocol.receive(self.sock)
        except (OSError, protocol.ProtocolError) as error:
            return f"`grader serve` (pid {self.pid}) did not answer ({error})"
        if answer.get("op") == "lent":
            return None
        reason = str(answer.get("reason", "no reason given"))
        if answer.get("op") == "error":
            raise LendingRefused(reason)
        return f"`grader serve` (pid {self.pid}) runs for this course but cannot lend its engine: {reason}"

    def outcomes(self) -> Iterator[Outcome]:
        """Each submission's outcome as the serve reports it, until ``done``; ``ProtocolError`` (or ``OSError``)
        when the serve goes away first."""
        self.sock.settimeout(None)  # a notebook takes as long as its limits allow; the serve enforces them
        while True:
            message = protocol.receive(self.sock)
            if message.get("op") == "done":
                return
            if message.get("op") != "outcome":
                raise protocol.ProtocolError(f"an unexpected message {message.get('op')!r}")
            yield outcome_of(message)

    def close(self) -> None:
        self.sock.close()


def find(root: Path, gradebook: str) -> Serve | None:
    """The ``grader serve`` of this user lending an engine for the course at ``root`` on ``gradebook``, if any
    (a connection attempt: microseconds when there is none)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(REQUEST_TIMEOUT_S)
    try:
        sock.connect(address(root, gradebook))
        pid, uid = peer(sock)
    except OSError:
        sock.close()
        return None
    if uid != os.getuid():  # someone else's process holds the name: tell it nothing
        sock.close()
        return None
    return Serve(sock, pid)
