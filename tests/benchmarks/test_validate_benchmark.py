"""The validation benchmark keeps working: a one-task course, grader validate timed, stock nbgrader beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.authoring import minicourse

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "validate.py"


def test_a_tiny_validation_benchmark_times_grader_validate_and_stock_nbgrader(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    fixtures = root / "source" / minicourse.NAME / "fixtures"
    fixtures.mkdir()
    (fixtures / "as-written.toml").write_text(
        "why = 'the instructor's own code'\nfull_marks = true\n".replace("'s", "s")
    )
    figures = tmp_path / "validate.json"
    args = ["--course", str(root), "--stock-sample", "1", "--json", str(figures)]
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    row = json.loads(figures.read_text())["rows"][minicourse.NAME]
    assert row["validate"]["exit"] == 0 and row["validate"]["survivors"] == 0
    assert row["validate"]["fixtures"] == 1 and row["validate"]["mutants"] > 5
    assert row["stock"]["notebooks"] == 1 and row["stock"]["per_notebook_s"] > 0
    assert "| assignment | fixtures | mutants | notebooks graded | grader validate (s) |" in proc.stdout
    assert f"| {minicourse.NAME} | 1 | {row['validate']['mutants']} |" in proc.stdout
