"""A small course written in the test: one assignment, ``gd_step``, one answer cell and its tests.

``sgd_step(w, x, y, lr)`` takes one gradient-descent step on mean((x @ w - y)^2): the kind of cell the
course's assignments hold, small enough that ``grader validate`` runs in seconds. ``STRONG`` checks the
update against an independent, hand-derived gradient and the leaf's state; ``WEAK`` is the same test
with the gradient check replaced by a shape check; ``CREDITS_RELEASE`` is a test that passes without a
working answer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from grader import course

NAME = "gd_step"

SOLUTION = '''def sgd_step(w, x, y, lr):
    """One gradient-descent step on mean((x @ w - y) ** 2): w changes in place; the loss, as a float."""
    ### BEGIN SOLUTION
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
    w.grad = None
    return loss.item()
    ### END SOLUTION'''

VISIBLE = """import torch
from grader import checks

_w = torch.zeros(3, 1, requires_grad=True)
_loss = checks.call(sgd_step, _w, torch.ones(4, 3), torch.ones(4, 1), 0.1)
assert isinstance(_loss, float), "sgd_step must return the loss as a Python float"
"""

STRONG = (
    VISIBLE
    + """### BEGIN HIDDEN TESTS
_gen = torch.Generator().manual_seed(7)
_x, _y = torch.randn(6, 3, generator=_gen), torch.randn(6, 1, generator=_gen)
_w = torch.randn(3, 1, generator=_gen).requires_grad_(True)
_start = _w.detach().clone()
_reference = 2 / 6 * _x.T @ (_x @ _start - _y)  # d/dw mean((xw - y)^2), by hand
for _step in range(2):
    _before = _w.detach().clone()
    _reference = 2 / 6 * _x.T @ (_x @ _before - _y)
    checks.call(sgd_step, _w, _x, _y, 0.05)
    checks.assert_close(_w.detach() - _before, -0.05 * _reference, name=f"the change of w made by step {_step + 1}")
_tracked = str(checks.misconceptions.UPDATE_TRACKED)
assert _w.is_leaf and _w.requires_grad, "w must stay a trainable leaf.\\n\\n" + _tracked
### END HIDDEN TESTS
"""
)

WEAK = (
    VISIBLE
    + """### BEGIN HIDDEN TESTS
_gen = torch.Generator().manual_seed(7)
_x, _y = torch.randn(6, 3, generator=_gen), torch.randn(6, 1, generator=_gen)
_w = torch.randn(3, 1, generator=_gen).requires_grad_(True)
checks.call(sgd_step, _w, _x, _y, 0.05)
checks.assert_shape(_w.detach(), (3, 1), "w after one step")
### END HIDDEN TESTS
"""
)

CREDITS_RELEASE = """import torch
# passes whatever sgd_step does: it checks nothing the student wrote
assert torch.ones(3).sum() == 3
"""


def _cell(kind: str, source: str, grade_id: str, points: float = 0) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.id = grade_id.replace("_", "-")
    cell.metadata["nbgrader"] = {
        "grade": kind == "test",
        "grade_id": grade_id,
        "locked": kind == "test",
        "schema_version": 3,
        "solution": kind == "answer",
        "task": False,
        **({"points": points} if kind == "test" else {}),
    }
    return cell


def notebook(*tests: tuple[str, str, float], solution: str = SOLUTION) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    intro = nbformat.v4.new_markdown_cell("# One gradient-descent step\n\nWrite `sgd_step`.")
    intro.id = "intro"
    setup = nbformat.v4.new_code_cell("import torch")
    setup.id = "setup"
    nb.cells = [intro, setup, _cell("answer", solution, "sgd_step")]
    nb.cells += [_cell("test", source, gid, points) for gid, source, points in tests]
    return nb


def make(base: Path, *tests: tuple[str, str, float], solution: str = SOLUTION) -> Path:
    """A course at ``base``: the real course's configuration and the one assignment ``gd_step``."""
    base.mkdir(parents=True, exist_ok=True)
    shutil.copy2(course.REPO_ROOT / "nbgrader_config.py", base / "nbgrader_config.py")
    folder = base / "source" / NAME
    folder.mkdir(parents=True)
    nbformat.write(notebook(*(tests or (("test_sgd_step", STRONG, 4),)), solution=solution), folder / f"{NAME}.ipynb")
    return base
