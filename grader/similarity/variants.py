"""Evidence of a notebook that holds another student's variant values (``grader.variants``).

Each student's variant cell is handed out with their own values. A submission whose cell holds values
that are not its student's, but are exactly another submitting student's, was most likely copied from
that student's notebook; the cell's metadata also names the student it was fetched for. Listed with
the values as evidence, for a TA to look at; like the pairs, it never changes a grade.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..variants import secret
from ..variants.spec import VariantCell, student_values

MAX_OWNERS = 3
"""More students than this holding the same values (few choices, a large class) names none of them."""


@dataclass(frozen=True)
class ForeignValues:
    student: str
    held: tuple[tuple[str, Any], ...]
    """The values the submitted variant cell holds (not the student's own)."""
    owners: tuple[str, ...]
    """The other submitting students whose own values these are."""
    fetched_for: str | None
    """The student the cell was handed out to, by its metadata, when that is someone else."""

    def sentence(self) -> str:
        values = ", ".join(f"{k} = {v!r}" for k, v in self.held)
        found = f"{self.student}'s notebook holds {values}, which are not {self.student}'s own values"
        if self.owners:
            found += f" but {', '.join(self.owners)}'s"
        if self.fetched_for:
            found += f"; the cell's metadata says it was handed out to {self.fetched_for}"
        return found + "."


def evidence(
    root: Path, assignment: str, cells: Sequence[VariantCell], held: dict[str, tuple[dict[str, Any], str | None]]
) -> tuple[tuple[ForeignValues, ...], str]:
    """Who holds someone else's values (``held``: student -> the values their cell holds, whom it was fetched
    for), and a note when that could not be checked."""
    if not cells:
        return (), ""
    key = secret.read(root)
    if key is None:
        return (), "variant values not compared: the course has no course secret here"
    own = {s: student_values(key, assignment, s, cells) for s in held}
    found = []
    for student, (values, fetched_for) in sorted(held.items()):
        if not values or values == own[student]:
            continue
        owners = tuple(t for t in sorted(held) if t != student and own[t] == values)
        other = fetched_for if fetched_for and fetched_for != student else None
        if len(owners) > MAX_OWNERS and other is None:
            continue  # values this many students share by chance are no evidence of whose notebook it was
        if other is not None and other in owners:
            owners = (other,)  # the metadata and the values agree: that student
        if owners or other:
            found.append(ForeignValues(student, tuple(values.items()), owners[:MAX_OWNERS], other))
    return tuple(found), ""
