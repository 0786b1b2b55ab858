"""A hook that IPython lets a cell install loses once it is caught: it never wins a later test (issue 17).

One burst grades, through ``grader autograde``'s engine, every fixture of
``tests/fixtures/hostile_hooks.py`` (one notebook per hook, each on top of wrong
answers), the same wrong answers without a hook, and an honest submission.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import course
from grader.engine import batch
from grader.engine.guard import TAMPERING
from tests.fixtures import hostile_hooks
from tests.fixtures.build import render
from tests.fixtures.grading import CellResult, results
from tests.fixtures.spec import SUBMISSIONS

A = hostile_hooks.ASSIGNMENT
HOOKS = {hook.name: hook for hook in hostile_hooks.HOOKS}
ALL = hostile_hooks.FIXTURES
TAMPERED = f"{TAMPERING}: Your code changed what the tests rely on ("

Cells = dict[str, dict[str, CellResult]]


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cells]:
    root = course.copy_course(tmp_path_factory.mktemp("hostile-hooks") / "course")
    course.generate_releases(root, [A])
    for fixture in ALL:
        course.place_submission(root, fixture.name, A, hostile_hooks.FOLDER / f"{fixture.name}.ipynb")
    course.place_submission(root, "honest", A, SUBMISSIONS / A / "correct.ipynb")
    outcome = batch.run(root, A, jobs=min(4, os.cpu_count() or 1), out=io.StringIO())
    assert outcome.failed == ()
    yield results(root, A)


def _score_as_specified(cells: dict[str, CellResult], fails: dict[str, str]) -> None:
    for gid, cell in cells.items():
        expected = fails.get(gid)
        if expected is None:
            assert cell.score == cell.max_score, f"{gid} lost points:\n{cell.message[:1500]}"
        else:
            assert cell.score == 0, f"{gid} kept {cell.score:g} points:\n{cell.message[:1500]}"
            assert expected in cell.message, f"{gid}: {expected!r} not in\n{cell.message[:1500]}"


@pytest.mark.parametrize("name", list(HOOKS))
def test_a_caught_hook_never_wins_a_later_test(cells: Cells, name: str) -> None:
    hook = HOOKS[name]
    got = cells[name]
    first = got[hostile_hooks.FIRST_TEST]
    if hook.detected is None:  # IPython put the hook back itself when the cell ended
        assert first.score == 0 and TAMPERING not in first.message, first.message[:1500]
    else:
        assert first.score == 0 and TAMPERED in first.message, first.message[:1500]
        assert hook.detected in first.message, first.message[:1500]
    _score_as_specified(got, hook.fixture().fails)
    # every later test scores exactly as the same wrong answers without the hook, for the same reason
    control = cells[hostile_hooks.CONTROL.name]
    for gid, cell in got.items():
        if TAMPERING in cell.message:
            continue  # the test the hook was caught at (and, for a hook set during tests, each such test)
        assert (cell.score, cell.errors) == (control[gid].score, control[gid].errors), gid


def test_the_wrong_answers_alone_fail_their_tests(cells: Cells) -> None:
    _score_as_specified(cells[hostile_hooks.CONTROL.name], hostile_hooks.WRONG_FAILS)


def test_no_later_output_is_swallowed(cells: Cells) -> None:
    """What the issue saw: IPython's stock handler printing instead of an error being recorded."""
    for name in HOOKS:
        for gid, cell in cells[name].items():
            assert "Simple custom exception handler" not in cell.message, (name, gid)


def test_a_result_written_by_the_tested_code_is_no_partial_credit(cells: Cells) -> None:
    _score_as_specified(cells[hostile_hooks.FORGED_RESULT.name], hostile_hooks.FORGED_RESULT.fails)


def test_a_harmless_hook_costs_the_next_test_and_nothing_else(cells: Cells) -> None:
    _score_as_specified(cells[hostile_hooks.HARMLESS.name], hostile_hooks.HARMLESS.fails)


def test_an_honest_submission_in_the_same_burst_gets_full_marks(cells: Cells) -> None:
    honest = cells["honest"]
    assert honest and all(c.score == c.max_score for c in honest.values()), honest


@pytest.mark.parametrize("fixture", ALL, ids=[f.name for f in ALL])
def test_hook_fixture_file_is_current(fixture) -> None:  # type: ignore[no-untyped-def]
    path: Path = hostile_hooks.FOLDER / f"{fixture.name}.ipynb"
    assert path.exists(), f"{path} missing: run `python -m tests.fixtures.hostile_hooks`"
    assert path.read_text() == render(A, fixture), f"{path} is stale: run `python -m tests.fixtures.hostile_hooks`"
