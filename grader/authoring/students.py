"""Whom ``grader validate`` grades each notebook as, in its scratch course: the instructor's solution, the two
probes, each fixture and each mutant get a student id of their own (``validate`` builds them, ``verdicts``
reads their results back)."""

from __future__ import annotations

from .mutants import Mutant

SOLUTION = "instructor-solution"
PROBE_RELEASE = "probe-release"
PROBE_ANYTHING = "probe-anything"


def fixture_student(name: str) -> str:
    return f"fixture-{name}"


def mutant_student(mutant: Mutant) -> str:
    return f"mutant-{mutant.id}"
