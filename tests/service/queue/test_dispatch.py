"""The dispatcher's loop: one sweep per burst gap while uploads keep waking it, and none lost after a quiet spell."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from pathlib import Path

from grader.service.config import ServiceConfig
from grader.service.queue.dispatch import BURST_GAP_S, Dispatcher
from grader.service.records.store import Store


class Counting(Dispatcher):
    """The real loop; its sweep only records when it ran (the sweep itself is tested against real brokers)."""

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        super().__init__(store, config)
        self.sweeps: list[float] = []
        self.swept = threading.Event()

    def sweep(self) -> int:
        self.sweeps.append(time.monotonic())
        self.swept.set()
        return 0


def _dispatcher(tmp_path: Path) -> Counting:
    with socket.socket() as probe:  # nothing is published: no broker needed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db_url = f"sqlite:///{tmp_path / 'service.db'}"
    config = ServiceConfig(course_root=tmp_path, db_url=db_url, broker_url=f"redis://127.0.0.1:{port}/0")
    return Counting(Store(db_url, create=True), config)


def test_a_burst_of_uploads_is_swept_once_per_gap_not_once_per_upload(tmp_path: Path) -> None:
    dispatcher = _dispatcher(tmp_path)
    dispatcher.start()
    try:
        assert dispatcher.swept.wait(10)  # the sweep at start
        first = len(dispatcher.sweeps)
        end = time.monotonic() + 1.0
        notified = 0
        while time.monotonic() < end:  # uploads every millisecond for a second
            dispatcher.notify()
            notified += 1
            time.sleep(0.001)
        waited = time.monotonic() + 10
        while dispatcher.sweeps[-1] < end - BURST_GAP_S and time.monotonic() < waited:
            time.sleep(0.01)  # the last uploads' sweep: within a gap of them, later on a loaded machine
    finally:
        dispatcher.stop()
    during = dispatcher.sweeps[first:]
    assert notified > 200
    assert 1 <= len(during) <= 1.0 / BURST_GAP_S + 3  # about one per gap; without it, about one per upload
    gaps = [b - a for a, b in itertools.pairwise(during)]
    assert all(gap >= BURST_GAP_S * 0.9 for gap in gaps), gaps
    assert during[-1] >= end - BURST_GAP_S  # the last uploads were swept too


def test_an_upload_after_a_quiet_spell_is_swept(tmp_path: Path) -> None:
    dispatcher = _dispatcher(tmp_path)
    dispatcher.start()
    try:
        assert dispatcher.swept.wait(10)
        time.sleep(0.5)  # quiet: longer than the gap since the last sweep
        dispatcher.swept.clear()
        woken = time.monotonic()
        dispatcher.notify()
        assert dispatcher.swept.wait(10)  # the wake-up is not lost
        assert dispatcher.sweeps[-1] >= woken
    finally:
        dispatcher.stop()
