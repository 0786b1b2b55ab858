"""The queue, scaled out: ``grader serve`` publishes each job's wake-up to the broker, and keeps at it.

A sweep, after every submission and every ``sweep_interval_s``, publishes:

- jobs never published (just accepted; or requeued after an error; or the
  broker was down when they were accepted);
- jobs published ``republish_after_s`` ago and still unclaimed, when the
  broker holds fewer messages than there are such jobs (less what the live
  workers may hold reserved): it lost them, restarted without persistence.
  A long backlog in a healthy broker is left alone;
- running jobs whose worker stopped heartbeating (``lease_s``): a live worker
  takes them over, and jobs that keep killing workers are failed (``leases``).

When the broker was unreachable and is back, every queued job is published
again.  Duplicates are harmless: only one claim succeeds.

In a burst, sweeps are at least ``BURST_GAP_S`` apart: the submissions accepted meanwhile are
published together by the next one, instead of one sweep (a dozen queries) per upload. A
submission after a quiet spell is swept at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time

from ..config import ServiceConfig
from ..records.store import DATABASE_ERRORS, Store
from ..records.tables import now
from . import broker, leases

log = logging.getLogger("grader.service")

BURST_GAP_S = 0.05  # the least time from one sweep's start to the next one's, when uploads wake it


class Dispatcher:
    """Same interface as ``queue.LocalWorkers``: ``start``, ``notify``, ``stop``, ``health``."""

    def __init__(self, store: Store, config: ServiceConfig) -> None:
        self.store = store
        self.config = config
        self.celery = broker.app(config)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.broker_down_since: dt.datetime | None = None
        self.published_total = 0

    def start(self) -> None:
        self.thread = threading.Thread(target=self._loop, name="grader-dispatch", daemon=True)
        self.thread.start()

    def notify(self) -> None:
        self.wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def reload_config(self) -> None:
        """Nothing to reload here: workers apply a changed late policy before their next job
        (``deadlines.apply_late_policy``)."""

    def health(self) -> list[tuple[str, str]]:
        """The broker and every worker, in words, for the queue page."""
        at = now()
        down = self.broker_down_since
        rows = [
            (
                f"broker {broker.redact(self.config.broker_url)}",
                f"unreachable since {down:%H:%M:%S} UTC" if down else f"reachable; {self.published_total} published",
            )
        ]
        for worker in leases.registry(self.store):
            silent = (at - worker.heartbeat_at).total_seconds()
            if worker.stopped_at is not None:
                state = f"stopped at {worker.stopped_at:%Y-%m-%d %H:%M} UTC"
            elif silent > self.config.lease_s:
                state = f"not heard from for {silent:.0f} s (lost?)"
            elif worker.grading:
                state = f"grading submission {', '.join(map(str, worker.grading))}"
            else:
                state = "idle"
            rows.append((f"worker {worker.name} ({worker.concurrency} at a time)", state))
        return rows

    def sweep(self) -> int:
        """Publish what is due; returns how many were published."""
        config = self.config
        failed = leases.fail_exhausted(self.store, config.lease_s, config.max_attempts)
        if failed:
            log.error("jobs %s killed every worker that ran them: failed", failed)
        due = leases.due(self.store, config.lease_s) + self._lost()
        sent: list[int] = []
        try:
            for job_id in due:
                broker.publish(self.celery, job_id)
                sent.append(job_id)
            if not due:
                with self.celery.connection_for_write() as conn:
                    conn.ensure_connection(max_retries=1)
        except Exception as error:  # kombu's connection errors vary by transport
            if self.broker_down_since is None:
                self.broker_down_since = now()
                log.error("the broker is unreachable (%s): jobs stay queued in the database", error)
        else:
            if self.broker_down_since is not None:
                log.warning("the broker is back: publishing every queued job again")
                self.broker_down_since = None
                leases.unpublish_queued(self.store)
                self.wake.set()
        finally:
            if sent:
                leases.published(self.store, sent)
                self.published_total += len(sent)
        return len(sent)

    def _lost(self) -> list[int]:
        """Published, unclaimed for ``republish_after_s``, and (as far as the broker's counts tell) lost."""
        cutoff = now() - dt.timedelta(seconds=self.config.republish_after_s)
        old, waiting = leases.waiting_counts(self.store, published_before=cutoff)
        if not old:
            return []
        ready = broker.ready(self.celery)
        expected = waiting - leases.capacity(self.store, self.config.lease_s)
        if ready is not None and ready >= expected:
            return []
        lost = leases.waiting(self.store, published_before=cutoff)
        log.warning(
            "the broker holds %s message(s) for %d waiting job(s): publishing %d again",
            "an unknown number of" if ready is None else ready,
            max(expected, 0),
            len(lost),
        )
        return lost

    def _loop(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                self.sweep()
            except DATABASE_ERRORS as error:
                log.warning("dispatch: the database did not answer (%s)", type(error).__name__)
            except Exception:
                log.exception("dispatch sweep failed")
            if self.wake.wait(self.config.sweep_interval_s):  # woken by an upload: gather the burst's others
                self.stopping.wait(max(0.0, started + BURST_GAP_S - time.monotonic()))
            self.wake.clear()
