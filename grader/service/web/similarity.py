"""The similarity report for staff: the list of pairs, its CSV, and one pair side by side (``grader.similarity``)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import course
from ...errors import NotFound, StudentError
from ...similarity import compare, report
from ...similarity.sources import SimilarityError
from ..config import ServiceConfig
from ..dashboard import similarity
from . import http, pages, sessions


def _assignment(request: Request) -> str:
    name = str(request.path_params["name"])
    config: ServiceConfig = request.app.state.config
    if name not in course.assignments(config.course_root):
        raise NotFound(f"no assignment {name!r}")
    return name


def _threshold(request: Request) -> float:
    try:
        return report.threshold_of(request.query_params.get("threshold"))
    except SimilarityError as error:
        raise StudentError(str(error)) from error


async def similarity_page(request: Request) -> Response:
    user = sessions.staff(request)
    name = _assignment(request)
    context: dict[str, Any] = {"user": user, "assignment": name, "floor": compare.FLOOR, "threshold": compare.THRESHOLD}
    try:
        threshold = _threshold(request)
    except StudentError as error:
        return pages.render(request, "similarity.html", http.status_of(error), r=None, error=str(error), **context)
    context["threshold"] = threshold
    app = request.app.state
    try:
        found = await run_in_threadpool(similarity.build, app.store, app.config, name, threshold)
    except SimilarityError as error:
        return pages.render(request, "similarity.html", r=None, error=str(error), **context)
    return pages.render(request, "similarity.html", r=found, error="", **context)


async def similarity_csv(request: Request) -> Response:
    sessions.staff(request)
    name = _assignment(request)
    threshold = _threshold(request)
    app = request.app.state
    try:
        found = await run_in_threadpool(similarity.build, app.store, app.config, name, threshold)
    except SimilarityError as error:
        raise StudentError(str(error)) from error
    return Response(
        report.csv_text(found),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{name}-similarity.csv"'},
    )


async def pair_page(request: Request) -> Response:
    user = sessions.staff(request)
    name = _assignment(request)
    a, b = str(request.path_params["a"]), str(request.path_params["b"])
    app = request.app.state
    try:
        cells = await run_in_threadpool(similarity.pair, app.store, app.config, name, a, b)
    except SimilarityError as error:
        raise NotFound(str(error)) from error
    found = await run_in_threadpool(similarity.build, app.store, app.config, name, compare.FLOOR)
    scored = next((p for p in found.pairs if {p.a, p.b} == {a, b}), None)
    return pages.render(request, "similarity_pair.html", user=user, assignment=name, a=a, b=b, cells=cells, pair=scored)


routes = [
    Route("/admin/assignments/{name}/similarity", similarity_page, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/similarity.csv", similarity_csv, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/similarity/{a}/{b}", pair_page, methods=["GET"], include_in_schema=False),
]
