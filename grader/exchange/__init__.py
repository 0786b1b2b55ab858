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

from .base import GraderExchange
from .fetch import GraderFetchAssignment, GraderFetchFeedback
from .instructor import GraderCollect, GraderReleaseAssignment, GraderReleaseFeedback
from .listing import GraderList
from .submit import GraderSubmit

__all__ = [
    "GraderCollect",
    "GraderExchange",
    "GraderFetchAssignment",
    "GraderFetchFeedback",
    "GraderList",
    "GraderReleaseAssignment",
    "GraderReleaseFeedback",
    "GraderSubmit",
]
