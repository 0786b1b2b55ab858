"""A validation report, three ways: a table for the terminal, a standalone HTML page, and JSON.

``grader validate`` writes the JSON and HTML to ``validation/<assignment>.{json,html}`` in the course
(run-time output, like ``autograded/``); the dashboard's assignment page shows the latest JSON to staff
through the same template (``templates/_validation.html``), saying so when the assignment's source changed
since (``Shown``, ``provenance.changes``). Nothing here imports torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from .provenance import Change, changes
from .verdicts import Report, Status

FOLDER = "validation"
TEMPLATES = Path(__file__).parent / "templates"


def paths(root: Path, assignment: str) -> tuple[Path, Path]:
    """Where ``grader validate`` keeps the latest report of ``assignment``: (JSON, HTML)."""
    return root / FOLDER / f"{assignment}.json", root / FOLDER / f"{assignment}.html"


def load(root: Path, assignment: str) -> dict[str, Any] | None:
    """The latest report of ``assignment``, as written (None when there is none or it cannot be read)."""
    path = paths(root, assignment)[0]
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("assignment") == assignment else None


@dataclass(frozen=True)
class Shown:
    """The latest report of an assignment, as the dashboard shows it."""

    report: dict[str, Any]
    changed: tuple[Change, ...]
    """What changed in the assignment's source since the report was made: none while it is current."""


def shown(root: Path, assignment: str) -> Shown | None:
    """The latest report of ``assignment`` and what changed in its source since (None when there is none)."""
    found = load(root, assignment)
    return None if found is None else Shown(found, changes(root, assignment, found))


def made_from(commit: str, dirty: bool) -> str:
    """Where a report came from, in words: ``commit abc123``, ``commit abc123 with uncommitted changes``
    (``templates/_validation.html`` says the same)."""
    if not commit:
        return "uncommitted files (the repository has no commit yet)" if dirty else ""
    return f"commit {commit}{' with uncommitted changes' if dirty else ''}"


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_dict(), indent=1) + "\n")


def write_html(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    path.write_text(env.get_template("report.html").render(r=report.as_dict()))


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def text(report: Report, strict: bool = False) -> str:
    """The terminal's table and findings."""
    origin = made_from(report.commit, report.dirty)
    lines = [
        "",
        f"{report.assignment}: {report.points:g} points in {len(report.tests)} test cells; validated in "
        f"{report.seconds:g} s{f' at {origin}' if origin else ''}",
        "",
    ]
    width = max([len(t.grade_id) for t in report.tests] + [9])
    lines.append(f"{'test cell':<{width}}  {'pts':>4}  {'fixtures':>8}  {'mutants':>7}  the student reads")
    for t in report.tests:
        read = _cut(t.messages[0], 70) if t.messages else "(never failed)"
        lines.append(f"{t.grade_id:<{width}}  {t.points:>4g}  {len(t.fixtures):>8}  {len(t.mutants):>7}  {read}")
    counts = {s: sum(1 for m in report.mutants if m.status is s) for s in Status}
    ok = sum(1 for f in report.fixtures if f.ok)
    lines += [
        "",
        f"Fixtures: {len(report.fixtures)}, {ok} as declared.",
        f"Mutants: {len(report.mutants)}: {counts[Status.CAUGHT]} caught, {counts[Status.EQUIVALENT]} equivalent on "
        f"the tests' inputs, {counts[Status.SURVIVED]} surviving.",
    ]
    if report.survivors:
        lines += ["", "Surviving mutants (holes in the hidden tests):"]
        for m in report.survivors:
            where = f"{f'{m.function}() in ' if m.function else ''}cell {m.cell}, line {m.line}"
            lines.append(f"  {m.id} {m.operator} ({m.description}) in {where}:")
            lines += [f"      {line}" for line in m.diff]
            if m.difference:
                lines.append(f"      changes, unnoticed: {_cut(m.difference, 160)}")
    if report.rubrics:
        lines += ["", "Rubrics of the written answers (source/<assignment>/rubrics.toml):"]
        lines += [f"  {_cut(problem, 200)}" for problem in report.rubrics]
    bad = [f for f in report.fixtures if not f.ok]
    if bad:
        lines += ["", "Fixtures that scored otherwise than they declare:"]
        for f in bad:
            lines.append(f"  {f.name} (declared: {f.expected})")
            lines += [f"      {_cut(p, 150)}" for p in f.problems]
    if report.solution_lost:
        lines += ["", "The instructor's own solution loses points:"]
        lines += [f"  {gid}: {_cut(message, 140)}" for gid, message in report.solution_lost]
    if report.credits:
        lines += ["", "Test cells that credit a notebook answering nothing:"]
        lines += [f"  {c.grade_id}: {c.score:g}/{c.max_score:g} to {c.probe}" for c in report.credits]
    if report.leaks:
        lines += ["", "Messages that show a value only the hidden tests hold:"]
        lines += [f"  {leak.grade_id} ({leak.student}): {', '.join(leak.values)}" for leak in report.leaks]
    if report.quality:
        lines += ["", f"Message quality ({'fails with --strict' if not strict else 'fails'}):"]
        lines += [f"  {q.subject}, {q.grade_id}: {q.problem.value}: {_cut(q.detail, 120)}" for q in report.quality]
    equivalent = [m for m in report.mutants if m.status is Status.EQUIVALENT]
    if equivalent:
        lines += ["", "Equivalent mutants (nothing the tests observe changes; not holes):"]
        lines += [f"  {m.id} {m.operator} in {m.cell}, line {m.line}: {' / '.join(m.diff)}" for m in equivalent]
    if report.unparsable:
        lines += ["", "Answer cells the mutator could not parse (skipped):"]
        lines += [f"  {u.cell}: {u.error}" for u in report.unparsable]
    if report.stock is not None:
        lines += ["", f"Stock nbgrader autograde: {len(report.stock)} disagreement(s) with the engine."]
        lines += [f"  {d.student}/{d.grade_id}: engine {d.engine}, stock {d.stock}" for d in report.stock]
    failures = report.failures(strict)
    lines += ["", f"{'FAILED' if failures else 'PASSED'}: {len(failures)} finding(s) fail this validation."]
    return "\n".join(lines)
