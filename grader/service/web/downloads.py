"""Downloads for staff: the grades for nbgrader, Canvas and Gradescope (``grader export`` writes the same)."""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...errors import NotFound
from ..dashboard import export
from ..records.store import Store
from . import sessions


async def download_nbgrader_csv(request: Request) -> Response:
    sessions.staff(request)
    body = await run_in_threadpool(export.nbgrader_csv, request.app.state.config)
    return _attachment(body, "grades.csv", "text/csv")


async def download_canvas_csv(request: Request) -> Response:
    sessions.staff(request)
    body = await run_in_threadpool(export.canvas_csv, request.app.state.store, request.app.state.config)
    return _attachment(body, "canvas-gradebook.csv", "text/csv")


async def download_gradescope_zip(request: Request) -> Response:
    sessions.staff(request)
    name = request.path_params["name"]
    body = await run_in_threadpool(export.gradescope_zip, request.app.state.store, request.app.state.config, name)
    return _attachment(body, export.gradescope_zip_name(name), "application/zip")


async def download_results_json(request: Request) -> Response:
    sessions.staff(request)
    store: Store = request.app.state.store
    submission = store.submission(request.path_params["submission_id"])
    if submission is None:
        raise NotFound("no such submission")
    body = export.gradescope_results(store, request.app.state.config, submission)
    return _attachment(json.dumps(body, indent=2), f"results-{submission.id}.json", "application/json")


def _attachment(body: str | bytes, filename: str, media_type: str) -> Response:
    return Response(body, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


routes = [
    Route("/admin/export/grades.csv", download_nbgrader_csv, methods=["GET"], include_in_schema=False),
    Route("/admin/export/canvas.csv", download_canvas_csv, methods=["GET"], include_in_schema=False),
    Route("/admin/export/{name}/gradescope.zip", download_gradescope_zip, methods=["GET"], include_in_schema=False),
    Route(
        "/admin/submissions/{submission_id:int}/results.json",
        download_results_json,
        methods=["GET"],
        include_in_schema=False,
    ),
]
