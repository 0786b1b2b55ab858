"""``GET /api/submissions/{id}?wait=S``: the answer comes when the grade is recorded, not when a client asks
again (real ``grader serve``, real kernels, real SQLite); and ``grader submit`` uses it."""

from __future__ import annotations

import datetime as dt
import io
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from grader.student import client as grader_client

from ..conftest import Server, fixture_bytes, submit

A = "ps2_autograd"


def _stamp(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_one_request_waits_for_the_grade_and_answers_when_it_is_recorded(server: Server) -> None:
    token = server.token("wait-one")
    with server.client(token) as client:
        sid = submit(client, A, fixture_bytes(A, "correct")).json()["id"]
        asked = time.monotonic()
        body = client.get(f"/api/submissions/{sid}", params={"wait": "60"}, timeout=90).json()
        answered = time.monotonic()
    assert body["status"] == "graded", body  # one request, no polling
    assert body["score"] == body["max_score"] > 0
    assert answered - asked < 55  # it did not wait out the 60 s
    # the answer left within moments of the grade being recorded (not a poll interval later)
    left = dt.datetime.now(dt.UTC) - _stamp(body["graded_at"])
    assert left < dt.timedelta(seconds=2), left


def test_a_final_submission_is_answered_at_once(server: Server) -> None:
    token = server.token("wait-final")
    with server.client(token) as client:
        sid = submit(client, A, fixture_bytes(A, "correct")).json()["id"]
    server.wait_graded(token, sid)
    with server.client(token) as client:
        started = time.monotonic()
        body = client.get(f"/api/submissions/{sid}", params={"wait": "30"}).json()
        assert time.monotonic() - started < 5 and body["status"] == "graded"


def test_wait_must_be_seconds_from_0_to_60(server: Server) -> None:
    token = server.token("wait-bad")
    with server.client(token) as client:
        sid = submit(client, A, fixture_bytes(A, "correct")).json()["id"]
        for bad in ("soon", "-1", "61", "nan", "inf"):
            response = client.get(f"/api/submissions/{sid}", params={"wait": bad})
            assert response.status_code == 400, (bad, response.text)
            assert response.json()["error"] == f"wait must be a number of seconds from 0 to 60, not '{bad}'"
        assert client.get(f"/api/submissions/{sid}", params={"wait": "0"}).status_code == 200
    server.wait_graded(token, sid)


def test_waiting_on_someone_elses_submission_is_refused_without_waiting(server: Server) -> None:
    owner, other = server.token("wait-owner"), server.token("wait-other")
    with server.client(owner) as client:
        sid = submit(client, A, fixture_bytes(A, "correct")).json()["id"]
    with server.client(other) as client:
        started = time.monotonic()
        response = client.get(f"/api/submissions/{sid}", params={"wait": "30"})
        assert response.status_code == 404 and time.monotonic() - started < 5
    server.wait_graded(owner, sid)


def test_grader_submit_gets_the_grade_in_one_waiting_request(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = tmp_path / f"{A}.ipynb"
    notebook.write_bytes(fixture_bytes(A, "correct"))
    connection = grader_client.Connection(server.url, server.token("wait-cli"))
    asked: list[str] = []
    original = httpx.Client.get

    def counting_get(self: httpx.Client, url: str, **kwargs: Any) -> httpx.Response:
        asked.append(f"{url} {kwargs.get('params')}")
        return original(self, url, **kwargs)

    monkeypatch.setattr(httpx.Client, "get", counting_get)
    out = io.StringIO()
    body = grader_client.submit(notebook, A, connection, out=out)
    assert body["status"] == "graded" and body["score"] == body["max_score"]
    assert len(asked) == 1 and "wait" in asked[0], asked  # answered when graded, not polled every 0.5 s
    assert "graded" in out.getvalue()
