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
from tests.fixtures import canaries, claims, hostile
from tests.fixtures.build import hostile_folder

from ..conftest import QUICK, Server, fixture_bytes, free_port, grade, submit

A = hostile.ASSIGNMENT
ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = course.copy_course(tmp_path_factory.mktemp("hostile-service") / "course")
    canaries.plant(root, f"{QUICK}\n{LIMITS}")
    course.generate_releases(root)
    os.environ[canaries.ENVIRONMENT_VARIABLE] = canaries.CANARIES["environment"]
    srv = Server(root, f"http://127.0.0.1:{free_port()}")
    try:
        srv.start()
        yield srv
    finally:
        os.environ.pop(canaries.ENVIRONMENT_VARIABLE, None)
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
        claims.root_only("needs root: the kernel's own user is what stops this")
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
    assert grade(server, "svc-canary-owner", A, canaries.other_student_notebook())["status"] == "graded"
    feedback = grade(server, "svc-thief", A, canaries.thief_notebook())
    assert feedback["status"] == "graded"
    staff = server.token("svc-ta", role="ta")
    with server.client(staff) as client:
        seen_by_staff = client.get(f"/api/submissions/{feedback['id']}").text

    graded_nb = nbformat.read(server.root / "autograded" / "svc-thief" / A / f"{A}.ipynb", as_version=4)
    autograded = json.dumps([c.get("outputs", []) for c in graded_nb.cells])  # what the student's code printed
    assert "zygote cmdline" in autograded and "ValueError" in json.dumps(feedback)  # the thief did run
    assert canaries.leaked(json.dumps(feedback)) == [], "a canary reached the feedback"
    assert canaries.leaked(seen_by_staff) == [], "a canary reached the submission's record"
    assert canaries.leaked(autograded) == [], "a canary reached the student's output"
