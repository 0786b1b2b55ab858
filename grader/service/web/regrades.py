"""Regrade requests of written answers: the student asks on ``/me``, staff reply on ``/admin/regrade-requests``.

Parse, call ``grader.service.marking.regrades``, redirect (POST/redirect/GET) or render. A refused request
(not released, past its deadline, asked already) is shown on ``/me`` as its one sentence, nothing stored changes.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ...errors import GraderError, NotFound, StudentError
from ..config import ServiceConfig
from ..marking import regrades, release
from . import auth, http, sessions
from .pages import course_assignments, render


async def ask(request: Request) -> Response:
    """A student's request, from the form beside a released written answer on ``/me``."""
    user = sessions.user(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    assignment, cell = str(form.get("assignment", "")), str(form.get("question", ""))
    try:
        await run_in_threadpool(
            regrades.ask, request.app.state.store, assignment, cell, user.id, str(form.get("reason", ""))
        )
    except GraderError as error:
        from .me import me_page_with_error

        return await me_page_with_error(request, user, str(error), http.status_of(error))
    done = f"Your regrade request for {cell} ({assignment}) was sent. Staff will reply here."
    return RedirectResponse(f"/me?{urlencode({'regrade': done})}#written", status_code=303)


async def queue_page(request: Request) -> Response:
    user = sessions.staff(request)
    store = request.app.state.store
    shown = request.query_params.get("all") == "1"
    found = await run_in_threadpool(lambda: regrades.queue(store, open_only=not shown))
    notice = request.query_params.get("done", "")
    return render(request, "regrades.html", user=user, requests=found, all=shown, notice=notice)


async def reply(request: Request) -> Response:
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    text = str(request.path_params["request_id"])
    if not text.isdigit() or len(text) > 12:
        raise NotFound("no such regrade request")
    answered = await run_in_threadpool(
        regrades.reply, request.app.state.store, int(text), user.id, str(form.get("reply", ""))
    )
    done = f"Replied to {answered.student}'s request about {answered.cell} ({answered.assignment})."
    return RedirectResponse(f"/admin/regrade-requests?{urlencode({'done': done})}", status_code=303)


async def api_written(request: Request) -> Response:
    """
    summary: Your released written answers' grades (rubric items, comment, points) and regrade requests.
    responses:
      200: {description: "your released written answers, each with its regrade request if any"}
      401: {description: missing or invalid token}
    """
    user = auth.user(request)
    config: ServiceConfig = request.app.state.config
    student = request.query_params.get("student", user.id) if user.is_staff else user.id
    if not student:
        raise StudentError("say whose written answers: ?student=ID")
    names = course_assignments(request)
    found = await run_in_threadpool(release.student_view, request.app.state.store, config.course_root, student, names)
    return JSONResponse([r.as_json() for r in found], headers={"Cache-Control": "no-store"})


routes = [
    Route("/me/regrade-requests", ask, methods=["POST"], include_in_schema=False),
    Route("/admin/regrade-requests", queue_page, methods=["GET"], include_in_schema=False),
    Route("/admin/regrade-requests/{request_id}", reply, methods=["POST"], include_in_schema=False),
]
api_routes = [Route("/api/written", api_written, methods=["GET"])]
