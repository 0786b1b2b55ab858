"""The similarity benchmark keeps working: a small class, grader similarity and copydetect timed side by side."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "similarity.py"


def test_a_small_similarity_benchmark_times_both_tools(tmp_path: Path) -> None:
    figures = tmp_path / "similarity.json"
    args = ["--students", "24", "--json", str(figures)]
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    row = json.loads(figures.read_text())
    assert row["students"] == 24 and row["pairs"] == 276
    assert row["grader_s"] > 0 and row["copydetect_s"] > 0
    assert row["grader_first_line"].startswith("ps3_regression: 24 submissions, ")
    assert "| grader similarity ps3_regression --submitted |" in proc.stdout
    assert "| copydetect (python -m copydetect, same code and boilerplate) |" in proc.stdout
