"""A burst of submissions through the API of a scaled-out service, with 1 and with 2 worker processes.

    .venv/bin/python benchmarks/scale.py                 # 1,000 submissions per run
    .venv/bin/python benchmarks/scale.py -n 40 --stock 2 # what the test runs

Each run starts a fresh cluster on this machine (``tests/service/queue/cluster.py``):
a PostgreSQL and a Redis of its own, ``grader serve --broker-url``, and 1 or 2
``grader worker`` processes, each on its own course copy and pinned to a CPU
of its own (``taskset``), as hosts of one CPU each.  N students each upload
one ps1 notebook (the fixture notebooks, right and wrong, cycling), from 8
client threads at once; meanwhile a poller asks for submission status as
students do.  Printed per run: throughput (graded submissions per second,
first upload to last recorded grade), latency from upload to recorded grade
(p50/p95/p99, from the service's own timestamps), the API's latency for
status requests during the burst (p50/p99), the speed-up of 2 workers
over 1, and the CPU this process (the clients and the poller) used during the
burst: the simulated students run on the machine measured, real ones do not.
A second table says where the machine's CPU went during each burst: ``grader
serve``, PostgreSQL and Redis (each its process tree, from ``/proc``), the
clients, and the workers (the machine's busy time less the others: their
kernels are reaped where ``/proc`` cannot count them).
Stock ``nbgrader autograde`` grades a sample of the same notebooks in the same
run, for scale.

Then the SQL of one job: a worker's pipeline, in this process, grades ``--sql-jobs``
of the same notebooks against a PostgreSQL of its own, and every statement and
commit on any connection is counted, per stage (``pipeline.STAGES``) and in all.
These counts do not depend on the machine's load; ``--sql-only`` prints just them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from benchmarks.cpu import busy_cpu_seconds  # noqa: E402
from grader import course  # noqa: E402
from tests.service.queue.cluster import Cluster, Postgres, StatementLog, start_cluster  # noqa: E402

A = "ps1_tensors"
FIXTURES = REPO / "tests" / "fixtures" / "submissions" / A
CLIENTS = 8


@dataclass(frozen=True)
class Run:
    workers: int
    submissions: int
    seconds: float  # first upload to last recorded grade
    per_second: float
    p50: float
    p95: float
    p99: float
    upload_p99: float
    status_p50: float
    status_p99: float
    status_requests: int
    failed: int
    harness_cpu_s: float  # this process's CPU during the burst: the simulated students, on the machine measured
    parts_cpu_s: dict[str, float]  # CPU during the burst by process tree (``Parts``); "workers" is what is left


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, and of the children they already reaped.

    From ``/proc/PID/stat``: utime, stime, cutime, cstime (fields 14-17).  The children of a process
    that ignores SIGCHLD are reaped by the kernel and counted nowhere: the workers' kernels, which is
    why the workers' share is what the machine spent busy less every other part."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited meanwhile
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(v) for v in fields[11:15])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(times.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


class Parts:
    """Where the machine's CPU goes during a burst: each server's process tree, the clients (this
    process), and the workers (the machine's busy time less all of those)."""

    def __init__(self, cluster: Cluster) -> None:
        postmaster = int((cluster.postgres.data / "postmaster.pid").read_text().split()[0])
        self.roots = {"serve": cluster.server.process.pid, "PostgreSQL": postmaster}  # type: ignore[union-attr]
        if cluster.redis is not None and cluster.redis.process is not None:
            self.roots["Redis"] = cluster.redis.process.pid
        self.start = self._now()

    def _now(self) -> dict[str, float]:
        now = {name: _tree_cpu(pid) for name, pid in self.roots.items()}
        now["clients"] = time.process_time()
        now["busy"] = busy_cpu_seconds()
        return now

    def spent(self) -> dict[str, float]:
        end = self._now()
        spent = {name: end[name] - self.start[name] for name in end}
        busy = spent.pop("busy")
        return {"workers": busy - sum(spent.values()), **spent, "machine": busy}


def notebooks() -> list[bytes]:
    return [path.read_bytes() for path in sorted(FIXTURES.glob("*.ipynb"))]


def burst(workers: int, n: int, bodies: list[bytes], options: list[str]) -> Run:
    base = Path(tempfile.mkdtemp(prefix=f"grader-scale-{workers}-"))
    try:
        with contextlib.contextmanager(start_cluster)(
            base, hosts=workers, taskset={1: "0", 2: "1"}, worker_options=options
        ) as cluster:
            server = cluster.server
            store = server.store
            tokens = [store.issue_token(f"s{i:05d}", "student") for i in range(n)]
            admin = store.issue_token("bench-admin", "admin")
            ids: list[int] = []
            uploads: list[float] = []
            lock = threading.Lock()
            done = threading.Event()
            status_times: list[float] = []

            # one HTTP client per client thread, each upload with its student's token: a new client per
            # upload cost this process 23 ms of CPU (its TLS context), on the CPUs the workers grade on
            local = threading.local()
            opened: list[httpx.Client] = []

            def upload(i: int) -> None:
                client = getattr(local, "client", None)
                if client is None:
                    client = local.client = server.client(None)
                    with lock:
                        opened.append(client)
                started = time.perf_counter()
                response = client.post(
                    "/api/submissions",
                    data={"assignment": A},
                    files={"file": ("nb.ipynb", bodies[i % len(bodies)])},
                    headers={"Authorization": f"Bearer {tokens[i]}"},
                )
                elapsed = time.perf_counter() - started
                assert response.status_code == 202, response.text
                with lock:
                    ids.append(int(response.json()["id"]))
                    uploads.append(elapsed)

            def poll() -> None:
                rng = random.Random(0)
                with server.client(admin) as client:
                    while not done.is_set():
                        with lock:
                            known = list(ids)
                        if not known:
                            time.sleep(0.05)
                            continue
                        started = time.perf_counter()
                        response = client.get(f"/api/submissions/{rng.choice(known)}")
                        status_times.append(time.perf_counter() - started)
                        assert response.status_code == 200, response.text
                        time.sleep(0.02)

            parts = Parts(cluster)
            harness = time.process_time()
            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(upload, range(n)))
            for client in opened:
                client.close()
            engine = sa.create_engine(cluster.postgres.url())
            query = sa.text(
                "SELECT count(*) FILTER (WHERE status IN ('graded', 'failed')), count(*) FROM grader_submissions"
            )
            deadline = time.monotonic() + 3600
            while time.monotonic() < deadline:
                with engine.connect() as conn:
                    finished, total = conn.execute(query).one()
                if finished == total == n:
                    break
                time.sleep(0.5)
            done.set()
            poller.join(5)
            harness = time.process_time() - harness
            parts_cpu = parts.spent()
            with engine.connect() as conn:
                rows = conn.execute(
                    sa.text("SELECT received_at, graded_at, status FROM grader_submissions ORDER BY id")
                ).all()
            engine.dispose()
            graded = [r for r in rows if r.graded_at is not None]
            latencies = [(r.graded_at - r.received_at).total_seconds() for r in graded]
            first = min(r.received_at for r in rows)
            last = max(r.graded_at for r in graded)
            seconds = (last - first).total_seconds()
            return Run(
                workers=workers,
                submissions=n,
                seconds=seconds,
                per_second=len(graded) / seconds,
                p50=statistics.median(latencies),
                p95=quantile(latencies, 0.95),
                p99=quantile(latencies, 0.99),
                upload_p99=quantile(uploads, 0.99),
                status_p50=statistics.median(status_times) if status_times else float("nan"),
                status_p99=quantile(status_times, 0.99),
                status_requests=len(status_times),
                failed=sum(1 for r in rows if r.status != "graded"),
                harness_cpu_s=harness,
                parts_cpu_s=parts_cpu,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def stock(sample: int, bodies: list[bytes]) -> float:
    """Stock ``nbgrader autograde`` on ``sample`` of the same notebooks: seconds per submission."""
    if not sample:
        return float("nan")
    base = Path(tempfile.mkdtemp(prefix="grader-scale-stock-"))
    try:
        root = course.copy_course(base / "course")
        course.generate_releases(root, [A])
        for i in range(sample):
            target = root / "submitted" / f"s{i:05d}" / A
            target.mkdir(parents=True)
            (target / f"{A}.ipynb").write_bytes(bodies[i % len(bodies)])
        started = time.perf_counter()
        course.autograde(root, A)
        return (time.perf_counter() - started) / sample
    finally:
        shutil.rmtree(base, ignore_errors=True)


def table(runs: list[Run], stock_s: float, sample: int) -> str:
    one = runs[0].per_second
    lines = [
        "| workers | submissions | wall s | graded/s | speed-up | upload→grade p50 / p95 / p99 s "
        "| upload p99 s | status p50 / p99 ms (requests) | not graded | clients' CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run.workers} | {run.submissions} | {run.seconds:.1f} | {run.per_second:.2f} | "
            f"{run.per_second / one:.2f}× | {run.p50:.1f} / {run.p95:.1f} / {run.p99:.1f} | {run.upload_p99:.3f} | "
            f"{1000 * run.status_p50:.1f} / {1000 * run.status_p99:.1f} ({run.status_requests}) | {run.failed} | "
            f"{run.harness_cpu_s:.1f} |"
        )
    if sample:
        lines.append(
            f"| stock `nbgrader autograde`, {sample} of the same notebooks | {sample} | {stock_s * sample:.1f} | "
            f"{1 / stock_s:.2f} | {(1 / stock_s) / one:.2f}× | | | | | |"
        )
    return "\n".join(lines)


def parts_table(runs: list[Run]) -> str:
    """CPU during each burst by part: seconds, milliseconds per submission, share of the machine's busy time."""
    names = list(dict.fromkeys(name for run in runs for name in run.parts_cpu_s))
    lines = [
        "| CPU during the burst: s (ms per submission, share) | "
        + " | ".join(f"{r.workers} worker(s)" for r in runs)
        + " |",
        "|---|" + "---|" * len(runs),
    ]
    for name in names:
        cells = []
        for run in runs:
            seconds = run.parts_cpu_s.get(name, 0.0)
            share = seconds / run.parts_cpu_s["machine"] if run.parts_cpu_s.get("machine") else float("nan")
            cells.append(f"{seconds:.1f} ({1000 * seconds / run.submissions:.0f} ms, {share:.0%})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Sql:
    """What PostgreSQL received per job, by stage, from its own log: every round trip, by kind."""

    jobs: int
    statements: dict[str, float]  # the caller's own SQL
    begins: dict[str, float]  # the driver's BEGIN before a transaction's first statement
    commits: dict[str, float]
    rollbacks: dict[str, float]
    pings: dict[str, float]  # a pool's check that a connection still answers (``records.pooling``)


KINDS = {"BEGIN": "begins", "COMMIT": "commits", "ROLLBACK": "rollbacks", "SELECT 1": "pings"}


def sql_per_job(jobs: int, bodies: list[bytes]) -> Sql:
    """PostgreSQL's round trips per job of a worker's pipeline, in process, by stage (after one warm-up job)."""
    from collections import Counter

    from grader.service import config as service_config
    from grader.service.grading import intake, pipeline
    from grader.service.queue import leases
    from grader.service.records.store import Store

    postgres = Postgres()
    base = Path(tempfile.mkdtemp(prefix="grader-scale-sql-"))
    counts: dict[str, Counter[str]] = {field: Counter() for field in ("statements", *KINDS.values())}
    server: list[StatementLog] = []  # the log, once the warm-up job is done

    def tally(stage: str) -> None:
        """What the server received since the last tally was the work of ``stage``."""
        for text in server[0].since() if server else ():
            counts[KINDS.get(text.rstrip(";").upper(), "statements")][stage] += 1

    stages = pipeline.STAGES
    counted = tuple(pipeline.Stage(s.name, lambda run, s=s: (tally("job"), s.run(run), tally(s.name))) for s in stages)
    try:
        root = course.copy_course(base / "course")
        config = service_config.load(root, db_url=postgres.url())
        course.generate_releases(root, [A], db_url=config.db_url)
        store = Store(config.db_url, create=True)
        pipeline.STAGES = counted
        with config.engine() as engine:
            run = pipeline.Pipeline(store, config, engine, ())
            for i in range(jobs + 1):
                if i == 1:  # the first job fills the process's caches: count from the second
                    server.append(StatementLog(postgres))
                intake.accept(store, config, f"q{i:04d}", A, bodies[i % len(bodies)])
                tally("intake")
                job = leases.claim(store, None, "bench", None, config.max_attempts)
                assert job is not None
                tally("claim")
                run.grade_job(job)
                tally("job")  # the job's own statements before and after the stages
    finally:
        pipeline.STAGES = stages
        postgres.close()
        shutil.rmtree(base, ignore_errors=True)
    order = ["intake", "claim", "job", *(s.name for s in stages)]
    return Sql(jobs, *({k: c[k] / jobs for k in order if c[k]} for c in counts.values()))


def sql_table(sql: Sql) -> str:
    counts = (sql.statements, sql.begins, sql.commits, sql.rollbacks, sql.pings)
    names = list(dict.fromkeys(name for count in counts for name in count))
    lines = [
        f"Round trips to PostgreSQL per job (a worker's pipeline in process, mean of {sql.jobs} jobs, "
        "from the server's log):",
        "",
        "| stage | statements | BEGIN | COMMIT | ROLLBACK | pings | round trips |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in [*names, "**all**"]:
        values = [sum(c.values()) if name == "**all**" else c.get(name, 0) for c in counts]
        cells = [f"**{v:.1f}**" if name == "**all**" else f"{v:.1f}" for v in [*values, sum(values)]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="submissions per run (default 1000)")
    parser.add_argument("--stock", type=int, default=20, help="notebooks stock nbgrader grades (default 20)")
    parser.add_argument("--workers", default="1,2", help="the worker counts to run, comma-separated (default 1,2)")
    parser.add_argument(
        "--concurrency", type=int, default=0, help="kernels at a time per worker (default: the worker's own default)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--sql-jobs", type=int, default=20, help="jobs whose SQL is counted (default 20)")
    parser.add_argument("--sql-only", action="store_true", help="only count the SQL of a job")
    args = parser.parse_args()
    course.put_bin_on_path()
    bodies = notebooks()
    if args.sql_only:
        print(sql_table(sql_per_job(args.sql_jobs, bodies)))
        return 0
    print(f"{args.n} submissions of {A} ({len(bodies)} fixture notebooks, cycling) from {CLIENTS} clients", flush=True)
    runs = []
    for workers in (int(n) for n in args.workers.split(",")):
        run = burst(workers, args.n, bodies, ["--concurrency", str(args.concurrency)] if args.concurrency else [])
        print(f"  {workers} worker(s): {run.per_second:.2f} graded/s", flush=True)
        runs.append(run)
    stock_s = stock(args.stock, bodies)
    sql = sql_per_job(args.sql_jobs, bodies)
    print()
    print(table(runs, stock_s, args.stock))
    print()
    print(parts_table(runs))
    print()
    print(sql_table(sql))
    if args.json:
        figures = {"runs": [asdict(r) for r in runs], "stock_s_per_submission": stock_s, "sql": asdict(sql)}
        args.json.write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
