"""What `nbgrader list` shows: releases, fetched copies, submissions."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from nbgrader.exchange.abc import (
    ExchangeList,
)
from traitlets import Bool

from .base import GraderExchange


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
