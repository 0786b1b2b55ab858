"""``grader validate ASSIGNMENT``: the instructor's hidden tests, tested.

In order (``STEPS``, written once): read the assignment (its source notebook, its fixtures, the
mutants of its answer cells), build every notebook to grade (the instructor's solution, each fixture,
each mutant, and the two probes that answer nothing), grade them all through the engine in a scratch
copy of the course, judge each (``verdicts``), tell equivalent mutants apart from survivors by running
the source notebook with each survivor (``equivalence``), and, with ``stock=True``, grade the fixtures
again with stock ``nbgrader autograde`` and compare cell by cell. The result is a ``Report``
(``report.py`` prints it, writes it as HTML and JSON); ``Report.failed`` is what gates a course's CI.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from nbformat import NotebookNode

from .. import course, rubrics
from ..errors import AuthoringError
from ..variants import check, marked, secret
from . import equivalence, grading, probes, provenance, verdicts
from .edits import grade_id
from .fixtures import Assignment, Fixture, build, fill, load, read_notebook
from .mutants import Mutant, Unparsable, derive
from .students import PROBE_ANYTHING, PROBE_RELEASE, SOLUTION, fixture_student, mutant_student
from .verdicts import Report


@dataclass
class Run:
    """What one validation has gathered so far; each step reads it and adds to it."""

    root: Path
    name: str
    out: TextIO
    stock: bool
    jobs: int | None
    mutants_wanted: bool
    assignment: Assignment = field(init=False)
    fixtures: list[Fixture] = field(default_factory=list)
    mutants: list[Mutant] = field(default_factory=list)
    unparsable: list[Unparsable] = field(default_factory=list)
    scratch: Path | None = None
    notebooks: dict[str, NotebookNode] = field(default_factory=dict)
    graded: grading.Results = field(default_factory=dict)
    stock_graded: grading.Results | None = None
    rubric_problems: list[str] = field(default_factory=list)
    release: NotebookNode | None = None
    equivalent: dict[str, equivalence.Verdict] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


def read(run: Run) -> None:
    if run.name not in _assignments(run.root):
        raise AuthoringError(
            f"no assignment {run.name!r}: an assignment is a folder source/<name>/ holding <name>.ipynb "
            f"(found: {', '.join(_assignments(run.root)) or 'none'})"
        )
    run.assignment = Assignment(run.root, run.name)
    run.assignment.source_notebook()  # one sentence when it is missing or unreadable
    run.fixtures = load(run.assignment)
    run.rubric_problems = _rubric_problems(run)
    for problem in run.rubric_problems:
        run.say(f"Rubrics: {problem}.")
    if run.mutants_wanted:
        run.mutants, run.unparsable = derive(run.assignment.solutions())
    for cell in run.unparsable:
        run.say(f"Skipped answer cell {cell.cell}: the mutator cannot parse it ({cell.error}).")
    run.say(
        f"{run.name}: {len(run.assignment.test_cells())} test cells, {len(run.fixtures)} fixtures, "
        f"{len(run.mutants)} mutants of {len(run.assignment.solutions())} answer cells."
    )


def _rubric_problems(run: Run) -> list[str]:
    """One sentence per problem of the rubrics of the assignment's written answers (``grader.rubrics``)."""
    file = rubrics.path(run.root, run.name)
    source = run.assignment.source_notebook()
    return rubrics.problems(
        file.read_text() if file.is_file() else None,
        rubrics.written_cells(source),
        autograded=run.assignment.test_cells(),
        where=f"source/{run.name}/{rubrics.FILENAME}",
    )


def release(run: Run) -> None:
    """A scratch copy of the course, the assignment released from its source as nbgrader does it."""
    assert run.scratch is not None
    try:
        grading.scratch_course(run.scratch / "engine", run.root, run.name)
    except course.NbgraderError as error:
        raise AuthoringError(f"nbgrader could not release {run.name} from its source notebook: {error}") from error
    scratch = Assignment(run.scratch / "engine", run.name)
    solutions = scratch.solutions()
    release_nb = read_notebook(scratch.release)
    run.release = release_nb
    run.notebooks[SOLUTION] = fill(_copy(release_nb), solutions)
    run.notebooks[PROBE_RELEASE] = probes.release_notebook(scratch)
    run.notebooks[PROBE_ANYTHING] = probes.stub_notebook(scratch)
    for fixture in run.fixtures:
        run.notebooks[fixture_student(fixture.name)] = build(scratch, fixture)
    _variants(run, solutions)
    for mutant in run.mutants:
        run.notebooks[mutant_student(mutant)] = fill(_copy(release_nb), {**solutions, mutant.cell: mutant.code})


def _variants(run: Run, solutions: dict[str, str]) -> None:
    """An assignment with per-student variants: the solution as students drawing every combination of values
    (``grader.variants.check``), and each fixture a second time as another student."""
    cells = marked.cells(run.root, run.name)
    if not cells:
        return
    drawn = check.students(secret.require(run.root), run.name, cells)
    run.say(f"Variants: the solution under {len(drawn)} combinations of values, each fixture under a second one.")
    for student in drawn:
        run.notebooks[student] = _copy(run.notebooks[SOLUTION])
    for fixture in run.fixtures:
        name = fixture_student(fixture.name)
        run.notebooks[verdicts.second_variant(name)] = _copy(run.notebooks[name])


def grade(run: Run) -> None:
    assert run.scratch is not None
    run.say(f"Grading {len(run.notebooks)} notebooks with the engine ...")
    run.graded = grading.grade(run.scratch / "engine", run.name, run.notebooks, run.jobs, run.out)


def separate_equivalents(run: Run) -> None:
    survivors = [m for m in run.mutants if not _lost_any(run.graded.get(mutant_student(m), {}))]
    if not survivors:
        return
    run.say(f"Running the source notebook with each of {len(survivors)} surviving mutants (equivalent or not) ...")
    cells = []
    solutions = run.assignment.solutions()
    for cell in run.assignment.source_notebook().cells:
        if cell.cell_type != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        gid = grade_id(cell) or str(cell.get("id", "?"))
        if meta.get("solution"):
            cells.append(equivalence.Cell("answer", gid, solutions[gid]))
        else:
            cells.append(equivalence.Cell("test" if meta.get("grade") else "other", gid, cell.source))
    run.equivalent = equivalence.compare(cells, {m.id: (m.cell, m.code) for m in survivors})


def stock(run: Run) -> None:
    if not run.stock:
        return
    assert run.scratch is not None
    chosen = {s: nb for s, nb in run.notebooks.items() if not s.startswith("mutant-")}
    run.say(f"Grading {len(chosen)} notebooks with stock nbgrader autograde (--stock) ...")
    root = grading.scratch_course(run.scratch / "stock", run.root, run.name)
    run.stock_graded = grading.grade_stock(root, run.name, chosen)


STEPS: tuple[Callable[[Run], None], ...] = (read, release, grade, separate_equivalents, stock)
"""The order of a validation, written once."""


def validate(
    root: Path,
    name: str,
    *,
    stock: bool = False,
    mutants: bool = True,
    jobs: int | None = None,
    out: TextIO,
) -> Report:
    """Validate the assignment ``name`` of the course at ``root``; progress lines go to ``out``."""
    run = Run(root=root, name=name, out=out, stock=stock, jobs=jobs, mutants_wanted=mutants)
    started = time.monotonic()
    source = provenance.read(root, name)  # what is validated: an edit made meanwhile shows the report out of date
    with tempfile.TemporaryDirectory(prefix="grader-validate-") as scratch:
        run.scratch = Path(scratch)
        for step in STEPS:
            begun = time.monotonic()
            step(run)
            run.seconds[step.__name__] = round(time.monotonic() - begun, 2)
    return verdicts.judge(
        assignment=run.assignment,
        fixtures=run.fixtures,
        mutants=run.mutants,
        unparsable=run.unparsable,
        graded=run.graded,
        stock_graded=run.stock_graded,
        equivalent=run.equivalent,
        seconds=round(time.monotonic() - started, 1),
        steps=run.seconds,
        source=source,
        when=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        release=run.release,
        rubric_problems=run.rubric_problems,
    )


def _assignments(root: Path) -> list[str]:
    return course.assignments(root) if (root / "source").is_dir() else []


def _lost_any(cells: dict[str, grading.CellResult]) -> bool:
    return any(c.lost for c in cells.values())


def _copy(nb: NotebookNode) -> NotebookNode:
    import copy

    return copy.deepcopy(nb)
