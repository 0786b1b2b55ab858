"""Hostile submissions through the service: the hostile fixtures score as through the batch command,
and canaries planted in every private place never reach a student's output or feedback."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator

import nbformat
import pytest

from grader import course
from tests.engine.test_hostile import LIMITS, NEEDS_OWN_USER
from tests.fixtures import hostile
from tests.fixtures.build import hostile_folder

from .conftest import QUICK, Server, fixture_bytes, free_port, grade, submit, with_solution

A = hostile.ASSIGNMENT
ROOT = os.geteuid() == 0
CANARIES = {
    "hidden test literal": "CANARY-HIDDEN-LITERAL-5b1e",
    "hidden test comment": "CANARY-HIDDEN-COMMENT-90ac",
    "source file": "CANARY-SOURCE-FILE-77d2",
    "configuration": "CANARY-CONFIG-c41f",
    "environment": "CANARY-ENVIRONMENT-3e8b",
    "other student": "CANARY-OTHER-STUDENT-a6d0",
}
# Everything a student could try from a cell, all printed: where the course is (from the zygote's
# command line), every file under it, the environment, other processes' environments, the history.
THIEF_HELPER = r"""
import os, sys
_found = []
def _grab(label, fn):
    try:
        _found.append(f"{label}: {fn()}")
    except Exception as error:
        _found.append(f"{label} failed: {error!r}")
_grab("env", lambda: dict(os.environ))
_grab("zygote cmdline", lambda: open(f"/proc/{os.getppid()}/cmdline", "rb").read())
_grab("zygote environ", lambda: open(f"/proc/{os.getppid()}/environ", "rb").read())
_grab("init environ", lambda: open("/proc/1/environ", "rb").read())
_roots = {p.decode() for p in open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\0") if p.startswith(b"/")}
for _root in sorted(_roots):
    for _dir, _, _files in os.walk(_root if os.path.isdir(_root) else os.path.dirname(_root)):
        if ".venv" in _dir:
            continue
        for _name in _files:
            _grab(os.path.join(_dir, _name), lambda: open(os.path.join(_dir, _name), "rb").read()[-20000:])
_grab("history", lambda: list(In))
print("\n".join(_found))
"""
THIEF_LOSS = r"""
import sys

def mean_square_loss(x):
    seen = []
    for attempt in (lambda: sys._getframe(1).f_code.co_consts, lambda: list(In), lambda: dict(globals())):
        try:
            seen.append(repr(attempt()))
        except Exception as error:
            seen.append(repr(error))
    raise ValueError("\n".join(seen))
"""


def _plant(root: os.PathLike[str]) -> None:
    from pathlib import Path

    root = Path(root)
    source = root / "source" / A / f"{A}.ipynb"
    nb = nbformat.read(source, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_mean_square_loss_value"]
    marker = "### BEGIN HIDDEN TESTS\n"
    assert marker in cell.source
    planted = f"# {CANARIES['hidden test comment']}\nassert '{CANARIES['hidden test literal']}'.startswith('CANARY')\n"
    cell.source = cell.source.replace(marker, marker + planted)
    nbformat.write(nb, source)
    (root / "source" / A / "notes.txt").write_text(CANARIES["source file"])
    with (root / "nbgrader_config.py").open("a") as config:
        config.write(f"\n{QUICK}\n{LIMITS}\n# {CANARIES['configuration']}\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = course.copy_course(tmp_path_factory.mktemp("hostile-service") / "course")
    _plant(root)
    course.generate_releases(root)
    os.environ["GRADER_TEST_SECRET_TOKEN"] = CANARIES["environment"]
    srv = Server(root, f"http://127.0.0.1:{free_port()}")
    try:
        srv.start()
        yield srv
    finally:
        os.environ.pop("GRADER_TEST_SECRET_TOKEN", None)
        srv.kill(signal.SIGTERM)


@pytest.fixture(scope="module")
def burst(server: Server) -> dict[str, dict]:  # type: ignore[type-arg]
    """Every hostile fixture and an honest submission, uploaded at once (as at a deadline), graded."""
    uploads = {f"svc-{f.name}": (hostile_folder() / f"{f.name}.ipynb").read_bytes() for f in hostile.FIXTURES}
    uploads["svc-honest"] = fixture_bytes(A, "correct")
    tokens = {student: server.token(student) for student in uploads if _runs(student)}
    ids = {}
    for student, token in tokens.items():
        with server.client(token) as client:
            response = submit(client, A, uploads[student])
        assert response.status_code == 202, response.text
        ids[student] = response.json()["id"]
    return {student: server.wait_graded(tokens[student], i, timeout=900) for student, i in ids.items()}


def _runs(student: str) -> bool:
    return ROOT or student.removeprefix("svc-") not in NEEDS_OWN_USER


@pytest.mark.parametrize("fixture", hostile.FIXTURES, ids=[f.name for f in hostile.FIXTURES])
def test_hostile_fixture_scores_as_through_the_batch_command(
    burst: dict[str, dict],
    fixture: hostile.Fixture,  # type: ignore[type-arg]
) -> None:
    if not _runs(f"svc-{fixture.name}"):
        pytest.skip("needs root: the kernel's own user is what stops this")
    body = burst[f"svc-{fixture.name}"]
    assert body["status"] == "graded", body
    for test in body["tests"]:
        expected = fixture.fails.get(test["name"])
        if expected is None:
            assert test["passed"], test
        else:
            assert test["points"] == 0 and expected in test["message"], test


def test_an_honest_submission_in_the_same_burst_gets_full_marks(burst: dict[str, dict]) -> None:  # type: ignore[type-arg]
    assert burst["svc-honest"]["score"] == burst["svc-honest"]["max_score"]


def test_no_canary_reaches_a_students_output_or_feedback(server: Server) -> None:
    other = with_solution(A, "predict", f"def predict(w, x):\n    # {CANARIES['other student']}\n    return w * x\n")
    assert grade(server, "svc-canary-owner", A, other)["status"] == "graded"

    nb = json.loads(with_solution(A, "mean_square_loss", THIEF_LOSS))
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb["cells"]]
    index = ids.index("mean_square_loss")
    nb["cells"].insert(index + 1, nbformat.v4.new_code_cell(THIEF_HELPER))
    feedback = grade(server, "svc-thief", A, json.dumps(nb).encode())
    assert feedback["status"] == "graded"
    staff = server.token("svc-ta", role="ta")
    with server.client(staff) as client:
        seen_by_staff = client.get(f"/api/submissions/{feedback['id']}").text

    graded_nb = nbformat.read(server.root / "autograded" / "svc-thief" / A / f"{A}.ipynb", as_version=4)
    autograded = json.dumps([c.get("outputs", []) for c in graded_nb.cells])  # what the student's code printed
    assert "zygote cmdline" in autograded and "ValueError" in json.dumps(feedback)  # the thief did run
    for place, canary in CANARIES.items():
        assert canary not in json.dumps(feedback), f"the {place} canary reached the feedback"
        assert canary not in seen_by_staff, f"the {place} canary reached the submission's record"
        assert canary not in autograded, f"the {place} canary reached the student's output"
