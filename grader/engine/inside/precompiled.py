"""The course's own cells, compiled once in the zygote: IPython's ``run_cell`` then skips parsing them.

Every submission runs the same test cells (nbgrader puts them back as released), and parsing and
compiling a cell is most of what ``run_cell`` costs besides the cell's own work. ``run_cell`` is
left as it is: it transforms the cell, stores it in history, fires its events, sets its traps,
shows results and errors. Only the two compiler calls it makes are answered from what the zygote
worked out, for a cell whose transformed text, compiler flags and statement modes are exactly
those it compiled:

- ``ast_parse(text)`` returns a module of placeholder statements, one per statement of the cell,
  of the same kind as far as ``run_ast_nodes`` looks (an expression or not), each carrying its
  ``Entry``;
- the compiler call for one placeholder returns the code compiled in the zygote, with the cell's
  file name (``<ipython-input-N-...>``, which holds the execution count) put in, the same bytes
  the compiler would produce.

Anything else takes IPython's own path: another text, other ``__future__`` flags, another
``ast_node_interactivity``, any AST transformer registered (it would rewrite the tree), top-level
``await`` switched off. A placeholder asked for in another mode is compiled from a fresh parse.
Placeholders are made for each run and referred to only from IPython's own frames, which a cell's
code cannot reach (``audit.deny_hooks``); the table of entries is checked by the guard before
every test (``watched.held``).
"""

from __future__ import annotations
import __future__

import ast
from dataclasses import dataclass
from types import CodeType
from typing import Any

FILE_NAME = "<precompiled>"  # replaced by the cell's own name when it runs
FEATURES = tuple(getattr(__future__, name).compiler_flag for name in __future__.all_feature_names)


@dataclass(frozen=True)
class Entry:
    """One top-level statement of a course cell, as ``run_ast_nodes`` compiles it."""

    text: str  # the transformed cell
    index: int  # which statement
    symbol: str  # "exec", or "single" for a last expression
    flags: int  # the compiler's flags when IPython compiles it
    code: CodeType


class Statement(ast.Pass):
    """A placeholder for a precompiled statement that is not an expression."""


class Expression(ast.Expr):
    """A placeholder for a precompiled expression statement."""


PLACEHOLDERS = (Statement, Expression)
Table = dict[tuple[str, int], tuple[Entry, ...]]


def compile_cells(texts: list[str], parse_flags: int, call_flags: int) -> Table:
    """The entries of each cell (its transformed text) that compiles, as IPython would compile it:
    parsed with ``parse_flags``, each statement compiled alone with ``call_flags`` (plus the
    ``__future__`` features an earlier statement turned on, as ``codeop.Compile`` does)."""
    table: Table = {}
    for text in dict.fromkeys(texts):
        try:
            tree = compile(text, FILE_NAME, "exec", parse_flags | ast.PyCF_ONLY_AST, True)
        except (SyntaxError, ValueError, OverflowError, TypeError, MemoryError):
            continue
        entries: list[Entry] = []
        flags = call_flags
        for index, node in enumerate(tree.body):
            single = index == len(tree.body) - 1 and isinstance(node, ast.Expr)
            module: ast.Module | ast.Interactive = ast.Interactive([node]) if single else ast.Module([node], [])
            symbol = "single" if single else "exec"
            try:
                code = compile(module, FILE_NAME, symbol, flags, True)
            except (SyntaxError, ValueError, OverflowError, TypeError, MemoryError):
                break
            entries.append(Entry(text, index, symbol, flags, code))
            flags |= features(code)
        else:
            if entries:
                table[(text, parse_flags)] = tuple(entries)
    return table


def features(code: CodeType) -> int:
    """The ``__future__`` flags a compiled statement turns on for the ones after it."""
    found = 0
    for flag in FEATURES:
        if code.co_flags & flag:
            found |= flag
    return found


def placeholders(entries: tuple[Entry, ...]) -> ast.Module:
    """What ``ast_parse`` returns for a precompiled cell: a fresh module of placeholders."""
    body: list[ast.stmt] = []
    for entry in entries:
        node: ast.stmt = Expression() if entry.symbol == "single" else Statement()  # type: ignore[call-arg]
        node.entry = entry  # type: ignore[attr-defined]
        body.append(node)
    return ast.Module(body=body, type_ignores=[])


def entry_of(source: Any) -> Entry | None:
    """The entry of the one placeholder statement of a module, if that is what ``source`` is."""
    if not isinstance(source, (ast.Module, ast.Interactive)) or len(source.body) != 1:
        return None
    node = source.body[0]
    if type(node) not in PLACEHOLDERS:
        return None
    entry = vars(node).get("entry")
    return entry if isinstance(entry, Entry) else None


def named(code: CodeType, filename: str) -> CodeType:
    """``code`` with ``filename`` as its file name, in every function and class body it holds."""
    consts = code.co_consts
    if any(isinstance(c, CodeType) for c in consts):
        consts = tuple(named(c, filename) if isinstance(c, CodeType) else c for c in consts)
        return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)
