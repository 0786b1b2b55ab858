"""One exception tree for the service.

- ``StudentError``: the student's mistake (bad notebook, timeout, crash).  Final:
  the submission is refused at intake with a clear message, or graded with one.
- ``InfrastructureError``: broker, database, worker died.  Retried.
- ``ConfigurationError``: bad configuration.  Fails at start-up.
"""

from __future__ import annotations


class GraderError(Exception):
    """Base of every error the service raises on purpose."""


class StudentError(GraderError):
    """A problem with what the student sent; the message tells them what to do."""

    status = 400


class NotANotebook(StudentError):
    status = 422


class WrongAssignment(StudentError):
    status = 422


class TooLarge(StudentError):
    status = 413


class UnknownAssignment(StudentError):
    status = 404


class PastHardDeadline(StudentError):
    status = 403


class LateConfirmationNeeded(StudentError):
    status = 409


class TooManyAttempts(StudentError):
    status = 403


class RateLimited(StudentError):
    status = 429


class AuthError(GraderError):
    status = 401


class Forbidden(GraderError):
    status = 403


class NotFound(GraderError):
    status = 404


class InfrastructureError(GraderError):
    """Something outside the student's control failed; the job is retried."""

    status = 503


class DatabaseUnavailable(InfrastructureError):
    """The database did not answer: the request may be repeated, the job is retried when it is back."""

    retry_after_s = 5


class LostClaim(GraderError):
    """A worker's claim on a job was taken over (it was presumed dead): it must record nothing."""


class ConfigurationError(GraderError):
    """The service cannot start with this configuration."""
