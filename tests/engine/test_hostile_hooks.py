"""A hook that IPython lets a cell install loses once it is caught: it never wins a later test (issue 17).

For every assignment, one burst grades, through ``grader autograde``'s engine, every fixture of
``tests/fixtures/hostile_hooks.py`` (one notebook per hook, each on top of the assignment's wrong
answers), the same wrong answers without a hook, and an honest submission.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grader import course
from grader.engine.doors import batch
from grader.engine.inside.guard import TAMPERING
from tests.fixtures import hostile_hooks
from tests.fixtures.build import render
from tests.fixtures.grading import CellResult, results
from tests.fixtures.spec import SUBMISSIONS, Fixture

ASSIGNMENTS = list(hostile_hooks.SETS)
HOOKS = [(a, hook) for a in ASSIGNMENTS for hook in hostile_hooks.HOOK_SETS[a]]
ALL = [(a, fixture) for a in ASSIGNMENTS for fixture in hostile_hooks.SETS[a]]
TAMPERED = f"{TAMPERING}: Your code changed what the tests rely on ("

Cells = dict[str, dict[str, CellResult]]
Graded = Callable[[str], Cells]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    """An assignment's submissions, graded in one burst (in a course copy of its own) the first time a
    test asks for them."""
    done: dict[str, Cells] = {}

    def cells(a: str) -> Cells:
        if a not in done:
            root = course.copy_course(tmp_path_factory.mktemp(f"hostile-hooks-{a}") / "course")
            course.generate_releases(root, [a])
            for fixture in hostile_hooks.SETS[a]:
                course.place_submission(root, fixture.name, a, hostile_hooks.folder(a) / f"{fixture.name}.ipynb")
            course.place_submission(root, "honest", a, SUBMISSIONS / a / "correct.ipynb")
            outcome = batch.run(root, a, jobs=min(4, os.cpu_count() or 1), out=io.StringIO())
            assert outcome.failed == ()
            done[a] = results(root, a)
        return done[a]

    yield cells


def _score_as_specified(cells: dict[str, CellResult], fails: dict[str, str]) -> None:
    for gid, cell in cells.items():
        expected = fails.get(gid)
        if expected is None:
            assert cell.score == cell.max_score, f"{gid} lost points:\n{cell.message[:1500]}"
        else:
            assert cell.score == 0, f"{gid} kept {cell.score:g} points:\n{cell.message[:1500]}"
            assert expected in cell.message, f"{gid}: {expected!r} not in\n{cell.message[:1500]}"


@pytest.mark.parametrize(("assignment", "hook"), HOOKS, ids=[f"{a}-{hook.name}" for a, hook in HOOKS])
def test_a_caught_hook_never_wins_a_later_test(graded: Graded, assignment: str, hook: hostile_hooks.Hook) -> None:
    cells = graded(assignment)
    got = cells[hook.name]
    first_test = hostile_hooks.first_test(assignment)
    first = got[first_test]
    if hook.detected is None:  # IPython put the hook back itself when the cell ended
        assert first.score == 0 and TAMPERING not in first.message, f"{first_test}:\n{first.message[:1500]}"
    else:
        assert first.score == 0 and TAMPERED in first.message, f"{first_test}:\n{first.message[:1500]}"
        assert hook.detected in first.message, f"{first_test}:\n{first.message[:1500]}"
    _score_as_specified(got, hook.fixture().fails)
    # every later test scores exactly as the same wrong answers without the hook, for the same reason
    control = cells[hostile_hooks.ASSIGNMENTS[assignment].control.name]
    for gid, cell in got.items():
        if TAMPERING in cell.message:
            continue  # the test the hook was caught at (and, for a hook set during tests, each such test)
        assert (cell.score, cell.errors) == (control[gid].score, control[gid].errors), (
            f"{gid} scores {cell.score:g} {cell.errors}, the control {control[gid].score:g} {control[gid].errors}:\n"
            f"{cell.message[:1500]}"
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_wrong_answers_alone_fail_their_tests(graded: Graded, assignment: str) -> None:
    a = hostile_hooks.ASSIGNMENTS[assignment]
    _score_as_specified(graded(assignment)[a.control.name], a.wrong_fails)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_first_wrong_answer_fails_the_test_the_hook_is_caught_at(assignment: str) -> None:
    """Else a hook that IPython puts back itself would show nothing: the first test must fail anyway."""
    a = hostile_hooks.ASSIGNMENTS[assignment]
    assert a.first in a.wrong and a.first_test in a.wrong_fails, a


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_later_output_is_swallowed(graded: Graded, assignment: str) -> None:
    """What the issue saw: IPython's stock handler printing instead of an error being recorded."""
    cells = graded(assignment)
    for hook in hostile_hooks.HOOK_SETS[assignment]:
        for gid, cell in cells[hook.name].items():
            assert "Simple custom exception handler" not in cell.message, (hook.name, gid)


def test_a_result_written_by_the_tested_code_is_no_partial_credit(graded: Graded) -> None:
    cells = graded(hostile_hooks.ASSIGNMENT)
    _score_as_specified(cells[hostile_hooks.FORGED_RESULT.name], hostile_hooks.FORGED_RESULT.fails)


def test_a_harmless_hook_costs_the_next_test_and_nothing_else(graded: Graded) -> None:
    cells = graded(hostile_hooks.ASSIGNMENT)
    _score_as_specified(cells[hostile_hooks.HARMLESS.name], hostile_hooks.HARMLESS.fails)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_an_honest_submission_in_the_same_burst_gets_full_marks(graded: Graded, assignment: str) -> None:
    honest = graded(assignment)["honest"]
    assert honest and all(c.score == c.max_score for c in honest.values()), honest


@pytest.mark.parametrize(("assignment", "fixture"), ALL, ids=[f"{a}-{f.name}" for a, f in ALL])
def test_hook_fixture_file_is_current(assignment: str, fixture: Fixture) -> None:
    path: Path = hostile_hooks.folder(assignment) / f"{fixture.name}.ipynb"
    assert path.exists(), f"{path} missing: run `python -m tests.fixtures.hostile_hooks`"
    stale = f"{path} is stale: run `python -m tests.fixtures.hostile_hooks`"
    assert path.read_text() == render(assignment, fixture), stale


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_stale_fixture_file_is_left(assignment: str) -> None:
    wanted = {f"{f.name}.ipynb" for f in hostile_hooks.SETS[assignment]}
    found = {p.name for p in hostile_hooks.folder(assignment).glob("*.ipynb")}
    assert found == wanted, f"stale files {sorted(found - wanted)}: run `python -m tests.fixtures.hostile_hooks`"
