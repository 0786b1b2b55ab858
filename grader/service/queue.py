"""The queue: local worker threads that claim jobs from the database.

The job table is the queue, so a restart loses nothing: jobs left ``running``
by a killed service are put back to ``queued`` at start-up and graded once.
"""

from __future__ import annotations

import threading

from ..engine.engine import Engine
from .config import ServiceConfig
from .pipeline import grade_job
from .store import Store


class LocalWorkers:
    def __init__(self, store: Store, config: ServiceConfig) -> None:
        self.store = store
        self.config = config
        self.engine = Engine(
            config.course_root,
            config.db_url,
            config.notebook_timeout_s,
            config.memory_limit_bytes,
            config.resident_limit_bytes,
        )
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.current: dict[str, int] = {}  # worker name -> the submission it is grading

    def start(self) -> None:
        """Warm the engine (a few seconds: its zygote imports torch), then start claiming jobs."""
        self.engine.start()
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
        self.engine.close()

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
            job = self.store.claim_job()
            if job is None:
                self.wake.wait(timeout=1.0)
                self.wake.clear()
                continue
            self.current[name] = job.submission_id
            try:
                grade_job(self.store, self.config, self.engine, job)
            finally:
                self.current.pop(name, None)
