"""The zygote's memory goes into huge pages once it has forked enough kernels to repay the cost, not before."""

from __future__ import annotations

import re
import time

from grader.engine.forking.memory import HUGE_PAGES_AFTER, HugePages
from grader.engine.kernels.kernel import Zygote

from .conftest import fresh, stdout


def _moments(policy: HugePages, idle: list[bool]) -> list[int]:
    return [policy.forks for busy_or_idle in idle if policy.forked(busy_or_idle)]


def test_a_zygote_that_forks_a_few_kernels_never_collapses() -> None:
    assert _moments(HugePages(), [True] * (HUGE_PAGES_AFTER - 1)) == []


def test_it_collapses_once_at_the_first_idle_moment_after_enough_forks() -> None:
    idle = [True] * (HUGE_PAGES_AFTER - 1) + [False] * 10 + [True] * 500
    assert _moments(HugePages(), idle) == [HUGE_PAGES_AFTER + 10]


def test_a_zygote_never_idle_collapses_at_four_times_as_many_forks() -> None:
    assert _moments(HugePages(), [False] * 1000) == [4 * HUGE_PAGES_AFTER]


def test_after_the_collapse_kernels_still_run_torch_and_the_log_says_how_much_moved() -> None:
    with Zygote() as zygote:
        for _ in range(HUGE_PAGES_AFTER - 1):  # the probe at start-up was the first fork
            with fresh(zygote):
                pass
        deadline = time.monotonic() + 30
        while "huge pages after" not in (log := open(zygote.log_path).read()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert re.search(rf": \d+ MiB in huge pages after {HUGE_PAGES_AFTER} kernels\n", log), log[-2000:]
        with fresh(zygote) as session:
            run = session.run(
                "import torch\nx = torch.ones(3, requires_grad=True)\n(x * x).sum().backward()\nprint(x.grad.tolist())"
            )
        assert stdout(run) == "[2.0, 2.0, 2.0]\n"
