"""The queue, embedded: local worker threads that claim jobs from the database.

With a broker configured, ``dispatch`` takes this module's place in ``grader serve``
and ``worker`` its threads, on other machines.

The job table is the queue, so a restart loses nothing: jobs left ``running``
by a killed service are put back to ``queued`` at start-up and graded once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...engine.doors.lend import Lender
from .. import hooks
from ..config import ServiceConfig
from ..grading.pipeline import Pipeline
from ..records.models import Job
from ..records.store import DATABASE_ERRORS, Store
from . import leases

if TYPE_CHECKING:
    from ...engine.kernels.kernel import Zygote

log = logging.getLogger("grader.service")

LOCAL = "local"  # the worker name of the embedded queue's threads


class LocalWorkers:
    def __init__(self, store: Store, config: ServiceConfig, zygote: Zygote | None = None) -> None:
        self.store = store
        self.config = config
        self.engine = config.engine(zygote)
        self.pipeline = Pipeline(store, config, self.engine, hooks.after_record(config))
        self.lender = Lender(self.engine)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.current: dict[str, int] = {}  # worker name -> the submission it is grading

    def start(self) -> None:
        """Warm the engine (a few seconds: its zygote imports torch), then start claiming jobs."""
        self.engine.start()
        self.lender.start()  # `grader autograde` of this course grades on this warm engine too
        self.store.requeue_running()
        for n in range(self.config.workers):
            thread = threading.Thread(target=self._loop, name=f"grader-worker-{n}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def notify(self) -> None:
        self.wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        self.wake.set()
        for thread in self.threads:
            thread.join(timeout)
        self.lender.close()
        self.engine.close()

    def reload_config(self) -> None:
        """The course's configuration changed (the late policy): gradings from now on use it."""
        self.engine.reload_config()

    def health(self) -> list[tuple[str, str]]:
        """Each worker thread and the engine's zygote, in words, for the queue page."""
        rows = [("zygote (warm kernel template)", "running" if self.engine.zygote.alive() else "not running")]
        for thread in self.threads:
            if not thread.is_alive():
                rows.append((thread.name, "stopped"))
            elif thread.name in self.current:
                rows.append((thread.name, f"grading submission {self.current[thread.name]}"))
            else:
                rows.append((thread.name, "idle"))
        return rows

    def _loop(self) -> None:
        name = threading.current_thread().name
        while not self.stopping.is_set():
            try:
                job = leases.claim(self.store, None, LOCAL, None, self.config.max_attempts)
            except DATABASE_ERRORS:
                log.warning("the database did not answer; claiming again in 1 s")
                self.stopping.wait(1.0)
                continue
            if job is None:
                self.wake.wait(timeout=1.0)
                self.wake.clear()
                continue
            self.current[name] = job.submission_id
            try:
                self.pipeline.grade_until_recorded(job, self._reclaim(job), self.stopping)
            finally:
                self.current.pop(name, None)

    def _reclaim(self, job: Job) -> Callable[[], Job | None]:
        return lambda: job if self.store.holds(job) else None
