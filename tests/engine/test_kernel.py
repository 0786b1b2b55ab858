"""Forked kernels: fresh, isolated, deterministic, interruptible, and killed when they must be."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from grader.engine.kernels.forked import LONG_CELL_NICE, LONG_CELL_S
from grader.engine.kernels.kernel import Zygote

from .conftest import Session, fresh, stdout
from .processes import gone


def test_each_kernel_starts_fresh(session: Session, zygote: Zygote) -> None:
    session.run("import torch\nSECRET = 42\ntorch.set_default_dtype(torch.float64)")
    with fresh(zygote) as other:
        run = other.run("import torch\nprint('SECRET' in globals(), torch.get_default_dtype())")
    assert stdout(run) == "False torch.float32\n"


def test_torch_runs_single_threaded_and_autograd_works_after_fork(session: Session) -> None:
    run = session.run(
        "import torch\nx = torch.ones(3, requires_grad=True)\n(x * x).sum().backward()\n"
        "print(torch.get_num_threads(), x.grad.tolist())"
    )
    assert stdout(run) == "1 [2.0, 2.0, 2.0]\n"


def test_every_kernel_draws_the_same_random_numbers_seeded_with_zero(session: Session, zygote: Zygote) -> None:
    code = "import random, numpy, torch\nprint(torch.rand(3).tolist(), random.random(), numpy.random.rand())"
    seeded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import random, numpy, torch\ntorch.manual_seed(0); random.seed(0); numpy.random.seed(0)\n" + code,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        check=True,
    ).stdout
    assert stdout(session.run(code)) == seeded
    with fresh(zygote) as other:
        assert stdout(other.run(code)) == seeded


def test_the_kernel_runs_in_a_private_directory_with_a_clean_environment(session: Session) -> None:
    run = session.run(
        "import os\nprint(os.getcwd(), os.listdir('.'), os.environ['HOME'], 'GRADER_DB_URL' in os.environ)"
    )
    assert stdout(run) == f"{session.workdir} [] {session.home} False\n"


def test_a_cell_past_its_timeout_is_interrupted_and_the_kernel_lives_on(session: Session) -> None:
    session.run("x = 1")
    started, held = time.monotonic(), session.kernel.held_back_s()
    run = session.run("while True:\n    pass", timeout=1)
    # its own time, not what other processes on a busy machine took of the CPU (test_held_back.py)
    assert time.monotonic() - started - (session.kernel.held_back_s() - held) < 4
    assert run.timed_out and not run.died
    assert run.error is not None and run.error[0] == "KeyboardInterrupt"
    assert stdout(session.run("print(x)")) == "1\n"


def test_a_long_cell_yields_the_cpu_to_short_ones_and_short_cells_keep_their_priority(session: Session) -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert session.run("import os\nprint(os.nice(0))").outputs[0]["text"] == f"{own}\n"
    run = session.run(
        "import os, subprocess, time\n"
        "helper = subprocess.Popen(['sleep', '30'])\n"
        "end = time.monotonic() + LONG\n"
        "while time.monotonic() < end:\n    pass\n"
        "group = 'NICE'\n"
        "if os.path.exists('/proc/self/autogroup'):\n    group = open('/proc/self/autogroup').read().split()[-1]\n"
        "print(os.nice(0), int(open(f'/proc/{helper.pid}/stat').read().split(')')[1].split()[16]), group)\n"
        "helper.kill()".replace("LONG", str(LONG_CELL_S + 0.5)).replace("NICE", str(LONG_CELL_NICE))
    )
    # the kernel, what it started, and its scheduler autogroup (where the machine's kernel has them)
    assert stdout(run) == f"{own + LONG_CELL_NICE} {own + LONG_CELL_NICE} {LONG_CELL_NICE}\n"


def test_a_cell_that_ignores_the_interrupt_is_killed(session: Session) -> None:
    code = "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass"
    run = session.run(code, timeout=1, grace=1)
    assert run.timed_out and run.died
    assert session.kernel.dead


def test_a_kernel_that_exits_is_reported_dead(session: Session) -> None:
    assert session.run("print('before')").error is None
    run = session.run("import os\nos._exit(3)")
    assert run.died and not run.timed_out


def test_processes_started_by_the_kernel_are_killed_with_it(session: Session) -> None:
    run = session.run("import subprocess\np = subprocess.Popen(['sleep', '300'])\nprint(p.pid)")
    pid = int(stdout(run))
    session.kernel.close()
    assert gone(pid)


def test_memory_limit_turns_a_huge_allocation_into_an_error(zygote: Zygote) -> None:
    with fresh(zygote, memory_bytes=8 * 1024**3) as limited:
        run = limited.run("import torch\nx = torch.empty(4 * 1024**3, dtype=torch.float32)")
    assert run.error is not None and "memory" in (run.error[0] + run.error[1]).lower()


def test_a_dead_zygote_is_restarted_for_the_next_kernel(zygote: Zygote) -> None:
    pid = zygote.pid
    assert pid is not None
    os.kill(pid, 9)
    time.sleep(0.2)
    with fresh(zygote) as kernel:
        assert kernel.run("1").error is None
    assert zygote.pid != pid


def test_a_zygote_never_started_leaves_no_folder_once_dropped() -> None:
    """An engine built and never started or closed (a start-up that failed before) leaves nothing in $TMPDIR."""
    import gc
    from pathlib import Path

    folder = Path(Zygote()._dir)  # the object is dropped at once
    gc.collect()
    assert not folder.exists()


def test_a_forked_child_leaves_its_parents_zygote_folder_alone() -> None:
    """A process forked from the one that made the zygote (a prefork worker, a test's child) may run the
    folder's clean-up as it exits: the folder, socket and log are the parent's and stay."""
    zygote = Zygote()
    try:
        pid = os.fork()
        if pid == 0:
            zygote._remove_folder()  # what the child's exit (or dropping its copy) would run
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.path.isdir(zygote._dir)
    finally:
        zygote.close()
    assert not os.path.exists(zygote._dir)
