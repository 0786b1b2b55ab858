"""HTTP edge: parse the request, call one stage function, shape the answer."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.schemas import SchemaGenerator

from ...errors import DatabaseUnavailable, GraderError, NotFound, StudentError, TooLarge
from .. import queue
from ..config import ServiceConfig
from ..dashboard import export
from ..grading import feedback, intake
from ..lti import outbox
from ..records import finished
from ..records.store import DATABASE_ERRORS, Store
from ..rules import counting, regrading
from . import auth, exams, exchange_api, http, hub, lti, marking, me, pages, regrades, similarity, timing

if TYPE_CHECKING:
    from ...engine.kernels.kernel import Zygote

schemas = SchemaGenerator({"openapi": "3.0.0", "info": {"title": "PyTorch course autograder", "version": "1"}})

Handler = Callable[[Request], Awaitable[Response]]


async def health(request: Request) -> Response:
    """
    summary: Liveness and queue counts.
    responses:
      200: {description: ok}
    """
    return JSONResponse({"status": "ok", "queue": request.app.state.store.queue_counts()})


async def submit(request: Request) -> Response:
    """
    summary: Submit a notebook (multipart form with fields `assignment` and `file`).
    parameters:
      - {name: student, in: query, required: false, schema: {type: string}, description: staff only}
    requestBody:
      required: true
      content:
        multipart/form-data:
          schema:
            type: object
            required: [assignment, file]
            properties:
              assignment: {type: string}
              file: {type: string, format: binary}
              confirm_late: {type: string, enum: ["", "true"]}
    responses:
      202: {description: accepted and queued}
      400: {description: bad request}
      401: {description: missing or invalid token}
      404: {description: unknown assignment}
      403: {description: past the hard deadline, or no attempts left}
      409: {description: late resubmission needs confirm_late=true}
      413: {description: notebook too large}
      429: {description: submitting too often}
      422: {description: not a notebook of this assignment}
    """
    user = auth.user(request)
    config: ServiceConfig = request.app.state.config
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > config.max_upload_bytes + 64 * 1024:
        raise TooLarge(f"the upload is {int(length) / 1e6:.1f} MB; the limit is {config.max_upload_bytes / 1e6:.1f} MB")
    try:
        form = await request.form(max_files=1, max_fields=8, max_part_size=config.max_upload_bytes + 1)
    except Exception as error:
        raise StudentError(f"could not read the upload as a multipart form: {error}") from None
    assignment = form.get("assignment")
    upload = form.get("file")
    if not isinstance(assignment, str) or not assignment:
        raise StudentError("the form needs an 'assignment' field")
    if upload is None or isinstance(upload, str):
        raise StudentError("the form needs a 'file' field holding the notebook")
    data = await upload.read(config.max_upload_bytes + 1)
    student = request.query_params.get("student", user.id) if user.is_staff else user.id
    confirm_late = str(form.get("confirm_late", "")).lower() in ("1", "true", "yes")
    # off the event loop: validating and storing an upload takes milliseconds that status requests should not wait
    accepted = await run_in_threadpool(
        intake.accept, request.app.state.store, config, student, assignment, data, confirm_late
    )
    request.app.state.workers.notify()
    body = {"id": accepted.id, "status": "queued", "url": f"/api/submissions/{accepted.id}"}
    return JSONResponse({**body, "warnings": list(accepted.warnings)}, status_code=202)


async def list_submissions(request: Request) -> Response:
    """
    summary: Your submissions (staff may filter all by `student` and `assignment`).
    parameters:
      - {name: student, in: query, required: false, schema: {type: string}}
      - {name: assignment, in: query, required: false, schema: {type: string}}
    responses:
      200: {description: a list of submissions}
      401: {description: missing or invalid token}
    """
    user = auth.user(request)
    store: Store = request.app.state.store
    student = request.query_params.get("student") if user.is_staff else user.id
    rows = store.submissions(student=student, assignment=request.query_params.get("assignment"))
    config = request.app.state.config
    counted = counting.counting_ids(rows, config.counting)
    return JSONResponse(
        [
            {**feedback.view(config, s, store.results(s.id), staff=user.is_staff), "counts": s.id in counted}
            for s in rows
        ]
    )


async def get_submission(request: Request) -> Response:
    """
    summary: One submission's status, score and feedback.
    parameters:
      - {name: submission_id, in: path, required: true, schema: {type: integer}}
      - {name: wait, in: query, required: false, schema: {type: number, minimum: 0, maximum: 60}}
    description: >-
      With `wait=S`, a submission still queued or being graded is answered once it is graded or
      failed, or after S seconds (at most 60), whichever comes first: no need to poll.
    responses:
      200: {description: the submission}
      400: {description: wait is not a number of seconds from 0 to 60}
      401: {description: missing or invalid token}
      404: {description: no such submission of yours}
    """
    raw = request.path_params["submission_id"]
    in_range = isinstance(raw, int) and 0 < raw < 2**63  # a larger id cannot exist (and SQLite would overflow)
    submission_id = raw if in_range else 0
    seconds = finished.parse_wait(request.query_params.get("wait"))
    view = await run_in_threadpool(_submission_view, request, submission_id)
    if seconds > 0 and view["status"] not in finished.FINAL:
        store: Store = request.app.state.store
        elsewhere = bool(request.app.state.config.broker_url)  # grader workers record grades in their processes
        await store.finished.until_final(submission_id, lambda: _status(store, submission_id), seconds, elsewhere)
        view = await run_in_threadpool(_submission_view, request, submission_id)
    return JSONResponse(view)


def _status(store: Store, submission_id: int) -> str | None:
    found = store.submission(submission_id)
    return None if found is None else found.status


def _submission_view(request: Request, submission_id: int) -> dict[str, Any]:
    user = auth.user(request)
    store: Store = request.app.state.store
    submission = store.submission(submission_id) if submission_id else None
    if submission is None or (not user.is_staff and submission.student != user.id):
        raise NotFound("no such submission of yours")
    return feedback.view(request.app.state.config, submission, store.results(submission.id), user.is_staff)


async def grades(request: Request) -> Response:
    """
    summary: All students x assignments (staff).
    responses:
      200: {description: the grade table}
      401: {description: missing or invalid token}
      403: {description: not staff}
    """
    auth.staff(request)
    return JSONResponse(export.grade_table(request.app.state.store, request.app.state.config))


async def grades_csv(request: Request) -> Response:
    """
    summary: The grades as `nbgrader export` writes them (staff).
    responses:
      200: {description: CSV}
      401: {description: missing or invalid token}
      403: {description: not staff}
    """
    auth.staff(request)
    return PlainTextResponse(export.nbgrader_csv(request.app.state.config), media_type="text/csv")


async def regrade(request: Request) -> Response:
    """
    summary: Regrade one submission, or the attempt that counts of one student or a whole assignment (staff).
    requestBody:
      content:
        application/json:
          schema:
            type: object
            properties:
              submission_id: {type: integer}
              student: {type: string}
              assignment: {type: string}
    responses:
      202: {description: queued}
      400: {description: bad request}
      401: {description: missing or invalid token}
      403: {description: not staff}
    """
    auth.staff(request)
    try:
        body = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError:
        raise StudentError('the body must be JSON, e.g. {"assignment": "ps1_tensors"}') from None
    if not isinstance(body, dict) or not body.keys() & {"submission_id", "student", "assignment"}:
        raise StudentError("give submission_id, student and/or assignment")
    store: Store = request.app.state.store
    if "submission_id" in body:
        chosen = regrading.select(store, request.app.state.config, submission_id=body["submission_id"])
    else:
        chosen = regrading.select(
            store, request.app.state.config, student=body.get("student"), assignment=body.get("assignment")
        )
    if not chosen:
        raise NotFound("nothing to regrade")
    count = store.enqueue([s.id for s in chosen])
    request.app.state.workers.notify()
    return JSONResponse({"queued": count, "submissions": [s.id for s in chosen]}, status_code=202)


async def openapi(request: Request) -> Response:
    return JSONResponse(schemas.get_schema(routes=request.app.routes))


async def error_response(request: Request, error: Exception) -> Response:
    if isinstance(error, DATABASE_ERRORS):
        error = DatabaseUnavailable(
            f"the gradebook database is not answering; nothing was lost. Try again in "
            f"{DatabaseUnavailable.retry_after_s} s"
        )
    if not request.url.path.startswith(("/api/", "/openapi")):
        return await pages.error_page(request, error)
    status = http.status_of(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(error, DatabaseUnavailable):
        headers = {"Retry-After": str(error.retry_after_s)}
    return JSONResponse({"error": str(error)}, status_code=status, headers=headers)


def create_app(config: ServiceConfig, start_workers: bool = True, zygote: Zygote | None = None) -> Starlette:
    """The service's app; ``zygote``, launched early (``ServiceConfig.launch_zygote``), goes to the local queue."""
    store = Store(config.db_url)
    workers = queue.for_config(store, config, zygote)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # grade passback: the scores the "lti-ags" hook queues are sent from here (also those of `grader worker`s)
        sender = outbox.Sender(store, config) if start_workers and "lti-ags" in config.after_record else None
        if start_workers:
            workers.start()
        if sender is not None:
            sender.start()
        try:
            yield
        finally:
            if sender is not None:
                sender.stop()
            workers.stop()

    routes: list[Any] = [
        Route("/api/health", health, methods=["GET"]),
        Route("/api/submissions", submit, methods=["POST"]),
        Route("/api/submissions", list_submissions, methods=["GET"]),
        Route("/api/submissions/{submission_id:int}", get_submission, methods=["GET"]),
        Route("/api/admin/grades", grades, methods=["GET"]),
        Route("/api/admin/grades.csv", grades_csv, methods=["GET"]),
        Route("/api/admin/regrade", regrade, methods=["POST"]),
        *exchange_api.routes,
        *regrades.api_routes,
        *exams.routes,
        *pages.routes,
        *me.routes,
        *hub.routes,
        *lti.routes,
        *similarity.routes,
        *marking.routes,
        *regrades.routes,
        Route("/openapi.json", openapi, include_in_schema=False),
    ]
    handlers: dict[Any, Any] = {kind: error_response for kind in (GraderError, *DATABASE_ERRORS)}
    app = Starlette(
        routes=routes, lifespan=lifespan, exception_handlers=handlers, middleware=[Middleware(timing.ServerTiming)]
    )
    app.state.store = store
    app.state.config = config
    app.state.hub = hub.for_app(config.course_root, config.hub_course)
    app.state.workers = workers
    return app
