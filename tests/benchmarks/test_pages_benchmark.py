"""The page-render benchmark keeps working: a tiny course, every page timed, stock nbgrader timed beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pages.py"


def test_a_tiny_page_benchmark_times_every_page_and_stock_nbgrader(tmp_path: Path) -> None:
    figures = tmp_path / "pages.json"
    args = ["--students", "4", "--attempts", "2", "--repeat", "1", "--json", str(figures)]
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "4 students x 4 assignments x 2 attempts = 32 graded submissions" in proc.stdout
    data = json.loads(figures.read_text())
    pages = data["pages"]
    for label in (
        "gradebook",
        "assignment (ps2_autograd)",
        "queue",
        "student's own page",
        "Canvas CSV",
        "stock: nbgrader export (command)",
        "stock: formgrader students data (NbGraderAPI.get_students)",
    ):
        assert pages[label]["median_s"] > 0, label
        assert f"| {label}" in proc.stdout
    assert pages["gradebook"]["bytes"] > 1000
