"""The scale-out benchmark keeps working: a small burst with 1 and 2 workers, stock nbgrader beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


def test_a_small_burst_prints_throughput_latency_and_speed_up(tmp_path: Path) -> None:
    figures = tmp_path / "scale.json"
    args = ["-n", "6", "--stock", "1", "--sql-jobs", "2", "--json", str(figures)]
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "6 submissions of ps1_tensors" in proc.stdout
    assert "| workers | submissions | wall s | graded/s | speed-up |" in proc.stdout
    data = json.loads(figures.read_text())
    runs = {run["workers"]: run for run in data["runs"]}
    assert set(runs) == {1, 2}
    for run in runs.values():
        assert run["submissions"] == 6 and run["failed"] == 0
        assert 0 < run["p50"] <= run["p95"] <= run["p99"]
        assert run["status_requests"] > 0 and run["harness_cpu_s"] > 0
        parts = run["parts_cpu_s"]
        assert set(parts) == {"workers", "serve", "PostgreSQL", "Redis", "clients", "machine"}
        assert all(parts[name] > 0 for name in ("workers", "serve", "PostgreSQL", "clients")), parts
        assert parts["workers"] > parts["serve"], parts  # the workers grade 6 notebooks; serve only takes them in
        assert abs(sum(v for k, v in parts.items() if k != "machine") - parts["machine"]) < 1e-6
    assert data["stock_s_per_submission"] > 0
    assert "| stock `nbgrader autograde`, 1 of the same notebooks |" in proc.stdout
    assert "| CPU during the burst: s (ms per submission, share) | 1 worker(s) | 2 worker(s) |" in proc.stdout
    assert "| serve | " in proc.stdout and "| PostgreSQL | " in proc.stdout
    assert (
        "Round trips to PostgreSQL per job (a worker's pipeline in process, mean of 2 jobs, from the server's log):"
        in proc.stdout
    )
    assert "| stage | statements | BEGIN | COMMIT | ROLLBACK | pings | round trips |" in proc.stdout
    sql = data["sql"]
    assert sql["jobs"] == 2 and sql["statements"]["execution"] > 0
    assert sum(sql["commits"].values()) == sum(sql["begins"].values()) == 3  # intake; a worker's claim and job
    assert sum(sql["rollbacks"].values()) == 0  # reads send neither BEGIN nor ROLLBACK (records.pooling)
