"""The marks of a variant cell, a student's draw, and the cell written with a student's values."""

from __future__ import annotations

import ast
import copy
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import AuthoringError

Value = int | float | str | bool
MARK = re.compile(r"#\s*variant\s*:")
MARKED_LINE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>.+?)\s*#\s*variant\s*:\s*(?P<choices>.+?)\s*$")
VARIANT_KEY = "grader_variant"  # cell metadata of a personalised cell: which student's values it holds


@dataclass(frozen=True)
class Variant:
    """One marked value: ``NAME = default  # variant: choices``."""

    name: str
    default: Value
    choices: tuple[Value, ...]


@dataclass(frozen=True)
class VariantCell:
    """A read-only code cell with marked values, as the source (and release) notebook holds it."""

    index: int
    grade_id: str
    source: str
    variants: tuple[Variant, ...]

    @property
    def combinations(self) -> int:
        total = 1
        for v in self.variants:
            total *= len(v.choices)
        return total


def _literal(text: str, what: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise AuthoringError(f"{what}: {text!r} is not a Python literal") from None


def _choices(text: str, what: str) -> tuple[Value, ...]:
    if text.startswith("range(") and text.endswith(")"):
        args = _literal(f"({text[6:-1]},)", what)
        if not all(type(a) is int for a in args) or not 1 <= len(args) <= 3 or (len(args) == 3 and args[2] == 0):
            raise AuthoringError(f"{what}: {text} takes one to three whole numbers, the step not 0")
        found: tuple[Value, ...] = tuple(range(*args))
    else:
        value = _literal(text, what)
        if not isinstance(value, list | tuple):
            raise AuthoringError(f"{what}: the choices must be a list, a tuple or range(...), not {text!r}")
        found = tuple(value)
    if not found:
        raise AuthoringError(f"{what}: {text} gives no value to choose from")
    for choice in found:
        if not isinstance(choice, int | float | str | bool):
            raise AuthoringError(f"{what}: {choice!r} is not a number, a string or a bool")
    if len(set(found)) != len(found):
        raise AuthoringError(f"{what}: {text} lists a value twice")
    return found


def parse(source: str, where: str) -> tuple[Variant, ...]:
    """The marked values of a cell's ``source``; ``where`` names the cell in errors."""
    found: list[Variant] = []
    for number, line in enumerate(source.splitlines(), 1):
        if not MARK.search(line):
            continue
        what = f"{where}, line {number}"
        marked = MARKED_LINE.match(line)
        if not marked:
            raise AuthoringError(f"{what}: a variant is marked as `NAME = value  # variant: [choices]`, not {line!r}")
        name = marked["name"]
        what = f"{where}: the variant {name}"
        choices = _choices(marked["choices"], what)
        default = _literal(marked["value"], what)
        if default not in choices or type(default) is not type(choices[choices.index(default)]):
            raise AuthoringError(f"{what}: its value {default!r} is not one of its choices {list(choices)}")
        if any(v.name == name for v in found):
            raise AuthoringError(f"{what} is marked twice")
        found.append(Variant(name, default, choices))
    return tuple(found)


def find_cells(nb: Any, where: str = "the notebook") -> list[VariantCell]:
    """The variant cells of a source or release notebook; a mark outside a read-only cell is an error."""
    cells = []
    for index, cell in enumerate(nb.get("cells", [])):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") != "code" or not MARK.search(source):
            continue
        info = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = str(info.get("grade_id") or f"cell {index + 1}")
        label = f"{where}, cell `{grade_id}`"
        if not info.get("locked") or info.get("solution") or info.get("grade"):
            raise AuthoringError(
                f"{label}: values marked `# variant:` must be in a read-only cell (nbgrader 'Read-only'), "
                "so a student cannot change them and the grader can restore them"
            )
        variants = parse(source, label)
        if variants:
            cells.append(VariantCell(index, grade_id, source, variants))
    names = [v.name for c in cells for v in c.variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise AuthoringError(f"{where}: the variant(s) {twice} are marked in more than one cell")
    return cells


def draw(secret: bytes, assignment: str, student: str, variant: Variant) -> Value:
    """``student``'s value of ``variant``: fixed by the course secret, not choosable, not guessable."""
    message = "\0".join((assignment, student, variant.name)).encode()
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return variant.choices[int.from_bytes(digest[:8], "big") % len(variant.choices)]


def student_values(secret: bytes, assignment: str, student: str, cells: Sequence[VariantCell]) -> dict[str, Value]:
    return {v.name: draw(secret, assignment, student, v) for c in cells for v in c.variants}


def render(cell: VariantCell, values: Mapping[str, Value]) -> str:
    """``cell``'s source with each marked line written ``NAME = value``; every other line as it is."""
    lines = []
    for line in cell.source.splitlines(keepends=True):
        marked = MARKED_LINE.match(line.rstrip("\n")) if MARK.search(line) else None
        if marked and marked["name"] in values:
            ending = "\n" if line.endswith("\n") else ""
            line = f"{marked['name']} = {values[marked['name']]!r}{ending}"
        lines.append(line)
    return "".join(lines)


def submitted_values(source: str) -> dict[str, Any]:
    """The constants a submitted cell assigns at top level (``NAME = literal``); unreadable ones are written as
    their code, and a cell Python cannot parse (an IPython magic, a syntax error) is read line by line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _line_values(source)
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = _value(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = _value(node.value)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found[name.id] = ast.unparse(node)
    return found


def _value(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except Exception:  # not a literal (a name, a call), or one Python cannot build ({[0]: 1})
        return ast.unparse(node)


def _line_values(source: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for line in source.splitlines():
        assigned = re.match(r"^([A-Za-z_]\w*)\s*=\s*(.+?)\s*(#.*)?$", line)
        if assigned:
            try:
                found[assigned[1]] = ast.literal_eval(assigned[2])
            except Exception:
                found[assigned[1]] = assigned[2]
    return found


def personalise(nb: Any, secret: bytes, assignment: str, student: str) -> Any:
    """A copy of the release notebook ``nb`` with ``student``'s values written into its variant cells."""
    cells = find_cells(nb, assignment)
    if not cells:
        return nb
    values = student_values(secret, assignment, student, cells)
    nb = copy.deepcopy(nb)
    for cell in cells:
        nb["cells"][cell.index]["source"] = render(cell, values)
        nb["cells"][cell.index].setdefault("metadata", {})[VARIANT_KEY] = student
    return nb
