"""Fetching a release and fetching feedback."""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from nbgrader.exchange.abc import (
    ExchangeFetchAssignment,
    ExchangeFetchFeedback,
)

from .base import GraderExchange, _safe_relative


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
