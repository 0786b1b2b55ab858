"""Regrading an assignment after its tests changed: first a dry run that shows the score diff, then the real thing.

What a regrade selects is one function, ``rules.regrading.select``, which every door calls (``POST
/api/admin/regrade``, the assignment page, ``grader regrade``): the attempt that counts
(``rules.counting.counting``) of each chosen student, or one submission by id.

The dry run grades the attempt that counts of every student again, in a scratch copy of the
course (its configuration, late policy and ``source/``, released there into a scratch gradebook
that gets the course's due date and every extension; each attempt keeps the time the service
received it), with the same engine and limits as the service, and compares each test's points,
and the final score (raw score less the late penalty), with what is recorded.
Nothing of the course, its gradebook or the service's records is written. Applying queues those
attempts for the service's workers, which grade them against the course's gradebook: run
``grader release ASSIGNMENT`` after editing the tests, so the gradebook holds the new ones.

From the page a dry run runs in the background (``Runs``): its page, and a JSON status route, say
how far it has got (``Progress``: the stage, and attempts graded of all, from ``grader autograde``'s
own progress lines) until the diff is ready.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import course
from ...errors import NotFound
from ..config import ServiceConfig
from ..records.store import Store
from ..rules.counting import final_score
from ..rules.regrading import select


@dataclass(frozen=True)
class ScoreChange:
    """One student's attempt that counts: its recorded raw score and what the current tests give."""

    student: str
    submission_id: int
    before: float  # the final score recorded: raw score less the late penalty
    after: float | None  # the final score the current tests, due date and late policy give; None: see ``problem``
    changed_tests: tuple[tuple[str, float, float], ...]  # (test, points before, points after)
    problem: str = ""  # why it could not be regraded (``after`` is None): its recorded score stays
    penalty_before: float = 0.0  # the late penalty recorded
    penalty_after: float = 0.0  # the late penalty the current due date, extension and policy give

    @property
    def delta(self) -> float | None:
        return None if self.after is None else self.after - self.before

    def reasons(self) -> str:
        """What changes, in words: the tests whose points change, and any rule (the late penalty) that does."""
        if self.problem:
            return f"could not be regraded: {self.problem}"
        found = [f"{name} {b:g}->{a:g}" for name, b, a in self.changed_tests]
        if round(self.penalty_after - self.penalty_before, 6) != 0:
            found.append(f"late penalty {self.penalty_before:g}->{self.penalty_after:g}")
        return ", ".join(found)


@dataclass(frozen=True)
class DryRun:
    assignment: str
    changes: tuple[ScoreChange, ...]  # every student with a graded attempt, changed or not
    seconds: float

    @property
    def changed(self) -> tuple[ScoreChange, ...]:
        """The students whose score or test points the regrade would change."""
        return tuple(c for c in self.changes if not c.problem and (c.delta != 0 or c.changed_tests))

    @property
    def failed(self) -> tuple[ScoreChange, ...]:
        """The students who could not be regraded: a regrade leaves their recorded score as it is."""
        return tuple(c for c in self.changes if c.problem)


@dataclass
class Progress:
    """How far a dry run has got, for the page that shows it while it runs (``Runs``)."""

    assignment: str
    stage: str = "starting"
    done: int = 0  # attempts graded so far
    total: int = 0  # attempts to grade
    started: float = field(default_factory=time.monotonic)
    result: DryRun | None = None
    error: str = ""

    @property
    def finished(self) -> bool:
        return self.result is not None or bool(self.error)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        """The progress in words: what the page and the status route say."""
        if self.error:
            return f"The dry run failed: {self.error}"
        if self.result is not None:
            return f"Done: graded {self.total} attempt(s) in {self.result.seconds:.1f} s."
        if self.stage == "grading":
            return f"Grading: {self.done} of {self.total} attempt(s) graded ({self.seconds:.0f} s so far)."
        return f"{self.stage[:1].upper()}{self.stage[1:]} ({self.seconds:.0f} s so far)."

    def status(self) -> dict[str, Any]:
        return {
            "assignment": self.assignment,
            "stage": "failed" if self.error else "done" if self.result is not None else self.stage,
            "done": self.done,
            "total": self.total,
            "seconds": round(self.seconds, 1),
            "finished": self.finished,
            "message": self.line(),
        }


def dry_run(
    store: Store, config: ServiceConfig, assignment: str, jobs: int | None = None, progress: Progress | None = None
) -> DryRun:
    """Grade every counting attempt of ``assignment`` with the course's current tests, writing nothing.

    ``progress``, if given, is kept up to date as it goes (its stage, and attempts graded of all).
    """
    if assignment not in course.assignments(config.course_root):
        raise NotFound(f"no assignment {assignment!r} in {config.course_root / 'source'}")
    progress = progress or Progress(assignment)
    started = time.monotonic()
    attempts = select(store, config, assignment=assignment)
    progress.total = len(attempts)
    scratch = Path(tempfile.mkdtemp(prefix="grader-regrade-"))
    try:
        progress.stage = "copying the course into a scratch directory"
        root = course.copy_course(scratch / "course", config.course_root)
        progress.stage = "releasing the current tests in the scratch copy"
        course.generate_releases(root, [assignment])
        _copy_deadlines(config.db_url, course.gradebook_url(root), assignment)
        progress.stage = f"placing {len(attempts)} attempt(s) to grade"
        for submission in attempts:
            data = store.notebook(submission)
            course.place_notebook(root, submission.student, assignment, data, submission.received_at)
        graded: dict[str, dict[str, float]] = {}
        penalties: dict[str, float] = {}
        problem = ""
        failures: dict[str, str] = {}
        if attempts:
            progress.stage = "grading"

            def seen(done: int) -> None:
                progress.done = done

            problem, failures = _autograde(root, assignment, jobs, seen)
            progress.stage = "comparing the scores"
            for row in course.cell_scores(root, assignment):
                graded.setdefault(row.student, {})[row.grade_id] = row.score
            penalties = _penalties(course.gradebook_url(root), assignment)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    changes = []
    for submission in attempts:
        before = {t.name: t.points for t in store.results(submission.id)}
        recorded = final_score(submission.score, submission.late_penalty)
        if submission.student in failures or submission.student not in graded:
            why = failures.get(submission.student) or problem or "not graded"
            changes.append(ScoreChange(submission.student, submission.id, recorded, None, (), why))
            continue
        after = graded[submission.student]
        tests = tuple(
            (name, before.get(name, 0.0), after.get(name, 0.0))
            for name in sorted(set(before) | set(after))
            if before.get(name, 0.0) != after.get(name, 0.0)
        )
        penalty = penalties.get(submission.student) or 0.0
        final = final_score(sum(after.values()), penalty)
        changes.append(
            ScoreChange(
                submission.student,
                submission.id,
                recorded,
                round(final, 6),
                tests,
                penalty_before=submission.late_penalty or 0.0,
                penalty_after=penalty,
            )
        )
    return DryRun(assignment, tuple(changes), time.monotonic() - started)


def _copy_deadlines(course_url: str, scratch_url: str, assignment: str) -> None:
    """The course's due date of ``assignment`` and every student's extension, into the scratch gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course_url) as source:
        try:
            found = source.find_assignment(assignment)
        except MissingEntry:
            return
        due = found.duedate
        extensions = {s.student.id: s.extension for s in found.submissions if s.extension is not None}
    with Gradebook(scratch_url) as scratch:
        scratch.update_or_create_assignment(assignment, duedate=due)
        for student, extension in extensions.items():
            scratch.update_or_create_student(student)
            scratch.update_or_create_submission(assignment, student, extension=extension)


def _penalties(scratch_url: str, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(scratch_url) as scratch:
        return {
            s.student.id: float(s.late_submission_penalty or 0.0)
            for s in scratch.find_assignment(assignment).submissions
        }


PROGRESS_LINE = re.compile(r"\] (\d+)/(\d+) ")  # grader autograde's progress on a log: "[###...] 2/3  0.4/s ..."


def _autograde(
    root: Path, assignment: str, jobs: int | None, seen: Callable[[int], None] | None = None
) -> tuple[str, dict[str, str]]:
    """``grader autograde`` on the scratch course, in a process of its own: what went wrong with the whole run, if
    anything, and each student it could not grade, with the reason (its ``--failures-json``).

    Its own process: nbgrader's converters change the process's working directory while they
    run, which must not happen in the service beside its own gradings (nor leave the service in
    the scratch directory once it is removed). ``seen`` hears how many attempts it has graded so
    far, from the progress lines it writes.
    """
    failures_file = root.parent / "failures.json"
    command = [str(Path(sys.executable).parent / "grader"), "autograde", assignment, "--course", str(root)]
    command += ["--failures-json", str(failures_file), "--trust-timestamps"]  # the service's receipts, placed here
    if jobs:
        command += ["--jobs", str(jobs)]
    output: list[str] = []
    with subprocess.Popen(
        command,
        env=course.environment(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            found = PROGRESS_LINE.search(line)
            if found and seen is not None:
                seen(int(found.group(1)))
        returncode = process.wait()
    if returncode == 0:
        return "", {}
    try:
        failures: dict[str, str] = json.loads(failures_file.read_text())
    except (OSError, ValueError):
        failures = {}  # it stopped before grading: the whole run's output says why
    if failures:
        return "", failures
    return f"the dry run's grading failed (exit {returncode}): {''.join(output)[-500:]}", {}


class Runs:
    """Dry runs started from the page, each in a thread of its own, looked up by an unguessable id.

    One at a time per assignment: asking again while one runs gives that one. The latest few finished
    runs are kept, so that their page can still be shown.
    """

    KEEP = 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, Progress] = {}

    def start(self, store: Store, config: ServiceConfig, assignment: str, jobs: int | None = None) -> str:
        if assignment not in course.assignments(config.course_root):
            raise NotFound(f"no assignment {assignment!r} in {config.course_root / 'source'}")
        with self._lock:
            for ident, running in self._runs.items():
                if running.assignment == assignment and not running.finished:
                    return ident
            ident = secrets.token_urlsafe(12)
            progress = Progress(assignment)
            self._runs[ident] = progress
            for old in [k for k, p in self._runs.items() if p.finished][: max(0, len(self._runs) - self.KEEP)]:
                del self._runs[old]

        def work() -> None:
            try:
                progress.result = dry_run(store, config, assignment, jobs, progress)
            except Exception as error:  # shown on the run's page: nothing else is waiting for it
                progress.error = str(error) or type(error).__name__

        threading.Thread(target=work, name=f"dry-run-{assignment}", daemon=True).start()
        return ident

    def get(self, ident: str) -> Progress | None:
        with self._lock:
            return self._runs.get(ident)


RUNS = Runs()


def apply(store: Store, config: ServiceConfig, assignment: str) -> int:
    """Queue every counting attempt of ``assignment`` for regrading; how many."""
    attempts = select(store, config, assignment=assignment)
    if not attempts:
        raise NotFound(f"no graded submissions of {assignment} to regrade")
    return store.enqueue([s.id for s in attempts])


def report(run: DryRun) -> str:
    """The dry run as a plain-text table: every student whose score or test points would change."""
    lines = [
        f"Dry run of a regrade of {run.assignment}: {len(run.changes)} students, {len(run.changed)} would change "
        f"({run.seconds:.1f} s). Nothing was written. Scores are final: raw score less the late penalty."
    ]
    if run.changed:
        lines.append(f"{'student':<24} {'submission':>10} {'before':>8} {'after':>8} {'change':>8}  what changes")
        for c in run.changed:
            after = "-" if c.after is None else f"{c.after:g}"
            delta = "-" if c.delta is None else f"{c.delta:+g}"
            lines.append(f"{c.student:<24} {c.submission_id:>10} {c.before:>8g} {after:>8} {delta:>8}  {c.reasons()}")
    if run.failed:
        lines.append(
            f"{len(run.failed)} student(s) could not be regraded; a regrade leaves their recorded score as it is:"
        )
        lines += [f"{c.student:<24} {c.submission_id:>10} {c.before:>8g}  {c.reasons()}" for c in run.failed]
    return "\n".join(lines)
