"""Trusted time (issue 17): no door of the service takes a client's time for a submission.

The time a submission was received is the one the late policy charges for. Here a student forges
an earlier time every way a client could (form fields, query parameters, HTTP headers, the
notebook's metadata, a ``timestamp.txt`` next to the notebook, the exchange plugin) and the
service records its own clock each time, and hands nbgrader a ``timestamp.txt`` holding it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import course

from ..conftest import Server, fixture_bytes
from .test_exchange import ASSIGNMENT, make_student
from .test_pages import browser

FORGED = dt.datetime(2020, 1, 1, 0, 0, 0)
FORGED_TEXTS = (FORGED.isoformat(), course.timestamp_text(FORGED).strip(), "Wed, 01 Jan 2020 00:00:00 GMT", "0")
FORM = {name: FORGED_TEXTS[1] for name in ("timestamp", "received_at", "submitted_at", "date", "time")}
QUERY = {name: FORGED_TEXTS[0] for name in ("timestamp", "received_at", "submitted_at", "time")}
HEADERS = {
    "Date": FORGED_TEXTS[2],
    "Last-Modified": FORGED_TEXTS[2],
    "If-Unmodified-Since": FORGED_TEXTS[2],
    "X-Timestamp": FORGED_TEXTS[1],
    "X-Received-At": FORGED_TEXTS[1],
    "X-Submitted-At": FORGED_TEXTS[1],
    "X-Request-Start": FORGED_TEXTS[3],
}


def _forged_notebook() -> bytes:
    """The correct notebook claiming, in its own metadata, to have been submitted in 2020."""
    nb = json.loads(fixture_bytes(ASSIGNMENT, "correct"))
    nb["metadata"].update({name: FORGED_TEXTS[1] for name in ("timestamp", "received_at", "submitted_at")})
    return json.dumps(nb).encode()


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _recorded(server: Server, student: str, door: Callable[[], None]) -> tuple[dt.datetime, dt.datetime, dt.datetime]:
    """Submit through ``door``; the server clock's bounds around it and the received_at it recorded."""
    before = _utcnow() - dt.timedelta(seconds=1)
    door()
    after = _utcnow() + dt.timedelta(seconds=1)
    (submission,) = server.store.submissions(student=student)
    server.wait_graded(server.token(student), submission.id)
    return before, submission.received_at, after


def _api(server: Server, student: str) -> None:
    with server.client(server.token(student)) as client:
        response = client.post(
            "/api/submissions",
            params=QUERY,
            data={"assignment": ASSIGNMENT, **FORM},
            files={"file": (f"{ASSIGNMENT}.ipynb", _forged_notebook())},
            headers=HEADERS,
        )
    assert response.status_code == 202, response.text


def _api_with_a_timestamp_file(server: Server, student: str) -> None:
    """A second file part named timestamp.txt: the form takes one file, the notebook."""
    with server.client(server.token(student)) as client:
        response = client.post(
            "/api/submissions",
            data={"assignment": ASSIGNMENT},
            files=[
                ("file", (f"{ASSIGNMENT}.ipynb", _forged_notebook())),
                ("timestamp", ("timestamp.txt", course.timestamp_text(FORGED).encode())),
            ],
        )
    assert response.status_code in (202, 400), response.text
    if response.status_code == 400:  # refused outright: then submit without it, the forged headers still on
        _api(server, student)


def _page(server: Server, student: str) -> None:
    with browser(server, server.token(student)) as client:
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/me").text)
        assert csrf
        response = client.post(
            "/me",
            data={"assignment": ASSIGNMENT, "csrf": csrf.group(1), "received_at": FORGED_TEXTS[1]},
            files={"file": (f"{ASSIGNMENT}.ipynb", _forged_notebook())},
            headers={"Date": FORGED_TEXTS[2], "X-Timestamp": FORGED_TEXTS[1]},
        )
    assert response.status_code == 303, response.text


def _exchange(server: Server, student: str, home: Path) -> None:
    """``nbgrader submit`` through the exchange plugin, a forged timestamp.txt in the assignment folder."""
    user = make_student(server, home, student)
    user.ok("fetch_assignment", ASSIGNMENT)
    folder = user.home / ASSIGNMENT
    (folder / f"{ASSIGNMENT}.ipynb").write_bytes(_forged_notebook())
    (folder / "timestamp.txt").write_text(course.timestamp_text(FORGED))
    proc = user.ok("submit", ASSIGNMENT)
    assert "2020-01-01" not in proc.stderr


DOORS = ("api", "api-timestamp-file", "page", "exchange")


@pytest.mark.parametrize("door", DOORS)
def test_no_door_takes_the_clients_time(server: Server, tmp_path: Path, door: str) -> None:
    student = f"tt-{door}"
    doors: dict[str, Callable[[], None]] = {
        "api": lambda: _api(server, student),
        "api-timestamp-file": lambda: _api_with_a_timestamp_file(server, student),
        "page": lambda: _page(server, student),
        "exchange": lambda: _exchange(server, student, tmp_path),
    }
    before, received, after = _recorded(server, student, doors[door])
    assert before <= received <= after, (before, received, after)
    with server.client(server.token(student)) as client:
        (view,) = client.get("/api/submissions").json()
    assert view["received_at"].startswith(received.isoformat(timespec="seconds"))
    # what nbgrader's late policy read: the service's own timestamp.txt, the received time
    folder = server.root / "submitted" / student / ASSIGNMENT
    assert (folder / "timestamp.txt").read_text() == course.timestamp_text(received)
    # the one file of an upload is the notebook: nothing else a client sends lands in submitted/
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{ASSIGNMENT}.ipynb", "timestamp.txt"])
