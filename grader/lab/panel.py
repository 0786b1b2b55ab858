"""nbgrader's own *Assignments* panel (its labextension's "Assignment List"): the *Submit* button.

nbgrader's server handler for ``POST <base>/assignments/submit`` answers a refused submission with
``traceback.format_exc()``, which the panel prints in a ``<pre>``.  ``grader.lab`` registers this
handler for that one route; jupyter_server loads extensions in alphabetical order and Tornado
tries handlers in the order they were added, so ``grader.lab`` answers before
``nbgrader.server_extensions.assignment_list`` (``tests/lab/`` checks it in the real panel).  Every
other route of the panel (list, fetch, fetch feedback) stays nbgrader's.

The submission itself is nbgrader's: the configured exchange's ``Submit`` with the student's
configuration, as nbgrader's handler runs it.  What changes is the answer:

- a refusal (``ExchangeError``) is the exchange's one sentence;
- a late resubmission that would replace an on-time attempt (the service's 409) is a question: the
  panel's dialog has only *OK*, so pressing *Submit* again within ``CONFIRM_WINDOW_S`` submits it
  late (``GraderSubmit.confirm_late``); the Course grades tab asks with *Yes*/*No* as well;
- anything else is one line naming the error; its traceback goes to the Lab's log.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from dataclasses import dataclass
from typing import Any

from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeError, ExchangeFactory
from nbgrader.server_extensions.assignment_list.handlers import AssignmentActionHandler
from tornado import web

CONFIRM_WINDOW_S = 120.0
LATE = re.compile(r"refused \(409\): (?P<reason>.*?)(?:\s*To submit it anyway\b.*)?$", re.DOTALL)
PENDING = "grader_lab_late_confirmations"  # web_app.settings key: {(course, assignment): deadline (monotonic)}


@dataclass(frozen=True)
class Outcome:
    """A panel submission's result: submitted, or the one sentence the panel shows."""

    submitted: bool
    message: str = ""
    asks_late: bool = False


def late_question(refusal: str) -> str | None:
    """The panel's question for the exchange's late-confirmation refusal; None for any other refusal."""
    match = LATE.search(refusal)
    if match is None:
        return None
    minutes = round(CONFIRM_WINDOW_S / 60)
    return (
        f"{match.group('reason').strip()} Submit late, with this penalty? Press Submit again within {minutes} "
        "minutes to submit it late, or use Course grades (Launcher or File menu), which asks with Yes/No."
    )


def submit(manager: Any, course_id: str, assignment_id: str, confirm_late: bool) -> Outcome:
    """nbgrader's ``AssignmentList.submit_assignment``, answering in one sentence instead of a traceback."""
    with manager.get_assignment_dir_config():
        config = manager.load_config()
        config.CourseDirectory.course_id = course_id
        config.CourseDirectory.assignment_id = assignment_id
        if confirm_late:
            config.GraderSubmit.confirm_late = True
        try:
            ExchangeFactory(config=config).Submit(
                coursedir=CourseDirectory(config=config),
                authenticator=Authenticator(config=config),
                config=config,
            ).start()
        except ExchangeError as error:
            refusal = " ".join(str(error).split())
            question = late_question(refusal)
            if question is not None:
                return Outcome(False, question, asks_late=True)
            return Outcome(False, refusal)
        except Exception as error:  # the panel shows one line; the Lab's log keeps the traceback
            manager.log.error(traceback.format_exc())
            return Outcome(False, f"{type(error).__name__}: {error} (the Lab's log has the details).")
    return Outcome(True)


class PanelSubmitHandler(AssignmentActionHandler):  # type: ignore[misc]
    """``POST <base>/assignments/submit`` for nbgrader's Assignments panel."""

    @web.authenticated
    def post(self, action: str = "submit") -> None:
        if "assignment_list_manager" not in self.settings:  # nbgrader's assignment_list extension is off
            raise web.HTTPError(404)
        try:
            course_id, assignment_id = self.get_argument("course_id"), self.get_argument("assignment_id")
        except web.MissingArgumentError:
            body = self.get_json_body() or {}
            course_id, assignment_id = str(body.get("course_id", "")), str(body.get("assignment_id", ""))
        pending: dict[tuple[str, str], float] = self.settings.setdefault(PENDING, {})
        key = (course_id, assignment_id)
        confirm = pending.pop(key, 0.0) > time.monotonic()
        outcome = submit(self.manager, course_id, assignment_id, confirm)
        if outcome.asks_late:
            pending[key] = time.monotonic() + CONFIRM_WINDOW_S
        if outcome.submitted:
            self.finish(json.dumps(self.manager.list_assignments(course_id=course_id)))
        else:
            self.finish(json.dumps({"success": False, "value": outcome.message}))
