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

from grader import course  # noqa: E402
from tests.service.queue.cluster import Postgres, start_cluster  # noqa: E402

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


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


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


@dataclass(frozen=True)
class Sql:
    jobs: int
    statements: dict[str, float]  # per job, by stage
    commits: dict[str, float]


def sql_per_job(jobs: int, bodies: list[bytes]) -> Sql:
    """Statements and commits per job of a worker's pipeline on PostgreSQL (after one warm-up job)."""
    from collections import Counter

    from sqlalchemy import event

    from grader.service import config as service_config
    from grader.service.grading import intake, pipeline
    from grader.service.queue import leases
    from grader.service.records.store import Store

    postgres = Postgres()
    base = Path(tempfile.mkdtemp(prefix="grader-scale-sql-"))
    stage = ["outside"]
    statements: Counter[str] = Counter()
    commits: Counter[str] = Counter()

    def on_statement(*args: object) -> None:
        statements[stage[0]] += 1

    def on_commit(*args: object) -> None:
        commits[stage[0]] += 1

    stages = pipeline.STAGES
    counted = tuple(
        pipeline.Stage(s.name, lambda run, s=s: (stage.__setitem__(0, s.name), s.run(run), stage.__setitem__(0, "job")))
        for s in stages
    )
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
                    statements.clear()
                    commits.clear()
                    event.listen(sa.engine.Engine, "before_cursor_execute", on_statement)
                    event.listen(sa.engine.Engine, "commit", on_commit)
                stage[0] = "intake"
                intake.accept(store, config, f"q{i:04d}", A, bodies[i % len(bodies)])
                stage[0] = "claim"
                job = leases.claim(store, None, "bench", None, config.max_attempts)
                assert job is not None
                stage[0] = "job"  # the job's own reads before and after the stages
                run.grade_job(job)
    finally:
        pipeline.STAGES = stages
        if event.contains(sa.engine.Engine, "before_cursor_execute", on_statement):
            event.remove(sa.engine.Engine, "before_cursor_execute", on_statement)
            event.remove(sa.engine.Engine, "commit", on_commit)
        postgres.close()
        shutil.rmtree(base, ignore_errors=True)
    order = ["intake", "claim", "job", *(s.name for s in stages)]
    return Sql(
        jobs,
        {k: statements[k] / jobs for k in order if statements[k]},
        {k: commits[k] / jobs for k in order if commits[k]},
    )


def sql_table(sql: Sql) -> str:
    names = list(dict.fromkeys([*sql.statements, *sql.commits]))
    lines = [
        f"SQL per job on PostgreSQL (a worker's pipeline in process, mean of {sql.jobs} jobs):",
        "",
        "| stage | statements | commits |",
        "|---|---|---|",
    ]
    for name in names:
        lines.append(f"| {name} | {sql.statements.get(name, 0):.1f} | {sql.commits.get(name, 0):.1f} |")
    lines.append(f"| **all** | **{sum(sql.statements.values()):.1f}** | **{sum(sql.commits.values()):.1f}** |")
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
    print(sql_table(sql))
    if args.json:
        figures = {"runs": [asdict(r) for r in runs], "stock_s_per_submission": stock_s, "sql": asdict(sql)}
        args.json.write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
