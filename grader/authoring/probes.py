"""Probes: notebooks that answer nothing, which must earn nothing.

- ``release``: the unanswered release (every answer cell still raises ``NotImplementedError``);
- ``anything``: every function the answer cells define returns ``Anything``, an object equal to
  everything (``==`` is always true; attribute access, calls, indexing and arithmetic give itself back).

A test cell that credits either checks a property alone (the input left unchanged, gradients zeroed,
no forbidden shortcut) without first requiring a working answer.
"""

from __future__ import annotations

import ast
import copy

from nbformat import NotebookNode

from .edits import grade_id
from .fixtures import Assignment, read_notebook

ANYTHING = '''
class Anything:
    """Equal to everything; every use of it gives itself back."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __float__(self):
        return 0.0

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __repr__(self):
        return "Anything()"

    def _self(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _self
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = _self
    __neg__ = __pos__ = __abs__ = _self
    __lt__ = __le__ = __gt__ = __ge__ = _self
'''


def stub_source(solution: str) -> str:
    """The solution cell's functions, each returning ``Anything()``; its classes and other names bound to one."""
    tree = ast.parse(solution)
    lines = [ANYTHING]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.append(f"def {node.name}(*args, **kwargs):\n    return Anything()\n")
        elif isinstance(node, ast.ClassDef):
            lines.append(f"{node.name} = Anything()\n")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    lines.append(f"{target.id} = Anything()\n")
    return "\n".join(lines)


def stub_notebook(assignment: str | Assignment) -> NotebookNode:
    """The release with every answer cell replaced by its ``Anything`` stub."""
    if isinstance(assignment, str):
        from ..course import REPO_ROOT

        assignment = Assignment(REPO_ROOT, assignment)
    nb = copy.deepcopy(read_notebook(assignment.release))
    solutions = assignment.solutions()
    for cell in nb.cells:
        gid = grade_id(cell)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") and gid in solutions:
            try:
                cell.source = stub_source(solutions[gid])
            except SyntaxError:
                continue  # a cell only IPython reads (a magic): the release's stub stays, which answers nothing too
    return nb


def release_notebook(assignment: Assignment) -> NotebookNode:
    """The unanswered release, as a student would submit it untouched."""
    return read_notebook(assignment.release)
