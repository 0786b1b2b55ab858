"""Lending a warm engine (``doors.lend``) to ``grader autograde`` (``doors.batch``): the wire both ends speak.

The scheme (where, who, what, messages, endings) is written up front in ``doors/lend.py``. Here: the socket's
address, the peer's credentials, the ``grade`` request, the outcome messages, and the command's side of the
connection (``find``, ``Serve``). Neither door imports the other; both import this.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import protocol
from .limits import Limits

if TYPE_CHECKING:
    from .bookkeeping.autograde import Outcome


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
    from .bookkeeping.autograde import Outcome, Status, Stop

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


def hang_up(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def send(conn: socket.socket, message: dict[str, Any]) -> bool:
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
