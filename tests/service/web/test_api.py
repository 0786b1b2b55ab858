"""The service end to end: real HTTP on loopback, real kernels, real SQLite."""

from __future__ import annotations

import json
import re

import httpx
import nbformat
import pytest

from grader import course
from tests.fixtures.build import fixtures
from tests.fixtures.spec import Fixture
from tests.graded import Graded

from ..conftest import Server, fixture_bytes, submit

ALL_FIXTURES = [(a, f.name) for a in course.assignments() for f in fixtures(a)]


@pytest.fixture(scope="module")
def service_results(server: Server) -> dict[tuple[str, str], dict]:  # type: ignore[type-arg]
    """Every fixture submission, submitted at once (as a deadline burst), graded by the service."""
    ids = {}
    tokens = {}
    for assignment, name in ALL_FIXTURES:
        student = f"svc-{assignment}-{name}"
        tokens[student] = server.token(student)
        with server.client(tokens[student]) as client:
            response = submit(client, assignment, fixture_bytes(assignment, name))
        assert response.status_code == 202, response.text
        ids[(assignment, name)] = (student, response.json()["id"])
    return {key: server.wait_graded(tokens[student], sid, timeout=1800) for key, (student, sid) in ids.items()}


@pytest.mark.parametrize(("assignment", "fixture"), ALL_FIXTURES, ids=[f"{a}/{f}" for a, f in ALL_FIXTURES])
def test_service_scores_equal_stock_nbgrader(
    service_results: dict,
    graded: dict[str, Graded],
    assignment: str,
    fixture: str,  # type: ignore[type-arg]
) -> None:
    body = service_results[(assignment, fixture)]
    assert body["status"] == "graded", body
    stock = graded[assignment].cells(fixture)
    service = {t["name"]: t for t in body["tests"]}
    assert set(service) == set(stock)
    for name, cell in stock.items():
        assert (service[name]["points"], service[name]["max_points"]) == (cell.score, cell.max_score), name
        assert service[name]["passed"] == (cell.score == cell.max_score)
        if cell.score < cell.max_score:  # the same failure, with the same message text
            assert service[name]["message"] and service[name]["message"].split("\n")[0] in cell.message
    assert body["score"] == sum(c.score for c in stock.values())
    assert body["final_score"] == body["score"] - body["late_penalty"]


def test_feedback_names_the_misconception_and_never_shows_hidden_test_source(server: Server) -> None:
    token = server.token("svc-feedback")
    with server.client(token) as client:
        response = submit(client, "ps2_autograd", fixture_bytes("ps2_autograd", "sum-instead-of-mean"))
    body = server.wait_graded(token, response.json()["id"])
    failed = [t for t in body["tests"] if not t["passed"]]
    assert failed and all("sum-instead-of-mean" in t["message"] for t in failed)
    source = nbformat.read(server.root / "source" / "ps2_autograd" / "ps2_autograd.ipynb", as_version=4)
    hidden = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
    hidden_lines = {
        line.strip()
        for c in source.cells
        for block in hidden.findall(c.source)
        for line in block.splitlines()
        if len(line.strip()) > 15
    }
    text = json.dumps(body)
    assert "HIDDEN TESTS" not in text
    assert not {line for line in hidden_lines if line in text}


def test_student_sees_only_their_own_submissions(server: Server) -> None:
    alice, bob = server.token("svc-alice"), server.token("svc-bob")
    with server.client(alice) as client:
        # a student cannot submit as someone else: ?student= is ignored for students
        response = client.post(
            "/api/submissions?student=svc-bob",
            data={"assignment": "ps1_tensors"},
            files={"file": ("x.ipynb", fixture_bytes("ps1_tensors", "correct"))},
        )
        assert response.status_code == 202
        submission_id = response.json()["id"]
        assert client.get(f"/api/submissions/{submission_id}").json()["student"] == "svc-alice"
    with server.client(bob) as client:
        assert client.get(f"/api/submissions/{submission_id}").status_code == 404
        assert all(s["student"] == "svc-bob" for s in client.get("/api/submissions").json())
        assert client.get("/api/admin/grades").status_code == 403
        assert client.get("/api/admin/grades.csv").status_code == 403
        assert client.post("/api/admin/regrade", json={"assignment": "ps1_tensors"}).status_code == 403
    server.wait_graded(alice, submission_id)


@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_missing_or_invalid_token_is_401(server: Server, token: str | None) -> None:
    with server.client(token) as client:
        response = client.get("/api/submissions")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "token" in response.json()["error"]


def test_revoked_token_is_refused(server: Server) -> None:
    token = server.token("svc-revoked")
    assert server.store.revoke_tokens("svc-revoked") == 1
    with server.client(token) as client:
        assert client.get("/api/submissions").status_code == 401


def _nbformat3() -> bytes:
    return json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [], "cells": []}).encode()


def _other_assignment() -> bytes:
    return fixture_bytes("ps2_autograd", "correct")


def _missing_answer_cell() -> bytes:
    nb = json.loads(fixture_bytes("ps1_tensors", "correct"))
    nb["cells"] = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "linear"]
    return json.dumps(nb).encode()


def _number_as_source() -> bytes:
    nb = json.loads(fixture_bytes("ps1_tensors", "correct"))
    nb["cells"][3]["source"] = 42
    return json.dumps(nb).encode()


def _r_kernel() -> bytes:
    nb = json.loads(fixture_bytes("ps1_tensors", "correct"))
    nb["metadata"]["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    return json.dumps(nb).encode()


BAD_INPUT = [
    ("not-json", "ps1_tensors", b"this is not json", 422, "not valid JSON"),
    ("not-utf8", "ps1_tensors", b"\xff\xfe\x00garbage", 422, "not UTF-8"),
    ("json-not-notebook", "ps1_tensors", b'{"hello": "world"}', 422, "not a Jupyter notebook"),
    ("nbformat-3", "ps1_tensors", _nbformat3(), 422, "nbformat 3"),
    ("other-assignment", "ps1_tensors", _other_assignment(), 422, "another assignment"),
    ("deeply-nested", "ps1_tensors", b"[" * 100_000 + b"]" * 100_000, 422, "not valid JSON"),
    ("number-as-source", "ps1_tensors", _number_as_source(), 422, "not valid nbformat 4"),
    ("other-language", "ps1_tensors", _r_kernel(), 422, "kernel language is 'R'"),
    ("unknown-assignment", "ps9_nothing", fixture_bytes("ps1_tensors", "correct"), 404, "unknown assignment"),
    ("too-large", "ps1_tensors", b" " * (6 * 1024 * 1024), 413, "limit is"),
]


@pytest.mark.parametrize(("case", "assignment", "data", "status", "text"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_gets_a_clear_error_and_stores_nothing(
    server: Server, case: str, assignment: str, data: bytes, status: int, text: str
) -> None:
    token = server.token("svc-bad-input")
    before = len(server.store.submissions(student="svc-bad-input"))
    with server.client(token) as client:
        response = submit(client, assignment, data)
    assert response.status_code == status, response.text
    assert text in response.json()["error"]
    assert len(server.store.submissions(student="svc-bad-input")) == before
    folder = server.root / "service-data" / "submissions" / "svc-bad-input"
    assert not folder.exists() or not any(folder.rglob("*.ipynb"))


def test_a_200_mb_notebook_is_refused_before_it_is_read(server: Server) -> None:
    token = server.token("svc-huge")
    with server.client(token) as client:
        response = submit(client, "ps1_tensors", b'{"cells": [], "x": "' + b"a" * (200 * 1024**2) + b'"}')
    assert response.status_code == 413 and "limit is 5.2 MB" in response.json()["error"]
    assert server.store.submissions(student="svc-huge") == []


def test_a_missing_answer_cell_is_named_at_once_and_the_rest_graded(server: Server) -> None:
    token = server.token("svc-missing-answer")
    with server.client(token) as client:
        response = submit(client, "ps1_tensors", _missing_answer_cell())
    assert response.status_code == 202, response.text
    (warning,) = response.json()["warnings"]
    assert warning.startswith("The answer cell `linear` (`linear`) was not found in your notebook")
    body = server.wait_graded(token, response.json()["id"])
    assert "The answer cell `linear` (`linear`) was not found" in body["reason"]
    failed = {t["name"] for t in body["tests"] if not t["passed"]}
    assert failed and all(name.startswith("test_linear") for name in failed), failed
    assert all("NotImplementedError" in t["message"] for t in body["tests"] if not t["passed"])


MANGLED = [(a, f) for a in course.assignments() for f in fixtures(a) if f.notes]


@pytest.mark.parametrize(("assignment", "fixture"), MANGLED, ids=[f"{a}/{f.name}" for a, f in MANGLED])
def test_mangled_notebook_feedback_names_each_cell_that_was_mended(
    service_results: dict,
    assignment: str,
    fixture: Fixture,  # type: ignore[type-arg]
) -> None:
    body = service_results[(assignment, fixture.name)]
    for note in fixture.notes:
        assert note in body["reason"], f"{note!r} not in {body['reason']!r}"


def test_form_without_file_or_assignment(server: Server) -> None:
    with server.client(server.token("svc-form")) as client:
        assert "'file'" in client.post("/api/submissions", data={"assignment": "ps1_tensors"}).json()["error"]
        missing = client.post("/api/submissions", files={"file": ("a.ipynb", b"{}")})
        assert missing.status_code == 400 and "'assignment'" in missing.json()["error"]


def test_admin_grade_table_csv_and_regrade(server: Server) -> None:
    student_token = server.token("svc-admin-view")
    with server.client(student_token) as client:
        first = submit(client, "ps1_tensors", fixture_bytes("ps1_tensors", "hard-coded")).json()["id"]
    server.wait_graded(student_token, first)
    admin = server.token("svc-admin", "admin")
    with server.client(admin) as client:
        table = client.get("/api/admin/grades").json()
        (row,) = [r for r in table if r["student"] == "svc-admin-view" and r["assignment"] == "ps1_tensors"]
        assert row["attempts"] == 1 and row["raw_score"] < row["max_score"] and row["late_penalty"] == 0
        assert row["final_score"] == row["raw_score"] and row["last_submission"]
        csv = client.get("/api/admin/grades.csv")
        assert csv.headers["content-type"].startswith("text/csv")
        header = csv.text.splitlines()[0]
        assert header.startswith("assignment,duedate,timestamp,student_id,last_name,first_name,email")
        assert any(line.startswith("ps1_tensors,") and ",svc-admin-view," in line for line in csv.text.splitlines())
        regrade = client.post("/api/admin/regrade", json={"student": "svc-admin-view"})
        assert regrade.status_code == 202 and regrade.json()["submissions"] == [first]
        assert client.post("/api/admin/regrade", content=b"nope").status_code == 400
        assert client.post("/api/admin/regrade", json={"color": "blue"}).status_code == 400
        assert client.post("/api/admin/regrade", json={"assignment": "ps9_nothing"}).status_code == 404
        by_id = client.post("/api/admin/regrade", json={"submission_id": first})
        assert by_id.status_code == 202 and by_id.json() == {"queued": 1, "submissions": [first]}
    again = server.wait_graded(student_token, first)
    assert again["score"] == row["raw_score"], again


def test_openapi_schema_is_served(server: Server) -> None:
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert {"/api/submissions", "/api/admin/grades", "/api/admin/regrade"} <= set(schema["paths"])


def test_grader_submit_command_waits_and_prints_score_and_feedback(server: Server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys
    from pathlib import Path

    notebook = tmp_path / "ps2_autograd.ipynb"
    notebook.write_bytes(fixture_bytes("ps2_autograd", "hard-coded"))
    env = dict(os.environ, GRADER_URL=server.url, GRADER_TOKEN=server.token("svc-cli"), HOME=str(tmp_path))
    grader = str(Path(sys.executable).parent / "grader")
    proc = subprocess.run([grader, "submit", str(notebook)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Submitted" in proc.stdout and "  graded (" in proc.stdout
    assert "Score: 34 / 37" in proc.stdout
    assert "FAIL test_cubic_slope: 0/3" in proc.stdout and "[hard-coded]" in proc.stdout
    missing = subprocess.run(
        [grader, "submit", str(notebook)], env={**env, "GRADER_TOKEN": ""}, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "no token" in missing.stderr
    refused = subprocess.run(
        [grader, "submit", str(notebook), "--assignment", "ps9"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and "refused (404): unknown assignment 'ps9'" in refused.stderr
