"""``grader demo``: release the course and autograde a few bundled example submissions with stock nbgrader.

The examples are graded in a scratch copy of the course (a temporary directory with its own
``gradebook.db``, ``submitted/`` and ``autograded/``, kept for the user to read), never in the
course itself: its gradebook, dashboard and folders gain no fake students.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import course
from .variants import marked

EXAMPLES = course.REPO_ROOT / "tests" / "fixtures" / "submissions"
# A handful of the fixture submissions, by behaviour: a correct one and typical mistakes.
SHOWCASE: dict[str, tuple[str, ...]] = {
    "ps1_tensors": ("correct", "unintended-broadcast", "view-non-contiguous"),
    "ps2_autograd": ("correct", "sum-instead-of-mean", "grad-not-zeroed"),
    "ps3_regression": ("correct", "grad-not-zeroed", "fit-uses-optim-sgd"),
    "ps4_functions": ("correct", "cube-backward-wrong-derivative", "linear-buffers-as-parameters"),
}


@dataclass(frozen=True)
class ExampleScore:
    assignment: str
    example: str
    score: float
    max_score: float
    failed: tuple[str, ...]


@dataclass(frozen=True)
class Demo:
    """What ``run`` did: the scratch copy of the course it graded in, and every example's score."""

    copy: Path
    scores: tuple[ExampleScore, ...]


def run(root: Path = course.REPO_ROOT, say: Callable[[str], None] = print, scratch: Path | None = None) -> Demo:
    """Grade the showcased examples in a copy of the course at ``root`` made in ``scratch`` (default: a new
    temporary directory, left in place); the course itself gains at most its variant secret."""
    # first, since it reads only source/: a course where the service ran may have students holding values drawn
    # from a lost secret, and the demo stops at once instead of after generating every release. The secret is
    # the course's own (as `grader serve` makes it), so that the copy draws each student's values as the course does.
    made = marked.ensure_secret(root, first_run=not (root / "service-data").exists())
    if made:
        say(f"Created the course secret that draws each student's variant values: {made}")
    copy = course.copy_course(scratch or Path(tempfile.mkdtemp(prefix="grader-demo-")), root)
    say(f"Grading in a scratch copy of the course, {copy}: this course's gradebook and folders stay as they are.")
    say("Generating the student releases (nbgrader generate_assignment --force) ...")
    course.generate_releases(copy)
    scores: list[ExampleScore] = []
    for assignment, examples in SHOWCASE.items():
        for example in examples:
            notebook = EXAMPLES / assignment / f"{example}.ipynb"
            if not notebook.exists():
                raise FileNotFoundError(f"example submission {notebook} is missing")
            course.place_submission(copy, example, assignment, notebook)
        say(f"Autograding {assignment} (nbgrader autograde) ...")
        course.autograde(copy, assignment)
        by_student: dict[str, list[course.CellScore]] = {}
        for row in course.cell_scores(copy, assignment):
            by_student.setdefault(row.student, []).append(row)
        for student in examples:
            rows = by_student.get(student, [])
            scores.append(
                ExampleScore(
                    assignment,
                    student,
                    sum(r.score for r in rows),
                    sum(r.max_score for r in rows),
                    tuple(sorted(r.grade_id for r in rows if r.score < r.max_score)),
                )
            )
    return Demo(copy, tuple(scores))


def table(scores: tuple[ExampleScore, ...]) -> str:
    lines = [f"{'assignment':<16} {'example submission':<24} {'score':>9}  failed test cells"]
    for s in scores:
        lines.append(
            f"{s.assignment:<16} {s.example:<24} {s.score:>4g}/{s.max_score:<4g}  {', '.join(s.failed) or '-'}"
        )
    return "\n".join(lines)


def where(copy: Path) -> str:
    """Where ``run`` left what it graded, and that the course itself has none of it."""
    return (
        f"\nGraded in a scratch copy of the course, kept for you to read: the autograded notebooks are in "
        f"{copy / 'autograded'}/<student>/<assignment>/, the gradebook is {copy / 'gradebook.db'} (`nbgrader export` "
        f"and `nbgrader formgrader` read it when run in {copy}). This course's gradebook, submitted/ and autograded/ "
        f"are untouched; delete {copy} when done."
    )
