"""Two commits of the engine and the service on the same course, interleaved: did a change slow grading down?

    .venv/bin/python benchmarks/ab_commits.py OLD NEW [-n 60] [--rounds 2] [--assignment ps2_autograd]

Each commit is checked out in a worktree of its own and imported from there (the editable install's
finder is switched off for those processes), so both run with this checkout's virtual environment.
One course copy with N submissions of the assignment (``throughput.build_course``) is graded by each
commit in turn, old/new/old/new: ``grader autograde --jobs 4`` from a cold start, the warm engine
(its wall time and its CPU per submission, kernels included: ``benchmarks/cpu.py``), and 10 idle
gradings through ``grader serve`` (upload to recorded grade).  Interleaving lets a shared
machine's drift show up as a trend across runs instead of as a difference between commits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "ps2_autograd"  # unless --assignment

# Imported first by every process of a tree: drops the editable install's finder, so the tree's
# own ``grader`` package (first on PYTHONPATH) is the one imported, in the zygote too.
SITE = (
    "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()\n"
    "                    and 'editable' not in type(f).__module__.lower()]\n"
)

ONE_TREE = """
import json, os, sys
from pathlib import Path
tree, root, a = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
sys.path[:0] = [tree, tree + "/benchmarks"]
import throughput as t
import grader
assert grader.__file__.startswith(tree), grader.__file__
students = sorted(p.name for p in (root / "submitted").iterdir() if "never" not in p.name)[:10]
cold = t.engine_batch(root, a, 4)
warm_s, warm_cpu, _ = t.engine_warm(root, a, 4)
n = len(list((root / "submitted").iterdir()))
service = t.service_latencies(root, a, students)[0]  # every version: the first item is the latencies
print(json.dumps({"cold_s": cold.seconds, "warm_s": warm_s, "warm_cpu_ms": 1000 * warm_cpu / n,
                  "service_p50": t._p(service, 50)}))
"""


def run_tree(tree: Path, site: Path, root: Path, assignment: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{site}:{tree}"}
    proc = subprocess.run(
        [sys.executable, "-c", ONE_TREE, str(tree), str(root), assignment], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("-n", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--assignment", default=ASSIGNMENT)
    args = parser.parse_args(argv)
    sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
    import throughput

    with tempfile.TemporaryDirectory(prefix="grader-ab-") as scratch:
        base = Path(scratch)
        (base / "site").mkdir()
        (base / "site" / "sitecustomize.py").write_text(SITE)
        trees = {}
        for label in (args.old, args.new):
            tree = base / f"tree-{label}"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), label], cwd=REPO, check=True)
            trees[label] = tree
        try:
            root = throughput.build_course(base / "course", args.assignment, args.n)
            throughput.set_cell_timeout(root, 5)
            rows = []
            for _ in range(args.rounds):
                for label in (args.old, args.new):
                    figures = run_tree(trees[label], base / "site", root, args.assignment)
                    rows.append((len(rows) + 1, label, figures))
                    print(f"run {len(rows)} ({label}): {figures}", file=sys.stderr)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
            shutil.rmtree(base / "course", ignore_errors=True)
    print(f"{args.assignment}, N = {args.n}, runs interleaved")
    print("| run | commit | cold batch s | warm engine s | warm CPU ms/submission | service p50 s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, label, f in rows:
        cpu = f"{f['warm_cpu_ms']:.0f}" if "warm_cpu_ms" in f else "-"
        print(f"| {n} | {label} | {f['cold_s']:.1f} | {f['warm_s']:.1f} | {cpu} | {f['service_p50']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
