"""One assignment's course copy with a real SQLite gradebook, the service's store and a warm engine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader import course
from grader.engine.engine import Engine
from grader.service import config as service_config
from grader.service.config import ServiceConfig
from grader.service.records.store import Store


@dataclass
class Graded:
    root: Path
    config: ServiceConfig
    store: Store
    engine: Engine


@contextmanager
def started(base: Path, *assignments: str, db_url: str | None = None) -> Iterator[Graded]:
    """``assignments`` released into a gradebook at ``db_url`` (the course's SQLite file by default)."""
    root = course.copy_course(base / "course")
    course.generate_releases(root, names=assignments, db_url=db_url)
    config = service_config.load(root, db_url=db_url)
    store = Store(config.db_url, create=True)
    with config.engine() as engine:
        yield Graded(root, config, store, engine)
