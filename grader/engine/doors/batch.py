"""``grader autograde``: the TA's batch command, in place of ``nbgrader autograde``.

Same arguments and the same results (gradebook rows, ``autograded/``
notebooks, late penalties), several kernels at a time, with a progress bar;
on the warm engine of a ``grader serve`` already running for the course when
there is one (``lend``), else on an engine of its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ... import course
from ..bookkeeping.stamps import TimeDoubt, release_commit_time, release_time, timestamp_doubts, untrusted_time
from ..kernels.kernel import Zygote

if TYPE_CHECKING:
    from ..bookkeeping.autograde import Outcome


class BatchError(Exception):
    """The batch cannot start; the message says what to fix."""


@dataclass(frozen=True)
class BatchResult:
    assignment: str
    outcomes: tuple[Outcome, ...]
    seconds: float
    doubts: tuple[TimeDoubt, ...] = ()
    untrusted: tuple[TimeDoubt, ...] = ()  # not graded: a time the product cannot trust (``untrusted_time``)

    @property
    def failed(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)

    @property
    def ok(self) -> bool:
        """Whether every submission was graded."""
        return not self.failed and not self.untrusted

    @property
    def zeroed(self) -> tuple[Outcome, ...]:
        """The submissions whose notebook could not be read: recorded in the gradebook as 0."""
        return tuple(o for o in self.outcomes if o.zeroed)

    def summary(self) -> str:
        n = len(self.outcomes)
        rate = n / self.seconds if self.seconds > 0 else 0.0
        zeroed = f" ({len(self.zeroed)} unreadable, recorded as 0)" if self.zeroed else ""
        refused = f"; {len(self.untrusted)} not graded, their time untrusted" if self.untrusted else ""
        lines = [
            f"Autograded {n} submission(s) of {self.assignment} in {self.seconds:.1f} s ({rate:.1f}/s); "
            f"{len(self.failed)} failed{zeroed}{refused}."
        ]
        lines += [f"  {student}: {why}" for student, why in self.failures().items()]
        lines += [doubt.line() for doubt in sorted(self.doubts, key=lambda d: d.student)]
        if n:
            lines.append("Scores are in the gradebook (nbgrader export, nbgrader formgrader, grader serve).")
        return "\n".join(lines)

    def failures(self) -> dict[str, str]:
        """Each student not graded, or graded 0 because the notebook could not be read, with the reason."""
        found = {o.student: _failure(o) for o in self.failed}
        found |= {d.student: d.refusal() for d in self.untrusted}
        return dict(sorted(found.items()))


def write_failures(result: BatchResult, path: Path) -> None:
    """``result.failures()`` as JSON, for a program that runs the command (the regrade's dry run)."""
    path.write_text(json.dumps(result.failures(), indent=1, sort_keys=True) + "\n")


def _failure(outcome: Outcome) -> str:
    """One line saying why ``outcome`` failed: the engine's reason, else nbgrader's last error."""
    if outcome.zeroed:
        return f"[ERROR] could not be graded, recorded as 0: {outcome.reason}"
    if outcome.status.value == "fault":
        return (
            "[FAULT] not graded: a fault of the grader, not of the notebook; "
            f"its gradebook rows are as they were: {outcome.reason}"
        )
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

    def begin(self) -> None:
        """The clock starts now (the rate counts grading, not an engine's start-up), unless grading already began."""
        if self.done == 0:
            self.started = time.monotonic()

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

    def break_line(self) -> None:
        """End the bar's line on a terminal, if it was drawn, so that a message can follow on a line of its own."""
        if self.tty and self.done:
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
    borrow: bool = True,
    trust_timestamps: bool = False,
) -> BatchResult:
    """Autograde every submission of ``assignment`` (or only ``students``) under ``root/submitted``.

    With ``borrow``, a ``grader serve`` of this user already running for the course on the same gradebook
    grades them on its warm engine (``lend``), and the first line on ``out`` says so; otherwise, or for what
    it could not finish, this process starts its own.

    A submission whose ``timestamp.txt`` gives a time after now, or before the assignment's release where git
    says when that was (``release_commit_time``), is not graded (``untrusted_time``): nbgrader would record
    that time and base the late penalty on it. With ``trust_timestamps`` (the regrade's dry run, which writes
    the service's receipts itself) every stamp is used."""
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
    released = release_time(root, assignment)
    untrusted: tuple[TimeDoubt, ...] = ()
    if not trust_timestamps:
        committed = release_commit_time(root, assignment)
        untrusted = tuple(
            d for s in chosen if (d := untrusted_time(root / "submitted" / s / assignment, s, committed)) is not None
        )
        chosen = [s for s in chosen if s not in {d.student for d in untrusted}]
    started = time.monotonic()
    jobs = jobs or 2 * (os.cpu_count() or 1)
    out = out or sys.stderr
    progress = Progress(len(chosen), out)
    outcomes: list[Outcome] = []
    if borrow and chosen:
        outcomes = _on_serve(root, assignment, chosen, jobs, force, db_url, out, progress)
    graded = {o.student for o in outcomes}
    rest = [s for s in chosen if s not in graded]
    if rest:
        outcomes += _on_own_engine(root, assignment, rest, jobs, force, db_url, progress)
    progress.close()
    doubts = tuple(d for s in chosen for d in timestamp_doubts(root / "submitted" / s / assignment, s, released))
    return BatchResult(assignment, tuple(outcomes), time.monotonic() - started, doubts, untrusted)


def _on_serve(
    root: Path,
    assignment: str,
    students: list[str],
    jobs: int,
    force: bool,
    db_url: str | None,
    out: TextIO,
    progress: Progress,
) -> list[Outcome]:
    """What a running ``grader serve`` of the course grades of ``students`` on its warm engine (``lend``): all of
    them, or none (no serve, or it refused: ``out`` says why), or those it finished before it went away."""
    from .. import loans
    from ..limits import Limits
    from ..protocol import ProtocolError

    gradebook = course.gradebook_url(root, db_url)
    serve = loans.find(root, gradebook)
    if serve is None:
        return []
    request = loans.Request(
        assignment,
        tuple(students),
        min(jobs, loans.MAX_JOBS),
        force,
        str(root.resolve()),
        gradebook,
        course.config_digest(root),
        Limits.of(root),
    )
    try:
        refused = serve.ask(request)
    except loans.LendingRefused as error:
        serve.close()
        raise BatchError(str(error)) from None
    if refused is not None:
        serve.close()
        _say(out, f"{refused}; starting this command's own engine.")
        return []
    _say(out, f"Grading on the warm engine of `grader serve` (pid {serve.pid}), already running for this course.")
    outcomes: list[Outcome] = []
    try:
        for outcome in serve.outcomes():
            outcomes.append(outcome)
            progress(outcome)
    except (ProtocolError, OSError) as error:
        left = len(students) - len(outcomes)
        progress.break_line()
        _say(
            out,
            f"`grader serve`'s engine stopped answering ({error}) after {len(outcomes)} of {len(students)} "
            f"submission(s); grading the other {left} on this command's own engine.",
        )
    finally:
        serve.close()
    return outcomes


def _on_own_engine(
    root: Path, assignment: str, students: list[str], jobs: int, force: bool, db_url: str | None, progress: Progress
) -> list[Outcome]:
    """``students`` graded on an engine this process starts (and closes)."""
    # The zygote's start-up (importing torch, warming the checks: seconds) runs from here, while this
    # process imports nbgrader and reads the gradebook: that start-up is the cold command's largest cost.
    zygote = Zygote(root, rehearse=(assignment,))
    zygote.launch()
    try:
        from ..bookkeeping.autograde import grade_many
        from ..engine import Engine, unregistered

        problem = unregistered(course.gradebook_url(root, db_url), assignment)
        if problem is not None:
            raise BatchError(problem)
        # the course's GraderService limits, the same the service grades with
        engine = Engine(root, db_url, zygote=zygote)
    except BaseException:
        zygote.close()
        raise
    with engine:
        progress.begin()
        return grade_many(
            engine.config, assignment, students, jobs=jobs, force=force, progress=progress, zero_unreadable=True
        )


def _say(out: TextIO, line: str) -> None:
    out.write(f"grader autograde: {line}\n")
    out.flush()
