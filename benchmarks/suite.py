"""Where the test suite's time goes: the slowest tests and test files, from pytest's JUnit report.

    .venv/bin/python benchmarks/suite.py                      # runs the suite (as `.ci/run` does), then the table
    .venv/bin/python benchmarks/suite.py --junit report.xml   # the table of a run already made
    .venv/bin/python benchmarks/suite.py --top 15 -- -k fairness   # arguments after -- go to pytest

A test's seconds are its set-up, call and tear-down together (pytest's ``junit_duration_report = total``), so a
module-scoped fixture (a graded course, a running service) counts in the first test that uses it. The suite runs
on pytest-xdist's workers side by side, so the sum of the seconds is about the wall time times the workers.
``docs/reference/tests.md`` quotes this table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timings(report: Path) -> tuple[list[tuple[float, str]], Counter[str]]:
    """(seconds, test id) of every test, slowest first, and the seconds of each test file."""
    tests: list[tuple[float, str]] = []
    files: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        seconds = float(case.get("time") or 0)
        path = (case.get("classname") or "").replace(".", "/") + ".py"
        tests.append((seconds, f"{path}::{case.get('name')}"))
        files[path] += seconds
    tests.sort(reverse=True)
    return tests, files


def table(report: Path, top: int) -> str:
    tests, files = timings(report)
    total = sum(files.values())
    lines = [
        f"{len(tests)} tests, {total:,.0f} s of test time in all",
        "",
        f"| slowest {top} test files | s | share |",
        "|---|---:|---:|",
        *(f"| `{path}` | {seconds:,.1f} | {seconds / total:.1%} |" for path, seconds in files.most_common(top)),
        "",
        f"| slowest {top} tests | s |",
        "|---|---:|",
        *(f"| `{name}` | {seconds:,.1f} |" for seconds, name in tests[:top]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--junit", type=Path, help="a JUnit report of a run already made (pytest --junitxml)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = parser.parse_args(argv)
    if args.junit is not None:
        sys.stdout.write(table(args.junit, args.top))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        start = time.monotonic()
        env = dict(os.environ, GRADER_REQUIRE_BROWSER=os.environ.get("GRADER_REQUIRE_BROWSER", "1"))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}", *args.pytest_args],
            cwd=REPO,
            env=env,
            check=False,
        )
        print(f"\npytest exited {proc.returncode} after {time.monotonic() - start:,.0f} s of wall time\n")
        if report.exists():
            sys.stdout.write(table(report, args.top))
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
