"""Before a release: the instructor's own solution, graded under the assignment's variants.

Each combination of values (every one when there are at most ``MAX_COMBINATIONS``, else that many
distinct ones) is drawn by some student id ``variant-check-N``; the instructor's solution is graded
through the engine as each of those students, in a scratch copy of the course. A test cell it loses
under any of them is a variant the tests cannot grade (a test written against the instructor's own
values, a choice outside what the statement allows): ``grader release`` then refuses, naming the
values and the student id that draws them, and leaves ``release/`` as it was.
"""

from __future__ import annotations

import copy
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from . import marked, secret
from .spec import Value, VariantCell, student_values

MAX_COMBINATIONS = 32
STUDENT = "variant-check-{}"


@dataclass(frozen=True)
class Failure:
    """A test cell the instructor's solution lost under one variant."""

    student: str
    values: dict[str, Value]
    cell: str
    message: str

    def sentence(self, assignment: str) -> str:
        shown = ", ".join(f"{k} = {v!r}" for k, v in self.values.items())
        return (
            f"{assignment}: with {shown} (the values student id {self.student!r} draws), the instructor's solution "
            f"loses {self.cell}: {self.message or '(no message)'}"
        )


def students(
    key: bytes, assignment: str, cells: list[VariantCell], limit: int = MAX_COMBINATIONS
) -> dict[str, dict[str, Value]]:
    """Student ids drawing distinct combinations: all of them when there are at most ``limit``."""
    total = math.prod(c.combinations for c in cells)
    wanted = min(total, limit)
    found: dict[str, dict[str, Value]] = {}
    seen: set[tuple[tuple[str, Value], ...]] = set()
    n = 0
    while len(found) < wanted and n < 200 * wanted:
        student = STUDENT.format(n)
        values = student_values(key, assignment, student, cells)
        combination = tuple(values.items())
        if combination not in seen:
            seen.add(combination)
            found[student] = values
        n += 1
    return found


def check(root: Path, assignment: str, out: TextIO, jobs: int | None = None) -> list[Failure]:
    """The instructor's solution of ``assignment`` under its variants; what it loses (nothing: releasable)."""
    from ..authoring import grading
    from ..authoring.fixtures import Assignment, fill, read_notebook

    cells = marked.cells(root, assignment)
    if not cells:
        return []
    drawn = students(secret.require(root), assignment, cells)
    out.write(f"{assignment}: grading the instructor's solution under {len(drawn)} variants ...\n")
    with tempfile.TemporaryDirectory(prefix="grader-variants-") as scratch:
        course_copy = grading.scratch_course(Path(scratch) / "course", root, assignment)
        known = Assignment(course_copy, assignment)
        solution = fill(read_notebook(known.release), known.solutions())
        results = grading.grade(course_copy, assignment, {s: copy.deepcopy(solution) for s in drawn}, jobs, out)
    failures = []
    for student, values in drawn.items():
        for cell, result in sorted(results.get(student, {}).items()):
            if result.lost:
                failures.append(Failure(student, values, cell, result.first_line))
        if student not in results:
            failures.append(Failure(student, values, "every cell", "the notebook was not graded"))
    return failures
