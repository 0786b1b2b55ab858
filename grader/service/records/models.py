"""The frozen records passed between stages."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from ...engine.bookkeeping.rows import NotebookGrades


@dataclass(frozen=True)
class User:
    id: str
    role: str  # "student" | "ta" | "admin"

    @property
    def is_staff(self) -> bool:
        return self.role in ("ta", "admin")


@dataclass(frozen=True)
class TokenInfo:
    """One issued token as ``grader tokens list`` shows it: never its secret."""

    id: str  # the first 8 hex digits of the stored sha256 hash
    user: str
    role: str
    label: str
    created_at: dt.datetime
    expires_at: dt.datetime | None
    state: str  # active | expired | revoked


@dataclass(frozen=True)
class Submission:
    id: int
    student: str
    assignment: str
    received_at: dt.datetime
    location: str  # where the notebook's bytes are kept (``files``)
    sha256: str
    status: str  # queued | running | graded | failed
    attempts: int = 0
    reason: str = ""
    score: float | None = None
    max_score: float | None = None
    late_penalty: float | None = None
    graded_at: dt.datetime | None = None


@dataclass(frozen=True)
class Job:
    id: int
    submission_id: int
    attempts: int
    # the submission as the claim left it, where the claim read it too (on PostgreSQL: the same statement)
    submission: Submission | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TestResult:
    """One graded test cell as the student may see it: never its source."""

    name: str
    points: float
    max_points: float
    passed: bool
    message: str = ""


@dataclass(frozen=True)
class Execution:
    """What the execution stage produced: the autograded notebook, or why there is none."""

    notebook: Path | None
    log: str
    problem: str = ""  # a student-facing reason when the run did not complete normally
    completed: bool = False  # nbgrader completed the run, so it wrote this attempt's gradebook rows
    written: NotebookGrades | None = None  # those rows and the autograded notebook, as nbgrader wrote them


@dataclass(frozen=True)
class Grade:
    submission_id: int
    score: float
    max_score: float
    late_penalty: float
    tests: tuple[TestResult, ...] = field(default_factory=tuple)
    problem: str = ""


@dataclass(frozen=True)
class Recorded:
    """What ``after_record`` hooks receive: the attempt and the grade just recorded for it."""

    submission: Submission
    grade: Grade
