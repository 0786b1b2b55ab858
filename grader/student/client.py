"""``grader submit``: upload a notebook to the service, wait, print the score and feedback.

The server URL and token come from ``GRADER_URL`` / ``GRADER_TOKEN`` or from
the config file ``~/.config/grader/client.json`` (``{"url": ..., "token": ...}``).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

WAIT_S = 25.0  # how long one status request may wait for the grade (the service allows up to 60 s)

CONFIG_FILE = Path("~/.config/grader/client.json").expanduser()


class ClientError(Exception):
    pass


@dataclass(frozen=True)
class Connection:
    url: str
    token: str


def connection() -> Connection:
    saved: dict[str, str] = {}
    if CONFIG_FILE.exists():
        try:
            saved = json.loads(CONFIG_FILE.read_text())
        except json.JSONDecodeError as error:
            raise ClientError(f"{CONFIG_FILE} is not valid JSON: {error}") from None
    url = os.environ.get("GRADER_URL") or saved.get("url") or "http://127.0.0.1:8000"
    token = os.environ.get("GRADER_TOKEN") or saved.get("token")
    if not token:
        raise ClientError(f'no token: set GRADER_TOKEN or write {{"token": ...}} to {CONFIG_FILE}')
    return Connection(url.rstrip("/"), token)


def submit(
    path: Path,
    assignment: str | None,
    conn: Connection,
    out: TextIO = sys.stdout,
    timeout: float = 900.0,
    confirm_late: bool = False,
) -> dict[str, Any]:
    if not path.exists():
        raise ClientError(f"{path} does not exist")
    assignment = assignment or path.stem
    headers = {"Authorization": f"Bearer {conn.token}"}
    with httpx.Client(base_url=conn.url, headers=headers, timeout=60) as client:
        data = path.read_bytes()
        form = {"assignment": assignment, "confirm_late": "true" if confirm_late else ""}
        try:
            response = _patiently(
                lambda: client.post("/api/submissions", data=form, files={"file": (path.name, data)}), out
            )
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach the grader at {conn.url}: {error}") from None
        if response.status_code != 202:
            raise ClientError(f"refused ({response.status_code}): {_error(response)}")
        url = response.json()["url"]
        out.write(f"Submitted {path} for {assignment}: submission {response.json()['id']}\n")
        for warning in response.json().get("warnings", []):
            out.write(f"  warning: {warning}\n")
        started = time.monotonic()
        status = ""
        while time.monotonic() - started < timeout:
            # the service answers as soon as the grade is recorded (``wait``), or after WAIT_S with the status
            wait = max(0.0, min(WAIT_S, timeout - (time.monotonic() - started)))
            asked = time.monotonic()
            params, limit = {"wait": f"{wait:.1f}"}, wait + 30
            polled = _patiently(functools.partial(client.get, url, params=params, timeout=limit), out)
            if polled.status_code != 200:
                raise ClientError(f"could not read the submission's status ({polled.status_code}): {_error(polled)}")
            body = polled.json()
            if body["status"] != status:
                status = body["status"]
                out.write(f"  {status} ({time.monotonic() - started:.0f} s)\n")
                out.flush()
            if status in ("graded", "failed"):
                return dict(body)
            time.sleep(max(0.0, 0.5 - (time.monotonic() - asked)))  # a service that does not wait: poll as before
    raise ClientError(f"still {status} after {timeout:.0f} s; check later with the submission URL {url}")


def report(body: dict[str, Any]) -> str:
    if body["status"] == "failed":
        return f"Not graded: {body['reason']}"
    lines = [
        f"Score: {body['final_score']:g} / {body['max_score']:g}"
        + (f" (late penalty {body['late_penalty']:g})" if body.get("late_penalty") else "")
    ]
    if body.get("reason"):
        lines.append(body["reason"])
    for test in body.get("tests", []):
        mark = "PASS" if test["passed"] else "FAIL"
        lines.append(f"  {mark} {test['name']}: {test['points']:g}/{test['max_points']:g}")
        if not test["passed"] and test["message"]:
            lines.extend("      " + line for line in test["message"].splitlines())
    if "tests_hidden_until" in body:
        lines.append(f"Per-test results are shown {body['tests_hidden_until']}.")
    return "\n".join(lines)


def _patiently(send: Callable[[], httpx.Response], out: TextIO, tries: int = 12) -> httpx.Response:
    """``send()``, again while the grader answers 503 (its database is briefly away), as Retry-After says."""
    response = send()
    for _ in range(tries):
        if response.status_code != 503:
            break
        wait = float(response.headers.get("Retry-After", "5") or 5)
        out.write(f"  the grader is unavailable for a moment (503: its database); trying again in {wait:.0f} s\n")
        out.flush()
        time.sleep(wait)
        response = send()
    return response


def _error(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text))
    except ValueError:
        return response.text[:500]
