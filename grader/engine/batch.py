"""``grader autograde``: the TA's batch command, in place of ``nbgrader autograde``.

Same arguments and the same results (gradebook rows, ``autograded/``
notebooks, late penalties), several kernels at a time, with a progress bar.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .. import course
from .kernel import Zygote

if TYPE_CHECKING:
    from .autograde import Outcome


class BatchError(Exception):
    """The batch cannot start; the message says what to fix."""


# How far a submission's file times may stray from its timestamp.txt before the batch says so.
CLOCK_SLACK = dt.timedelta(minutes=2)


@dataclass(frozen=True)
class TimeDoubt:
    """A ``timestamp.txt`` that its own files, or the release, contradict: perhaps written by hand."""

    student: str
    stamped: dt.datetime  # what timestamp.txt says, naive UTC
    contradiction: str  # what the stamp is set against, e.g. "its files were last modified at ..."

    def line(self) -> str:
        return (
            f"Warning: {self.student}'s timestamp.txt says {_utc(self.stamped)}, but {self.contradiction}; "
            "the late penalty trusts timestamp.txt: check it before releasing grades."
        )


@dataclass(frozen=True)
class BatchResult:
    assignment: str
    outcomes: tuple[Outcome, ...]
    seconds: float
    doubts: tuple[TimeDoubt, ...] = ()

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)

    @property
    def zeroed(self) -> tuple[Outcome, ...]:
        """The submissions whose notebook could not be read: recorded in the gradebook as 0."""
        return tuple(o for o in self.outcomes if o.zeroed)

    def summary(self) -> str:
        n = len(self.outcomes)
        rate = n / self.seconds if self.seconds > 0 else 0.0
        zeroed = f" ({len(self.zeroed)} unreadable, recorded as 0)" if self.zeroed else ""
        lines = [
            f"Autograded {n} submission(s) of {self.assignment} in {self.seconds:.1f} s ({rate:.1f}/s); "
            f"{len(self.failed)} failed{zeroed}."
        ]
        lines += [f"  {o.student}: {_failure(o)}" for o in sorted(self.failed, key=lambda o: o.student)]
        lines += [doubt.line() for doubt in sorted(self.doubts, key=lambda d: d.student)]
        if n:
            lines.append("Scores are in the gradebook (nbgrader export, nbgrader formgrader, grader serve).")
        return "\n".join(lines)


def _failure(outcome: Outcome) -> str:
    """One line saying why ``outcome`` failed: the engine's reason, else nbgrader's last error."""
    if outcome.zeroed:
        return f"[ERROR] could not be graded, recorded as 0: {outcome.reason}"
    if outcome.reason:
        return f"[ERROR] {outcome.reason}"
    last = [line for line in outcome.log.splitlines() if line.startswith("[ERROR]")][-1:] or ["see the log"]
    return last[0]


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
    available = course.submitted_students(root, assignment)
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
    started = time.monotonic()
    # The zygote's start-up (importing torch, warming the checks: seconds) runs from here, while this
    # process imports nbgrader and reads the gradebook: that start-up is the cold command's largest cost.
    zygote = Zygote(root, rehearse=(assignment,))
    zygote.launch()
    try:
        from .autograde import grade_many
        from .engine import Engine

        _registered(root, assignment, db_url)
        released = release_time(root, assignment)
        doubts = tuple(d for s in chosen for d in timestamp_doubts(root / "submitted" / s / assignment, s, released))
        # the course's GraderService limits, the same the service grades with
        engine = Engine(root, db_url, zygote=zygote)
    except BaseException:
        zygote.close()
        raise
    jobs = jobs or 2 * (os.cpu_count() or 1)
    out = out or sys.stderr
    with engine:
        progress = Progress(len(chosen), out)
        outcomes = grade_many(
            engine.config, assignment, chosen, jobs=jobs, force=force, progress=progress, zero_unreadable=True
        )
        progress.close()
    return BatchResult(assignment, tuple(outcomes), time.monotonic() - started, doubts)


def release_time(root: Path, assignment: str) -> dt.datetime | None:
    """When ``assignment`` was released (its oldest released notebook's modification time, naive UTC), if it was."""
    folder = course.release_directory(root) / assignment
    times = [p.stat().st_mtime for p in folder.glob("*.ipynb")] if folder.is_dir() else []
    return _naive_utc(min(times)) if times else None


def timestamp_doubts(folder: Path, student: str, released: dt.datetime | None) -> tuple[TimeDoubt, ...]:
    """What contradicts the submission ``folder``'s ``timestamp.txt``: files modified after the time it
    gives, a time after the stamp file itself was written, or a time before the release."""
    from nbgrader.utils import parse_utc

    stamp = folder / "timestamp.txt"
    try:
        text = stamp.read_text(errors="replace").strip()
        written = _naive_utc(stamp.stat().st_mtime)
    except OSError:
        return ()
    try:
        stamped: dt.datetime | None = parse_utc(text) if text else None
    except (ValueError, OverflowError, TypeError):
        stamped = None
    if stamped is None:
        return ()  # nbgrader says so itself: an empty stamp is ignored, an unreadable one fails the grading
    files = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    modified = max(_naive_utc(p.stat().st_mtime) for p in files) if files else written
    doubts = []
    if modified > stamped + CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"its files were last modified at {_utc(modified)}, after it"))
    if stamped > written + CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"timestamp.txt itself was written at {_utc(written)}, before it"))
    if released is not None and stamped < released - CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"the assignment was released at {_utc(released)}, after it"))
    return tuple(doubts)


def _naive_utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None)


def _utc(moment: dt.datetime) -> str:
    return f"{moment.isoformat(sep=' ', timespec='seconds')} UTC"


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
