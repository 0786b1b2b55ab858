"""``benchmarks/suite.py``: the slowest tests and test files of a run, from its JUnit report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suite.py"

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.engine.test_a" name="test_slow" time="30.5"/>
<testcase classname="tests.engine.test_a" name="test_quick" time="0.5"/>
<testcase classname="tests.service.test_b" name="test_middling[x]" time="9.0"/>
</testsuite></testsuites>
"""


def test_the_table_names_the_slowest_files_and_tests_with_their_seconds(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--junit", str(report), "--top", "2"], capture_output=True, text=True, check=True
    )
    assert proc.stdout == (
        "3 tests, 40 s of test time in all\n"
        "\n"
        "| slowest 2 test files | s | share |\n"
        "|---|---:|---:|\n"
        "| `tests/engine/test_a.py` | 31.0 | 77.5% |\n"
        "| `tests/service/test_b.py` | 9.0 | 22.5% |\n"
        "\n"
        "| slowest 2 tests | s |\n"
        "|---|---:|\n"
        "| `tests/engine/test_a.py::test_slow` | 30.5 |\n"
        "| `tests/service/test_b.py::test_middling[x]` | 9.0 |\n"
    )
