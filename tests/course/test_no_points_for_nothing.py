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
from grader.authoring.probes import stub_notebook, stub_source
from tests.fixtures.grading import results
from tests.fixtures.spec import instructor_solutions


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
        course.place_notebook(root, "anything-stub", assignment, nbformat.writes(stub_notebook(assignment)).encode())
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
