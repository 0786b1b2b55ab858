"""Which HTTP status each error of the one exception tree (``grader.errors``) answers with.

The only place status codes live: routes and pages raise the tree's errors, and the app's
error handlers ask ``status_of``. The most specific class wins (the tree is walked from the
error's own class up).
"""

from __future__ import annotations

from ... import errors

STATUS: dict[type[errors.GraderError], int] = {
    errors.StudentError: 400,
    errors.NotANotebook: 422,
    errors.WrongAssignment: 422,
    errors.TooLarge: 413,
    errors.UnknownAssignment: 404,
    errors.UnknownStudent: 404,
    errors.NoDueDate: 409,
    errors.PastHardDeadline: 403,
    errors.LateConfirmationNeeded: 409,
    errors.TooManyAttempts: 403,
    errors.RateLimited: 429,
    errors.ExamRefused: 403,  # timed exams (grader.service.rules.exams)
    errors.RegradeRefused: 403,  # written answers' regrade requests (grader.service.marking.regrades)
    errors.RegradeAlreadyAsked: 409,
    errors.AuthError: 401,
    errors.LaunchRefused: 401,  # LTI launch (grader.service.lti)
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.MarkConflict: 409,  # two TAs saved one written answer (grader.service.marking)
    errors.InfrastructureError: 503,
    errors.LmsRefused: 502,  # the LMS refused a score or line item (grader.service.lti.ags)
    errors.LmsError: 502,  # the LMS failed or refused (grader.service.lti.services)
}


def status_of(error: BaseException) -> int:
    """The status for ``error``: its nearest class in ``STATUS``, else 400."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400
