"""HTML edge: the student's own page, ``/me``: their attempts, an upload, and the status of the one just made.

Parse, call one function, render (``pages.render``, ``pages.history``: the same templates and history as
the staff's student page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ...errors import GraderError, NotFound, StudentError
from ..config import ServiceConfig
from ..grading import feedback, intake
from ..marking import release
from ..records import finished
from ..records.models import Submission, User
from ..records.store import Store
from ..rules import exams as rules_exams
from . import exams as exam_edge
from . import http, progress, sessions
from .pages import history, render

# The student's page may run one script, its own file from this site (no inline script, no other origin).
ME_POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'"
ME_SCRIPT = Path(__file__).parent / "static" / "me-status.js"


def _me_page(request: Request, status: int = 200, **context: Any) -> HTMLResponse:
    response = render(request, "me.html", status, **context)
    response.headers["Content-Security-Policy"] = ME_POLICY
    return response


def _own_submission(request: Request, user_id: str, raw: object) -> Submission | None:
    """The user's own submission ``raw`` (an id), or None for anything else (another's, none, not a number)."""
    text = str(raw)
    found = request.app.state.store.submission(int(text)) if text.isdigit() and 0 < len(text) < 18 else None
    return found if found is not None and found.student == user_id else None


def _me_progress(request: Request, submission: Submission) -> progress.Progress:
    store: Store = request.app.state.store
    return progress.of(feedback.view(request.app.state.config, submission, store.results(submission.id), staff=False))


def _context(request: Request, user: User) -> dict[str, Any]:
    """The page's attempts (``pages.history``) and released written answers (``marking.release``)."""
    context = history(request, user.id, staff=False)
    names = [a.name for a in context["assignments"]]
    config: ServiceConfig = request.app.state.config
    context["written"] = release.student_view(request.app.state.store, config.course_root, user.id, names)
    store = request.app.state.store
    context["exams"] = [exam_edge.status(store, exam, user.id) for exam in rules_exams.parse(config.exams).values()]
    return context


async def me(request: Request) -> Response:
    """The student's own page; ``?submitted=ID`` (after an upload) adds that submission's status, which the
    page's script keeps up to date (without it, a reload does); ``?regrade=`` says a regrade request was sent."""
    user = sessions.user(request)
    context = await run_in_threadpool(_context, request, user)
    submission = _own_submission(request, user.id, request.query_params.get("submitted", ""))
    shown = None if submission is None else await run_in_threadpool(_me_progress, request, submission)
    warnings = request.query_params.getlist("warning") if shown else []
    warnings += request.query_params.getlist("regrade")[:1]
    return _me_page(
        request, user=user, progress=shown, reload_hint=progress.RELOAD_HINT, error="", warnings=warnings, **context
    )


async def me_page_with_error(request: Request, user: User, error: str, status: int) -> Response:
    """``/me`` with ``error`` said at the top (a refused upload or regrade request): nothing was stored."""
    context = await run_in_threadpool(_context, request, user)
    return _me_page(request, status, user=user, progress=None, error=error, warnings=[], **context)


async def me_status(request: Request) -> Response:
    """One of the student's own submissions' status as JSON, with the page's sentence (``message``).

    ``?wait=S`` (0 to 60) answers once it is graded or failed, or after S seconds: the page asks again and again.
    """
    user = sessions.user(request)
    seconds = finished.parse_wait(request.query_params.get("wait"))
    store: Store = request.app.state.store
    submission = await run_in_threadpool(_own_submission, request, user.id, request.path_params["submission_id"])
    if submission is None:
        raise NotFound("no such submission of yours")
    if seconds > 0 and submission.status not in finished.FINAL:
        sid = submission.id

        def status() -> str | None:
            found = store.submission(sid)
            return None if found is None else found.status

        elsewhere = bool(request.app.state.config.broker_url)  # grader workers record grades in their processes
        await store.finished.until_final(sid, status, seconds, elsewhere)
        submission = await run_in_threadpool(store.submission, sid) or submission
    shown = await run_in_threadpool(_me_progress, request, submission)
    return JSONResponse(shown.as_json(), headers={"Cache-Control": "no-store"})


async def me_script(request: Request) -> Response:
    """The page's script (``static/me-status.js``): it updates the status of a submission just made."""
    return Response(ME_SCRIPT.read_bytes(), media_type="text/javascript", headers={"Cache-Control": "no-cache"})


async def me_submit(request: Request) -> Response:
    """An upload from the page; on success, redirect (POST/redirect/GET: a reload does not submit again)."""
    user = sessions.user(request)
    config: ServiceConfig = request.app.state.config
    try:
        form = await request.form(max_files=1, max_fields=8, max_part_size=config.max_upload_bytes + 1)
    except Exception as error:
        raise StudentError(f"could not read the upload: {error}") from None
    sessions.check_csrf(request, form.get("csrf"))
    assignment, upload = form.get("assignment"), form.get("file")
    try:
        if not isinstance(assignment, str) or not assignment:
            raise StudentError("choose the assignment you are submitting")
        if upload is None or isinstance(upload, str) or not upload.filename:
            raise StudentError("choose your notebook file (.ipynb) to upload")
        data = await upload.read(config.max_upload_bytes + 1)
        confirm = str(form.get("confirm_late", "")) == "true"
        accepted = intake.accept(request.app.state.store, config, user.id, assignment, data, confirm)
    except GraderError as error:
        return await me_page_with_error(request, user, str(error), http.status_of(error))
    request.app.state.workers.notify()
    query = urlencode([("submitted", str(accepted.id))] + [("warning", w) for w in accepted.warnings])
    return RedirectResponse(f"/me?{query}", status_code=303)


async def me_exam_start(request: Request) -> Response:
    """``Start exam`` on ``/me``."""
    user = sessions.user(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    try:
        exam = exam_edge.exam_of(request)
        await exam_edge.start_now(request, exam, user.id, form.get("honour") == "yes")
    except GraderError as error:  # outside the window, no honour statement: said at the top of /me
        return await me_page_with_error(request, user, str(error), http.status_of(error))
    return RedirectResponse(f"/me#exam-{exam.assignment}", status_code=303)


routes = [
    Route("/me", me, methods=["GET"], include_in_schema=False),
    Route("/me", me_submit, methods=["POST"], include_in_schema=False),
    Route("/me/status.js", me_script, methods=["GET"], include_in_schema=False),
    Route("/me/exams/{assignment}/start", me_exam_start, methods=["POST"], include_in_schema=False),
    Route("/me/submissions/{submission_id}/status", me_status, methods=["GET"], include_in_schema=False),
]
