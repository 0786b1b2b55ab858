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

import logging
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .. import protocol
from ..loans import REQUEST_TIMEOUT_S, Request, address, hang_up, outcome_message, peer, send

if TYPE_CHECKING:
    from ..bookkeeping.autograde import Outcome
    from ..engine import Engine

log = logging.getLogger("grader.engine")


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
            hang_up(conn)
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
        from ..engine import unregistered

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
                send(conn, {"op": "refused", "reason": f"a request this serve cannot read ({error})"})
                return
            reason = self.refusal(request)
            if reason is not None:
                send(conn, {"op": "refused", "reason": reason})
                return
            problem = unregistered(self.gradebook, request.assignment)
            if problem is not None:
                send(conn, {"op": "error", "reason": problem})
                return
            if not self._busy.acquire(blocking=False):
                send(conn, {"op": "refused", "reason": "it is grading another `grader autograde` batch"})
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
        from ..bookkeeping.autograde import Stop, grade_many

        hung_up = threading.Event()

        def report(outcome: Outcome) -> None:
            if hung_up.is_set():
                return
            if (not outcome.ok or outcome.stopped is Stop.KERNEL_DIED) and not self.engine.zygote.alive():
                # the kernel died with the zygote (the serve is stopping), not by the submission's doing: the
                # command grades this one again, and the rest
                hung_up.set()
                hang_up(conn)
            elif not send(conn, outcome_message(outcome)):
                hung_up.set()  # the command is gone: what has not started is not graded

        conn.settimeout(60)
        if not send(conn, {"op": "lent", "pid": os.getpid()}):
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
            send(conn, {"op": "done"})
