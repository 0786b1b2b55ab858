"""Waiting for a submission's grade: a status request that answers the moment the grade is recorded.

A client used to ask for a submission's status every half second (``grader submit``), or every
5 ms (the benchmark): on average a quarter of a second after the grade was recorded, and each
request took the service's CPU from the grading it was waiting for.  ``GET
/api/submissions/{id}?wait=S`` instead waits, up to ``S`` seconds, for the submission to be
final (``graded`` or ``failed``) and then answers as usual.

The scheme:

- ``Finished`` lives on the ``Store``.  The store's writes that make a submission final
  (``finish_job``, ``fail_job`` without retry, ``leases.fail_exhausted``) call ``notify`` after
  their transaction commits; ``notify`` wakes this process's waiters for that submission, from
  any thread, through their event loops.
- ``Finished.until_final`` registers its waiter *before* reading the status, so a grade recorded between
  the read and the wait still wakes it.
- Grades recorded by another process (``grader worker``s of a scaled-out service) notify nobody
  here, so a waiter also reads the status again, every ``RECHECK_S`` when the service has a
  broker (one small SELECT in the service instead of one HTTP request from the client), and every
  ``LOCAL_RECHECK_S`` otherwise, only as a safety net: there this process records every grade.
- The wait holds no thread: it is a coroutine; only the status reads run in a thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

FINAL = ("graded", "failed")
RECHECK_S = 0.25  # how often a waiter reads the status again when grades are recorded by other processes
LOCAL_RECHECK_S = 2.0  # ... and when this process records them (and notifies)
MAX_WAIT_S = 60.0  # the longest wait a request may ask for


class Finished:
    """This process's requests waiting for submissions to become final, by submission id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def notify(self, submission_id: int) -> None:
        """``submission_id`` is final now (its transaction has committed): wake whoever waits for it."""
        with self._lock:
            waiting = self._waiters.pop(submission_id, [])
        for loop, event in waiting:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that request's event loop has closed: nobody is left to wake
                pass

    def _register(self, submission_id: int) -> asyncio.Event:
        event = asyncio.Event()
        with self._lock:
            self._waiters.setdefault(submission_id, []).append((asyncio.get_running_loop(), event))
        return event

    def _unregister(self, submission_id: int, event: asyncio.Event) -> None:
        with self._lock:
            left = [w for w in self._waiters.get(submission_id, []) if w[1] is not event]
            if left:
                self._waiters[submission_id] = left
            else:
                self._waiters.pop(submission_id, None)

    async def until_final(
        self,
        submission_id: int,
        status: Callable[[], str | None],
        seconds: float,
        recorded_elsewhere: bool = True,
    ) -> None:
        """Return once ``status()`` (read in a thread) is final or missing, or after ``seconds``.

        ``recorded_elsewhere``: grades may be recorded by other processes (a broker's workers), which
        notify nobody here; the status is then read again more often."""
        recheck = RECHECK_S if recorded_elsewhere else LOCAL_RECHECK_S
        deadline = time.monotonic() + min(max(seconds, 0.0), MAX_WAIT_S)
        while True:
            event = self._register(submission_id)
            try:
                current = await asyncio.to_thread(status)
                if current is None or current in FINAL:
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                try:
                    await asyncio.wait_for(event.wait(), timeout=min(left, recheck))
                except TimeoutError:
                    pass
            finally:
                self._unregister(submission_id, event)

    def waiting(self) -> int:
        """How many requests are waiting now (for tests and the queue page)."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())


def parse_wait(raw: str | None) -> float:
    """A request's ``?wait=S``: seconds from 0 to ``MAX_WAIT_S`` (absent or empty: 0); else the sentence why not."""
    from ...errors import StudentError

    if raw is None or raw == "":
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_WAIT_S:  # also NaN
        raise StudentError(f"wait must be a number of seconds from 0 to {MAX_WAIT_S:g}, not {raw[:40]!r}")
    return seconds
