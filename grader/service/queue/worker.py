"""``grader worker``: grade the jobs the broker announces, on this machine, with the embedded engine.

One worker process is one Celery worker (``threads`` pool) around one warm
``Engine``: ``concurrency`` kernels at a time, each single-threaded (torch,
OpenMP, MKL and OpenBLAS at one thread), so by default a worker uses exactly
the CPUs it may run on (``os.sched_getaffinity``: a systemd ``CPUAffinity=``,
a container's cpuset, ``taskset``) and N workers on one host, each given its
share, do not oversubscribe the cores.

Each host needs its own working copy of the course (``submitted/`` and
``autograded/`` are written there); the gradebook and the submitted notebooks
are in the shared PostgreSQL database.  For each message the worker claims
the job (``leases``), heartbeats while grading, and records the result; the
message is acknowledged only then.  A worker killed mid-grade stops
heartbeating, and ``grader serve`` has another worker take the job over.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import course
from ...errors import ConfigurationError, DatabaseUnavailable
from .. import config as service_config
from .. import hooks
from ..config import ServiceConfig
from ..grading.pipeline import Pipeline
from ..records.models import Job
from ..records.store import DATABASE_ERRORS, Store
from ..rules import deadlines
from . import broker, leases

if TYPE_CHECKING:
    from ...engine.engine import Engine
    from ...engine.kernels.kernel import Zygote

log = logging.getLogger("grader.worker")

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
RETRY_LATER: tuple[type[Exception], ...] = (DatabaseUnavailable, *DATABASE_ERRORS)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def cpu_share() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def limit_threads() -> None:
    """One thread per kernel for every math library, set before anything imports them."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"


class Worker:
    """Claims, grades and records jobs by id; heartbeats for the jobs it holds."""

    def __init__(self, store: Store, config: ServiceConfig, engine: Engine, name: str, concurrency: int) -> None:
        self.store = store
        self.config = config
        self.engine = engine
        self.pipeline = Pipeline(store, config, engine, hooks.after_record(config))
        self.name = name
        self.concurrency = concurrency
        self.held: set[int] = set()  # the jobs this worker's threads are grading
        self.held_lock = threading.Lock()
        self.late_policy: str | None = None  # as last applied from the database
        self.settings_lock = threading.Lock()
        self.stopping = threading.Event()
        self.beating = threading.Thread(target=self._beat, name="grader-heartbeat", daemon=True)

    def start(self) -> None:
        self.apply_settings()
        leases.heartbeat(self.store, self.name, [], self.concurrency)
        self.beating.start()

    def stop(self) -> None:
        self.stopping.set()
        self.beating.join(5)
        try:
            leases.signed_off(self.store, self.name)
        except DATABASE_ERRORS:
            pass

    def handle(self, job_id: int) -> str:
        """Grade job ``job_id`` if it is ours to grade; what happened, in a word (for the log)."""
        config = self.config
        self.apply_settings()
        job = leases.claim(self.store, job_id, self.name, config.lease_s, config.max_attempts)
        if job is None:
            log.info("job %s: graded, failed or held by another worker already (a duplicate message)", job_id)
            return "duplicate"
        with self.held_lock:
            self.held.add(job.id)
        try:
            self.pipeline.grade_until_recorded(job, self._reclaim(job), self.stopping)
        finally:
            with self.held_lock:
                self.held.discard(job.id)
        return "graded"

    def apply_settings(self) -> None:
        """The late policy set on the dashboard, into this course copy (one small query per job)."""
        with self.settings_lock:
            applied = deadlines.apply_late_policy(self.store, self.config, self.late_policy)
            if applied != self.late_policy:
                self.engine.reload_config()
                log.info("late policy from the database applied: %s", applied)
                self.late_policy = applied

    def _reclaim(self, job: Job) -> Callable[[], Job | None]:
        config = self.config
        return lambda: leases.claim(self.store, job.id, self.name, config.lease_s, config.max_attempts)

    def _beat(self) -> None:
        interval = self.config.lease_s / 3
        while not self.stopping.wait(interval):
            try:
                with self.held_lock:
                    held = sorted(self.held)
                leases.heartbeat(self.store, self.name, held, self.concurrency)
            except DATABASE_ERRORS as error:
                log.warning("heartbeat: the database did not answer (%s)", type(error).__name__)


def prepare(config: ServiceConfig) -> None:
    """Refuse to start where no job could be graded: the assignments must be in the shared gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(config.db_url) as gradebook:
        known = {a.name for a in gradebook.assignments}
    missing = [a for a in course.assignments(config.course_root) if a not in known]
    if missing:
        raise ConfigurationError(
            f"the gradebook has no {', '.join(missing)}: start `grader serve` on this database first "
            "(it registers the course's assignments), or run `grader release` against it"
        )


def run(db_url: str | None = None, broker_url: str | None = None, concurrency: int = 0, name: str = "") -> int:
    limit_threads()
    config = service_config.load(db_url=db_url, broker_url=broker_url)
    if not config.broker_url:  # none given anywhere: Redis on this machine
        config = service_config.load(db_url=db_url, broker_url=DEFAULT_BROKER)
    # the zygote starts first (seconds: it imports torch), while this process readies the rest
    zygote = config.launch_zygote()
    try:
        return _work(config, zygote, concurrency, name)
    finally:
        zygote.close()  # the engine closed it already, unless start-up failed before it took it


def _work(config: ServiceConfig, zygote: Zygote, concurrency: int, name: str) -> int:
    prepare(config)
    store = Store(config.db_url)
    concurrency = concurrency or cpu_share()
    name = name or leases.worker_name()
    engine = config.engine(zygote).start()
    worker = Worker(store, config, engine, name, concurrency)
    celery = broker.app(config)

    @celery.task(name=broker.TASK, bind=True, max_retries=None)  # type: ignore[untyped-decorator]
    def grade(task: Any, job_id: int) -> str:
        try:
            return worker.handle(job_id)
        except RETRY_LATER as error:
            # nothing was claimed, or the claim is kept (heartbeats go on): try again after a pause
            raise task.retry(countdown=min(2 ** min(task.request.retries, 5), 30), exc=error) from None

    print(
        f"grader worker {name}: {concurrency} kernel(s) at a time on {cpu_share()} CPU(s); course "
        f"{config.course_root}; broker {broker.redact(config.broker_url)}; gradebook "
        f"{store.engine.url.render_as_string(hide_password=True)}",
        flush=True,
    )
    worker.start()
    try:
        celery.worker_main(
            [
                "worker",
                "--pool=threads",
                f"--concurrency={concurrency}",
                f"--hostname=grader@{name}",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel=INFO",
            ]
        )
    finally:
        worker.stop()
        engine.close()
    return 0
