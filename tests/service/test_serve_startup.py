"""What ``grader serve`` says when it starts: a port in use stops it with one sentence before it announces
anything, the banner's "Try it" line runs as printed and shows a real grade, and ``workers`` defaults to
the CPUs the service may run on. The real command, in a subprocess, on a copy of the course."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from grader import course
from grader.service import config as service_config
from grader.service import serve

from .conftest import Server, free_port, launch, wait_ready

GRADER = str(Path(sys.executable).parent / "grader")
EXAMPLE = course.REPO_ROOT / "tests" / "fixtures" / "submissions" / "ps2_autograd" / "grad-not-zeroed.ipynb"


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("listening", [True, False], ids=["listening", "bound"])
def test_a_busy_port_stops_serve_with_one_sentence_before_it_announces_anything(
    tmp_path: Path, listening: bool
) -> None:
    root = course.copy_course(tmp_path / "course")
    before = files(root)
    with socket.socket() as holder:  # another program's socket on the port
        holder.bind(("127.0.0.1", 0))
        if listening:
            holder.listen()
        port = holder.getsockname()[1]
        proc = subprocess.run(
            [GRADER, "serve", "--port", str(port)],
            cwd=root,
            env=dict(os.environ, GRADER_COURSE_ROOT=str(root)),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    said = re.fullmatch(
        rf"grader: port {port} on 127\.0\.0\.1 is in use \(another `grader serve`\?\): stop what holds it, "
        r"or pick another port with `--port (\d+)`",
        last,
    )
    assert said, proc.stderr
    assert int(said.group(1)) > port
    for banner in ("http://", "Grading service for", "Tokens", "Try it", "Created", "Registering", "Uvicorn"):
        assert banner not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 2  # which course, then the sentence: no traceback
    assert files(root) == before  # no gradebook, tables, secret or tokens for a service that never ran


def test_the_try_it_line_runs_as_printed_and_shows_a_real_grade_with_feedback(tmp_path: Path) -> None:
    """Started as a newcomer does, from the course's folder with the virtualenv inside it."""
    root = course.copy_course(tmp_path / "course")
    (root / ".venv").symlink_to(Path(sys.executable).parent.parent)
    port = free_port()
    log = tmp_path / "serve.log"
    server = Server(root, f"http://127.0.0.1:{port}", log=log)
    server.process = launch([".venv/bin/grader", "serve", "--port", str(port)], root, log)
    try:
        wait_ready(server.process, server._healthy, log, "the service")
        printed = log.read_text()
        demo = re.findall(r"^  demo-student: (\S+)$", printed, re.MULTILINE)
        assert len(demo) == 1, printed
        assert f"Grading service for {', '.join(course.assignments(root))}: {server.url}\n" in printed
        assert f"    workers: {len(os.sched_getaffinity(0))}    " in printed
        submit = f".venv/bin/grader submit {EXAMPLE} --assignment ps2_autograd"
        line = f"GRADER_URL={server.url} GRADER_TOKEN={demo[0]} {submit}"
        assert (
            f"\nTry it (from a second terminal in this directory: a bundled example, graded with feedback):\n  {line}\n"
        ) in printed
        env = {k: v for k, v in os.environ.items() if k not in ("GRADER_URL", "GRADER_TOKEN", "GRADER_COURSE_ROOT")}
        tried = subprocess.run(["bash", "-c", line], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.kill(signal.SIGTERM)
    assert tried.returncode == 0, tried.stdout + tried.stderr
    score = re.search(r"^Score: ([\d.]+) / ([\d.]+)$", tried.stdout, re.MULTILINE)
    assert score, tried.stdout
    assert 0 < float(score.group(1)) < float(score.group(2)), tried.stdout
    assert "  FAIL test_gradient_of_repeat: 0/" in tried.stdout
    assert "Likely cause [grad-not-zeroed]: gradients accumulate across backward() calls" in tried.stdout


def test_from_the_repository_the_try_it_line_names_both_paths_relative_to_it() -> None:
    cfg = service_config.load(course.REPO_ROOT)
    grader = os.path.relpath(Path(sys.executable).parent / "grader", course.REPO_ROOT)  # .venv/bin/grader
    assert serve.try_submit(cfg, cwd=course.REPO_ROOT) == (
        f"{grader} submit tests/fixtures/submissions/ps2_autograd/grad-not-zeroed.ipynb --assignment ps2_autograd"
    )


def test_a_course_without_the_bundled_example_tries_its_first_release_notebook(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "my course")
    for name in course.assignments(root)[1:]:  # a course of one assignment, ps1_tensors
        shutil.rmtree(root / "source" / name)
    cfg = service_config.load(root)
    assert serve.try_submit(cfg, cwd=root) == (
        f"{GRADER} submit release/ps1_tensors/ps1_tensors.ipynb --assignment ps1_tensors"
    )
    elsewhere = serve.try_submit(cfg, cwd=tmp_path / "elsewhere")
    assert elsewhere == f"{GRADER} submit '{root}/release/ps1_tensors/ps1_tensors.ipynb' --assignment ps1_tensors"


def test_workers_default_to_the_cpus_the_service_may_run_on_and_a_setting_wins(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    assert service_config.load(root).workers == len(os.sched_getaffinity(0))
    pinned = (  # the service pinned to one CPU (taskset, a container's cpuset): one kernel at a time
        "import os; from pathlib import Path; from grader.service import config; "
        f"os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}}); print(config.load(Path({str(root)!r})).workers)"
    )
    one_cpu = subprocess.run(
        [sys.executable, "-c", pinned],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert one_cpu.stdout == "1\n", one_cpu.stderr
    with (root / "nbgrader_config.py").open("a") as config:
        config.write("\nc.GraderService.workers = 3\n")
    assert service_config.load(root).workers == 3
    assert service_config.load(root, workers=5).workers == 5  # --workers
