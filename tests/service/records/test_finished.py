"""``records.finished``: a waiting request wakes when its submission becomes final in this process, reads
the status again for grades other processes record, and gives up after its time."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from grader.service.records import finished
from grader.service.records.finished import Finished


def test_a_notify_from_another_thread_wakes_the_waiter_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    board = Finished()
    status = {"now": "running"}

    async def scenario() -> float:
        def record_later() -> None:
            time.sleep(0.3)
            status["now"] = "graded"
            board.notify(7)

        threading.Thread(target=record_later).start()
        started = time.monotonic()
        await board.until_final(7, lambda: status["now"], 30)
        return time.monotonic() - started

    monkeypatch.setattr(finished, "RECHECK_S", 10.0)  # only the notify can wake it in time
    waited = asyncio.run(scenario())
    assert 0.25 < waited < 2, waited
    assert board.waiting() == 0


def test_a_grade_recorded_elsewhere_is_seen_by_reading_again() -> None:
    board = Finished()  # nobody notifies: a grader worker in another process recorded it
    reads: list[float] = []

    def status() -> str:
        reads.append(time.monotonic())
        return "graded" if len(reads) >= 3 else "queued"

    started = time.monotonic()
    asyncio.run(board.until_final(8, status, 30))
    assert len(reads) == 3 and time.monotonic() - started < 3
    assert board.waiting() == 0


def test_the_wait_ends_after_its_seconds_and_for_a_missing_submission() -> None:
    board = Finished()
    started = time.monotonic()
    asyncio.run(board.until_final(9, lambda: "running", 0.6))
    assert 0.5 < time.monotonic() - started < 2
    started = time.monotonic()
    asyncio.run(board.until_final(10, lambda: None, 30))
    assert time.monotonic() - started < 1
    assert board.waiting() == 0


def test_a_notify_races_the_first_read_and_still_wakes_the_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The waiter registers before it reads: a grade recorded between the read and the wait is not missed."""
    board = Finished()
    status = {"now": "running"}

    def read() -> str:
        seen = status["now"]
        status["now"] = "graded"  # recorded right after this read ...
        board.notify(11)  # ... and notified before the waiter starts waiting
        return seen

    monkeypatch.setattr(finished, "RECHECK_S", 10.0)
    started = time.monotonic()
    asyncio.run(board.until_final(11, read, 30))
    assert time.monotonic() - started < 2


def test_without_a_broker_the_status_is_read_again_only_as_a_safety_net(monkeypatch: pytest.MonkeyPatch) -> None:
    """Locally this process records (and notifies) every grade: no read every 0.25 s per waiting request."""
    monkeypatch.setattr(finished, "RECHECK_S", 0.05)
    monkeypatch.setattr(finished, "LOCAL_RECHECK_S", 1.0)
    reads: list[float] = []

    def status() -> str:
        reads.append(time.monotonic())
        return "graded" if len(reads) >= 2 else "running"

    asyncio.run(Finished().until_final(12, status, 30, recorded_elsewhere=False))
    assert len(reads) == 2 and reads[1] - reads[0] >= 0.9
