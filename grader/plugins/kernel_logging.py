"""Student code that logs is graded like student code that prints.

nbgrader scores any stderr output of a test cell as a failure, and Python's
``logging`` writes to stderr: a correct ``linear()`` that reports a missing
bias with ``logging.warning(...)`` would lose the test's points. Every grading
kernel (stock ``nbgrader autograde`` through ``grader.plugins.isolation.PrivateExecute``,
and the engine's forked kernels) calls ``configure()`` before the first cell, so
log records go to the cell's stdout, in logging's own default format, and a test
cell's stderr still means what nbgrader takes it to mean: a warning or an error.

Standard library only: this runs inside student kernels.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

# What ``python -c`` would start with: ``logging.basicConfig()``'s format, records of WARNING and above.
FORMAT = logging.BASIC_FORMAT

# Python's warnings on stderr ("FILE:LINE: SomethingWarning: text"): nbgrader's IgnorePattern drops them from
# test cells (nbgrader_config.py), and ``grader check`` does the same, so a correct solution never loses points
# to a warning torch raises in legitimate code.
WARNING_LINE = r"(?m)^.*:\d+: \w*Warning: "

# The line stock kernels run before the first cell (``IPKernelApp.exec_lines``); it leaves no name behind.
EXEC_LINE = "import grader.plugins.kernel_logging as _grader_logging; _grader_logging.configure(); del _grader_logging"


class StdoutHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stdout`` is when a record is emitted (the kernel swaps it per cell)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(FORMAT))

    @property
    def stream(self) -> TextIO:
        return sys.stdout

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler assigns it; the live sys.stdout wins
        pass


def configure() -> None:
    """Route the root logger, and logging's last resort for loggers without handlers, to stdout."""
    root = logging.getLogger()
    if not any(isinstance(h, StdoutHandler) for h in root.handlers):
        root.handlers = [h for h in root.handlers if not _writes_stderr(h)]
        root.addHandler(StdoutHandler())
    last_resort = StdoutHandler()
    last_resort.setLevel(logging.WARNING)
    last_resort.setFormatter(logging.Formatter("%(message)s"))
    logging.lastResort = last_resort


def _writes_stderr(handler: logging.Handler) -> bool:
    return isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) in (
        sys.stderr,
        sys.__stderr__,
    )
