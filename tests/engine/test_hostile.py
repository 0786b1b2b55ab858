"""Hostile submissions through ``grader autograde``: each is stopped, named, and costs nobody else.

One burst grades every fixture of ``tests/fixtures/hostile.py`` together with an
honest submission; the sandbox's effects are read from the autograded notebooks.
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.engine.doors import batch
from grader.engine.inside import sandbox
from tests.engine.processes import alive
from tests.fixtures import canaries, claims, hostile
from tests.fixtures.build import hostile_folder
from tests.fixtures.grading import CellResult, results
from tests.fixtures.spec import SUBMISSIONS

A = hostile.ASSIGNMENT
ROOT = os.geteuid() == 0
# What only the separate user per kernel stops (the sandbox needs root for it).
NEEDS_OWN_USER = {"signals-the-grader", "fork-bomb", "background-process-escapes"}
HELPER = "helper-after-mean-square-loss"  # the id of the cell each machine fixture inserts
# Lower limits than the course's, so the SIGINT-ignoring loop and the memory bomb are stopped sooner.
LIMITS = "c.Execute.timeout = 8\nc.GraderService.resident_limit_bytes = 1024**3\n"


@dataclass(frozen=True)
class Burst:
    root: Path
    cells: dict[str, dict[str, CellResult]]

    def helper_output(self, student: str) -> str:
        nb = nbformat.read(self.root / "autograded" / student / A / f"{A}.ipynb", as_version=4)
        (cell,) = [c for c in nb.cells if c.get("id") == HELPER]
        return "".join(str(o.get("text", "")) + str(o.get("evalue", "")) for o in cell.get("outputs", []))


@pytest.fixture(scope="module")
def burst(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Burst]:
    root = course.copy_course(tmp_path_factory.mktemp("hostile") / "course")
    canaries.plant(root, LIMITS)
    course.generate_releases(root, [A])
    for fixture in hostile.FIXTURES:
        if fixture.name in NEEDS_OWN_USER and not ROOT:
            continue
        course.place_submission(root, fixture.name, A, hostile_folder() / f"{fixture.name}.ipynb")
    course.place_submission(root, "honest", A, SUBMISSIONS / A / "correct.ipynb")
    for student, data in (("canary-owner", canaries.other_student_notebook()), ("thief", canaries.thief_notebook())):
        (root / "submitted" / student / A).mkdir(parents=True)
        (root / "submitted" / student / A / f"{A}.ipynb").write_bytes(data)
    os.environ[canaries.ENVIRONMENT_VARIABLE] = canaries.CANARIES["environment"]
    try:
        outcome = batch.run(root, A, jobs=4, out=io.StringIO())
    finally:
        os.environ.pop(canaries.ENVIRONMENT_VARIABLE, None)
    assert outcome.failed == ()
    yield Burst(root, results(root, A))


@pytest.mark.parametrize("fixture", hostile.FIXTURES, ids=[f.name for f in hostile.FIXTURES])
def test_hostile_fixture_loses_exactly_the_tests_aimed_at_it(burst: Burst, fixture: hostile.Fixture) -> None:
    if fixture.name in NEEDS_OWN_USER:
        claims.root_only("needs root: the kernel's own user is what stops this")
    cells = burst.cells[fixture.name]
    for gid, cell in cells.items():
        expected = fixture.fails.get(gid)
        if expected is None:
            assert cell.score == cell.max_score, f"{gid} lost points:\n{cell.message[:1500]}"
        else:
            assert cell.score == 0, f"{gid} kept points"
            assert expected in cell.message, f"{gid}: {expected!r} not in\n{cell.message[:1500]}"


def test_an_honest_submission_in_the_same_burst_gets_full_marks(burst: Burst) -> None:
    assert all(c.score == c.max_score for c in burst.cells["honest"].values())


def test_tampering_is_reported_in_words_and_put_back(burst: Burst) -> None:
    message = burst.cells["allclose-always-true"]["test_mean_square_loss_value"].message
    assert "TamperingDetected: Your code changed what the tests rely on (torch.allclose was replaced" in message
    assert "torch.testing.assert_close was replaced" in message
    assert "remove that code" in message


def test_hooks_that_would_watch_the_tests_are_refused(burst: Burst) -> None:
    output = burst.helper_output("trace-hook-refused")
    assert "sys.settrace is not available while a notebook is graded" in output
    assert "sys.setprofile is not available while a notebook is graded" in output
    assert "sys.addaudithook" not in output.replace("sys.settrace", "")  # the new hook never ran
    disarmed = burst.helper_output("audit-hook-disarmed")  # the hook's refused events emptied first
    assert "sys.settrace is not available while a notebook is graded" in disarmed
    assert "TRACING ALLOWED" not in disarmed


def test_no_connection_leaves_the_sandbox(burst: Burst) -> None:
    claims.root_only("network and mount namespaces need root")
    output = burst.helper_output("opens-connections")
    assert "CONNECTED" not in output
    assert output.count("Network is unreachable") == 3


def test_a_huge_file_is_cut_at_the_limit(burst: Burst) -> None:
    output = burst.helper_output("writes-a-huge-file")
    assert "File too large" in output or "No space left on device" in output


def test_the_grader_cannot_be_signalled_and_a_fork_bomb_stops_at_the_process_limit(burst: Burst) -> None:
    claims.root_only("a user of its own per kernel needs root")
    assert burst.helper_output("signals-the-grader").count("Operation not permitted") == 2
    assert "stopped after" in burst.helper_output("fork-bomb")


def _kernel_processes() -> list[tuple[str, int, bytes]]:
    """Live (not zombie) processes running as a kernel uid whose zygote is gone (another test process's
    kernels, of a live zygote, are not this batch's), or started by a fixture to outlive it."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        orphan = uid >= sandbox.FIRST_KERNEL_UID and not alive((uid - sandbox.FIRST_KERNEL_UID) // sandbox.KERNEL_SLOTS)
        if state != b"Z" and (orphan or b"31415" in cmdline):
            found.append((entry, uid, cmdline[:80]))
    return found


def test_no_process_of_a_kernel_outlives_the_batch(burst: Burst) -> None:
    claims.root_only("a user of its own per kernel needs root")
    deadline = time.monotonic() + 10  # SIGKILL is delivered at once, but dying takes a moment
    while _kernel_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _kernel_processes() == []


def test_a_dead_kernel_is_named_with_the_cell_it_died_in(burst: Burst) -> None:
    for name in ("os-exit", "kill-9-self", "segfault"):
        message = burst.cells[name]["test_cubic_slope"].message
        assert re.search(r"died in cell \d+ \(after `test_loss_and_grad_fresh_leaf`\); this cell did not run", message)
    stuck = burst.cells["ignores-sigint-loop"]["test_cubic_slope"].message
    assert re.search(r"Cell \d+ \(after `test_loss_and_grad_fresh_leaf`\) ran past the 8 s limit", stuck)


def test_the_memory_bomb_is_stopped_at_the_resident_limit(burst: Burst) -> None:
    message = burst.cells["memory-bomb"]["test_mse_value"].message
    assert "died in this cell (it used more than 1 GiB of memory and was stopped)" in message


def test_a_flood_of_output_is_cut_short_in_the_notebook(burst: Burst) -> None:
    flood = burst.helper_output("output-flood")
    assert flood.startswith("spam 0") and len(flood) < 200_000


def test_nothing_is_written_where_results_are_collected(burst: Burst) -> None:
    output = burst.helper_output("writes-where-results-are-collected")
    assert "gradebook.db" in output and "WROTE" not in output, output
    assert b"FORGED" not in (burst.root / "gradebook.db").read_bytes()
    assert not list(burst.root.parent.rglob("FORGED.txt"))


def test_no_canary_reaches_any_students_output(burst: Burst) -> None:
    """The thief read all it could (files under the course, environments, history, frames); nothing private."""
    outputs = {}
    for notebook in (burst.root / "autograded").glob(f"*/{A}/{A}.ipynb"):
        nb = nbformat.read(notebook, as_version=4)
        outputs[notebook.parts[-3]] = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "zygote cmdline" in outputs["thief"] and "ValueError" in outputs["thief"]  # the thief did run
    assert {student: canaries.leaked(text) for student, text in outputs.items() if canaries.leaked(text)} == {}
