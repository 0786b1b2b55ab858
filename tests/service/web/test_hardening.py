"""The second hardening round's cases through the service (issue 17), as the batch command grades them.

One server, one burst of uploads: every IPython-hook fixture of every assignment
(``tests/fixtures/hostile_hooks.py``), the guard's refusals of ``tests/fixtures/claims.py``, the
split answer cells of ``tests/engine/test_split_cells.py``, the stdout flood that hid a stderr write
(``tests/engine/test_stderr_flood.py``) and an honest submission per assignment.  Each scores as its
fixture says, with the message as text.  The broken notebooks a batch records as 0
(``tests/engine/test_batch_broken.py``) are refused at upload with the same sentence, and nothing is
stored.  (The sandbox failing closed through the service's pipeline is in
``tests/service/grading/test_pipeline.py``; trusted time in ``test_trusted_time.py``.)
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass

import nbformat
import pytest

from grader import course
from tests.engine import test_split_cells as splits
from tests.engine import test_stderr_flood as flood
from tests.engine.test_batch_broken import BROKEN
from tests.fixtures import claims, hostile_hooks
from tests.fixtures.spec import SUBMISSIONS, Fixture, build

from ..conftest import Server, free_port, submit


@dataclass(frozen=True)
class Upload:
    student: str
    assignment: str
    data: bytes
    fails: dict[str, str]  # test -> text its message must contain; every other test passes


def _uploads() -> list[Upload]:
    uploads = [
        Upload(f"svc-{a}-{f.name}", a, (hostile_hooks.folder(a) / f"{f.name}.ipynb").read_bytes(), f.fails)
        for a, fixtures in hostile_hooks.SETS.items()
        for f in fixtures
    ]
    uploads += [Upload(f"svc-{s}", splits.A, nbformat.writes(splits._split(s)).encode(), {}) for s in splits.SPLITS]
    for student, then_stderr in {"floods-then-stderr": True, "floods-only": False}.items():
        fails = {flood.TEST: "something went wrong"} if then_stderr else {}
        uploads.append(
            Upload(f"svc-{student}", flood.A, nbformat.writes(flood._flooding(student, then_stderr)).encode(), fails)
        )
    for notebook in claims.NOTEBOOKS:  # the guard's refusals (gc walks, frames, ctypes.string_at)
        fixture = notebook.fixture
        data = nbformat.writes(build(claims.ASSIGNMENT, fixture)).encode()
        uploads.append(Upload(f"svc-claims-{fixture.name}", claims.ASSIGNMENT, data, fixture.fails))
    for a in course.assignments():
        uploads.append(Upload(f"svc-{a}-honest", a, (SUBMISSIONS / a / "correct.ipynb").read_bytes(), {}))
    return uploads


UPLOADS = _uploads()
CAUGHT = "Your code changed what the tests rely on ("  # the message of the test a hook was caught at


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = course.copy_course(tmp_path_factory.mktemp("hardening-service") / "course")
    course.generate_releases(root)
    srv = Server(root, f"http://127.0.0.1:{free_port()}")
    try:
        srv.start()
        yield srv
    finally:
        srv.kill(signal.SIGTERM)


@pytest.fixture(scope="module")
def graded(server: Server) -> dict[str, dict]:  # type: ignore[type-arg]
    """Every upload at once, as at a deadline; the graded result of each, by student."""
    tokens = {u.student: server.token(u.student) for u in UPLOADS}
    ids = {}
    for upload in UPLOADS:
        with server.client(tokens[upload.student]) as client:
            response = submit(client, upload.assignment, upload.data)
        assert response.status_code == 202, (upload.student, response.text)
        ids[upload.student] = response.json()["id"]
    return {s: server.wait_graded(tokens[s], i, timeout=900) for s, i in ids.items()}


def _scores_as_specified(body: dict, fails: dict[str, str]) -> None:  # type: ignore[type-arg]
    assert body["status"] == "graded", body
    assert body["tests"], body
    for test in body["tests"]:
        expected = fails.get(test["name"])
        if expected is None:
            assert test["passed"], test
        else:
            assert test["points"] == 0 and expected in test["message"], test


@pytest.mark.parametrize("upload", UPLOADS, ids=[u.student.removeprefix("svc-") for u in UPLOADS])
def test_each_case_scores_as_its_fixture_says(graded: dict[str, dict], upload: Upload) -> None:  # type: ignore[type-arg]
    _scores_as_specified(graded[upload.student], upload.fails)


def test_a_caught_hook_is_named_in_the_first_test_after_it(graded: dict[str, dict]) -> None:  # type: ignore[type-arg]
    caught = 0
    for assignment, fixtures in hostile_hooks.SETS.items():
        for fixture in fixtures:
            first_test = hostile_hooks.first_test(assignment)
            detected = _detection(fixture, first_test)
            if detected is None:
                continue
            tests = {t["name"]: t for t in graded[f"svc-{assignment}-{fixture.name}"]["tests"]}
            first = tests[first_test]
            assert first["message"].startswith(CAUGHT) and detected in first["message"], (fixture.name, first)
            assert "Simple custom exception handler" not in str(tests), fixture.name
            caught += 1
    assert caught >= len(hostile_hooks.SETS), "no hook fixture was caught in some assignment"


def _detection(fixture: Fixture, first_test: str) -> str | None:
    """The tampering text the first test after the hook must show; None for the control, the hooks
    IPython puts back itself and the fixtures without a hook."""
    value = fixture.fails.get(first_test)
    return value if value and (" was replaced" in value or " were changed" in value) else None


def test_split_answers_are_joined_and_the_student_is_told(graded: dict[str, dict]) -> None:  # type: ignore[type-arg]
    for student, (_, _, joined) in splits.SPLITS.items():
        reason = graded[f"svc-{student}"]["reason"]
        expected = "joined back into one cell" if joined else "appears in 2 cells (split or copied)"
        assert expected in reason, (student, reason)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_notebook_is_refused_with_the_batchs_sentence_and_nothing_is_stored(server: Server, kind: str) -> None:
    data, why = BROKEN[kind]
    student = f"svc-broken-{kind}"
    with server.client(server.token(student)) as client:
        response = submit(client, flood.A, data)
    assert response.status_code == 422, response.text
    assert why in response.json()["error"], response.text
    assert server.store.submissions(student=student) == []
    folder = server.root / "service-data" / "submissions" / student
    assert not folder.exists() or not any(folder.rglob("*.ipynb"))
