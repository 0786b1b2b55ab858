"""Throughput, latency and memory of the grading engine against stock ``nbgrader autograde``, in one run.

    .venv/bin/python benchmarks/throughput.py                 # ps2_autograd, 120 submissions
    .venv/bin/python benchmarks/throughput.py -n 8 --quick    # what the test runs

Builds N submissions from the fixture notebooks of one assignment (correct
and wrong ones, cycling) plus one that never finishes a cell, in two
identical copies of the course.  Stock ``nbgrader autograde ASSIGNMENT``
grades one copy (as a TA runs it), ``grader autograde ASSIGNMENT`` the other;
the per-cell scores of both gradebooks must be identical.  Then latency on an
idle grader: stock ``nbgrader autograde --student S`` for one submission,
the warm engine for one submission, and (unless ``--quick``) the service
from upload to recorded grade.  Memory is sampled every 250 ms over each
process tree: the largest single process (RSS) and the whole tree
(proportional set size, PSS, so pages a fork shares count once).

CPU time is that of each run's whole process tree, kernels included, from a
cgroup of its own (``benchmarks/cpu.py``; machine-wide busy time where no
cgroup can be made, and the table says so).  The warm engine and the
physical limit run in a child process each, measured from after start-up.
The limit is what grading these notebooks cannot go below with this design:
per submission a kernel forked from the warm zygote into its sandbox, the
very cells the engine ran (read from its autograded notebooks), sent in one
message and run with plain ``exec``, and one SQLite transaction writing one
row per test cell; the same number of kernels at a time as the engine.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.cpu import CpuGroup  # noqa: E402
from grader import course  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "submissions"
LOOP_CELL = "# a loop that never ends: the cell is interrupted at the time limit\nwhile True:\n    pass\n"


# --- memory ------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children(current))
    return found


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; (0, 0) if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            values = {line.split(":")[0]: int(line.split()[1]) for line in f if line.split()[-1:] == ["kB"]}
        return values.get("Rss", 0), values.get("Pss", 0)
    except (OSError, ValueError, IndexError):
        return 0, 0


@dataclass
class MemorySampler:
    """Peak memory of the process trees rooted at ``roots()``, sampled in a thread."""

    roots: object
    peak_process_kib: int = 0
    peak_total_kib: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> MemorySampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        # Reading PSS walks each process's page tables: every 250 ms, or the sampler itself takes a core.
        while not self._stop.wait(0.25):
            pids = {p for root in self.roots() for p in _tree(root)}  # type: ignore[operator]
            sizes = [_memory_kib(p) for p in pids]
            if sizes:
                self.peak_process_kib = max(self.peak_process_kib, max(rss for rss, _ in sizes))
                self.peak_total_kib = max(self.peak_total_kib, sum(pss for _, pss in sizes))


# --- the submissions -----------------------------------------------------------------------------------


def build_course(base: Path, assignment: str, n: int) -> Path:
    """A course copy with N submissions from the fixtures, the last one with a never-ending cell."""
    import nbformat

    root = course.copy_course(base)
    course.generate_releases(root, [assignment])
    names = sorted(p.stem for p in (FIXTURES / assignment).glob("*.ipynb") if "never" not in p.stem)
    middle = n // 2  # graded in the middle of the batch, neither first nor last
    others = [i for i in range(n) if i != middle]
    for k, i in enumerate(others):
        name = names[k % len(names)]
        course.place_submission(root, f"s{i:03d}-{name}", assignment, FIXTURES / assignment / f"{name}.ipynb")
    nb = nbformat.read(FIXTURES / assignment / "correct.ipynb", as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(LOOP_CELL))
    target = root / "submitted" / f"s{middle:03d}-never-ending-cell" / assignment
    target.mkdir(parents=True)
    nbformat.write(nb, target / f"{assignment}.ipynb")
    return root


def set_cell_timeout(root: Path, seconds: int) -> None:
    with (root / "nbgrader_config.py").open("a") as f:
        f.write(f"\n# benchmark: a shorter per-cell limit, the same for both graders\nc.Execute.timeout = {seconds}\n")


def scores(root: Path, assignment: str) -> dict[tuple[str, str], float]:
    return {(r.student, r.grade_id): r.score for r in course.cell_scores(root, assignment)}


# --- the runs ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_seconds: float
    peak_process_kib: int
    peak_total_kib: int
    cpu_source: str = ""
    log: str = field(default="", repr=False)  # what the command printed

    def figures(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "log"}


def _timed(command: list[str], root: Path, label: str) -> Run:
    group = CpuGroup(label)
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=root,
        env=course.environment(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=group.enter,
    )
    with MemorySampler(lambda: [proc.pid]) as memory:
        output, _ = proc.communicate()
    seconds = time.monotonic() - started
    cpu = group.seconds()
    group.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{output.decode(errors='replace')[-3000:]}")
    log = output.decode(errors="replace")
    return Run(seconds, cpu, memory.peak_process_kib, memory.peak_total_kib, group.kind, log)


def stock_batch(root: Path, assignment: str) -> Run:
    return _timed(
        [str(Path(sys.executable).parent / "nbgrader"), "autograde", assignment, "--create", "--force"], root, "stock"
    )


def engine_batch(root: Path, assignment: str, jobs: int) -> Run:
    grader = str(Path(sys.executable).parent / "grader")
    return _timed([grader, "autograde", assignment, "--course", str(root), "--jobs", str(jobs)], root, "engine")


def _child(mode: str, *args: str) -> tuple[float, float, str]:
    """(seconds, CPU seconds, CPU source) of ``mode`` run in a child process in a cgroup of its own,
    both measured by the child from after its start-up."""
    group = CpuGroup(mode)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, *args],
        env={**os.environ, **group.environment()},
        preexec_fn=group.enter,
        capture_output=True,
        text=True,
        check=False,
    )
    group.close()
    if proc.returncode != 0:
        raise SystemExit(f"the {mode} run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(figures["seconds"]), float(figures["cpu"]), group.kind


def engine_warm(root: Path, assignment: str, jobs: int) -> tuple[float, float, str]:
    """Every submission graded by an engine that has already started: the service."""
    return _child("warm", str(root), assignment, str(jobs))


def _warm_child(root: Path, assignment: str, jobs: int) -> dict[str, float]:
    from grader.engine.bookkeeping.autograde import grade_many
    from grader.engine.engine import Engine

    group = CpuGroup.inherited()
    with Engine(root) as engine:
        cpu = group.seconds() if group else 0.0
        started = time.monotonic()
        outcomes = grade_many(engine.config, assignment, course.submitted_students(root, assignment), jobs=jobs)
        seconds = time.monotonic() - started
        used = (group.seconds() if group else 0.0) - cpu
    if not all(o.ok for o in outcomes):
        raise SystemExit("the warm engine failed to grade a submission")
    return {"seconds": seconds, "cpu": used}


def physical_limit(graded_root: Path, assignment: str, jobs: int, cell_timeout: int) -> tuple[float, float, str]:
    """The same cells, the least work around them (see the module's docstring)."""
    return _child("limit", str(graded_root), assignment, str(jobs), str(cell_timeout))


LIMIT_CELL = """import json as _json
for _source in _json.loads({cells!r}):
    try:
        exec(compile(_source, "<cell>", "exec"), globals())
    except BaseException:
        pass
"""


def _limit_child(root: Path, assignment: str, jobs: int, cell_timeout: int) -> dict[str, float]:
    import shutil as _shutil
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    import nbformat
    from nbgrader import utils

    from grader.engine.engine import Engine
    from grader.engine.kernels import kernel as kernels
    from grader.plugins.isolation import kernel_environment

    notebooks = []
    for path in sorted((root / "autograded").glob(f"*/{assignment}/{assignment}.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [  # what ForkExecute runs: nbclient's skip-execution tag (ps3's lesson demo) is honoured
            c.source
            for c in nb.cells
            if c.cell_type == "code" and c.source.strip() and "skip-execution" not in c.metadata.get("tags", [])
        ]
        tests = [str(c.metadata["nbgrader"]["grade_id"]) for c in nb.cells if utils.is_grade(c)]
        notebooks.append((path.parts[-3], code, tests))
    database = root / "limit.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE IF NOT EXISTS grade (student TEXT, cell TEXT, score REAL)")
    group = CpuGroup.inherited()

    def grade(zygote: kernels.Zygote, student: str, code: list[str], tests: list[str]) -> None:
        private, workdir, home = kernels.sandbox()
        try:
            env = {**kernel_environment(str(home)), "NBGRADER_EXECUTION": "autograde"}
            kernel = zygote.spawn(str(workdir), str(home), env, 0)
            try:
                kernel.execute(LIMIT_CELL.format(cells=json.dumps(code)), cell_timeout, 10.0)
            finally:
                kernel.close()
        finally:
            _shutil.rmtree(private, ignore_errors=True)
        with sqlite3.connect(database) as db:  # one transaction: every grade row of the notebook
            db.executemany("INSERT INTO grade VALUES (?, ?, ?)", [(student, t, 1.0) for t in tests])

    with Engine(root) as engine:
        cpu = group.seconds() if group else 0.0
        started = time.monotonic()
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda n: grade(engine.zygote, *n), notebooks))
        seconds = time.monotonic() - started
        used = (group.seconds() if group else 0.0) - cpu
    return {"seconds": seconds, "cpu": used, "notebooks": len(notebooks)}


def stock_latencies(root: Path, assignment: str, students: list[str]) -> list[float]:
    """One ``nbgrader autograde --student S`` per submission: what grading one upload costs with the stock tool."""
    times = []
    for student in students:
        started = time.monotonic()
        course.autograde(root, assignment, student)
        times.append(time.monotonic() - started)
    return times


def engine_latencies(root: Path, assignment: str, students: list[str]) -> list[float]:
    from grader.engine.engine import Engine

    with Engine(root) as engine:
        engine.grade(assignment, students[0])  # the first grading after start-up is not typical
        return [engine.grade(assignment, s).seconds for s in students]


@contextlib.contextmanager
def serving(root: Path, group: CpuGroup | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``grader serve`` on the course at ``root`` (in ``group``, if given), and its URL, once it answers."""
    import httpx

    port = 18000 + os.getpid() % 1000
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "grader"), "serve", "--port", str(port)],
        env={**os.environ, "GRADER_COURSE_ROOT": str(root), **(group.environment() if group else {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=group.enter if group else None,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield proc, url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # uvicorn shuts down and grader serve closes its zygote
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def borrowed_batch(root: Path, assignment: str, jobs: int) -> Run:
    """``grader autograde`` while ``grader serve`` runs for the course: the command grades on the serve's warm
    engine (``grader.engine.doors.lend``). The serve's start-up is not counted (it was running already); CPU is the
    command's process tree and the serve's, each from a cgroup of its own, over the command's run."""
    group = CpuGroup("serve")
    with serving(root, group):
        before = group.seconds()
        run = engine_batch(root, assignment, jobs)
        served = group.seconds() - before if group.path is not None else 0.0  # machine-wide: in ``run`` already
    group.close()
    if "warm engine of `grader serve`" not in run.log:
        raise SystemExit(f"grader autograde did not grade on the serve's engine:\n{run.log[-3000:]}")
    return dataclasses.replace(run, cpu_seconds=run.cpu_seconds + served)


def service_latencies(root: Path, assignment: str, students: list[str]) -> tuple[list[float], list[float], int, int]:
    """Through ``grader serve``, one submission at a time: upload to recorded grade (the service's own
    received_at -> graded_at), and upload to the client holding the grade (sending the upload to
    receiving the graded answer), the client asking as ``grader submit`` does (``?wait=``: one request,
    answered when the grade is recorded)."""
    import httpx

    from grader.service.records.store import Store

    with serving(root) as (proc, url):
        store = Store(course.gradebook_url(root))
        times, seen = [], []
        with MemorySampler(lambda: [proc.pid]) as memory:
            # the first grading after start-up is not typical (as for the engine's latency): it is not counted
            for k, student in enumerate([students[0], *students]):
                data = (root / "submitted" / student / assignment / f"{assignment}.ipynb").read_bytes()
                headers = {"Authorization": f"Bearer {store.issue_token(f'bench-{k}-{student}', 'student')}"}
                with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                    sent = time.monotonic()
                    sub = client.post(
                        "/api/submissions",
                        data={"assignment": assignment, "confirm_late": "true"},
                        files={"file": (f"{assignment}.ipynb", data)},
                    )
                    if sub.status_code != 202:
                        raise SystemExit(f"the service refused a submission: {sub.status_code} {sub.text}")
                    body = _wait(client, sub.json()["url"])
                    held = time.monotonic() - sent
                if k > 0:
                    seen.append(held)
                    times.append((_parse(body["graded_at"]) - _parse(body["received_at"])).total_seconds())
        return times, seen, memory.peak_process_kib, memory.peak_total_kib


def _wait(client: object, url: str) -> dict:  # type: ignore[type-arg]
    """The graded submission: the service answers once the grade is recorded (``wait``), as for ``grader submit``.
    (Asking every 5 ms, as this benchmark did before, took ~20 ms of CPU from the very grading it timed.)"""
    while True:
        body = client.get(url, params={"wait": "30"}).json()  # type: ignore[attr-defined]
        if body["status"] in ("graded", "failed"):
            return dict(body)


def _parse(value: str):  # type: ignore[no-untyped-def]
    import datetime as dt

    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- the table -----------------------------------------------------------------------------------------


def said_of(log: str, student: str, students: list[str]) -> list[str]:
    """The lines of a batch's ``log`` from its first naming ``student`` to its first naming another."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if student in line), len(lines))
    others = [s for s in students if s != student and s not in student]
    end = next((i for i in range(start + 1, len(lines)) if any(s in lines[i] for s in others)), len(lines))
    return lines[start:end]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="ps2_autograd")
    # A deadline burst. The engine's batch cannot end before the never-ending cell's limit runs out,
    # about 5 s after half the batch: with far fewer submissions that one cell, not throughput, is
    # what the ratio measures.
    parser.add_argument("-n", type=int, default=120, help="submissions, one of them never-ending (default 120)")
    parser.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1), help="engine kernels at a time")
    parser.add_argument("--cell-timeout", type=int, default=5, help="Execute.timeout for both graders (s)")
    parser.add_argument("--latency-samples", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="skip the service latency run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)  # warm|limit ROOT ASSIGNMENT JOBS [TIMEOUT]
    args = parser.parse_args(argv)
    course.put_bin_on_path()
    if args.child:
        mode, root, assignment, jobs, *rest = args.child
        if mode == "warm":
            figures = _warm_child(Path(root), assignment, int(jobs))
        else:
            figures = _limit_child(Path(root), assignment, int(jobs), int(rest[0]))
        print(json.dumps(figures))
        return 0

    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        stock_root = build_course(Path(tmp) / "stock", args.assignment, args.n)
        set_cell_timeout(stock_root, args.cell_timeout)
        engine_root = Path(tmp) / "engine"
        shutil.copytree(stock_root, engine_root)
        students = sorted(p.name for p in (stock_root / "submitted").iterdir())
        print(
            f"{args.n} submissions of {args.assignment} (one never-ending cell, limit {args.cell_timeout} s); "
            f"{os.cpu_count()} CPUs; engine jobs {args.jobs}",
            flush=True,
        )

        stock = stock_batch(stock_root, args.assignment)
        print(f"stock nbgrader autograde: {stock.seconds:.1f} s", flush=True)
        engine = engine_batch(engine_root, args.assignment, args.jobs)
        print(f"grader autograde:         {engine.seconds:.1f} s", flush=True)
        warm_root = Path(tmp) / "warm"
        shutil.copytree(stock_root, warm_root, ignore=shutil.ignore_patterns("autograded", "gradebook.db"))
        course.generate_releases(warm_root, [args.assignment])
        warm_seconds, warm_cpu, _ = engine_warm(warm_root, args.assignment, args.jobs)
        print(f"warm engine:              {warm_seconds:.1f} s", flush=True)
        limit_seconds, limit_cpu, _ = physical_limit(engine_root, args.assignment, args.jobs, args.cell_timeout)
        print(f"physical limit:           {limit_seconds:.1f} s", flush=True)
        borrowed_root = Path(tmp) / "borrowed"
        shutil.copytree(stock_root, borrowed_root, ignore=shutil.ignore_patterns("autograded", "gradebook.db"))
        course.generate_releases(borrowed_root, [args.assignment])
        borrowed = borrowed_batch(borrowed_root, args.assignment, args.jobs)
        print(f"grader autograde, serve:  {borrowed.seconds:.1f} s", flush=True)
        expected = scores(stock_root, args.assignment)
        graded = [scores(root, args.assignment) for root in (engine_root, warm_root, borrowed_root)]  # each once
        differing = sorted(
            {k for found in graded for k, v in found.items() if expected.get(k) != v}
            | {k for found in graded for k in expected if k not in found}
        )

        sample = [s for s in students if "never" not in s][: args.latency_samples]
        stock_lat = stock_latencies(stock_root, args.assignment, sample)
        engine_lat = engine_latencies(engine_root, args.assignment, sample)
        service = None if args.quick else service_latencies(engine_root, args.assignment, sample)

    n = args.n

    def ratio(stock_value: float, engine_value: float) -> str:
        return f"{stock_value / max(engine_value, 1e-9):.1f}x"

    runs = [
        ("stock nbgrader autograde, cold", stock.seconds, stock.cpu_seconds),
        ("grader autograde, cold (start-up included)", engine.seconds, engine.cpu_seconds),
        ("grader autograde, grader serve running", borrowed.seconds, borrowed.cpu_seconds),
        ("warm engine (as in the service)", warm_seconds, warm_cpu),
        ("physical limit (fork, exec, one transaction)", limit_seconds, limit_cpu),
    ]
    width = max(len(r[0]) for r in runs)
    print()
    print(f"| {'':{width}} | wall s | submissions / s | CPU ms / submission | throughput x stock | CPU x limit |")
    print(f"|{'-' * (width + 2)}|-------:|----------------:|--------------------:|-------------------:|------------:|")
    for label, seconds, cpu in runs:
        print(
            f"| {label:{width}} | {seconds:6.1f} | {n / seconds:15.2f} | {1000 * cpu / n:19.0f} "
            f"| {ratio(stock.seconds, seconds):>18} | {ratio(cpu, limit_cpu):>11} |"
        )
    print(f"CPU: each run's whole process tree, from {stock.cpu_source}; {os.cpu_count()} CPUs.")

    rows = [
        (
            "latency p50 / p95, one submission (s)",
            f"{_p(stock_lat, 0.5):.2f} / {_p(stock_lat, 0.95):.2f}",
            f"{_p(engine_lat, 0.5):.3f} / {_p(engine_lat, 0.95):.3f}",
            f"{_p(stock_lat, 0.5) / _p(engine_lat, 0.5):.0f}x",
        ),
        ("peak RSS, largest process (cold batch)", _mib(stock.peak_process_kib), _mib(engine.peak_process_kib), ""),
        ("peak memory, all processes (PSS)", _mib(stock.peak_total_kib), _mib(engine.peak_total_kib), ""),
    ]
    if service is not None:
        times, seen, proc_kib, total_kib = service
        rows.append(("service: upload -> grade p50 / p95 (s)", "", f"{_p(times, 0.5):.3f} / {_p(times, 0.95):.3f}", ""))
        held = f"{_p(seen, 0.5):.3f} / {_p(seen, 0.95):.3f}"
        rows.append(("service: upload -> client has it p50 / p95", "", held, ""))
        rows.append(("service: peak RSS largest / all (PSS)", "", f"{_mib(proc_kib)} / {_mib(total_kib)}", ""))
    width = max(len(r[0]) for r in rows)
    print()
    print(f"| {'':{width}} | stock nbgrader autograde |       grader engine | ratio |")
    print(f"|{'-' * (width + 2)}|--------------------------|---------------------|-------|")
    for label, a, b, times in rows:
        print(f"| {label:{width}} | {a:>24} | {b:>19} | {times:>5} |")
    cells = len(expected)
    print(
        f"\nscores identical: {'yes' if not differing else 'NO'} ({cells} test cells of {n} submissions, "
        "stock against the batch command, the warm engine and the command on the serve's engine)"
    )
    for key in differing[:20]:
        print(f"  {key[0]} {key[1]}: stock {expected.get(key)}")
    for student in sorted({key[0] for key in differing})[:3]:  # why: what stock said while grading them
        said = said_of(stock.log, student, students)
        print(f"stock nbgrader autograde on {student} ({len(said)} lines, the last 40):", *said[-40:], sep="\n  ")
    if args.json:
        figures = {
            "n": n,
            "assignment": args.assignment,
            "jobs": args.jobs,
            "stock": stock.figures(),
            "engine": engine.figures(),
            "warm": {"seconds": warm_seconds, "cpu_seconds": warm_cpu},
            "borrowed": borrowed.figures(),
            "limit": {"seconds": limit_seconds, "cpu_seconds": limit_cpu},
            "stock_latency": stock_lat,
            "engine_latency": engine_lat,
            "service_latency": service[0] if service else None,
            "service_seen": service[1] if service else None,
            "identical": not differing,
        }
        args.json.write_text(json.dumps(figures, indent=2))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
