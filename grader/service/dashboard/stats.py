"""What the dashboard shows, computed from the recorded submissions: the gradebook, item analysis, the queue.

Plain functions over ``Store`` rows (a few queries per page, whatever the class size) returning
frozen records; the pages only lay them out.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa

from ..config import ServiceConfig
from ..records.models import Submission, TestResult
from ..records.store import Store
from ..records.tables import jobs, now, submissions
from ..rules import deadlines, written
from ..rules.counting import counting, final_score

LIKELY_CAUSE = re.compile(r"Likely cause \[([a-z0-9-]+)\]")
# The checks' messages carry each misconception's explanation after its code (``grader.checks.misconceptions``):
# the dashboard reads it there, so the web app needs neither the checks library nor torch.
EXPLAINED = re.compile(r"Likely cause \[([a-z0-9-]+)\]: (.+?)(?:\n\s*\n|\Z)", re.S)


@dataclass(frozen=True)
class AssignmentInfo:
    name: str
    max_score: float
    due: dt.datetime | None  # naive UTC


@dataclass(frozen=True)
class Entry:
    """One student's standing in one assignment."""

    student: str
    assignment: str
    max_score: float
    attempts: int
    last_submission: dt.datetime | None
    counting: Submission | None  # the graded attempt that counts, if any
    late: bool  # the counting attempt came in after the (extended) due date
    written: float = 0.0  # the released written answers' points (``rules.written``)

    @property
    def raw(self) -> float | None:
        return None if self.counting is None else float(self.counting.score or 0.0)

    @property
    def penalty(self) -> float | None:
        return None if self.counting is None else float(self.counting.late_penalty or 0.0)

    @property
    def final(self) -> float | None:
        """The autograded final score with the released written answers' points."""
        if self.counting is None:
            return None
        return final_score(self.counting.score, self.counting.late_penalty) + self.written


@dataclass(frozen=True)
class Standings:
    assignments: tuple[AssignmentInfo, ...]
    students: tuple[str, ...]
    entries: dict[tuple[str, str], Entry]

    def total(self, student: str) -> float:
        return sum(self.entries[(student, a.name)].final or 0.0 for a in self.assignments)

    @property
    def max_total(self) -> float:
        return sum(a.max_score for a in self.assignments)

    def average(self, assignment: str) -> float | None:
        """Mean final score over the students with a graded attempt."""
        finals = [e.final for (_, a), e in self.entries.items() if a == assignment and e.final is not None]
        return sum(finals) / len(finals) if finals else None

    def average_total(self) -> float | None:
        return sum(self.total(s) for s in self.students) / len(self.students) if self.students else None


def course(
    config: ServiceConfig,
) -> tuple[tuple[AssignmentInfo, ...], tuple[str, ...], dict[tuple[str, str], dt.timedelta]]:
    """Assignments (with due dates), students and extensions, from nbgrader's gradebook."""
    from nbgrader.api import Assignment, Gradebook, Student, SubmittedAssignment

    with Gradebook(config.db_url) as gradebook:
        session = gradebook.db
        assignments = tuple(
            AssignmentInfo(a.name, float(a.max_score or 0.0), a.duedate)
            for a in session.query(Assignment).order_by(Assignment.name)
        )
        students = tuple(s.id for s in session.query(Student).order_by(Student.id))
        extensions = {
            (student, name): extension
            for student, name, extension in session.query(
                SubmittedAssignment.student_id, Assignment.name, SubmittedAssignment.extension
            )
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .filter(SubmittedAssignment.extension.isnot(None))
        }
    return assignments, students, extensions


def is_late(submission: Submission, info: AssignmentInfo, extension: dt.timedelta | None) -> bool:
    """Whether ``submission`` came in after its student's effective due date (``deadlines.effective_due``)."""
    return deadlines.is_late(submission.received_at, deadlines.effective_due(info.due, extension))


def standings(store: Store, config: ServiceConfig) -> Standings:
    """Every student x assignment, from one read of the submissions and one of nbgrader's gradebook."""
    assignments, roster, extensions = course(config)
    by_pair: dict[tuple[str, str], list[Submission]] = {}
    for submission in store.submissions():
        by_pair.setdefault((submission.student, submission.assignment), []).append(submission)
    students = tuple(sorted(set(roster) | {student for student, _ in by_pair}))
    entries = {}
    for info in assignments:
        marked = written.everyone(store, info.name, list(students))
        for student in students:
            attempts = by_pair.get((student, info.name), [])
            chosen = counting(attempts, config.counting)
            entries[(student, info.name)] = Entry(
                student=student,
                assignment=info.name,
                max_score=info.max_score,
                attempts=len(attempts),
                last_submission=attempts[-1].received_at if attempts else None,
                counting=chosen,
                late=chosen is not None and is_late(chosen, info, extensions.get((student, info.name))),
                written=marked[student].points if chosen is not None else 0.0,
            )
    return Standings(assignments, students, entries)


# --- one assignment: item analysis ---------------------------------------------------------------


@dataclass(frozen=True)
class TestStat:
    name: str
    max_points: float
    graded: int  # counting attempts that ran this test
    passed: int
    mean_points: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


@dataclass(frozen=True)
class MisconceptionStat:
    code: str
    explanation: str
    students: int  # whose counting attempt showed it
    attempts: int  # every attempt that showed it
    share: float  # students / students with a graded attempt


@dataclass(frozen=True)
class AssignmentReport:
    info: AssignmentInfo
    graded_students: int
    finals: tuple[float, ...]
    tests: tuple[TestStat, ...]
    misconceptions: tuple[MisconceptionStat, ...]
    received: tuple[dt.datetime, ...]  # every attempt's arrival
    late: tuple[Submission, ...]  # late attempts, newest first


def causes(tests: tuple[TestResult, ...]) -> set[str]:
    """The misconception codes the checks named in these test results."""
    return {code for t in tests if not t.passed for code in LIKELY_CAUSE.findall(t.message)}


def explanations(tests: Iterable[TestResult]) -> dict[str, str]:
    """Each misconception code's explanation, as the failing tests' messages give it."""
    found: dict[str, str] = {}
    for test in tests:
        if not test.passed:
            for code, text in EXPLAINED.findall(test.message):
                found.setdefault(code, " ".join(text.split()))
    return found


def assignment_report(store: Store, config: ServiceConfig, name: str) -> AssignmentReport | None:
    assignments, _, extensions = course(config)
    info = next((a for a in assignments if a.name == name), None)
    if info is None:
        return None
    attempts = store.submissions(assignment=name)
    results = store.results_of(name)
    by_student: dict[str, list[Submission]] = {}
    for submission in attempts:
        by_student.setdefault(submission.student, []).append(submission)
    chosen = [c for c in (counting(own, config.counting) for own in by_student.values()) if c is not None]
    per_test: dict[str, list[TestResult]] = {}
    for submission in chosen:
        for test in results.get(submission.id, ()):
            per_test.setdefault(test.name, []).append(test)
    tests = tuple(
        TestStat(
            name=test_name,
            max_points=max(t.max_points for t in runs),
            graded=len(runs),
            passed=sum(1 for t in runs if t.passed),
            mean_points=sum(t.points for t in runs) / len(runs),
        )
        for test_name, runs in per_test.items()
    )
    student_counts = Counter(code for s in chosen for code in causes(results.get(s.id, ())))
    attempt_counts = Counter(code for s in attempts for code in causes(results.get(s.id, ())))
    known = explanations(t for s in attempts for t in results.get(s.id, ()))
    found = tuple(
        sorted(
            (
                MisconceptionStat(
                    code=code,
                    explanation=known.get(code, ""),
                    students=student_counts.get(code, 0),
                    attempts=count,
                    share=student_counts.get(code, 0) / len(chosen) if chosen else 0.0,
                )
                for code, count in attempt_counts.items()
            ),
            key=lambda m: (-m.students, -m.attempts, m.code),
        )
    )
    late = tuple(s for s in reversed(attempts) if is_late(s, info, extensions.get((s.student, name))))
    return AssignmentReport(
        info=info,
        graded_students=len(chosen),
        finals=tuple((c.score or 0.0) - (c.late_penalty or 0.0) for c in chosen),
        tests=tests,
        misconceptions=found,
        received=tuple(s.received_at for s in attempts),
        late=late,
    )


def histogram(values: tuple[float, ...], maximum: float, bins: int = 10) -> list[tuple[str, int]]:
    """Counts of ``values`` in ``bins`` equal ranges of 0..maximum (the last one closed), with labels."""
    if maximum <= 0:
        return [("0", len(values))]
    width = maximum / bins
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value / width)))] += 1
    return [(f"{i * width:g}–{(i + 1) * width:g}", counts[i]) for i in range(bins)]


def over_time(
    times: tuple[dt.datetime, ...], deadline: dt.datetime | None = None, buckets: int = 24
) -> list[tuple[dt.datetime, int]]:
    """Arrivals counted in ``buckets`` equal spans covering every arrival and the deadline."""
    if not times:
        return []
    ends = list(times) + ([deadline] if deadline is not None else [])
    first, last = min(ends), max(ends)
    span = max((last - first).total_seconds(), 1.0) / buckets
    counts = [0] * buckets
    for when in times:
        counts[min(buckets - 1, int((when - first).total_seconds() / span))] += 1
    return [(first + dt.timedelta(seconds=i * span), counts[i]) for i in range(buckets)]


# --- the queue ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueReport:
    counts: dict[str, int]
    failed: tuple[tuple[int, int, str, str, dt.datetime | None], ...]  # job, submission, student/assignment, error
    latencies: tuple[float, ...]  # upload to recorded grade, seconds, first gradings in the last hour (no regrades)
    oldest_queued: dt.datetime | None

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latencies_since(store: Store, since: dt.datetime) -> list[float]:
    """Seconds from upload to recorded grade of the submissions first graded since ``since``: regrades excluded.

    A regrade (``Store.enqueue``) is a second job for a submission that was graded before; its grade is
    recorded hours or days after the upload, which says nothing about how fast the queue is. A job retried
    after an infrastructure failure stays one job, so its time still counts.
    """
    regraded = sa.select(jobs.c.submission_id).group_by(jobs.c.submission_id).having(sa.func.count() > 1)
    query = sa.select(submissions.c.received_at, submissions.c.graded_at).where(
        submissions.c.graded_at.isnot(None), submissions.c.graded_at >= since, submissions.c.id.not_in(regraded)
    )
    with store.engine.connect() as conn:
        return [(r.graded_at - r.received_at).total_seconds() for r in conn.execute(query)]


def queue_report(store: Store) -> QueueReport:
    since = now() - dt.timedelta(hours=1)
    return QueueReport(
        counts=store.queue_counts(),
        failed=tuple(store.failed_jobs(limit=50)),
        latencies=tuple(latencies_since(store, since)),
        oldest_queued=store.oldest_queued(),
    )
