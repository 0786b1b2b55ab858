"""``after_record`` hooks: what runs after a grade is recorded, named in ``c.GraderService.after_record``.

The pipeline calls each hook with the store, the configuration and the ``Recorded`` grade, once
the grade is stored (``grading.pipeline``).  A hook is named by a built-in name or by
``package.module:function``; each name is resolved when the configuration is loaded, so a typo
fails at start-up, not at the first grade.  Built in:

    canvas-csv   keep ``exports/canvas.csv`` current (the Canvas gradebook import of the dashboard)
    grades-csv   keep ``exports/grades.csv`` current (exactly what ``nbgrader export`` writes)
    lti-ags      queue the counting final score for the LMS (LTI grade passback: ``lti.outbox``;
                 ``grader serve`` sends it in the background)

A new export, grade passback to an LMS or per-student variants plug in here, without editing
the pipeline.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import ConfigurationError


class Named(Protocol):
    """What the hooks read of the configuration (``ServiceConfig``, which checks them as it loads)."""

    @property
    def after_record(self) -> Sequence[str]: ...


BUILT_IN = {
    "canvas-csv": "grader.service.dashboard.export:keep_canvas_csv",
    "grades-csv": "grader.service.dashboard.export:keep_grades_csv",
    "lti-ags": "grader.service.lti.outbox:after_record",
}


def resolve(name: str) -> Callable[..., Any]:
    """The hook ``name`` stands for; ``ConfigurationError`` with what to write instead if there is none."""
    target = BUILT_IN.get(name, name)
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(
            f"GraderService.after_record: {name!r} is neither a built-in hook ({', '.join(BUILT_IN)}) "
            "nor package.module:function"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(f"GraderService.after_record: cannot import {module_name!r} ({error})") from None
    hook = getattr(module, attribute, None)
    if not callable(hook):
        raise ConfigurationError(f"GraderService.after_record: {module_name!r} has no function {attribute!r}")
    return hook  # type: ignore[no-any-return]


def after_record(config: Named) -> tuple[Callable[..., Any], ...]:
    """The hooks ``config`` names, in its order."""
    return tuple(resolve(name) for name in config.after_record)
