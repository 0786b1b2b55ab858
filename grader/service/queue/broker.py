"""The broker: Celery carries a wake-up per job from ``grader serve`` to the ``grader worker``s.

The job row in the database is the record; a message only says "job N may
be ready".  So the broker may lose a message (a restart without persistence:
``dispatch`` publishes it again) or deliver one twice (``leases.claim`` lets
only one worker have a job), and neither loses or doubles a grade.

Celery's defaults would lose a job when a worker dies, because it
acknowledges a message before running it.  Here a message is acknowledged
only after the job has a recorded result (``task_acks_late``), and one whose
worker process died is given back (``task_reject_on_worker_lost``).  A worker
reserves one message per free kernel (``worker_prefetch_multiplier = 1``).
Redis redelivers a message nobody acknowledged within the visibility timeout,
which is longer than the longest grading; a redelivery while the job is
still being graded finds it held and is dropped.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from ..config import ServiceConfig

TASK = "grader.grade"
QUEUE = "grader"


def app(config: ServiceConfig) -> Celery:
    """The Celery application both sides use: the same broker, queue and guarantees."""
    celery = Celery("grader", broker=config.broker_url, set_as_current=False)
    visibility_s = int(config.notebook_timeout_s + 2 * config.lease_s + 300)
    celery.conf.update(
        task_default_queue=QUEUE,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,  # a task that raised has recorded its result (or is retried)
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        broker_connection_retry=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker waits for a restarted broker instead of exiting
        broker_transport_options={
            "visibility_timeout": visibility_s,
            # Redis: look for unacknowledged messages of dead workers every 10 s, not every 100 s
            "unacked_restore_interval": 10,
            "unacked_restore_throttle": 1,
        },
        broker_pool_limit=4,
    )
    return celery


def publish(celery: Celery, job_id: int, **options: Any) -> None:
    """Send job ``job_id``'s wake-up; raises when the broker cannot be reached (the caller retries later)."""
    celery.send_task(
        TASK,
        args=(job_id,),
        queue=QUEUE,
        retry=True,
        retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5},
        **options,
    )


def ready(celery: Celery) -> int | None:
    """Messages waiting in the queue (not those reserved by workers), or None if the broker cannot say."""
    try:
        with celery.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            declared = conn.default_channel.queue_declare(queue=QUEUE, passive=True)
            return int(declared.message_count)
    except Exception:  # a queue not declared yet, or the broker down: unknown
        return None


def redact(url: str) -> str:
    """The broker URL without its password, for pages and logs."""
    from kombu.utils.url import maybe_sanitize_url

    return str(maybe_sanitize_url(url))
