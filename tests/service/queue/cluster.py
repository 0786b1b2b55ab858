"""A scaled-out course on this machine: real PostgreSQL, Redis, ``grader serve`` and ``grader worker``s.

Every server is a process of its own that a test may stop, restart or kill:
a PostgreSQL instance (``initdb`` into a scratch directory, run as the
``postgres`` user when the tests run as root), a Redis server without
persistence (a restart loses every message: the worst case), ``grader serve
--broker-url`` on one course copy, and workers each on a course copy of their
own (their own ``submitted/`` and ``autograded/``), in their own process group,
as on separate hosts.  A supervisor restarts a worker that died, as systemd's
``Restart=always`` would.
"""

from __future__ import annotations

import glob
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

import sqlalchemy as sa

from grader import course

from ..conftest import Server, fixture_bytes, free_port, launch, wait_ready

BIN = Path(sys.executable).parent

# Short leases and sweeps so that take-overs happen in seconds; a cell may sleep up to a minute.
SETTINGS = (
    "c.Execute.timeout = 60\n"
    "c.GraderService.notebook_timeout_s = 120\n"
    "c.GraderService.lease_s = 6\n"
    "c.GraderService.sweep_interval_s = 1\n"
    "c.GraderService.republish_after_s = 8\n"
    "c.GraderService.max_attempts = 3\n"
)


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class Postgres:
    """A PostgreSQL server of its own, on a free port, that a test may stop and start."""

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found and not shutil.which("pg_ctl"):
            raise RuntimeError("PostgreSQL's pg_ctl not found: apt-get install postgresql")
        self.bin = Path(found[-1]).parent if found else Path(str(shutil.which("pg_ctl"))).parent
        self.dir = Path(tempfile.mkdtemp(prefix="grader-pg-"))
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        data = self.dir / "data"
        subprocess.run(
            _as_postgres([str(self.bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]),
            check=True,
            capture_output=True,
        )
        self.data = data
        self.start()
        admin = sa.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text("CREATE DATABASE grader"))
        admin.dispose()

    def url(self, database: str = "grader") -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str = "grader") -> str:
        """Through its Unix socket: reachable from a process in a network namespace of its own."""
        return f"postgresql+psycopg2://postgres@/{database}?host={self.dir}&port={self.port}"

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_postgres(
                [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-o", options, *args]
            ),
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        self._ctl("start", "-w")

    def stop(self) -> None:
        self._ctl("stop", "-m", "fast", "-w")

    def close(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


class StatementLog:
    """The statements a ``Postgres`` received, from its own log (``log_statement = 'all'``), read in slices.

    A backend writes a statement's line when it receives it, before it answers: once a call returns,
    what it sent is in the log."""

    def __init__(self, postgres: Postgres) -> None:
        admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text("ALTER SYSTEM SET log_statement = 'all'"))
            conn.execute(sa.text("SELECT pg_reload_conf()"))
        admin.dispose()
        time.sleep(0.5)  # the server rereads its configuration
        self.path = postgres.dir / "log"
        self.offset = self.path.stat().st_size

    def since(self) -> list[str]:
        """The statements received since the last call (or since logging started)."""
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
        self.offset += len(data)
        lines = data.decode("utf-8", "replace").splitlines()
        return [line.split("statement: ", 1)[1].strip() for line in lines if "statement: " in line]


class Redis:
    """A Redis server of its own without persistence: a restart loses every message in it."""

    def __init__(self, directory: Path) -> None:
        if not shutil.which("redis-server"):
            raise RuntimeError("redis-server not found: apt-get install redis-server")
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def socket_url(self) -> str:
        """Through its Unix socket: reachable from a process in a network namespace of its own."""
        return f"redis+socket://{self.dir / 'redis.sock'}?virtual_host=0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--unixsocket",
                str(self.dir / "redis.sock"),
                "--unixsocketperm",
                "700",
            ],
            stdout=(self.dir / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        import redis

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    return
            except redis.RedisError:
                time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def queued(self, queue: str = "grader") -> int:
        import redis

        return int(redis.Redis(port=self.port).llen(queue))


@dataclass
class WorkerProcess:
    """One ``grader worker`` on a course copy of its own, as one host."""

    name: str
    root: Path
    db_url: str
    broker_url: str
    extra: list[str] = field(default_factory=list)  # e.g. a `taskset` prefix
    options: list[str] = field(default_factory=list)  # more `grader worker` options
    process: subprocess.Popen[bytes] | None = None
    generation: int = 0  # how many times it was started

    @property
    def log(self) -> Path:
        return self.root / "worker.log"

    @property
    def worker_name(self) -> str:
        """The name it registers under (``--name`` plus its start count, so each run is a new worker)."""
        return f"{self.name}.{self.generation}"

    def start(self) -> None:
        self.generation += 1
        command = [
            str(BIN / "grader"),
            "worker",
            "--db-url",
            self.db_url,
            "--broker-url",
            self.broker_url,
            "--name",
            self.worker_name,
            *self.options,
        ]
        with self.log.open("ab") as log:
            log.write(f"\n--- start {self.worker_name}\n".encode())
        # the process is known at once: a test may kill it as soon as it claims a job, before we see it ready
        self.process = launch([*self.extra, *command], self.root, self.log)
        wait_ready(self.process, self._ready, self.log, f"worker {self.worker_name}")

    def _ready(self) -> bool:
        return f"grader@{self.worker_name} ready" in self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL to its whole process group: the worker, its zygote, its kernels (a host lost)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM: Celery's warm shutdown finishes the running job first."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


class Supervisor:
    """Restarts workers that died, like systemd's ``Restart=always``, while ``watching``."""

    def __init__(self, workers: list[WorkerProcess]) -> None:
        self.workers = workers
        self.watching = threading.Event()
        self.done = threading.Event()
        self.restarts = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(0.3):
            if not self.watching.is_set():
                continue
            for worker in self.workers:
                if not worker.alive() and self.watching.is_set():
                    try:
                        worker.start()
                    except RuntimeError:
                        pass  # killed again before it was seen ready: restarted on the next round
                    self.restarts += 1

    def close(self) -> None:
        self.done.set()
        self.thread.join(10)


@dataclass
class Cluster:
    postgres: Postgres
    redis: Redis | None  # None: the cluster uses another broker (RabbitMQ)
    server: Server
    workers: list[WorkerProcess]
    supervisor: Supervisor

    def engine(self) -> sa.Engine:
        return sa.create_engine(self.postgres.url())

    def job(self, submission_id: int) -> sa.Row:  # type: ignore[type-arg]
        engine = self.engine()
        try:
            with engine.connect() as conn:
                return conn.execute(
                    sa.text("SELECT * FROM grader_jobs WHERE submission_id = :s ORDER BY id DESC"), {"s": submission_id}
                ).first()
        finally:
            engine.dispose()

    def wait_running(self, submission_id: int, timeout: float = 60) -> str:
        """Until the submission's job is being graded; the worker that holds it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = self.job(submission_id)
            if row is not None and row.status == "running" and row.worker:
                return str(row.worker)
            time.sleep(0.1)
        raise AssertionError(f"submission {submission_id} was not picked up in {timeout} s: {row}")

    def holder(self, worker_name: str) -> WorkerProcess:
        return next(w for w in self.workers if w.worker_name == worker_name)


def slow(seconds: float, base: str = "correct") -> bytes:
    """ps1's ``base`` fixture whose first answer sleeps ``seconds`` first: a grading that takes a while."""
    nb = json.loads(fixture_bytes("ps1_tensors", base))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = f"import time\ntime.sleep({seconds})\n" + source
            break
    return json.dumps(nb).encode()


def start_cluster(
    base: Path,
    hosts: int = 2,
    taskset: dict[int, str] | None = None,
    broker_url: str | None = None,
    own_network: bool = False,
    worker_options: list[str] | None = None,
) -> Iterator[Cluster]:
    """PostgreSQL, a broker (a Redis of its own unless ``broker_url``), ``grader serve`` and ``hosts``
    workers, each on its own course copy; with ``own_network``, each worker in a network namespace of
    its own (``unshare --net``: no interface but a loopback that is down), reaching PostgreSQL and Redis
    only through their Unix sockets, as a host that shares nothing with the others but those servers."""
    postgres = Postgres()
    redis_server = None if broker_url else Redis(base / "redis")
    broker_url = broker_url or redis_server.url  # type: ignore[union-attr]
    worker_db = postgres.socket_url() if own_network else postgres.url()
    worker_broker = redis_server.socket_url if own_network and redis_server else broker_url
    server: Server | None = None
    supervisor: Supervisor | None = None
    workers: list[WorkerProcess] = []
    try:
        roots = []
        for name in ["serve", *(f"host{n}" for n in range(1, hosts + 1))]:
            root = course.copy_course(base / name)
            with (root / "nbgrader_config.py").open("a") as config:
                config.write("\n" + SETTINGS)
            roots.append(root)
        server = Server(roots[0], f"http://127.0.0.1:{free_port()}", db_url=postgres.url(), broker_url=broker_url)
        server.start()  # registers the assignments in the shared gradebook
        for n, root in enumerate(roots[1:], start=1):
            extra = ["taskset", "-c", taskset[n]] if taskset and n in taskset else []
            if own_network:
                extra = ["unshare", "--net", *extra]
            worker = WorkerProcess(f"host{n}", root, worker_db, worker_broker, extra, list(worker_options or []))
            workers.append(worker)
            worker.start()
        supervisor = Supervisor(workers)
        yield Cluster(postgres, redis_server, server, workers, supervisor)
    finally:
        if supervisor is not None:
            supervisor.close()
        for worker in workers:
            worker.kill()
        if server is not None:
            server.kill(signal.SIGTERM)
        if redis_server is not None:
            redis_server.stop()
        postgres.close()
