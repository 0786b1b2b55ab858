"""Timed exams at the edges: a student starts their exam and asks how long is left; staff give one more time.

``POST /api/exams/{assignment}/start`` (token; ``{"honour": true}`` where the exam has a statement; ``/me``
has the same as a form, ``me.me_exam_start``); ``GET /api/exams/{assignment}``: the exam, the caller's start and
end, and the server's time, so a clock in the page counts from the server's, never the laptop's.
``POST /api/admin/exams/{assignment}/extend`` (staff: ``{"student": ID, "minutes": M}``). Each parses, calls
``rules.exams``, answers.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...errors import Forbidden, NotFound, StudentError
from ..config import ServiceConfig
from ..records.tables import now
from ..rules import exams
from . import auth


def exam_of(request: Request) -> exams.Exam:
    config: ServiceConfig = request.app.state.config
    name = request.path_params["assignment"]
    found = exams.parse(config.exams).get(name)
    if found is None:
        raise NotFound(f"{name} is not an exam")
    return found


def status(store: Any, exam: exams.Exam, student: str) -> dict[str, Any]:
    """The exam and ``student``'s start and end, with the server's time and the seconds left by it."""
    at = now()
    found = exams.started(store, exam.assignment, student)
    own = exams.accommodation(store, student, exam.assignment)
    opens, closes = exams.window(exam, own)
    body: dict[str, Any] = {
        "assignment": exam.assignment,
        "opens": f"{opens:%Y-%m-%dT%H:%M:%S}Z",
        "closes": f"{closes:%Y-%m-%dT%H:%M:%S}Z",
        "duration_minutes": exam.duration.total_seconds() / 60,
        "grace_minutes": exam.grace.total_seconds() / 60,
        "honour": exam.honour,
        "server_now": f"{at:%Y-%m-%dT%H:%M:%S}Z",
        "started_at": None,
        "ends_at": None,
        "seconds_left": None,
    }
    if found is not None:
        body.update(
            started_at=f"{found.started_at:%Y-%m-%dT%H:%M:%S}Z",
            ends_at=f"{found.ends_at:%Y-%m-%dT%H:%M:%S}Z",
            seconds_left=max(0.0, (found.ends_at - at).total_seconds()),
        )
    return body


async def api_status(request: Request) -> Response:
    """
    summary: One exam, your start and end, and the server's time (count down from the server's clock).
    parameters:
      - {name: assignment, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "the exam and your clock"}
      401: {description: missing or invalid token}
      404: {description: not an exam}
    """
    user = auth.user(request)
    exam = exam_of(request)
    body = await run_in_threadpool(status, request.app.state.store, exam, user.id)
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


async def api_start(request: Request) -> Response:
    """
    summary: Start your exam now (once; a second start answers with the first).
    parameters:
      - {name: assignment, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "your start and end"}
      400: {description: the honour statement was not accepted}
      401: {description: missing or invalid token}
      403: {description: outside your window}
      404: {description: not an exam}
    """
    user = auth.user(request)
    exam = exam_of(request)
    try:
        asked = await request.json()
    except ValueError:
        asked = {}
    honour = isinstance(asked, dict) and asked.get("honour") is True
    await start_now(request, exam, user.id, honour)
    body = await run_in_threadpool(status, request.app.state.store, exam, user.id)
    return JSONResponse(body)


async def start_now(request: Request, exam: exams.Exam, student: str, honour: bool) -> None:
    """Start ``student``'s exam by the server's clock, with the request's address and browser (the evidence)."""
    client = request.client.host if request.client else ""
    agent = request.headers.get("user-agent", "")
    await run_in_threadpool(
        lambda: exams.start(request.app.state.store, exam, student, now(), honour=honour, address=client, agent=agent)
    )


async def api_extend(request: Request) -> Response:
    """
    summary: Give one student more time during their exam (staff).
    parameters:
      - {name: assignment, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "the student's new end"}
      400: {description: not a number of minutes, or the student has not started}
      401: {description: missing or invalid token}
      403: {description: not staff}
      404: {description: not an exam}
    """
    user = auth.user(request)
    if not user.is_staff:
        raise Forbidden("only course staff give more time")
    exam = exam_of(request)
    try:
        asked = await request.json()
    except ValueError:
        raise StudentError('send JSON: {"student": ID, "minutes": M}') from None
    if not isinstance(asked, dict) or not isinstance(asked.get("student"), str):
        raise StudentError('send JSON: {"student": ID, "minutes": M}')
    student = asked["student"]
    store = request.app.state.store
    await run_in_threadpool(exams.extend, store, exam, student, asked.get("minutes"), user.id, now())
    body = await run_in_threadpool(status, request.app.state.store, exam, student)
    return JSONResponse(body)


routes = [
    Route("/api/exams/{assignment}", api_status, methods=["GET"]),
    Route("/api/exams/{assignment}/start", api_start, methods=["POST"]),
    Route("/api/admin/exams/{assignment}/extend", api_extend, methods=["POST"]),
]
