"""Assignment and Grade Services (AGS 2.0): an assignment's line item in an LMS course, and a score posted to it.

Where a student's score goes (``targets``): every LMS course (``grader_lti_contexts``, stored at
launch with its line items URL) of each platform on which an LMS user is linked to the student
(``grader_lti_members``, from launches and roster syncs). Each assignment has one line item per
course, found by its ``resourceId`` (the assignment's name) or created with the assignment's
maximum points, and remembered (``grader_lti_line_items``). A line item deleted on the LMS side
answers 404 to the score: it is forgotten, found or created again, and the score sent again.

Outcomes, typed: ``LmsError`` (the LMS is down, timed out or answered 5xx) is retried later by
the outbox; ``LmsRefused`` (a 4xx, or nowhere to send) is final and shown with the LMS's answer.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ...errors import LaunchRefused, LmsRefused
from ..records.tables import lti_contexts, lti_line_items, lti_members, now
from . import services
from .platforms import Platform, platform

LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
TAG = "grade"  # the tag of the line items this tool creates
MAX_PAGES = 50  # of a line items container (Link: rel="next")


@dataclass(frozen=True)
class Score:
    """A student's counting final score, as the outbox sends it."""

    student: str
    assignment: str
    score_given: float
    score_maximum: float
    activity_progress: str
    grading_progress: str
    recorded_at: dt.datetime  # naive UTC: the AGS timestamp

    def body(self, lms_user_id: str) -> dict[str, Any]:
        """The AGS score (``application/vnd.ims.lis.v1.score+json``) for ``lms_user_id``."""
        return {
            "userId": lms_user_id,
            "scoreGiven": self.score_given,
            "scoreMaximum": self.score_maximum,
            "activityProgress": self.activity_progress,
            "gradingProgress": self.grading_progress,
            "timestamp": self.recorded_at.replace(tzinfo=dt.UTC).isoformat(timespec="milliseconds"),
        }


@dataclass(frozen=True)
class Target:
    """One LMS course where a student's score goes, and who the student is there."""

    issuer: str
    context_id: str
    lineitems_url: str
    scopes: tuple[str, ...]  # what the LMS said this tool may do there (the launch's AGS claim)
    lms_user_id: str


def targets(engine: Engine, student: str) -> list[Target]:
    """Every LMS course the student's score goes to; ``LmsRefused`` (saying what to do) when there is none."""
    query = (
        sa.select(
            lti_contexts.c.issuer,
            lti_contexts.c.context_id,
            lti_contexts.c.lineitems_url,
            lti_contexts.c.lineitem_scopes,
            lti_members.c.lms_user_id,
        )
        .join(lti_members, lti_members.c.issuer == lti_contexts.c.issuer)
        .where(lti_members.c.user_id == student, lti_contexts.c.lineitems_url.isnot(None))
        .order_by(lti_contexts.c.issuer, lti_contexts.c.context_id)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).fetchall()
    if not rows:
        raise LmsRefused(
            f"no LMS course to send {student}'s score to: the student is not linked to an LMS user of a course "
            "whose launch offered grade passback (launch the tool from the LMS once, or run grader lti sync-roster)"
        )
    return [
        Target(
            r.issuer,
            r.context_id,
            str(r.lineitems_url),
            tuple(json.loads(r.lineitem_scopes or "[]")),
            r.lms_user_id,
        )
        for r in rows
    ]


def send(engine: Engine, score: Score) -> None:
    """Post ``score`` to every course of the student's (``targets``), making the line items as needed."""
    for target in targets(engine, score.student):
        if LINEITEM_SCOPE not in target.scopes or SCORE_SCOPE not in target.scopes:
            raise LmsRefused(
                f"the LMS course {target.context_id} did not grant this tool the AGS scopes it needs "
                f"({LINEITEM_SCOPE}, {SCORE_SCOPE}): enable grade passback in the tool's LMS registration, "
                "then launch the tool again"
            )
        try:
            found = platform(engine, target.issuer)
        except LaunchRefused as error:
            raise LmsRefused(str(error)) from None
        url = line_item(engine, found, target, score.assignment, score.score_maximum)
        answer = _post_score(engine, found, url, target, score)
        if answer.status_code == 404:  # the line item was deleted on the LMS side: make it again, send again
            forget(engine, target, score.assignment)
            url = line_item(engine, found, target, score.assignment, score.score_maximum)
            answer = _post_score(engine, found, url, target, score)
        if not answer.is_success:
            raise _refused(f"the score for {score.student}", url, answer)


def line_item(engine: Engine, found: Platform, target: Target, assignment: str, maximum: float) -> str:
    """The URL of ``assignment``'s line item in the course: remembered, else found by resourceId, else created.

    A remembered line item whose maximum points differ from ``maximum`` (the tests changed) is updated."""
    key = (
        lti_line_items.c.issuer == target.issuer,
        lti_line_items.c.context_id == target.context_id,
        lti_line_items.c.assignment == assignment,
    )
    with engine.connect() as conn:
        known = conn.execute(sa.select(lti_line_items).where(*key)).first()
    if known is not None and known.score_maximum == maximum:
        return str(known.url)
    item = _put_maximum(engine, found, str(known.url), assignment, maximum) if known is not None else None
    if item is None:  # not remembered, or deleted on the LMS side meanwhile
        item = _find(engine, found, target, assignment) or _create(engine, found, target, assignment, maximum)
        if float(item.get("scoreMaximum", maximum)) != maximum:
            item = _put_maximum(engine, found, str(item["id"]), assignment, maximum) or item
    url = str(item["id"])
    with engine.begin() as conn:
        conn.execute(lti_line_items.delete().where(*key))
        conn.execute(
            lti_line_items.insert().values(
                issuer=target.issuer,
                context_id=target.context_id,
                assignment=assignment,
                url=url,
                score_maximum=maximum,
                created_at=now(),
            )
        )
    return url


def forget(engine: Engine, target: Target, assignment: str) -> None:
    """Forget the remembered line item (the LMS says it no longer exists)."""
    with engine.begin() as conn:
        conn.execute(
            lti_line_items.delete().where(
                lti_line_items.c.issuer == target.issuer,
                lti_line_items.c.context_id == target.context_id,
                lti_line_items.c.assignment == assignment,
            )
        )


def scores_url(lineitem_url: str) -> str:
    """``<line item>/scores``, keeping the line item URL's query (Moodle's carry one)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def _find(engine: Engine, found: Platform, target: Target, assignment: str) -> dict[str, Any] | None:
    url: str | None = str(httpx.URL(target.lineitems_url).copy_merge_params({"resource_id": assignment}))
    for _ in range(MAX_PAGES):
        if url is None:
            break
        answer = services.call(engine, found, "GET", url, [LINEITEM_SCOPE], accept=CONTAINER_TYPE)
        if not answer.is_success:
            raise _refused(f"the line items of course {target.context_id}", url, answer)
        items = _json(answer, url)
        if not isinstance(items, list):
            raise LmsRefused(f"the LMS's line items at {url} are not a JSON list: {answer.text[:200]}")
        for item in items:
            if isinstance(item, dict) and item.get("resourceId") == assignment and item.get("id"):
                return item
        url = answer.links.get("next", {}).get("url")
    return None


def _create(engine: Engine, found: Platform, target: Target, assignment: str, maximum: float) -> dict[str, Any]:
    body = {"label": assignment, "scoreMaximum": maximum, "resourceId": assignment, "tag": TAG}
    answer = services.call(
        engine,
        found,
        "POST",
        target.lineitems_url,
        [LINEITEM_SCOPE],
        json_body=body,
        content_type=LINEITEM_TYPE,
        accept=LINEITEM_TYPE,
    )
    if not answer.is_success:
        raise _refused(f"creating the line item {assignment}", target.lineitems_url, answer)
    item = _json(answer, target.lineitems_url)
    if not isinstance(item, dict) or not item.get("id"):
        raise LmsRefused(f"the LMS created a line item at {target.lineitems_url} without an id: {answer.text[:200]}")
    return item


def _put_maximum(engine: Engine, found: Platform, url: str, assignment: str, maximum: float) -> dict[str, Any] | None:
    """The line item at ``url`` with its maximum points updated; None when the LMS no longer has it."""
    body = {"id": url, "label": assignment, "scoreMaximum": maximum, "resourceId": assignment, "tag": TAG}
    answer = services.call(
        engine, found, "PUT", url, [LINEITEM_SCOPE], json_body=body, content_type=LINEITEM_TYPE, accept=LINEITEM_TYPE
    )
    if answer.status_code == 404:
        return None
    if not answer.is_success:
        raise _refused(f"updating the maximum points of the line item {assignment}", url, answer)
    item = _json(answer, url)
    return item if isinstance(item, dict) and item.get("id") else body


def _post_score(engine: Engine, found: Platform, url: str, target: Target, score: Score) -> httpx.Response:
    return services.call(
        engine,
        found,
        "POST",
        scores_url(url),
        [SCORE_SCOPE],
        json_body=score.body(target.lms_user_id),
        content_type=SCORE_TYPE,
    )


def _json(answer: httpx.Response, url: str) -> Any:
    try:
        return answer.json()
    except ValueError:
        raise LmsRefused(f"the LMS's answer at {url} is not JSON: {answer.text[:200]}") from None


def _refused(what: str, url: str, answer: httpx.Response) -> LmsRefused:
    return LmsRefused(f"the LMS refused {what} ({answer.status_code} at {url}): {answer.text.strip()[:500]}")
