"""A class of independent students and the copies a TA must find among them.

``independent/ps3_regression/student-NN.toml``: thirty students who each wrote ps3 on their own (every one
gets full marks; checked when they were written). The planted copies are made from them the ways students
disguise a copy: every local variable renamed and the comments dropped, the cells reordered and re-spaced,
or one function taken into an otherwise independent notebook.
"""

from __future__ import annotations

import ast
import copy
import tomllib
from pathlib import Path

from nbformat import NotebookNode

from grader.authoring.fixtures import Assignment, fill, read_notebook
from grader.course import REPO_ROOT

ASSIGNMENT = "ps3_regression"
FOLDER = Path(__file__).parent / "independent" / ASSIGNMENT


def independent() -> dict[str, dict[str, str]]:
    """Each independent student's answer cells, by student (``student-01`` ...)."""
    return {path.stem: tomllib.loads(path.read_text())["solutions"] for path in sorted(FOLDER.glob("*.toml"))}


def notebook(solutions: dict[str, str]) -> NotebookNode:
    """The release notebook with these answer cells (the instructor's where a cell is not given)."""
    spec = Assignment(REPO_ROOT, ASSIGNMENT)
    code = spec.solutions()
    code.update(solutions)
    return fill(copy.deepcopy(read_notebook(spec.release)), code)


class _Rename(ast.NodeTransformer):
    """Every name a function assigns gets another name; parameters, globals and attributes stay."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        assigned = {target.id for sub in ast.walk(node) for target in _targets(sub) if isinstance(target, ast.Name)}
        mapping = {name: f"my_{name}_var" for name in sorted(assigned)}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in mapping:
                sub.id = mapping[sub.id]
        return node


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in ast.walk(target) if isinstance(t, ast.expr)]
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.comprehension):
        return [t for t in ast.walk(node.target) if isinstance(t, ast.expr)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def renamed(code: str) -> str:
    """``code`` with its local variables renamed, its comments gone and its layout redone (``ast.unparse``)."""
    tree = _Rename().visit(ast.parse(code))
    return ast.unparse(tree)


def respaced(code: str) -> str:
    """``code`` with blank lines between statements and a comment of the copier's own."""
    return "# my own work\n" + "\n\n".join(code.splitlines())


def reordered(nb: NotebookNode) -> NotebookNode:
    """The notebook with its answer cells in reverse order (each still with its grade id)."""
    answers = [i for i, cell in enumerate(nb.cells) if cell.get("metadata", {}).get("nbgrader", {}).get("solution")]
    moved = copy.deepcopy(nb)
    for i, j in zip(answers, reversed(answers), strict=True):
        moved.cells[i] = nb.cells[j]
    return moved
