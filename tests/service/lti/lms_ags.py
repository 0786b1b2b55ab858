"""The test LMS's Assignment and Grade Services (AGS 2.0): line items and the scores posted to them.

Mounted by ``platform.LMS.app``. Every route checks the bearer token's scopes (``LMS.token_scopes``),
the media types and the body as a platform does, answers 500 while ``LMS.down``, and refuses a
score whose timestamp is older than the one on record for that user (real platforms do).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from .platform import LMS

LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
READONLY_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ACTIVITY = ("Initialized", "Started", "InProgress", "Submitted", "Completed")
GRADING = ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady")


@dataclass
class AgsBook:
    """What the LMS's gradebook holds: its line items and every score it accepted."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # line item URL -> the line item
    scores: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # line item URL -> scores accepted, in order
    refused: list[tuple[int, str]] = field(default_factory=list)  # every score refused: (status, answer)
    # the next score posts answer these (status, text) instead of being taken, one each (a flaky or picky LMS)
    next_answers: list[tuple[int, str]] = field(default_factory=list)
    page_size: int = 100
    created: int = 0

    def item_for(self, resource_id: str) -> dict[str, Any] | None:
        return next((i for i in self.items.values() if i.get("resourceId") == resource_id), None)

    def scores_of(self, resource_id: str, user: str) -> list[dict[str, Any]]:
        """The scores accepted for ``user`` in the line item of ``resource_id``, oldest first."""
        item = self.item_for(resource_id)
        return [] if item is None else [s for s in self.scores.get(item["id"], []) if s["userId"] == user]


def _problem(status: int, text: str) -> Response:
    return JSONResponse({"error": text}, status_code=status)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _timestamp(value: Any) -> dt.datetime | None:
    """An ISO 8601 timestamp with a time zone, as AGS requires; None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def score_problem(body: Any, item: dict[str, Any]) -> str:
    """What is wrong with a posted score (AGS 2.0, the score publish service); "" when nothing."""
    if not isinstance(body, dict):
        return "the score must be a JSON object"
    missing = [k for k in ("userId", "activityProgress", "gradingProgress", "timestamp") if k not in body]
    if missing:
        return f"the score lacks {', '.join(missing)}"
    if not isinstance(body["userId"], str) or not body["userId"]:
        return "userId must be the LMS user's id"
    if body["activityProgress"] not in ACTIVITY:
        return f"activityProgress must be one of {', '.join(ACTIVITY)}"
    if body["gradingProgress"] not in GRADING:
        return f"gradingProgress must be one of {', '.join(GRADING)}"
    if _timestamp(body["timestamp"]) is None:
        return "timestamp must be an ISO 8601 date and time with a time zone"
    if "scoreGiven" in body or body["gradingProgress"] == "FullyGraded":
        given, maximum = body.get("scoreGiven"), body.get("scoreMaximum")
        if not _number(given) or not _number(maximum):
            return "a graded score needs numeric scoreGiven and scoreMaximum"
        if maximum <= 0 or given < 0:
            return "scoreMaximum must be positive and scoreGiven not negative"
        if given > maximum:
            return f"scoreGiven {given} is more than scoreMaximum {maximum}"
    return ""


def ags_routes(lms: LMS) -> list[Route]:
    book = lms.ags

    def guard(request: Request, *scopes: str) -> Response | None:
        if lms.down:
            return Response("the LMS is down", status_code=500)
        granted = lms.token_scopes(request)
        if not granted:
            return _problem(401, "invalid_token")
        if not granted & set(scopes):
            return _problem(403, f"insufficient_scope: needs {' or '.join(scopes)}")
        return None

    def item_url(request: Request) -> str:
        p = request.path_params
        return f"{lms.url}/ags/{p['context']}/lineitems/{p['item']}"

    async def json_body(request: Request, media_type: str) -> tuple[Any, Response | None]:
        if request.headers.get("content-type", "").split(";")[0].strip() != media_type:
            return None, _problem(415, f"the body must be {media_type}")
        try:
            return json.loads(await request.body()), None
        except ValueError:
            return None, _problem(400, "the body is not JSON")

    async def container(request: Request) -> Response:
        context = request.path_params["context"]
        if request.method == "POST":
            refused = guard(request, LINEITEM_SCOPE)
            if refused:
                return refused
            body, bad = await json_body(request, LINEITEM_TYPE)
            if bad:
                return bad
            if not isinstance(body, dict) or not isinstance(body.get("label"), str) or not body["label"].strip():
                return _problem(400, "a line item needs a label")
            if not _number(body.get("scoreMaximum")) or body["scoreMaximum"] <= 0:
                return _problem(400, "a line item needs a positive scoreMaximum")
            book.created += 1
            url = f"{lms.url}/ags/{context}/lineitems/{book.created}"
            keep = ("label", "scoreMaximum", "resourceId", "tag", "resourceLinkId")
            book.items[url] = {"id": url, **{k: body[k] for k in keep if k in body}}
            return JSONResponse(book.items[url], status_code=201, media_type=LINEITEM_TYPE)
        refused = guard(request, LINEITEM_SCOPE, READONLY_SCOPE)
        if refused:
            return refused
        if CONTAINER_TYPE not in request.headers.get("accept", ""):
            return _problem(406, f"this endpoint serves {CONTAINER_TYPE}")
        q = request.query_params
        found = [
            i
            for url, i in book.items.items()
            if url.startswith(f"{lms.url}/ags/{context}/")
            and all(i.get(k) == q[p] for p, k in (("resource_id", "resourceId"), ("tag", "tag")) if p in q)
        ]
        page = int(q.get("page", "0"))
        headers = {}
        if (page + 1) * book.page_size < len(found):
            headers["Link"] = f'<{lms.url}/ags/{context}/lineitems?page={page + 1}>; rel="next"'
        chunk = found[page * book.page_size : (page + 1) * book.page_size]
        return JSONResponse(chunk, headers=headers, media_type=CONTAINER_TYPE)

    async def item(request: Request) -> Response:
        url = item_url(request)
        refused = (
            guard(request, LINEITEM_SCOPE)
            if request.method != "GET"
            else guard(request, LINEITEM_SCOPE, READONLY_SCOPE)
        )
        if refused:
            return refused
        if url not in book.items:
            return _problem(404, "no such line item")
        if request.method == "DELETE":
            del book.items[url]
            return Response(status_code=204)
        if request.method == "PUT":
            body, bad = await json_body(request, LINEITEM_TYPE)
            if bad:
                return bad
            if not isinstance(body, dict) or not _number(body.get("scoreMaximum")) or body["scoreMaximum"] <= 0:
                return _problem(400, "a line item needs a positive scoreMaximum")
            book.items[url].update({k: body[k] for k in ("label", "scoreMaximum", "resourceId", "tag") if k in body})
        return JSONResponse(book.items[url], media_type=LINEITEM_TYPE)

    async def scores(request: Request) -> Response:
        url = item_url(request)
        refused = guard(request, SCORE_SCOPE)
        if refused:
            return refused
        if url not in book.items:
            return _problem(404, "no such line item")
        body, bad = await json_body(request, SCORE_TYPE)
        if bad:
            return bad
        if book.next_answers:
            status, text = book.next_answers.pop(0)
            book.refused.append((status, text))
            return Response(text, status_code=status)
        problem = score_problem(body, book.items[url])
        if not problem:
            earlier = [s for s in book.scores.get(url, []) if s["userId"] == body["userId"]]
            stamp = _timestamp(body["timestamp"])
            if earlier and stamp is not None and stamp < _timestamp(earlier[-1]["timestamp"]):  # type: ignore[operator]
                problem = f"the timestamp {body['timestamp']} is older than the score on record"
        if problem:
            book.refused.append((400, problem))
            return _problem(400, problem)
        book.scores.setdefault(url, []).append(body)
        return Response(status_code=204)

    base = "/ags/{context}/lineitems"
    return [
        Route(base, container, methods=["GET", "POST"]),
        Route(base + "/{item}", item, methods=["GET", "PUT", "DELETE"]),
        Route(base + "/{item}/scores", scores, methods=["POST"]),
    ]
