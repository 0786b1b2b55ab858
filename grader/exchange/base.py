"""The shared part of the exchange: configuration, HTTP calls, local paths."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import PurePosixPath
from typing import Any, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
from nbgrader.exchange.abc import (
    Exchange,
)
from traitlets import Bool, Float, Unicode, default


class GraderExchange(Exchange):  # type: ignore[misc]
    """What every action shares: the connection, local paths, timestamps."""

    url = Unicode(help="The grading service, e.g. https://grader.example.org (default: $GRADER_URL)").tag(config=True)
    token = Unicode(help="Your grading-service token (default: $GRADER_TOKEN)").tag(config=True)
    http_timeout = Float(120.0, help="Seconds to wait for the grading service").tag(config=True)
    path_includes_course = Bool(
        False,
        help="Fetch into ./<course>/<assignment> rather than ./<assignment> (as nbgrader's default exchange)",
    ).tag(config=True)

    @default("url")
    def _url_default(self) -> str:
        return os.environ.get("GRADER_URL", "")

    @default("token")
    def _token_default(self) -> str:
        # inside a JupyterHub single-user server the hub's API token identifies the student: nothing to hand out
        return os.environ.get("GRADER_TOKEN", "") or os.environ.get("JUPYTERHUB_API_TOKEN", "")

    def fail(self, msg: str) -> NoReturn:
        super().fail(msg)
        raise AssertionError("unreachable")  # nbgrader's fail() always raises ExchangeError

    def course_id(self) -> str:
        course: str = self.coursedir.course_id
        if not course:
            self.fail("No course id specified. Re-run with --course flag (or set c.CourseDirectory.course_id).")
        return course

    def base_url(self) -> str:
        if not self.url:
            self.fail("No grading service URL: set GRADER_URL or c.GraderExchange.url in nbgrader_config.py.")
        return str(self.url).rstrip("/")

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request to the service; its JSON answer, or a clear failure (ExchangeError)."""
        base = self.base_url()
        if not self.token:
            self.fail(
                "No grading service token: set GRADER_TOKEN or c.GraderExchange.token in nbgrader_config.py "
                "(your TA gives you one)."
            )
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            with httpx.Client(base_url=base, headers=headers, timeout=self.http_timeout) as client:
                response = client.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            self.fail(f"Cannot reach the grading service at {base}: {error}")
        if response.status_code >= 400:
            try:
                message = str(response.json().get("error", response.text))
            except ValueError:
                message = response.text[:500]
            if response.status_code == 401:
                message += " (check GRADER_TOKEN / c.GraderExchange.token)"
            self.fail(f"The grading service refused ({response.status_code}): {message}")
        try:
            return response.json()
        except ValueError:
            self.fail(f"The grading service at {base} sent a non-JSON answer to {method} {path}")

    def local_root(self, assignment: str) -> str:
        """The student's folder of ``assignment``, relative to ``assignment_dir`` (nbgrader's layout)."""
        if self.path_includes_course:
            return os.path.join(self.course_id(), assignment)
        return assignment

    def local_dir(self, assignment: str) -> str:
        return os.path.abspath(os.path.join(self.assignment_dir, self.local_root(assignment)))

    def stamp(self, received_at: str) -> str:
        """The service's receipt time as nbgrader formats submission timestamps (``Exchange.timestamp_format``)."""
        moment = dt.datetime.fromisoformat(received_at)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        try:
            zone = ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(f"Invalid timezone: {self.timezone}")
        return moment.astimezone(zone).strftime(self.timestamp_format)

    def init_src(self) -> None:
        pass

    def init_dest(self) -> None:
        pass

    def copy_files(self) -> None:
        pass


def _safe_relative(path: str) -> PurePosixPath:
    relative = PurePosixPath(path)
    if relative.is_absolute() or not relative.parts or any(p in ("", ".", "..") for p in relative.parts):
        raise ValueError(path)
    return relative
