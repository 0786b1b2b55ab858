"""The benchmark keeps working: a tiny run prints the full table and finds the scores identical."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "throughput.py"


def test_a_tiny_benchmark_run_prints_the_table_and_identical_scores(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    # 8 s: stock nbgrader's `import torch` cell alone takes ~2.5 s on a slow machine, and a cell past its limit
    # that then misses the IOPub deadline fails the whole notebook.
    args = ["-n", "4", "--cell-timeout", "8", "--latency-samples", "2", "--quick", "--json", str(figures)]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--assignment", "ps2_autograd", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for row in (
        "| stock nbgrader autograde, cold ",
        "| grader autograde, cold (start-up included) ",
        "| grader autograde, grader serve running ",
        "| warm engine (as in the service) ",
        "| physical limit (fork, exec, one transaction) ",
        "latency p50 / p95, one submission (s)",
        "peak RSS, largest process",
        "peak memory, all processes (PSS)",
    ):
        assert row in proc.stdout
    assert "| throughput x stock | CPU x limit |" in proc.stdout
    assert "CPU: each run's whole process tree, from " in proc.stdout
    assert "scores identical: yes (52 test cells of 4 submissions" in proc.stdout
    data = json.loads(figures.read_text())
    assert data["identical"] is True and data["n"] == 4
    assert data["engine"]["seconds"] > 0 and data["stock"]["seconds"] > 0
    assert data["warm"]["cpu_seconds"] > 0 and data["limit"]["cpu_seconds"] > 0
    assert data["borrowed"]["seconds"] > 0 and data["borrowed"]["cpu_seconds"] > 0
    # the limit does less than the warm engine with the same cells: it cannot cost more CPU than it, by far
    assert data["limit"]["cpu_seconds"] < 2 * data["warm"]["cpu_seconds"]


def test_where_scores_differ_the_benchmark_shows_what_stock_said_while_grading_that_student() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import throughput
    finally:
        sys.path.remove(str(SCRIPT.parent))
    log = "\n".join(
        [
            "[AutogradeApp | INFO] Autograding submitted/s001/ps1/ps1.ipynb",
            "[AutogradeApp | INFO] Autograding submitted/s000-alt/ps1/ps1.ipynb",
            "[AutogradeApp | ERROR] Timeout waiting for execute reply (5s).",
            "Traceback (most recent call last):",
            "[AutogradeApp | INFO] Autograding submitted/s002/ps1/ps1.ipynb",
        ]
    )
    students = ["s000-alt", "s001", "s002"]
    assert throughput.said_of(log, "s000-alt", students) == log.splitlines()[1:4]
    assert throughput.said_of(log, "s002", students) == log.splitlines()[4:]
    assert throughput.said_of(log, "s009", students) == []
