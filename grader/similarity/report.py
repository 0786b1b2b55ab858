"""The similarity report: one function that every door calls (the CLI, the staff page, the CSV)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import compare
from .sources import Boilerplate, SimilarityError, Submission, boilerplate, require_two
from .variants import ForeignValues, evidence

COLUMNS = ("student_a", "student_b", "score", "share_a", "share_b", "shared_chars", "cells")


@dataclass(frozen=True)
class Report:
    assignment: str
    submissions: int
    threshold: float
    pairs: tuple[compare.Pair, ...]
    """Pairs at or above ``threshold``, most similar first."""
    below: int
    """Pairs kept (at or above ``compare.FLOOR``) but under the threshold."""
    foreign: tuple[ForeignValues, ...] = ()
    """Notebooks holding another student's variant values (``grader.variants``)."""
    note: str = ""
    """Why the variant values were not compared, when they were not."""


def threshold_of(value: str | float | None) -> float:
    """A threshold from a form, a query string or the command line: a share in [0.2, 1], or a percentage."""
    if value is None or value == "":
        return compare.THRESHOLD
    try:
        number = float(str(value).strip().rstrip("%"))
    except ValueError:
        raise SimilarityError(f"the threshold must be a number such as 0.5 or 50%, not {str(value)!r}") from None
    if number > 1:
        number /= 100
    if not compare.FLOOR <= number <= 1:
        raise SimilarityError(
            f"the threshold must lie between {compare.FLOOR:g} and 1 (or {100 * compare.FLOOR:g}% and 100%), "
            f"not {value}"
        )
    return number


def build(
    root: Path,
    assignment: str,
    submissions: Iterable[Submission],
    threshold: float,
    where: str,
    plate: Boilerplate | None = None,
) -> Report:
    """Score every pair of ``submissions`` of ``assignment``; ``where`` names their source in errors."""
    plate = plate or boilerplate(root, assignment)
    listed = list(submissions)
    require_two([s.student for s in listed], assignment, where)
    found = compare.pairs(listed, plate)
    foreign, note = foreign_values(root, assignment, listed, plate)
    above = tuple(p for p in found if p.score >= threshold)
    return Report(assignment, len(listed), threshold, above, len(found) - len(above), foreign, note)


def foreign_values(
    root: Path, assignment: str, listed: Iterable[Submission], plate: Boilerplate
) -> tuple[tuple[ForeignValues, ...], str]:
    """Who submitted another student's variant values (and a note when that could not be checked)."""
    held = {s.student: (dict(s.variant), s.fetched_for) for s in listed}
    return evidence(root, assignment, plate.variant_cells, held)


def table(report: Report) -> str:
    """The report as the terminal shows it."""
    head = (
        f"{report.assignment}: {report.submissions} submissions, {len(report.pairs)} pair(s) at or above "
        f"{report.threshold:.0%} similar"
        + (f" ({report.below} more between {compare.FLOOR:.0%} and {report.threshold:.0%})" if report.below else "")
    )
    tail = [""] + [f.sentence() for f in report.foreign] if report.foreign else []
    tail += ["", report.note] if report.note else []
    if not report.pairs:
        return "\n".join([head, *tail])
    width = max(len("student"), *(len(p.a) for p in report.pairs)) + 2
    other = max(len("student"), *(len(p.b) for p in report.pairs)) + 2
    lines = [head, "", f"{'student':<{width}}{'student':<{other}}{'score':>6}  {'shared':>6}  where"]
    for p in report.pairs:
        lines.append(f"{p.a:<{width}}{p.b:<{other}}{p.score:>6.0%}  {p.shared:>6}  {', '.join(p.cells)}")
    lines += [
        "",
        "score: the larger share of one student's own code (starter code and the solution removed) that the "
        "other has, or of one cell when a whole function is shared; shared: normalised characters in common. "
        "A pair is a lead to look at, never a verdict.",
    ]
    return "\n".join(lines + tail)


def csv_text(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for p in report.pairs:
        writer.writerow(
            (p.a, p.b, f"{p.score:.4f}", f"{p.share_a:.4f}", f"{p.share_b:.4f}", p.shared, " ".join(p.cells))
        )
    return out.getvalue()
