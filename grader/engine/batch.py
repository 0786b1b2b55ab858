"""``grader autograde``: the TA's batch command, in place of ``nbgrader autograde``.

Same arguments and the same results (gradebook rows, ``autograded/``
notebooks, late penalties), several kernels at a time, with a progress bar.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .. import course
from .autograde import Outcome, grade_many, submitted_students
from .engine import Engine


class BatchError(Exception):
    """The batch cannot start; the message says what to fix."""


@dataclass(frozen=True)
class BatchResult:
    assignment: str
    outcomes: tuple[Outcome, ...]
    seconds: float

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)

    def summary(self) -> str:
        n = len(self.outcomes)
        rate = n / self.seconds if self.seconds > 0 else 0.0
        lines = [
            f"Autograded {n} submission(s) of {self.assignment} in {self.seconds:.1f} s ({rate:.1f}/s); "
            f"{len(self.failed)} failed."
        ]
        for outcome in sorted(self.failed, key=lambda o: o.student):
            last = [line for line in outcome.log.splitlines() if line.startswith("[ERROR]")][-1:] or ["see the log"]
            lines.append(f"  {outcome.student}: {last[0]}")
        if n:
            lines.append("Scores are in the gradebook (nbgrader export, nbgrader formgrader, grader serve).")
        return "\n".join(lines)


class Progress:
    """One line, redrawn in place on a terminal; every tenth on a log file."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out = total, out
        self.done = self.failed = 0
        self.started = time.monotonic()
        self.tty = out.isatty()
        self._last_tenth = -1

    def __call__(self, outcome: Outcome) -> None:
        self.done += 1
        self.failed += 0 if outcome.ok else 1
        tenth = self.done * 10 // max(self.total, 1)
        if self.tty or tenth != self._last_tenth or self.done == self.total:
            self._last_tenth = tenth
            self.out.write(("\r" if self.tty else "") + self.line() + ("" if self.tty else "\n"))
            self.out.flush()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        return f"[{bar}] {self.done}/{self.total}  {rate:.1f}/s  eta {eta:.0f}s" + (
            f"  failed {self.failed}" if self.failed else ""
        )

    def close(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def run(
    root: Path,
    assignment: str,
    students: list[str] | None = None,
    jobs: int | None = None,
    force: bool = True,
    db_url: str | None = None,
    out: TextIO | None = None,
) -> BatchResult:
    """Autograde every submission of ``assignment`` (or only ``students``) under ``root/submitted``."""
    if assignment not in course.assignments(root):
        known = ", ".join(course.assignments(root))
        raise BatchError(f"no assignment {assignment!r} in {root / 'source'} (known: {known})")
    available = submitted_students(root, assignment)
    if students:
        missing = sorted(set(students) - set(available))
        if missing:
            raise BatchError(
                f"no submission of {assignment} for {', '.join(missing)} "
                f"(looked for {root / 'submitted' / '<student>' / assignment})"
            )
        chosen = sorted(set(students))
    else:
        chosen = available
    if not chosen:
        raise BatchError(f"no submissions of {assignment} under {root / 'submitted'}")
    _registered(root, assignment, db_url)
    jobs = jobs or 2 * (os.cpu_count() or 1)
    out = out or sys.stderr
    started = time.monotonic()
    with Engine(root, db_url) as engine:  # the course's GraderService limits, the same the service grades with
        progress = Progress(len(chosen), out)
        outcomes = grade_many(engine.config, assignment, chosen, jobs=jobs, force=force, progress=progress)
        progress.close()
    return BatchResult(assignment, tuple(outcomes), time.monotonic() - started)


def _registered(root: Path, assignment: str, db_url: str | None) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.gradebook_url(root, db_url)) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            raise BatchError(
                f"{assignment} is not in the gradebook yet: run `grader release {assignment}` "
                "(nbgrader generate_assignment) first"
            ) from None
