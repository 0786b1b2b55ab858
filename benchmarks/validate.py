"""How long ``grader validate`` takes per assignment, beside stock ``nbgrader autograde`` on the same notebooks.

    .venv/bin/python benchmarks/validate.py                      # every assignment of this course
    .venv/bin/python benchmarks/validate.py --assignment ps2_autograd --stock-sample 10
    .venv/bin/python benchmarks/validate.py --course PATH --stock-sample 2   # what the test runs

For each assignment: the real command, cold (``grader validate A`` in a fresh process on a fresh copy of
the course: nbgrader's release, the engine's start, grading every fixture, mutant and probe, the
equivalence runs), its wall time and each step's. Beside it, in the same run, stock ``nbgrader
autograde`` grading ``--stock-sample`` of the same fixture notebooks, cold too, in its own copy: its
seconds per notebook, and what it would take for as many notebooks as ``grader validate`` graded
(the per-notebook time times that count: an estimate, marked as one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader import course  # noqa: E402
from grader.authoring import fixtures as course_fixtures  # noqa: E402
from grader.authoring import grading  # noqa: E402


def commit() -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "grader"], capture_output=True, text=True
    )
    return proc.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def run_validate(source: Path, assignment: str, work: Path) -> dict[str, object]:
    root = course.copy_course(work / "validate", source)
    report = work / "report.json"
    command = [str(Path(sys.executable).parent / "grader"), "validate", assignment, "--course", str(root)]
    started = time.monotonic()
    proc = subprocess.run([*command, "--json", str(report)], capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if not report.exists():
        raise SystemExit(
            f"grader validate {assignment} wrote no report (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    data = json.loads(report.read_text())
    return {
        "wall_s": round(wall, 1),
        "exit": proc.returncode,
        "steps": data["steps"],
        "fixtures": len(data["fixtures"]),
        "mutants": len(data["mutants"]),
        "survivors": data["survivors"],
        "notebooks": graded_count(proc.stdout + proc.stderr),
    }


def graded_count(output: str) -> int:
    """How many notebooks ``grader validate`` graded, as its progress line says (with per-student variants it also
    grades the solution under each combination of values and each fixture a second time)."""
    found = re.search(r"Grading (\d+) notebooks with the engine", output)
    if not found:
        raise SystemExit(f"grader validate printed no 'Grading N notebooks' line:\n{output[-3000:]}")
    return int(found.group(1))


def run_stock(source: Path, assignment: str, sample: int, work: Path) -> dict[str, float] | None:
    chosen = course_fixtures.load(course_fixtures.Assignment(source, assignment))[:sample]
    if not chosen:
        return None
    root = grading.scratch_course(work / "stock", source, assignment)
    scratch = course_fixtures.Assignment(root, assignment)
    notebooks = {f"fixture-{f.name}": course_fixtures.build(scratch, f) for f in chosen}
    grading.place(root, assignment, notebooks)
    started = time.monotonic()
    course.autograde(root, assignment)
    wall = time.monotonic() - started
    return {"notebooks": len(notebooks), "wall_s": round(wall, 1), "per_notebook_s": round(wall / len(notebooks), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", type=Path, default=REPO, help="the course (default: this repository's)")
    parser.add_argument("--assignment", action="append", help="repeatable (default: every assignment)")
    parser.add_argument(
        "--stock-sample", type=int, default=10, help="fixture notebooks stock nbgrader grades (0: none)"
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    course.put_bin_on_path()
    names = args.assignment or course.assignments(args.course)
    rows = {}
    for name in names:
        with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
            ours = run_validate(args.course, name, Path(tmp))
            stock = run_stock(args.course, name, args.stock_sample, Path(tmp)) if args.stock_sample else None
        rows[name] = {"validate": ours, "stock": stock}
        print(f"{name}: {ours['wall_s']} s", file=sys.stderr, flush=True)

    print(f"grader validate, cold, at {commit()} on {os.cpu_count()} CPUs (`benchmarks/validate.py`)\n")
    print(
        "| assignment | fixtures | mutants | notebooks graded | grader validate (s) "
        "| release / grade / equivalents (s) | survivors "
        "| stock nbgrader autograde (s per notebook, sample) | stock for as many notebooks (s, estimate) |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---|---:|")
    for name, row in rows.items():
        ours, stock = row["validate"], row["stock"]
        steps = ours["steps"]
        split = f"{steps['release']:.0f} / {steps['grade']:.0f} / {steps['separate_equivalents']:.0f}"
        if stock:
            sampled = f"{stock['per_notebook_s']:.2f} ({stock['notebooks']} notebooks in {stock['wall_s']} s)"
            estimate = f"{stock['per_notebook_s'] * ours['notebooks']:.0f}"
        else:
            sampled = estimate = "–"
        print(
            f"| {name} | {ours['fixtures']} | {ours['mutants']} | {ours['notebooks']} | {ours['wall_s']} | {split} "
            f"| {ours['survivors']} | {sampled} | {estimate} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"commit": commit(), "cpus": os.cpu_count(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
