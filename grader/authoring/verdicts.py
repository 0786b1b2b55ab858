"""What a validation found: each fixture's and each mutant's verdict, and the findings that fail it.

``judge`` turns the graded notebooks into a ``Report``. A report **fails** (``Report.failures``) when
the instructor's own solution loses a point, a fixture scores otherwise than it declared, a mutant
survives that is not equivalent on the tests' inputs, a test cell credits a notebook that answers
nothing (the release, or ``Anything``), a message shows a value only the hidden tests hold, or (with
``--stock``) stock nbgrader and the engine disagree on a cell. **Message quality** findings (a caught
fixture or mutant whose message is empty, blames another function, or names a misconception that does
not fit the change) are reported as warnings: ``--strict`` makes them fail too.

Nothing here imports torch: the dashboard reads the report's JSON through ``Report.as_dict``.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nbformat import NotebookNode

from .equivalence import Verdict
from .fixtures import Assignment, Fixture
from .grading import CellResult, Results, first_line
from .mutants import Mutant, Unparsable
from .provenance import Source
from .students import PROBE_ANYTHING, PROBE_RELEASE, SOLUTION, fixture_student, mutant_student

CODE = re.compile(r"\[([a-z0-9]+(?:-[a-z0-9]+)+)\]")
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")


class Status(enum.StrEnum):
    CAUGHT = "caught"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"


class Problem(enum.StrEnum):
    EMPTY = "empty message"
    OTHER_FUNCTION = "blames another function"
    OTHER_CODE = "names a misconception that does not fit"


@dataclass(frozen=True)
class TestCell:
    grade_id: str
    points: float
    fixtures: tuple[str, ...]
    """The fixtures that lose this cell, as they declare."""
    mutants: tuple[str, ...]
    """The mutants this cell catches."""
    messages: tuple[str, ...]
    """What students read when it fails (the distinct first lines, at most three)."""


@dataclass(frozen=True)
class FixtureVerdict:
    name: str
    why: str
    expected: str
    ok: bool
    problems: tuple[str, ...]


@dataclass(frozen=True)
class MutantVerdict(Mutant):
    """The mutant and what the hidden tests made of it."""

    status: Status
    caught_by: tuple[str, ...]
    difference: str
    """For a survivor: the first thing it changed that no test noticed."""


@dataclass(frozen=True)
class Credit:
    probe: str
    grade_id: str
    score: float
    max_score: float


@dataclass(frozen=True)
class Leak:
    student: str
    grade_id: str
    values: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class Quality:
    subject: str
    grade_id: str
    problem: Problem
    detail: str


@dataclass(frozen=True)
class Disagreement:
    student: str
    grade_id: str
    engine: float | None
    stock: float | None


@dataclass(frozen=True)
class Report:
    assignment: str
    commit: str
    dirty: bool
    """The assignment's source folder had changes git had not committed (``provenance``)."""
    sources: dict[str, str]
    """The SHA-256 of each file of the assignment's source folder, by path (``provenance.changes`` compares)."""
    when: str
    seconds: float
    steps: dict[str, float]
    points: float
    tests: tuple[TestCell, ...]
    fixtures: tuple[FixtureVerdict, ...]
    mutants: tuple[MutantVerdict, ...]
    unparsable: tuple[Unparsable, ...]
    solution_lost: tuple[tuple[str, str], ...]
    credits: tuple[Credit, ...]
    leaks: tuple[Leak, ...]
    quality: tuple[Quality, ...]
    stock: tuple[Disagreement, ...] | None
    rubrics: tuple[str, ...] = ()
    """One sentence per problem of the written answers' rubrics (``grader.rubrics``)."""

    @property
    def survivors(self) -> tuple[MutantVerdict, ...]:
        return tuple(m for m in self.mutants if m.status is Status.SURVIVED)

    def failures(self, strict: bool = False) -> list[str]:
        """One sentence per finding that fails the validation."""
        found = [f"rubrics: {problem}" for problem in self.rubrics]
        found += [f"the instructor's solution loses {gid}: {message}" for gid, message in self.solution_lost]
        found += [f"fixture {f.name}: {'; '.join(f.problems)}" for f in self.fixtures if not f.ok]
        found += [
            f"surviving mutant {m.id} ({m.operator}) in {m.cell}, line {m.line}: {' / '.join(m.diff)}"
            for m in self.survivors
        ]
        found += [
            f"{c.grade_id} credits {c.probe} ({c.score:g}/{c.max_score:g}): it passes without a working answer"
            for c in self.credits
        ]
        found += [
            f"{leak.grade_id} shows hidden value(s) {', '.join(leak.values)} to {leak.student}" for leak in self.leaks
        ]
        found += [
            f"stock nbgrader and the engine disagree on {d.student}/{d.grade_id}: engine {d.engine}, stock {d.stock}"
            for d in self.stock or ()
        ]
        if strict:
            found += [f"{q.subject}, {q.grade_id}: {q.problem.value} ({q.detail})" for q in self.quality]
        return found

    def failed(self, strict: bool = False) -> bool:
        return bool(self.failures(strict))

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["survivors"] = len(self.survivors)
        data["failures"] = self.failures()
        return data


def judge(
    *,
    assignment: Assignment,
    fixtures: Iterable[Fixture],
    mutants: Iterable[Mutant],
    unparsable: Iterable[Unparsable],
    graded: Results,
    stock_graded: Results | None,
    equivalent: Mapping[str, Verdict],
    seconds: float,
    steps: dict[str, float],
    source: Source,
    when: str,
    release: NotebookNode | None,
    rubric_problems: Iterable[str] = (),
) -> Report:
    fixtures, mutants = list(fixtures), list(mutants)
    tests = assignment.test_cells()
    solutions = assignment.solutions()
    functions = _function_names(solutions)

    fixture_verdicts = [_fixture_verdict(f, graded.get(fixture_student(f.name), {}), tests) for f in fixtures]
    # per-student variants: each fixture graded again as another student (other values) must score alike
    other_values: list[FixtureVerdict] = []
    for f in fixtures:
        again = graded.get(second_variant(fixture_student(f.name)))
        if again is not None:
            second = _fixture_verdict(f, again, tests)
            if not second.ok:
                shown = f"{f.name} (as {second_variant(fixture_student(f.name))}, other variant values)"
                other_values.append(FixtureVerdict(shown, f.why, second.expected, False, second.problems))
    mutant_verdicts = [_mutant_verdict(m, graded.get(mutant_student(m), {}), equivalent.get(m.id)) for m in mutants]
    solution = graded.get(SOLUTION, {})
    solution_lost = tuple((gid, c.first_line) for gid, c in sorted(solution.items()) if c.lost)
    if not solution:
        solution_lost = (("(all)", "the instructor's solution was not graded"),)
    for student in sorted(s for s in graded if s.startswith(VARIANT_CHECK)):
        solution_lost += tuple(
            (gid, f"{c.first_line} (with the variant values student id {student!r} draws)")
            for gid, c in sorted(graded[student].items())
            if c.lost
        )
    credits = tuple(
        Credit(probe, gid, c.score, c.max_score)
        for probe in (PROBE_RELEASE, PROBE_ANYTHING)
        for gid, c in sorted(graded.get(probe, {}).items())
        if c.score > 0
    )

    quality: list[Quality] = []
    for fixture in fixtures:
        for gid in fixture.fails:
            cell = graded.get(fixture_student(fixture.name), {}).get(gid)
            if cell is not None and cell.lost and not cell.first_line.split(":")[-1].strip():
                quality.append(
                    Quality(f"fixture {fixture.name}", gid, Problem.EMPTY, "the student reads no explanation")
                )
    for mutant, verdict in zip(mutants, mutant_verdicts, strict=True):
        if verdict.status is Status.CAUGHT:
            quality += _mutant_quality(mutant, verdict, graded.get(mutant_student(mutant), {}), functions)

    by_cell_fixtures = {
        gid: tuple(f.name for f, v in zip(fixtures, fixture_verdicts, strict=True) if gid in f.fails and v.ok)
        for gid in tests
    }
    by_cell_mutants = {gid: tuple(v.id for v in mutant_verdicts if gid in v.caught_by) for gid in tests}
    test_cells = tuple(
        TestCell(
            gid,
            points,
            by_cell_fixtures[gid],
            by_cell_mutants[gid],
            _messages(
                graded,
                gid,
                [fixture_student(n) for n in by_cell_fixtures[gid]] + [f"mutant-{i}" for i in by_cell_mutants[gid]],
            ),
        )
        for gid, points in tests.items()
    )
    return Report(
        assignment=assignment.name,
        commit=source.commit,
        dirty=source.dirty,
        sources=source.sources,
        when=when,
        seconds=seconds,
        steps=steps,
        points=sum(tests.values()),
        tests=test_cells,
        fixtures=tuple(fixture_verdicts + other_values),
        mutants=tuple(mutant_verdicts),
        unparsable=tuple(unparsable),
        solution_lost=solution_lost,
        credits=credits,
        leaks=_leaks(assignment, release, graded),
        quality=tuple(quality),
        stock=None if stock_graded is None else _disagreements(graded, stock_graded),
        rubrics=tuple(rubric_problems),
    )


VARIANT_CHECK = "variant-check-"
"""The students as whom ``grader validate`` grades the solution under each variant (``grader.variants.check``)."""


def second_variant(student: str) -> str:
    """The id as which a fixture is graded a second time, under other variant values."""
    return f"{student}-v2"


def _fixture_verdict(fixture: Fixture, cells: Mapping[str, CellResult], tests: Mapping[str, float]) -> FixtureVerdict:
    expected = "full marks" if fixture.full_marks else "loses " + ", ".join(sorted(fixture.fails))
    problems: list[str] = []
    if not cells:
        problems.append("was not graded (see the progress lines above)")
    for gid in tests:
        cell = cells.get(gid)
        if cell is None:
            continue
        wanted = fixture.fails.get(gid)
        if wanted is None and cell.lost:
            problems.append(f"{gid} lost {cell.max_score - cell.score:g} point(s): {cell.first_line or '(no message)'}")
        elif wanted is not None and cell.score != 0:
            problems.append(f"{gid} should fail ({wanted}) but scored {cell.score:g}/{cell.max_score:g}")
        elif wanted is not None and wanted not in cell.message:
            problems.append(f"{gid} failed, but its message lacks {wanted!r}: {cell.first_line or '(no message)'}")
    return FixtureVerdict(fixture.name, fixture.why, expected, not problems, tuple(problems))


def _mutant_verdict(mutant: Mutant, cells: Mapping[str, CellResult], same: Verdict | None) -> MutantVerdict:
    caught = tuple(gid for gid, c in cells.items() if c.lost)
    if caught:
        status, difference = Status.CAUGHT, ""
    elif same is not None and same.equivalent:
        status, difference = Status.EQUIVALENT, ""
    else:
        status, difference = Status.SURVIVED, same.difference if same is not None else ""
    return MutantVerdict(**vars(mutant), status=status, caught_by=caught, difference=difference)


def _mutant_quality(
    mutant: Mutant, verdict: MutantVerdict, cells: Mapping[str, CellResult], functions: set[str]
) -> list[Quality]:
    found = []
    subject = f"mutant {mutant.id} ({mutant.operator} in {mutant.cell})"
    lines = {gid: cells[gid].first_line for gid in verdict.caught_by}
    for gid, line in lines.items():
        if not line.split(":")[-1].strip():
            found.append(Quality(subject, gid, Problem.EMPTY, "the student reads no explanation (a bare assert?)"))
    if mutant.function and mutant.function in functions:
        named = {f for line in lines.values() for f in functions if re.search(rf"\b{re.escape(f)}\b", line)}
        if named and mutant.function not in named:
            detail = f"{mutant.function} was changed; the message names {', '.join(sorted(named))}"
            found.append(Quality(subject, ", ".join(lines), Problem.OTHER_FUNCTION, detail))
    if mutant.codes:
        codes = {code for gid in verdict.caught_by for code in CODE.findall(cells[gid].message.split("\nTraceback")[0])}
        if codes and not codes & set(mutant.codes):
            said, fits = ", ".join(f"[{c}]" for c in sorted(codes)), ", ".join(f"[{c}]" for c in sorted(mutant.codes))
            found.append(
                Quality(
                    subject, ", ".join(lines), Problem.OTHER_CODE, f"the message names {said}; this change fits {fits}"
                )
            )
    return found


def _messages(graded: Results, gid: str, students: list[str]) -> tuple[str, ...]:
    seen: list[str] = []
    for student in students:
        cell = graded.get(student, {}).get(gid)
        if cell is not None and cell.lost and cell.first_line and cell.first_line not in seen:
            seen.append(cell.first_line)
    return tuple(seen[:3])


def _function_names(solutions: Mapping[str, str]) -> set[str]:
    names: set[str] = set()
    for code in solutions.values():
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    return names


def hidden_values(source: NotebookNode, release: NotebookNode | None) -> set[str]:
    """Numbers written in the hidden tests and nowhere in the release a student sees."""
    hidden = {n for c in source.cells for block in HIDDEN.findall(c.source) for n in NUMBER.findall(block)}
    visible = {n for c in (release.cells if release is not None else []) for n in NUMBER.findall(c.source)}
    return hidden - visible


def _leaks(assignment: Assignment, release: NotebookNode | None, graded: Results) -> tuple[Leak, ...]:
    secret = hidden_values(assignment.source_notebook(), release)
    found = []
    for student, cells in sorted(graded.items()):
        for gid, cell in sorted(cells.items()):
            shown = "\n".join(cell.errors)
            values = tuple(sorted(n for n in secret if n in NUMBER.findall(shown)))
            if values:
                found.append(Leak(student, gid, values, first_line(cell.message)))
    return tuple(found)


def _disagreements(engine: Results, stock: Results) -> tuple[Disagreement, ...]:
    found = []
    for student in sorted(set(stock) | {s for s in engine if not s.startswith("mutant-")}):
        ours, theirs = engine.get(student, {}), stock.get(student, {})
        for gid in sorted(set(ours) | set(theirs)):
            a = ours[gid].score if gid in ours else None
            b = theirs[gid].score if gid in theirs else None
            if a != b:
                found.append(Disagreement(student, gid, a, b))
    return tuple(found)
