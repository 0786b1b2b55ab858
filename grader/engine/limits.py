"""A notebook's limits: the course's ``GraderService`` settings (``nbgrader_config.py``).

``grader autograde`` and the service grade with the same ones: the service's settings
(``grader.service.config.ServiceConfig``) take their defaults from here, and the batch command
reads the course's values with ``Limits.of``. Standard library and ``grader.course`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import course


@dataclass(frozen=True)
class Limits:
    notebook_timeout_s: float = 300.0
    """Whole-notebook wall-clock limit."""
    memory_limit_bytes: int = 10 * 1024**3
    """Address space: a torch kernel maps ~5 GiB, RSS ~0.7 GiB."""
    resident_limit_bytes: int = 4 * 1024**3
    """Resident memory, read while a cell runs: the kernel is stopped past it."""

    @classmethod
    def of(cls, root: Path, loaded: Any = None) -> Limits:
        """The course's limits, from its ``nbgrader_config.py`` (``c.GraderService.*``; ``loaded``: that file,
        already read by ``course.read_config``)."""
        section = (course.read_config(root) if loaded is None else loaded).get("GraderService", {})
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})
