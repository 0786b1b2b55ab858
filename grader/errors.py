"""One exception tree for the whole grader: the engine, the service and the command line.

- ``StudentError``: the student's mistake (bad notebook, timeout, crash).  Final:
  the submission is refused at intake with a clear message, or graded with one.
- ``InfrastructureError``: broker, database, worker died, a sandbox step that could not
  be applied.  Retried.
- ``GradingFault``: a step of ours raised while grading (nbgrader's bookkeeping, the late
  policy, a plug-in): the same input would raise again, so it is not retried; the job fails
  with the reason for staff, and never becomes a score.
- ``ConfigurationError``: bad configuration.  Fails at start-up.

No HTTP status codes here: which status each error answers with is the web layer's
business (``grader.service.web.http``).
"""

from __future__ import annotations

from typing import Any


class GraderError(Exception):
    """Base of every error the grader raises on purpose."""


class StudentError(GraderError):
    """A problem with what the student sent; the message tells them what to do."""


class NotANotebook(StudentError):
    """The upload is not a notebook nbgrader can grade (not JSON, nbformat 3, another language)."""


class WrongAssignment(StudentError):
    """The notebook has none of the assignment's answer or test cells."""


class TooLarge(StudentError):
    """The upload is over the size limit."""


class UnknownAssignment(StudentError):
    """No such assignment in the course."""


class UnknownStudent(StudentError):
    """No such student on the course's roster (nbgrader's gradebook): nothing is written for them."""


class NoDueDate(StudentError):
    """An extension asked for on an assignment without a due date (or a due date removed under extensions)."""


class PastHardDeadline(StudentError):
    """The assignment has closed for this student."""


class LateConfirmationNeeded(StudentError):
    """A late attempt would replace an on-time one: the student must confirm."""


class TooManyAttempts(StudentError):
    """The student has used every attempt."""


class RateLimited(StudentError):
    """The student submitted moments ago."""


class ExamRefused(StudentError):
    """A timed exam refused a start or a submission (before the student started, after their end and grace, outside
    their window): the sentence says when (``grader.service.rules.exams``)."""


class RegradeRefused(StudentError):
    """A regrade request that cannot be made: the question is not released, or its deadline has passed."""


class RegradeAlreadyAsked(StudentError):
    """A student asked for a regrade of a question a second time (one request per question)."""


class AuthError(GraderError):
    """No valid credentials."""


class LaunchRefused(AuthError):
    """An LTI 1.3 launch that is not valid (bad signature, wrong audience, expired, replayed): nothing is created."""


class Forbidden(GraderError):
    """Valid credentials, but not allowed to do this."""


class NotFound(GraderError):
    """The thing asked for does not exist."""


class MarkConflict(GraderError):
    """Another TA saved this written answer's mark after this TA opened it (``grader.service.marking.marks``):
    nothing was written. ``theirs``: the mark they saved (who, when, items, score, version)."""

    def __init__(self, student: str, cell: str, theirs: Any, expected: int) -> None:
        self.student = student
        self.cell = cell
        self.theirs = theirs
        self.expected = expected
        super().__init__(
            f"{theirs.marked_by} saved {cell} for {student} at {theirs.marked_at:%H:%M:%S} "
            f"(items {', '.join(theirs.items) or 'none'}, {theirs.score:g} points) after you opened it: "
            f"nothing of yours was saved; keep theirs, or save yours again over it"
        )


class InfrastructureError(GraderError):
    """Something outside the student's control failed; the job is retried."""


class DatabaseUnavailable(InfrastructureError):
    """The database did not answer: the request may be repeated, the job is retried when it is back."""

    retry_after_s = 5


class GradingFault(GraderError):
    """A step outside the student's own cells raised while grading (``grader.engine.bookkeeping.faults``): not the
    student's doing and not worth a retry; the job fails with this reason, and no score is recorded or changed."""


class LmsError(InfrastructureError):
    """An LMS (an LTI platform's token, roster or grade endpoint) failed, timed out or refused a request.

    ``status``: the HTTP status it answered (None when it did not answer); ``answer``: what it said
    (the start of its response text), for the message and for the dashboard."""

    def __init__(self, url: str, status: int | None, answer: str = "", what: str = "") -> None:
        self.url = url
        self.status = status
        self.answer = answer.strip()[:500]
        said = f": {self.answer}" if self.answer else ""
        if status is None:
            message = f"the LMS at {url} did not answer{said}"
        else:
            message = f"the LMS answered {status} at {url}{said}"
        super().__init__(f"{what}: {message}" if what else message)


class LmsRefused(GraderError):
    """The LMS refused what the tool sent (a 4xx: a score or line item it will not take), or there is nowhere to
    send it. Final, not retried: the message holds the LMS's answer, which the dashboard shows."""


class LostClaim(GraderError):
    """A worker's claim on a job was taken over (it was presumed dead): it must record nothing."""


class ConfigurationError(GraderError):
    """The service cannot start with this configuration."""


class AuthoringError(ConfigurationError):
    """An assignment's source or fixtures cannot be used (``grader validate``, the fixture builder): the message
    names the file and what to fix."""
