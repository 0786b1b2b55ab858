"""How long ``grader similarity`` takes for a class, beside copydetect's own detector on the same code.

    .venv/bin/python benchmarks/similarity.py                 # 300 ps3_regression submissions
    .venv/bin/python benchmarks/similarity.py --students 40   # what the test runs

The class: ``--students`` ps3_regression notebooks in nbgrader's ``submitted/`` folders of a fresh course
copy. Each is made from the thirty independent solutions under ``tests/similarity/independent/``: every
answer cell taken from one of them at random (seeded), a third of the students with their variables
renamed. That is a harder class than a real one (far more shared cells, so far more candidate pairs).

Two rows, both cold (a fresh process each), both on the same 2-CPU machine in the same run:

- ``grader similarity ps3_regression --submitted``: the real command: reading every notebook, the
  boilerplate (release and solution), fingerprints, every pair, the table;
- ``copydetect`` (the stock tool, ``python -m copydetect``): the same answer code written out as one
  ``.py`` file per student, the release's and the solution's code as boilerplate, its HTML report off
  (``--disable-autoopen``, written to the scratch folder), with the same fingerprint length and window.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402

from grader import course  # noqa: E402
from grader.authoring.fixtures import Assignment, fill, read_notebook  # noqa: E402
from grader.similarity import compare, sources  # noqa: E402
from tests.similarity.planted import renamed  # noqa: E402

ASSIGNMENT = "ps3_regression"
INDEPENDENT = REPO / "tests" / "similarity" / "independent" / ASSIGNMENT


def commit() -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "grader"], capture_output=True, text=True
    )
    return proc.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def make_class(root: Path, students: int, seed: int) -> list[dict[str, str]]:
    """Write ``students`` submissions under ``root/submitted``; their answer code, by student."""
    pool = [tomllib.loads(p.read_text())["solutions"] for p in sorted(INDEPENDENT.glob("*.toml"))]
    spec = Assignment(root, ASSIGNMENT)
    release = read_notebook(spec.release)
    rng = random.Random(seed)
    made = []
    for i in range(students):
        cells = {gid: rng.choice(pool)[gid] for gid in pool[0]}
        if i % 3 == 0:
            cells = {gid: renamed(code) for gid, code in cells.items()}
        nb = fill(nbformat.from_dict(json.loads(json.dumps(release))), cells)
        path = root / "submitted" / f"student-{i:03d}" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)  # type: ignore[no-untyped-call]
        made.append(cells)
    return made


def run_grader(root: Path) -> tuple[float, str]:
    command = [str(Path(sys.executable).parent / "grader"), "similarity", ASSIGNMENT, "--submitted"]
    started = time.monotonic()
    proc = subprocess.run([*command, "--course", str(root)], capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"grader similarity failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.stdout.splitlines()[0]


def run_copydetect(root: Path, work: Path) -> float:
    plate = sources.boilerplate(root, ASSIGNMENT)
    code_dir, plate_dir = work / "code", work / "boilerplate"
    code_dir.mkdir()
    plate_dir.mkdir()
    for sub in sources.from_folder(root, ASSIGNMENT, plate):
        (code_dir / f"{sub.student}.py").write_text("\n\n".join(c.code for c in sub.cells))
    (plate_dir / "boilerplate.py").write_text("\n\n".join(plate.texts))
    command = [
        sys.executable, "-m", "copydetect", "-t", str(code_dir), "-b", str(plate_dir), "-e", "py",
        "-n", str(compare.K), "-g", str(compare.K + compare.WINDOW - 1),
        "--disable-autoopen", "-O", str(work / "report.html"),
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, check=False, cwd=work)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"copydetect failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="similarity-bench-") as tmp:
        work = Path(tmp)
        root = course.copy_course(work / "course")
        make_class(root, args.students, args.seed)
        ours, first_line = run_grader(root)
        stock = run_copydetect(root, work)
    pairs = args.students * (args.students - 1) // 2
    figures = {"commit": commit(), "students": args.students, "pairs": pairs, "grader_s": round(ours, 2),
               "copydetect_s": round(stock, 2), "grader_first_line": first_line}  # fmt: skip
    print(f"commit {figures['commit']}; {args.students} {ASSIGNMENT} submissions ({pairs} pairs), cold, 2 CPUs")
    print()
    print("| tool | wall (s) |")
    print("|---|---:|")
    print(f"| grader similarity {ASSIGNMENT} --submitted | {ours:.2f} |")
    print(f"| copydetect (python -m copydetect, same code and boilerplate) | {stock:.2f} |")
    print()
    print(f"grader similarity said: {first_line}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
