"""Rubrics of the written answers: the file an instructor writes beside a source notebook, read and checked.

A written answer is a cell nbgrader grades by hand (``solution`` and ``grade`` in its nbgrader metadata: a
Markdown answer, or a code answer whose points a person gives). Its rubric lives in
``source/<assignment>/rubrics.toml``, one table per answer cell, named by the cell's grade id::

    [explain-sum-gradient]
    grading = "positive"        # items add up from 0 ("negative": they subtract from the cell's points)
    floor = 0                   # optional: the least the cell can score (default 0)
    ceiling = 2                 # optional: the most (default: the cell's points)
    items = [
      { points = 1, text = "Derives the gradient of the sum, 2x, element by element" },
      { points = 1, text = "Says why it is four times the mean's: the mean divides by the 4 elements" },
      { points = -0.5, text = "Gives the gradient of the mean instead", key = "m" },
    ]

Each item has points (either sign) and a description; its key, the one a TA presses to apply it, is
``1`` to ``9`` then ``0`` in order unless the item names another. A cell's score from the items applied to an
answer is ``score``: positive grading starts at 0, negative grading at the cell's points; either way the
result is held between the floor and the ceiling.

``problems`` checks a rubrics file against its notebook and returns one sentence per problem (``grader
validate`` reports them): a file that does not parse, unknown fields, items whose points cannot reach the
cell's, duplicate items or keys, a rubric for a cell that is not a written answer, a written answer without a
rubric. ``load`` raises ``RubricError`` with those sentences; nothing here raises anything else for bad input.
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILENAME = "rubrics.toml"
AUTO_KEYS = tuple("1234567890")
RESERVED_KEYS = frozenset("npcsga?")
"""Keys the grading page keeps for itself: next, previous, comment, save, groups, anonymity, help."""
_TABLE_FIELDS = frozenset({"grading", "floor", "ceiling", "items"})
_ITEM_FIELDS = frozenset({"points", "text", "key"})


class RubricError(ValueError):
    """A rubrics file that cannot be used: the sentences say why (``problems``)."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class Grading(enum.StrEnum):
    POSITIVE = "positive"
    NEGATIVE = "negative"


@dataclass(frozen=True)
class Item:
    key: str
    points: float
    text: str


@dataclass(frozen=True)
class Rubric:
    cell: str
    """The grade id of the written-answer cell."""
    points: float
    """The cell's points, from the notebook."""
    grading: Grading
    floor: float
    ceiling: float
    items: tuple[Item, ...]

    def item(self, key: str) -> Item:
        for item in self.items:
            if item.key == key:
                return item
        raise KeyError(f"{self.cell} has no rubric item with key {key!r}")

    def score(self, applied: Iterable[str], adjustment: float = 0.0) -> float:
        """The cell's score with the items of keys ``applied`` (each counted once) and a free ``adjustment``."""
        keys = set(applied)
        start = 0.0 if self.grading is Grading.POSITIVE else self.points
        total = start + sum(i.points for i in self.items if i.key in keys) + adjustment
        return min(self.ceiling, max(self.floor, round(total, 6)))


@dataclass(frozen=True)
class WrittenCell:
    """A cell of the notebook graded by hand: its grade id, points and type (markdown or code)."""

    grade_id: str
    points: float
    cell_type: str


def written_cells(notebook: Any) -> dict[str, WrittenCell]:
    """The cells of ``notebook`` (an nbformat notebook) that a person grades, by grade id, in order."""
    found: dict[str, WrittenCell] = {}
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and meta.get("grade") and meta.get("grade_id"):
            found[str(meta["grade_id"])] = WrittenCell(
                str(meta["grade_id"]), float(meta.get("points", 0)), cell.cell_type
            )
    return found


def answer_digest(text: str) -> str:
    """The fingerprint of a written answer as the student wrote it: a mark applies to the answer with this digest
    (a new attempt whose answer has the same digest keeps its grade)."""
    return hashlib.sha256(text.encode()).hexdigest()


def path(root: Path, assignment: str) -> Path:
    return root / "source" / assignment / FILENAME


def problems(
    text: str | None, cells: Mapping[str, WrittenCell], autograded: Iterable[str] = (), where: str = FILENAME
) -> list[str]:
    """One sentence per problem of the rubrics file ``text`` (None: there is none) for these written cells."""
    return _read(text, cells, frozenset(autograded), where)[1]


def load(root: Path, assignment: str, notebook: Any) -> dict[str, Rubric]:
    """The rubrics of ``assignment``'s written answers, by grade id; ``RubricError`` if any problem is found."""
    file = path(root, assignment)
    text = file.read_text() if file.is_file() else None
    rubrics, found = _read(text, written_cells(notebook), frozenset(), f"source/{assignment}/{FILENAME}")
    if found:
        raise RubricError(found)
    return rubrics


def _read(
    text: str | None, cells: Mapping[str, WrittenCell], autograded: frozenset[str], where: str
) -> tuple[dict[str, Rubric], list[str]]:
    if text is None:
        return {}, [
            f"written-answer cell {c.grade_id} ({c.points:g} points) has no rubric: {where} does not exist"
            for c in cells.values()
        ]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return {}, [f"{where} does not parse as TOML: {error}"]
    rubrics: dict[str, Rubric] = {}
    found: list[str] = []
    for name, table in data.items():
        if name not in cells:
            kind = "an autograded test cell" if name in autograded else "no cell of the notebook"
            found.append(
                f"{where} has a rubric for [{name}], which is {kind}: rubrics are for written answers "
                f"(cells nbgrader grades by hand: {', '.join(cells) or 'the notebook has none'})"
            )
            continue
        if not isinstance(table, dict):
            found.append(f"{where}: {name} must be a table ([{name}]) holding grading and items")
            continue
        rubric, wrong = _rubric(name, table, cells[name], where)
        found += wrong
        if rubric is not None and not wrong:
            rubrics[name] = rubric
    found += [
        f"written-answer cell {c.grade_id} ({c.points:g} points) has no rubric in {where}"
        for c in cells.values()
        if c.grade_id not in data
    ]
    return rubrics, found


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _rubric(name: str, table: dict[str, Any], cell: WrittenCell, where: str) -> tuple[Rubric | None, list[str]]:
    at = f"{where} [{name}]"
    found = [
        f"{at}: unknown field {field!r} (a rubric has {', '.join(sorted(_TABLE_FIELDS))})"
        for field in sorted(set(table) - _TABLE_FIELDS)
    ]
    try:
        grading = Grading(table.get("grading", Grading.POSITIVE.value))
    except ValueError:
        found.append(f'{at}: grading must be "positive" or "negative", not {table.get("grading")!r}')
        grading = Grading.POSITIVE
    floor = _number(table.get("floor", 0))
    ceiling = _number(table.get("ceiling", cell.points))
    if floor is None or ceiling is None:
        found.append(f"{at}: floor and ceiling must be numbers")
        return None, found
    if floor > ceiling:
        found.append(f"{at}: the floor ({floor:g}) is above the ceiling ({ceiling:g})")
    if ceiling > cell.points:
        found.append(f"{at}: the ceiling ({ceiling:g}) is above the cell's {cell.points:g} points")
    raw = table.get("items")
    if not isinstance(raw, list) or not raw:
        found.append(f'{at}: no items (items = [{{ points = 1, text = "..." }}, ...])')
        return None, found
    items, wrong = _items(raw, at)
    found += wrong
    if wrong:
        return None, found
    rubric = Rubric(name, cell.points, grading, floor, ceiling, tuple(items))
    if grading is Grading.POSITIVE:
        best = min(ceiling, sum(i.points for i in items if i.points > 0))
        if best < cell.points:
            found.append(
                f"{at}: the items cannot reach the cell's {cell.points:g} points: the most an answer can score is "
                f"{best:g}"
            )
    elif not any(i.points < 0 for i in items):
        found.append(f"{at}: negative grading subtracts from the cell's points, but no item has negative points")
    return rubric, found


def _items(raw: list[Any], at: str) -> tuple[list[Item], list[str]]:
    items: list[Item] = []
    found: list[str] = []
    auto = iter(k for k in AUTO_KEYS if k not in {str(e.get("key")) for e in raw if isinstance(e, dict)})
    seen_text: dict[str, int] = {}
    seen_key: dict[str, int] = {}
    for n, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            found.append(f'{at}: item {n} must be a table {{ points = 1, text = "..." }}')
            continue
        unknown = sorted(set(entry) - _ITEM_FIELDS)
        if unknown:
            found.append(
                f"{at}: item {n} has unknown field(s) {', '.join(map(repr, unknown))}: an item has points, text, key"
            )
        points = _number(entry.get("points"))
        text = entry.get("text")
        if points is None:
            found.append(f"{at}: item {n} needs points, a number")
        elif points == 0:
            found.append(f"{at}: item {n} is worth 0 points: give it points or make it a comment")
        if not isinstance(text, str) or not text.strip():
            found.append(f"{at}: item {n} needs a text saying what it rewards or deducts")
            continue
        key = entry.get("key")
        if key is None:
            key = next(auto, None)
            if key is None:
                found.append(f'{at}: item {n} has no key and keys 1 to 0 are taken: give it one (key = "x")')
                continue
        elif not isinstance(key, str) or len(key) != 1 or not key.isprintable() or key.isspace():
            found.append(f"{at}: item {n}'s key must be one printable character, not {key!r}")
            continue
        elif key.lower() in RESERVED_KEYS:
            found.append(
                f"{at}: item {n}'s key {key!r} is kept by the grading page ({', '.join(sorted(RESERVED_KEYS))})"
            )
            continue
        normal = _normal(text)
        if normal in seen_text:
            found.append(f"{at}: items {seen_text[normal]} and {n} say the same thing ({text.strip()!r})")
        if key in seen_key:
            found.append(f"{at}: items {seen_key[key]} and {n} have the same key {key!r}")
        seen_text.setdefault(normal, n)
        seen_key.setdefault(key, n)
        if points is not None and points != 0:
            items.append(Item(key, points, text.strip()))
    return items, found


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()
