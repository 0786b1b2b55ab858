"""No points for nothing (issue 15): an empty or garbage answer earns 0 on every test cell.

Graded with the stock ``nbgrader autograde``: the unmodified release (every solution cell still
raises ``NotImplementedError``) and a stub whose every function returns ``Anything``, an object
equal to everything (``==`` is always true, attribute access, calls, indexing and arithmetic give
itself back). A test that checks a property alone (the input left unchanged, gradients zeroed,
no forbidden shortcut) would credit either; each must first require a working answer.
"""

from __future__ import annotations

import ast

import nbformat
import pytest

from grader import course
from tests.fixtures.grading import results
from tests.fixtures.spec import grade_id, instructor_solutions

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
    """The solution cell's functions, each returning ``Anything()``; its other names bound to one."""
    tree = ast.parse(solution)
    lines = [ANYTHING]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.append(f"def {node.name}(*args, **kwargs):\n    return Anything()\n")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    lines.append(f"{target.id} = Anything()\n")
    return "\n".join(lines)


def stub_notebook(assignment: str) -> bytes:
    nb = nbformat.read(course.REPO_ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    solutions = instructor_solutions(assignment)
    for cell in nb.cells:
        gid = grade_id(cell)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") and gid in solutions:
            cell.source = stub_source(solutions[gid])
    return nbformat.writes(nb).encode()


def test_the_stub_defines_every_function_the_solutions_define() -> None:
    for assignment in course.assignments():
        for solution in instructor_solutions(assignment).values():
            names = {n.name for n in ast.parse(solution).body if isinstance(n, ast.FunctionDef)}
            namespace: dict[str, object] = {}
            exec(stub_source(solution), namespace)
            assert names <= set(namespace)
            for name in names:
                got = namespace[name]("anything")  # type: ignore[operator]
                assert got == 1 and got == "x" and got.shape == got and got(3)[0] + 1 == 0


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    root = course.copy_course(tmp_path_factory.mktemp("nothing") / "course")
    course.generate_releases(root)
    scores: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for assignment in course.assignments():
        release = root / "release" / assignment / f"{assignment}.ipynb"
        course.place_submission(root, "release", assignment, release)
        course.place_notebook(root, "anything-stub", assignment, stub_notebook(assignment))
        course.autograde(root, assignment)
        scores[assignment] = {
            student: {gid: (c.score, c.max_score) for gid, c in cells.items()}
            for student, cells in results(root, assignment).items()
        }
    return scores


@pytest.mark.parametrize("assignment", course.assignments())
@pytest.mark.parametrize("student", ["release", "anything-stub"])
def test_an_empty_or_garbage_answer_earns_nothing(
    graded: dict[str, dict[str, dict[str, tuple[float, float]]]], assignment: str, student: str
) -> None:
    cells = graded[assignment][student]
    assert cells, f"{student} was not graded"
    assert {gid: score for gid, (score, _) in cells.items() if score > 0} == {}
