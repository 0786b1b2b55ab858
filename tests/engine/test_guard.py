"""grader.engine.inside.guard, in a real forked kernel: what a test cell leaves behind, and what it must not take."""

from __future__ import annotations

import pytest

from grader.engine.inside.guard import names_bound_by

from .conftest import Session, stdout


def test_a_test_cells_private_names_are_forgotten(session: Session) -> None:
    session.run("def f(x):\n    return x + 1")
    tested = session.run("_secret_input = 41\n_expected = f(_secret_input)\nassert _expected == 42", test=True)
    assert tested.error is None
    after = session.run("print('_secret_input' in globals(), '_expected' in globals())")
    assert stdout(after) == "False False\n"


def test_the_students_own_module_state_survives_a_test_that_changes_it(session: Session) -> None:
    """A ``_calls`` counter (or ``_warned`` flag) updated by the student's function while a test calls
    it is the student's state: deleting it made the next test cell fail with NameError (issue 15)."""
    session.run(
        "_calls = 0\n_warned = False\n"
        "def f(x):\n    global _calls, _warned\n    _calls += 1\n    _warned = True\n    return x * _calls"
    )
    assert session.run("_r = f(1)\nassert _r == 1", test=True).error is None
    second = session.run("_r = f(1)\nassert _r == 2, _r", test=True)
    assert second.error is None, second.error
    assert stdout(session.run("print(_calls, _warned, '_r' in globals())")) == "2 True False\n"


def test_a_student_name_the_test_rebinds_gets_the_students_value_back(session: Session) -> None:
    session.run("_scale = 2\ndef g(x):\n    return x * _scale")
    assert session.run("_scale = 7\nassert g(1) == 7", test=True).error is None
    assert stdout(session.run("print(_scale, g(1))")) == "2 2\n"


def test_a_global_set_by_a_function_the_test_defines_is_forgotten(session: Session) -> None:
    code = "def _helper():\n    global _leak\n    _leak = 'hidden'\n_helper()"
    assert session.run(code, test=True).error is None
    assert stdout(session.run("print('_leak' in globals(), '_helper' in globals())")) == "False False\n"


@pytest.mark.parametrize(
    ("code", "bound"),
    [
        ("_a, (_b, c) = 1, (2, 3)", {"_a", "_b", "c"}),
        ("for _k, _v in {}.items():\n    pass", {"_k", "_v"}),
        ("import numpy as _np\nfrom os import path as _p", {"_np", "_p"}),
        ("with open('x') as _f:\n    pass", {"_f"}),
        ("try:\n    pass\nexcept ValueError as _e:\n    pass", {"_e"}),
        ("def _f(x=(_d := 1)):\n    _local = 1", {"_f", "_d"}),
        ("class _C:\n    _attr = 1\n    def m(self):\n        global _g", {"_C", "_g"}),
        ("print(_only_read)", set()),
        ("x = (1 +", None),
    ],
)
def test_names_bound_by_a_cell(code: str, bound: set[str] | None) -> None:
    assert names_bound_by(code) == bound


LOGGING_CELL = (
    "import logging\n"
    "logging.warning('no bias given: using zeros')\n"
    "logging.getLogger('student.helpers').error('named logger')\n"
    "logging.info('below the default level')"
)


def test_logging_goes_to_stdout_in_the_engines_kernels(session: Session) -> None:
    """nbgrader fails a test cell that writes to stderr; a correct solution that logs must not lose points."""
    run = session.run(LOGGING_CELL, test=True)
    assert run.error is None
    assert [o for o in run.outputs if o.get("name") == "stderr"] == []
    assert stdout(run) == "WARNING:root:no bias given: using zeros\nERROR:student.helpers:named logger\n"
