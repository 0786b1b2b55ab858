"""A cell's time limit counts its own time, not the time other processes held the CPU (``forked.WALL_CAP``).

Each test pins the kernel and two busy competitors to one CPU, so the kernel really waits on the run
queue (and, past ``LONG_CELL_S``, is reniced and waits longer): with nbclient's wall-clock limit these
cells would time out; a cell that sleeps still does, and every cell still ends by a wall-clock bound.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from grader.engine.kernels.forked import WALL_CAP

from .conftest import Session

CPU_WORK = (
    "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\nprint('done')"
)
GRACE = 4.0


@pytest.fixture
def crowded(session: Session) -> Iterator[Session]:
    """``session``'s kernel on one CPU shared with two never-ending loops: a third of it, and after
    ``LONG_CELL_S`` (reniced) about a twentieth."""
    cpu = min(os.sched_getaffinity(0))
    competitors = [
        subprocess.Popen(
            [sys.executable, "-c", "while True:\n    pass"],
            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
            start_new_session=True,  # a scheduler autogroup each, where the machine's kernel has them
        )
        for _ in range(2)
    ]
    try:
        os.sched_setaffinity(session.kernel.pid, {cpu})
        time.sleep(0.3)  # the competitors are running
        yield session
    finally:
        for competitor in competitors:
            competitor.kill()
            competitor.wait()


def test_a_cell_held_back_by_other_processes_keeps_its_whole_limit(crowded: Session) -> None:
    started = time.monotonic()
    run = crowded.run(CPU_WORK.format(seconds=0.5), timeout=1)
    wall = time.monotonic() - started
    assert not run.timed_out and run.error is None and run.outputs[0]["text"] == "done\n"
    assert wall > 1, f"the kernel was not held back ({wall:.2f} s): this test shows nothing"
    assert crowded.kernel.held_back_s() > 0.5


def test_a_sleeping_cell_is_not_held_back_and_times_out_on_time(crowded: Session) -> None:
    started = time.monotonic()
    run = crowded.run("import time\ntime.sleep(60)", timeout=1)
    assert run.timed_out and not run.wall_limited
    assert run.error is not None and run.error[0] == "KeyboardInterrupt"
    assert time.monotonic() - started < 1 + GRACE


def test_a_held_back_cell_still_ends_at_its_wall_clock_bound(crowded: Session) -> None:
    started = time.monotonic()
    run = crowded.kernel.execute("while True:\n    pass", 30, GRACE, wall_limit=1.5)
    assert run.timed_out and run.wall_limited
    assert 1.5 <= time.monotonic() - started < 1.5 + GRACE


def test_without_a_wall_clock_bound_a_cell_ends_by_wall_cap_times_its_limit(crowded: Session) -> None:
    timeout = 0.3
    started = time.monotonic()
    run = crowded.run("while True:\n    pass", timeout=timeout)
    wall = time.monotonic() - started
    assert run.timed_out and not run.died
    assert wall < WALL_CAP * timeout + GRACE
    assert crowded.run("print('alive')").outputs[0]["text"] == "alive\n"
