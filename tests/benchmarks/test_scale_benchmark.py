"""The scale-out benchmark keeps working: a small burst with 1 and 2 workers, stock nbgrader beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


def test_a_small_burst_prints_throughput_latency_and_speed_up(tmp_path: Path) -> None:
    figures = tmp_path / "scale.json"
    args = ["-n", "12", "--stock", "1", "--sql-jobs", "2", "--json", str(figures)]
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "12 submissions of ps1_tensors" in proc.stdout
    assert "| workers | submissions | wall s | graded/s | speed-up |" in proc.stdout
    data = json.loads(figures.read_text())
    runs = {run["workers"]: run for run in data["runs"]}
    assert set(runs) == {1, 2}
    for run in runs.values():
        assert run["submissions"] == 12 and run["failed"] == 0
        assert 0 < run["p50"] <= run["p95"] <= run["p99"]
        assert run["status_requests"] > 0 and run["harness_cpu_s"] > 0
    assert data["stock_s_per_submission"] > 0
    assert "| stock `nbgrader autograde`, 1 of the same notebooks |" in proc.stdout
    assert "SQL per job on PostgreSQL (a worker's pipeline in process, mean of 2 jobs):" in proc.stdout
    assert data["sql"]["jobs"] == 2 and data["sql"]["statements"]["execution"] > 0
    assert sum(data["sql"]["commits"].values()) == 3  # intake, then a worker's two: the claim and the job
