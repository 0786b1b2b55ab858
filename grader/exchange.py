"""An nbgrader exchange that talks to the grading service (``grader serve``) over HTTP.

With it, the stock student commands (and JupyterLab's Assignments panel, which
calls the same classes) work against the service instead of a shared folder::

    nbgrader fetch_assignment ps1_tensors   # GET  /api/assignments/ps1_tensors/release
    nbgrader submit ps1_tensors             # POST /api/submissions (graded by the service)
    nbgrader list [--cached] [--json]       # GET  /api/assignments, /api/feedback
    nbgrader fetch_feedback ps1_tensors     # GET  /api/assignments/ps1_tensors/feedback

Select it in the student's ``nbgrader_config.py``::

    c.ExchangeFactory.exchange = "grader.exchange.GraderExchange"
    c.ExchangeFactory.fetch_assignment = "grader.exchange.GraderFetchAssignment"
    c.ExchangeFactory.submit = "grader.exchange.GraderSubmit"
    c.ExchangeFactory.list = "grader.exchange.GraderList"
    c.ExchangeFactory.fetch_feedback = "grader.exchange.GraderFetchFeedback"
    c.ExchangeFactory.release_assignment = "grader.exchange.GraderReleaseAssignment"
    c.ExchangeFactory.release_feedback = "grader.exchange.GraderReleaseFeedback"
    c.ExchangeFactory.collect = "grader.exchange.GraderCollect"

The server and the student's token come from ``c.GraderExchange.url`` /
``c.GraderExchange.token``, else ``GRADER_URL`` / ``GRADER_TOKEN``.  The caller
is whoever the token belongs to (``--student`` is ignored).  Releases and
collection are the service's job: the instructor-side commands fail with a
message saying so.  This module imports nothing heavy: every nbgrader command
(``autograde`` too) imports it when the config selects it.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
from nbgrader.exchange.abc import (
    Exchange,
    ExchangeCollect,
    ExchangeFetchAssignment,
    ExchangeFetchFeedback,
    ExchangeList,
    ExchangeReleaseAssignment,
    ExchangeReleaseFeedback,
    ExchangeSubmit,
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
        return os.environ.get("GRADER_TOKEN", "")

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


class GraderFetchAssignment(GraderExchange, ExchangeFetchAssignment):  # type: ignore[misc]
    """``nbgrader fetch_assignment``: the release files into ``./<assignment>/`` (never over the student's work)."""

    def init_src(self) -> None:
        self.course_id()
        assignment = self.coursedir.assignment_id
        payload = self.call("GET", f"/api/assignments/{assignment}/release")
        self.files: list[tuple[PurePosixPath, bytes]] = []
        for item in payload["files"]:
            try:
                self.files.append((_safe_relative(item["path"]), base64.b64decode(item["content"])))
            except ValueError:
                self.fail(f"The grading service sent an unsafe file name: {item['path']!r}")

    def init_dest(self) -> None:
        self.dest_path = self.local_dir(self.coursedir.assignment_id)
        if os.path.isdir(self.dest_path) and not self.replace_missing_files:
            self.fail(
                "You already have a copy of the assignment in this directory: "
                f"{self.local_root(self.coursedir.assignment_id)} (nothing was changed; "
                "--replace restores deleted files only)"
            )

    def copy_files(self) -> None:
        self.log.info("Source: %s/api/assignments/%s/release", self.base_url(), self.coursedir.assignment_id)
        self.log.info("Destination: %s", self.dest_path)
        if os.path.isdir(self.dest_path):
            for relative, data in self.files:
                target = Path(self.dest_path, *relative.parts)
                if not target.exists():
                    self.log.warning("Replacing missing file '%s'", os.path.relpath(target))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
        else:
            parent = os.path.dirname(self.dest_path)
            os.makedirs(parent, exist_ok=True)
            staging = tempfile.mkdtemp(prefix=".fetching-", dir=parent)
            try:
                for relative, data in self.files:
                    target = Path(staging, *relative.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                os.chmod(staging, 0o755)
                os.rename(staging, self.dest_path)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        self.log.info("Fetched as: %s %s", self.course_id(), self.coursedir.assignment_id)


class GraderSubmit(GraderExchange, ExchangeSubmit):  # type: ignore[misc]
    """``nbgrader submit``: upload the assignment's notebook; the service grades it."""

    def init_src(self) -> None:
        self.course_id()
        self.src_path = self.local_dir(self.coursedir.assignment_id)
        if not os.path.isdir(self.src_path):
            self.fail(f"Assignment not found at: {self.src_path} (fetch it first: nbgrader fetch_assignment)")

    def init_dest(self) -> None:
        assignment = self.coursedir.assignment_id
        listing = {a["assignment"]: a for a in self.call("GET", "/api/assignments")}
        if assignment not in listing:
            self.fail(f"Assignment {assignment!r} is not released; released: {', '.join(sorted(listing)) or 'none'}")
        self.notebooks: list[str] = listing[assignment]["notebooks"]
        if len(self.notebooks) != 1:
            self.fail(f"The grading service grades one notebook per assignment; {assignment} has {self.notebooks}")

    def copy_files(self) -> None:
        assignment = self.coursedir.assignment_id
        (notebook,) = self.notebooks
        path = os.path.join(self.src_path, f"{notebook}.ipynb")
        extra = sorted(
            name for name in os.listdir(self.src_path) if name.endswith(".ipynb") and name != f"{notebook}.ipynb"
        )
        if not os.path.isfile(path):
            self.fail(f"Assignment {assignment} not submitted: {path} is missing (expected {notebook}.ipynb)")
        if extra:
            self.log.warning("Only %s.ipynb is graded; not submitted: %s", notebook, ", ".join(extra))
        self.log.info("Source: %s", path)
        self.log.info("Destination: %s/api/submissions", self.base_url())
        with open(path, "rb") as handle:
            data = handle.read()
        body = self.call(
            "POST", "/api/submissions", data={"assignment": assignment}, files={"file": (f"{notebook}.ipynb", data)}
        )
        self.submission_id = body["id"]
        view = self.call("GET", f"/api/submissions/{body['id']}")
        self.timestamp = self.stamp(view["received_at"])
        self.log.info("Submitted as: %s %s %s", self.course_id(), assignment, self.timestamp)
        self.log.info(
            "Submission %s is %s for grading; `nbgrader list --cached` shows its status, "
            "`nbgrader fetch_feedback %s` gets the feedback once graded.",
            body["id"],
            body.get("status", "queued"),
            assignment,
        )


def _md5(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.md5(handle.read()).hexdigest()


class GraderList(GraderExchange, ExchangeList):  # type: ignore[misc]
    """``nbgrader list``: released/fetched assignments, or (``--cached``) your submissions and their feedback."""

    as_json = Bool(False, help="Print the listing as JSON on stdout (nbgrader list --json)").tag(config=True)

    def released(self) -> list[dict[str, Any]]:
        course = self.course_id()
        wanted = self.coursedir.assignment_id
        answer = []
        for item in self.call("GET", "/api/assignments"):
            assignment = item["assignment"]
            if wanted and assignment != wanted:
                continue
            folder = self.local_dir(assignment)
            release_url = f"{self.base_url()}/api/assignments/{assignment}/release"
            info: dict[str, Any] = {
                "course_id": course,
                "assignment_id": assignment,
                "due_date": item.get("due_date"),
            }
            if os.path.isdir(folder):
                info.update(status="fetched", path=folder)
                notebooks = sorted(Path(folder).glob("*.ipynb"))
                info["notebooks"] = [{"notebook_id": p.stem, "path": str(p)} for p in notebooks]
            else:
                info.update(status="released", path=release_url)
                info["notebooks"] = [{"notebook_id": n, "path": release_url} for n in item["notebooks"]]
            if self.remove:
                info["status"] = "removed"
            answer.append(info)
        return answer

    def submitted(self) -> list[dict[str, Any]]:
        course = self.course_id()
        wanted = self.coursedir.assignment_id
        path = f"/api/assignments/{wanted}/feedback" if wanted else "/api/feedback"
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for item in self.call("GET", path):
            assignment, timestamp = item["assignment"], self.stamp(item["received_at"])
            notebook = item["notebook"]
            local = os.path.join(self.local_dir(assignment), "feedback", timestamp, f"{notebook}.html")
            has_local = os.path.isfile(local)
            has_exchange = "html" in item
            updated = (
                has_local and has_exchange and _md5(local) != hashlib.md5(item["html"].encode("utf-8")).hexdigest()
            )
            feedback = {
                "has_local_feedback": has_local,
                "has_exchange_feedback": has_exchange,
                "feedback_updated": updated,
                "local_feedback_path": os.path.dirname(local) if has_local else None,
            }
            submission = {
                "course_id": course,
                "student_id": item["student"],
                "assignment_id": assignment,
                "timestamp": timestamp,
                "status": "submitted",
                "path": f"{self.base_url()}/api/submissions/{item['id']}",
                "submission_id": item["id"],
                "grading_status": item["status"],
                "reason": item.get("reason", ""),
                "score": item.get("final_score"),
                "max_score": item.get("max_score"),
                "notebooks": [
                    {
                        "notebook_id": notebook,
                        "path": os.path.join(self.local_dir(assignment), f"{notebook}.ipynb"),
                        **feedback,
                        "local_feedback_path": local if has_local else None,
                    }
                ],
                **feedback,
            }
            groups.setdefault((item["student"], assignment), []).append(submission)
        return [
            {
                "course_id": course,
                "student_id": student,
                "assignment_id": assignment,
                "status": "submitted",
                "submissions": sorted(submissions, key=lambda s: s["timestamp"]),
            }
            for (student, assignment), submissions in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0]))
        ]

    @staticmethod
    def format_submission(info: dict[str, Any]) -> str:
        msg = "{course_id} {student_id} {assignment_id} {timestamp}".format(**info)
        if info["has_local_feedback"] and not info["feedback_updated"]:
            msg += " (feedback already fetched)"
        elif info["has_exchange_feedback"]:
            msg += " (feedback ready to be fetched)"
        else:
            msg += " (no feedback available)"
        status = info["grading_status"]
        if status == "graded" and info["score"] is not None:
            status += f" {info['score']:g}/{info['max_score']:g}"
        elif status == "failed" and info["reason"]:
            status += f": {info['reason']}"
        return f"{msg} [{status}]"

    def list_files(self) -> list[dict[str, Any]]:
        if self.inbound:
            self.fail(
                "nbgrader list --inbound: submissions live in the grading service, not an exchange folder; "
                "staff see them with GET /api/admin/grades (or /api/submissions with a TA token)."
            )
        if self.cached:
            assignments = self.submitted()
            self.log.info("Submitted assignments:")
            for assignment in assignments:
                for info in assignment["submissions"]:
                    self.log.info(self.format_submission(info))
        else:
            assignments = self.released()
            self.log.info("Released assignments:")
            for info in assignments:
                msg = "{course_id} {assignment_id}".format(**info)
                if info["status"] == "fetched":
                    msg += " (already downloaded)"
                if info.get("due_date"):
                    msg += f" (due {info['due_date']})"
                self.log.info(msg)
        if self.as_json:
            print(json.dumps(assignments, indent=1))
        return assignments

    def remove_files(self) -> list[dict[str, Any]]:
        self.fail("nbgrader list --remove is not supported: the grading service owns releases and submissions.")


class GraderFetchFeedback(GraderExchange, ExchangeFetchFeedback):  # type: ignore[misc]
    """``nbgrader fetch_feedback``: ``<assignment>/feedback/<timestamp>/<notebook>.html`` per graded attempt."""

    def init_src(self) -> None:
        self.course_id()
        assignment = self.coursedir.assignment_id
        self.attempts: list[dict[str, Any]] = self.call("GET", f"/api/assignments/{assignment}/feedback")

    def init_dest(self) -> None:
        self.dest_path = os.path.join(self.local_dir(self.coursedir.assignment_id), "feedback")

    def copy_files(self) -> None:
        assignment = self.coursedir.assignment_id
        self.log.info("Source: %s/api/assignments/%s/feedback", self.base_url(), assignment)
        self.log.info("Destination: %s", self.dest_path)
        if not self.attempts:
            self.log.warning("No submissions of %s/%s: nothing to fetch", self.course_id(), assignment)
        for item in self.attempts:
            timestamp = self.stamp(item["received_at"])
            if "html" not in item:
                detail = f": {item['reason']}" if item.get("reason") else ""
                self.log.warning(
                    "No feedback yet for '%s/%s' submitted at %s (%s%s)",
                    self.course_id(),
                    assignment,
                    timestamp,
                    item["status"],
                    detail,
                )
                continue
            folder = os.path.join(self.dest_path, timestamp)
            os.makedirs(folder, exist_ok=True)
            target = os.path.join(folder, f"{item['notebook']}.html")
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(item["html"])
            self.log.info("Fetched feedback: %s", target)


class _ServiceOwned(GraderExchange):
    action = ""
    instead = ""

    def start(self) -> None:
        self.fail(f"{self.action} is not used with the grading service: {self.instead}")


class GraderReleaseAssignment(_ServiceOwned, ExchangeReleaseAssignment):  # type: ignore[misc]
    action = "nbgrader release_assignment"
    instead = (
        "the service serves release/<assignment>/ of the course directly; regenerate it with "
        "`grader release` (nbgrader generate_assignment) and deploy the course."
    )


class GraderReleaseFeedback(_ServiceOwned, ExchangeReleaseFeedback):  # type: ignore[misc]
    action = "nbgrader release_feedback"
    instead = "the service builds feedback itself; students get it with `nbgrader fetch_feedback <assignment>`."


class GraderCollect(_ServiceOwned, ExchangeCollect):  # type: ignore[misc]
    action = "nbgrader collect"
    instead = "the service grades submissions as they arrive; staff get grades from /api/admin/grades(.csv)."
