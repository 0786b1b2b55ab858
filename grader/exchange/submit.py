"""Submitting through the service."""

from __future__ import annotations

import os

from nbgrader.exchange.abc import (
    ExchangeError,
    ExchangeSubmit,
)
from traitlets import Bool

from .base import GraderExchange


class GraderSubmit(GraderExchange, ExchangeSubmit):  # type: ignore[misc]
    """``nbgrader submit``: upload the assignment's notebook; the service grades it."""

    confirm_late = Bool(
        False,
        help="Submit even when a late attempt would replace an on-time one (and may cost a late penalty)",
    ).tag(config=True)

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
        form = {"assignment": assignment, "confirm_late": "true" if self.confirm_late else ""}
        try:
            body = self.call("POST", "/api/submissions", data=form, files={"file": (f"{notebook}.ipynb", data)})
        except ExchangeError as error:
            message = str(error)
            if "(409)" in message:
                message = message.replace(
                    "form field confirm_late=true (grader submit --confirm-late).",
                    "re-run with --GraderSubmit.confirm_late=True (or set c.GraderSubmit.confirm_late = True).",
                )
                self.log.error(message)
            raise ExchangeError(message) from None  # one sentence, not a chain of tracebacks
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
