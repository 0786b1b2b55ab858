"""The course's cells compiled in the zygote run exactly as IPython's own parse and compile would run them.

A kernel forked from a zygote that knows the course (``Zygote(course_root)``) answers IPython's
compiler calls for the course's cells from ``precompiled.py``; the session fixture's zygote knows
no course, so every cell takes IPython's own path there. The same notebooks, run cell by cell in
both, must give the same outputs, execution counts, errors and tracebacks, byte for byte.
"""

from __future__ import annotations

import ast
import json
import marshal
from collections.abc import Iterator

import pytest

from grader import course
from grader.engine.inside import precompiled
from grader.engine.kernels.kernel import Zygote
from tests.fixtures.spec import SUBMISSIONS

from .conftest import Session, fresh

NOTEBOOKS = [
    ("ps2_autograd", "correct"),
    ("ps2_autograd", "sum-instead-of-mean"),
    ("ps2_autograd", "grad-not-zeroed"),
    ("ps1_tensors", "channel-means-wrong-dim"),
    ("ps3_regression", "fit-uses-optim-sgd"),
]
CELL = (
    "import torch\n\nclass Box:\n    def value(self):\n        return [i * 2 for i in range(3)]\n\n"
    "f = lambda x: (lambda y: y + x)\n{k: v for k, v in {'a': 1}.items()}\n"
)


@pytest.fixture(scope="module")
def course_zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    root = course.copy_course(tmp_path_factory.mktemp("precompiled") / "course")
    with Zygote(root) as running:
        yield running


@pytest.fixture
def course_session(course_zygote: Zygote) -> Iterator[Session]:
    with fresh(course_zygote) as running:
        yield running


def code_cells(assignment: str, name: str) -> list[tuple[str, bool]]:
    """(source, whether it is a test cell) of each code cell of a fixture submission."""
    cells = json.loads((SUBMISSIONS / assignment / f"{name}.ipynb").read_text())["cells"]
    found = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        found.append((source, bool(meta.get("grade") and not meta.get("solution"))))
    return found


def test_a_renamed_code_object_is_what_compiling_under_that_name_gives() -> None:
    name = "<ipython-input-7-0123456789ab>"
    for node in ast.parse(CELL).body:
        module = ast.Module([node], [])
        made = precompiled.named(compile(module, precompiled.FILE_NAME, "exec", 0, True), name)
        assert marshal.dumps(made) == marshal.dumps(compile(module, name, "exec", 0, True))


def test_each_statement_is_compiled_as_run_ast_nodes_compiles_it() -> None:
    table = precompiled.compile_cells([CELL, "x = (", "from __future__ import annotations\ndef f(a: T): pass\n"], 0, 0)
    assert [(e.index, e.symbol) for e in table[(CELL, 0)]] == [(0, "exec"), (1, "exec"), (2, "exec"), (3, "single")]
    assert ("x = (", 0) not in table  # IPython shows the syntax error when the cell runs
    future = table[("from __future__ import annotations\ndef f(a: T): pass\n", 0)]
    assert future[0].flags == 0 and future[1].flags == precompiled.features(future[0].code) != 0


@pytest.mark.parametrize(("assignment", "name"), NOTEBOOKS, ids=[f"{a}-{n}" for a, n in NOTEBOOKS])
def test_precompiled_cells_give_what_ipython_gives(
    course_session: Session, session: Session, assignment: str, name: str
) -> None:
    cells = code_cells(assignment, name)
    hits = 0
    for source, test in cells:
        key = f"(get_ipython().transform_cell({source!r}), get_ipython().compile.flags)"
        probe = f"print({key} in get_ipython().compile.course_code)"
        hits += course_session.run(probe).outputs[0]["text"] == "True\n"
        session.run("pass")  # where the other kernel ran the probe: both number their cells alike
        fast, plain = course_session.run(source, test=test), session.run(source, test=test)
        assert (fast.outputs, fast.execution_count, fast.error, fast.tampered) == (
            plain.outputs,
            plain.execution_count,
            plain.error,
            plain.tampered,
        )
    assert hits >= sum(test for _, test in cells) > 0  # every test cell (at least) was precompiled


def test_a_replaced_entry_is_put_back_before_the_test_and_named(course_session: Session) -> None:
    cells = code_cells("ps2_autograd", "correct")
    first_test = next(i for i, (_, test) in enumerate(cells) if test)
    for source, _ in cells[:first_test]:
        course_session.run(source)
    forged = (
        "from grader.engine.inside import precompiled as _p\n_c = get_ipython().compile\n"
        f"_key = (get_ipython().transform_cell({cells[first_test][0]!r}), _c.flags)\n"
        "_fake = \"print('FORGED')\\n\"\n"
        "_c.course_code[_key] = _p.compile_cells([_fake], _c.flags, _c.flags | 0x2000)[(_fake, _c.flags)]\n"
        "print(_key in _c.course_code)\n"
    )
    assert course_session.run(forged).outputs == [{"output_type": "stream", "name": "stdout", "text": "True\n"}]
    run = course_session.run(cells[first_test][0], test=True)
    assert run.tampered == ("IPython's precompiled course cells were changed",)
    assert "FORGED" not in json.dumps(run.outputs) and run.error is None  # the real test ran


def test_a_replaced_ast_constructor_is_put_back_before_the_test(course_session: Session) -> None:
    course_session.run("import ast\nast.Module.__init__ = lambda self, *a, **k: None\n")
    run = course_session.run("assert 1 + 1 == 2\n", test=True)
    assert run.tampered == ("ast.Module.__init__ was added",) and run.error is None


@pytest.mark.parametrize(
    "change",
    [
        "get_ipython().ast_node_interactivity = 'all'",  # every statement shown: IPython parses the cell
        "%autoawait off",  # other compiler flags: the placeholders are compiled from a fresh parse
        "from __future__ import annotations",  # other flags when parsing: IPython parses the cell
    ],
)
def test_a_kernel_that_runs_cells_otherwise_gets_ipythons_own_code(
    course_session: Session, session: Session, change: str
) -> None:
    for kernel in (course_session, session):
        kernel.run(change)
    for source, test in code_cells("ps2_autograd", "grad-not-zeroed"):
        fast, plain = course_session.run(source, test=test), session.run(source, test=test)
        assert (fast.outputs, fast.error, fast.tampered) == (plain.outputs, plain.error, plain.tampered)


def test_the_zygote_knows_no_cells_without_a_course(session: Session) -> None:
    assert session.run("len(get_ipython().compile.course_code)").outputs[0]["data"]["text/plain"] == "0"
