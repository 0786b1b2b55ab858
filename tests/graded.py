"""One real ``nbgrader autograde`` run per assignment, shared by the course and service tests.

Each assignment is graded in its own copy of the course (its own SQLite
gradebook), the three in parallel: every fixture submission, the source
notebook itself, and a late submission.
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import course
from tests.fixtures.build import fixtures
from tests.fixtures.grading import CellResult, Results, grade

ASSIGNMENTS = course.assignments()
DUE = dt.datetime(2026, 10, 1, 17, 0, 0)
LATE_STUDENT = "late-by-two-days"
SOURCE_STUDENT = "instructor-source"


@dataclass(frozen=True)
class Graded:
    root: Path
    results: Results

    def cells(self, student: str) -> dict[str, CellResult]:
        return self.results[student]


def _grade_assignment(base: Path, assignment: str) -> Graded:
    root = prepare(base, assignment)
    return Graded(root, grade(root, assignment, fixtures(assignment)))


def prepare(base: Path, assignment: str) -> Path:
    """A released copy of the course with the instructor's and a late submission (fixtures not yet placed)."""
    root = course.copy_course(base / assignment)
    course.generate_releases(root, [assignment])
    # the instructor's own notebook, hidden tests and solution markers included, as a submission
    course.place_submission(root, SOURCE_STUDENT, assignment, root / "source" / assignment / f"{assignment}.ipynb")
    # a correct submission two days late: the late policy must take 20%
    correct = Path(__file__).resolve().parent / "fixtures" / "submissions" / assignment / "correct.ipynb"
    late = course.place_submission(root, LATE_STUDENT, assignment, correct)
    (late.parent / "timestamp.txt").write_text(str(DUE + dt.timedelta(days=1, hours=20)))
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment(assignment, duedate=DUE)
    return root


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("course")
    with ThreadPoolExecutor(max_workers=len(ASSIGNMENTS)) as pool:
        futures = {a: pool.submit(_grade_assignment, base, a) for a in ASSIGNMENTS}
        return {a: f.result() for a, f in futures.items()}
