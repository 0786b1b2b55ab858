"""The misconception catalogue, written from the fixtures table and ``grader.checks.misconceptions``.

The table (``docs/reference/misconception-table.md``) is what ``python -m tests.fixtures.table`` prints:
one row per test cell a fixture fails, with the first line of the message the student reads there.
``tests/course/test_fairness.py`` grades every fixture and fails when the file is not what the
table prints now. This module groups its rows by code and adds what each code means: the
explanation ``grader.checks.misconceptions`` ends the message with, or, for rows named after an
error rather than a code, ``ERRORS`` below. The page shows only the student's own messages and
those explanations, which never hold an expected value; no hidden test's text is read.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import markdown as md

TABLE = Path(__file__).resolve().parents[2] / "reference" / "misconception-table.md"
MISCONCEPTIONS = Path(__file__).resolve().parents[3] / "grader" / "checks" / "misconceptions.py"
HEADER = "| misconception | assignment | fixture | test cell | the student reads |"
CELL = re.compile(r"(?<!\\)\|")

# Rows named after the error the student sees, not a misconception code (mangled and runaway notebooks).
ERRORS = {
    "CellTimeoutError": "A cell ran past the per-cell time limit (`Execute.timeout`, 30 s in this course) and "
    "was interrupted; the test cell scores 0 and the notebook goes on.",
    "NotImplementedError": "The answer cell still holds the release's stub (`raise NotImplementedError()`): it "
    "was never answered, or it was deleted or lost its metadata and the release's empty version was put "
    "back, so its tests score 0.",
}


@dataclass(frozen=True)
class Row:
    code: str
    assignment: str
    fixture: str
    test: str
    message: str  # Markdown, as the table holds it


def _unquote(cell: str) -> str:
    cell = cell.strip()
    return cell[1:-1] if cell.startswith("`") and cell.endswith("`") else cell


def rows(text: str) -> list[Row]:
    """The table's rows. Raises ``ValueError`` when ``text`` is not the table ``tests.fixtures.table`` prints."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or lines[0] != HEADER:
        raise ValueError(f"{TABLE} does not start with the table's header {HEADER!r}")
    found = []
    for line in lines[2:]:
        cells = CELL.split(line)[1:-1]
        if len(cells) != 5:
            raise ValueError(f"not a row of the misconception table: {line!r}")
        code, assignment, fixture, test, message = cells
        found.append(Row(_unquote(code), assignment.strip(), _unquote(fixture), _unquote(test), message.strip()))
    return found


def explanations() -> dict[str, str]:
    """Each misconception code and its explanation, from ``grader/checks/misconceptions.py`` (loaded on its own:
    the ``grader.checks`` package would import torch)."""
    spec = importlib.util.spec_from_file_location("_grader_misconceptions", MISCONCEPTIONS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return {m.code: m.explanation for m in module.ALL}


def render(text: str, meanings: dict[str, str]) -> str:
    table = rows(text)
    by_code: dict[str, list[Row]] = {}
    for row in table:
        by_code.setdefault(row.code, []).append(row)
    unknown = sorted(code for code in by_code if code not in meanings and code not in ERRORS)
    if unknown:
        raise ValueError(f"no explanation for {unknown}: not in grader.checks.misconceptions nor catalogue.ERRORS")
    codes = sorted(c for c in by_code if c in meanings)
    out = [
        f"{len(codes)} misconception codes, shown by {len({(r.assignment, r.fixture) for r in table})} fixtures "
        f"in {len({r.assignment for r in table})} assignments: "
        + ", ".join(f"[{md.code(code)}](#{md.label('misconception', code)})" for code in codes)
        + ".",
        "",
    ]
    for code in codes + sorted(c for c in by_code if c not in meanings):
        found = by_code[code]
        first = found[0]
        out += [f"({md.label('misconception', code)})=", f"## {md.code(code)}", ""]
        if code in meanings:
            out += [f"**What it means.** {md.text(meanings[code])}", ""]
            out += [
                f"**What the student reads**, e.g. in {first.assignment}'s {md.code(first.test)} "
                f"(fixture {md.code(first.fixture)}):",
                "",
                f"> {first.message}",
                ">",
                f"> {md.text(f'Likely cause [{code}]: {meanings[code]}')}",
                "",
            ]
        else:
            out += [f"**What it means.** {ERRORS[code]}", ""]
            out += [
                f"**What the student reads**, e.g. in {first.assignment}'s {md.code(first.test)} "
                f"(fixture {md.code(first.fixture)}):",
                "",
                f"> {first.message}",
                "",
            ]
        out.append("**Caught by:**")
        out.append("")
        out += [f"- {r.assignment} {md.code(r.test)}: fixture {md.code(r.fixture)}" for r in found]
        out.append("")
    never = sorted(set(meanings) - set(by_code))
    if never:
        out += ["(misconception-codes-without-a-fixture)=", "## Codes no fixture shows yet", ""]
        out += [f"- {md.code(code)}: {md.text(meanings[code])}" for code in never]
        out.append("")
    return "\n".join(out)
