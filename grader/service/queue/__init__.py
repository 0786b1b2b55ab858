"""The queue: who grades which job, and when.

The job table is the queue (``records.tables.jobs``); a job is claimed in exactly one way,
``leases.claim``.  Two implementations of one interface, ``Queue``:

    local.LocalWorkers    threads in ``grader serve`` (the embedded default)
    dispatch.Dispatcher   ``grader serve`` publishes wake-ups to a broker (``broker``); Celery
                          workers on other machines (``worker``) claim and grade

``for_config`` picks the one a configuration asks for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..config import ServiceConfig
from ..records.store import Store

if TYPE_CHECKING:
    from ...engine.kernels.kernel import Zygote


class Queue(Protocol):
    def start(self) -> None:
        """Begin grading queued jobs (the embedded queue warms its engine first)."""

    def notify(self) -> None:
        """A job was queued: grade it soon."""

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking jobs; a job being graded keeps its claim and is requeued or taken over."""

    def reload_config(self) -> None:
        """The course's configuration (its late policy) changed: gradings from now on use it."""

    def health(self) -> list[tuple[str, str]]:
        """Each part (threads, zygote, broker, workers) and its state in words, for the queue page."""


def for_config(store: Store, config: ServiceConfig, zygote: Zygote | None = None) -> Queue:
    """The queue ``config`` asks for: a broker's when ``broker_url`` is set, else local threads, whose
    engine takes ``zygote`` (launched early, ``ServiceConfig.launch_zygote``) when there is one."""
    if config.broker_url:
        from .dispatch import Dispatcher

        if zygote is not None:
            raise ValueError("a zygote for a broker's queue: its workers, on other machines, grade")
        return Dispatcher(store, config)
    from .local import LocalWorkers

    return LocalWorkers(store, config, zygote)
