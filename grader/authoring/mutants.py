"""Mutants: the instructor's own solution cells, each changed in one place the way a PyTorch student errs.

Every operator (``operators``; the syntax-tree transforms are in ``transforms``) walks a cell's syntax
tree and offers one mutant per place it applies: a sign flipped in an update, ``.grad`` never zeroed or
zeroed too early, ``.detach()`` or ``torch.no_grad()`` around what must be tracked (or the ``no_grad`` an
update needs taken away), ``sum`` for ``mean``, a loop one step short or long, a bias dropped, a dtype or
device cast removed or added, an in-place operation on an input, an argument ignored in favour of its
default, the other dimension, ``view`` for ``reshape``, ``requires_grad`` dropped, ``backward()``
forgotten. A mutant that keeps full marks is a hole in the hidden tests, unless it changes nothing the
tests can see (``equivalence``).

``codes``: the misconception codes a message may name for that change (empty: any code fits). A cell
the parser cannot read is reported and skipped, never raised.
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from .operators import OPERATORS, Operator
from .transforms import Parents


@dataclass(frozen=True)
class Mutant:
    id: str
    cell: str
    """The answer cell's grade id."""
    operator: str
    description: str
    function: str | None
    """The function the change is in (None at a cell's top level)."""
    line: int
    """The changed line, 1-based in the instructor's cell (solution markers removed)."""
    original: str
    """The instructor's line, as written."""
    diff: tuple[str, ...]
    """The change: the lines it removes (``- ``) and adds (``+ ``), as the parser prints them."""
    code: str
    """The whole mutated cell."""
    codes: tuple[str, ...]
    """The misconception codes a message may name for this change (none: any fits)."""


@dataclass(frozen=True)
class Unparsable:
    cell: str
    error: str


# --- deriving the mutants ------------------------------------------------------------------------


def _parents(tree: ast.AST) -> Parents:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing_function(node: ast.AST, parents: Parents) -> str | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node.name
    return None


def _statement_of(node: ast.AST, parents: Parents) -> ast.AST:
    while not isinstance(node, ast.stmt) and node in parents:
        node = parents[node]
    return node


Found = tuple[Operator, str, str | None, int, str]


def cell_mutants(code: str) -> Iterator[Found]:
    """Every (operator, description, function, line, mutated cell) of one answer cell's code;
    raises SyntaxError when the cell does not parse."""
    tree = ast.parse(code)
    original = ast.unparse(tree)
    seen = {original}
    nodes = list(ast.walk(tree))
    parents = _parents(tree)
    for operator in OPERATORS:
        for index, node in enumerate(nodes):
            if not operator.applies(node) or node is tree:
                continue
            for transform in operator.transforms:
                mutated = copy.deepcopy(tree)
                twin = list(ast.walk(mutated))[index]
                twin_parents = _parents(mutated)
                description = transform(mutated, twin, twin_parents)
                if description is None:
                    continue
                ast.fix_missing_locations(mutated)
                text = ast.unparse(mutated)
                if text in seen:
                    continue
                seen.add(text)
                statement = _statement_of(node, parents)
                line = getattr(statement, "lineno", getattr(node, "lineno", 1))
                yield operator, description, _enclosing_function(node, parents), line, text


def _diff(before: str, after: str) -> tuple[str, ...]:
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return tuple(f"{line[0]} {line[1:].strip()}" for line in changed[:6])


def derive(solutions: dict[str, str], limit_per_cell: int = 40) -> tuple[list[Mutant], list[Unparsable]]:
    """The mutants of every answer cell (at most ``limit_per_cell`` each, spread over the operators),
    and the cells that could not be parsed."""
    mutants: list[Mutant] = []
    skipped: list[Unparsable] = []
    for cell, code in solutions.items():
        try:
            found = list(cell_mutants(code))
        except SyntaxError as error:
            skipped.append(Unparsable(cell, f"line {error.lineno}: {error.msg}"))
            continue
        lines = code.splitlines()
        original = ast.unparse(ast.parse(code))
        for operator, description, function, line, text in _spread(found, limit_per_cell):
            mutants.append(
                Mutant(
                    id=f"m{len(mutants) + 1:03d}",
                    cell=cell,
                    operator=operator.name,
                    description=description,
                    function=function,
                    line=line,
                    original=lines[line - 1].strip() if 0 < line <= len(lines) else "",
                    diff=_diff(original, text),
                    code=text,
                    codes=tuple(sorted(operator.codes)),
                )
            )
    return mutants, skipped


def _spread(found: list[Found], limit: int) -> list[Found]:
    """At most ``limit``, taking one per operator in turn so that no operator crowds out the others."""
    by_operator: dict[str, list[Found]] = {}
    for item in found:
        by_operator.setdefault(item[0].name, []).append(item)
    chosen: list[Found] = []
    queues = list(by_operator.values())
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    order = {id(item): i for i, item in enumerate(found)}
    return sorted(chosen, key=lambda item: order[id(item)])
