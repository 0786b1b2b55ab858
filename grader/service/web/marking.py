"""The grading-by-question pages: parse, call ``grader.service.marking``, render.

``/admin/assignments/{name}/written`` lists the written questions with their progress;
``/admin/assignments/{name}/written/{cell}?g=N`` shows group N of one question's answers (names hidden
unless ``names=1``, or shown unless ``names=0`` where the course sets ``anonymous_grading = False``), the
rubric as checkboxes (each with its key), an adjustment and a comment. Saving goes to the next group; a
conflict with another TA's save shows both and saves nothing. A group's answer can be taken out to be graded
on its own (``/split``); a rubric item edited (``/items``: a preview first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...errors import Forbidden, MarkConflict, NotFound, StudentError
from ..config import ServiceConfig
from ..lti import outbox
from ..marking import answers, marks, questions, release, shares
from ..rules import deadlines
from . import http, sessions
from .mathml import answer_html
from .pages import render

# The page runs one script, its own file from this site: a student's answer can hold no script that runs.
POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'"
SCRIPT = Path(__file__).parent / "static" / "marking-keys.js"


async def written_page(request: Request) -> Response:
    user = sessions.staff(request)
    config: ServiceConfig = request.app.state.config
    name = request.path_params["name"]
    found = await run_in_threadpool(questions.overview, request.app.state.store, config.course_root, name)
    notice = request.query_params.get("done", "")
    return render(request, "written.html", user=user, assignment=name, questions=found, notice=notice)


async def shares_post(request: Request) -> Response:
    """An admin gives a TA a question (all of its answers, or a range of student ids), or takes it back."""
    user = sessions.staff(request)
    if user.role != "admin":
        raise Forbidden("only an admin shares out the questions among TAs")
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    config: ServiceConfig = request.app.state.config
    name = request.path_params["name"]
    store = request.app.state.store
    cell, ta = str(form.get("cell", "")), str(form.get("ta", ""))
    if cell not in await run_in_threadpool(questions.written, config.course_root, name):
        raise NotFound(f"{name} has no written-answer question {cell!r}")
    if form.get("action") == "remove":
        await run_in_threadpool(shares.unassign, store, name, cell, ta)
        done = f"{ta} no longer has a share of {cell}."
    else:
        first, last = str(form.get("first", "")), str(form.get("last", ""))
        share = await run_in_threadpool(shares.assign, store, name, cell, ta, first, last)
        done = f"{cell}: {share.words}."
    return RedirectResponse(f"/admin/assignments/{name}/written?{urlencode({'done': done})}", status_code=303)


async def release_post(request: Request) -> Response:
    """Release the chosen questions' grades to students (with a regrade deadline), or withdraw them."""
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    config: ServiceConfig = request.app.state.config
    name = request.path_params["name"]
    cells = [str(c) for c in form.getlist("cell")]
    if not cells:
        raise StudentError("tick at least one question to release or withdraw")
    if form.get("action") == "withdraw":
        for cell in cells:
            await run_in_threadpool(release.withdraw, request.app.state.store, name, cell)
        done = f"Withdrawn: {', '.join(cells)}. Students no longer see these grades."
    else:
        until = deadlines.parse_due(str(form.get("regrades_until", "")), "the regrade deadline")
        chosen = await run_in_threadpool(
            release.release,
            request.app.state.store,
            config.course_root,
            name,
            cells,
            actor=user.id,
            regrades_until=until,
        )
        done = f"Released: {', '.join(chosen)}. " + (
            f"Students may ask for a regrade until {until:%Y-%m-%d %H:%M} UTC." if until else "No regrade requests."
        )
    if "lti-ags" in config.after_record:  # the LMS gets the scores with the released points now, not at the next check
        await run_in_threadpool(outbox.reconcile, request.app.state.store, config)
    return RedirectResponse(f"/admin/assignments/{name}/written?{urlencode({'done': done})}", status_code=303)


async def question_page(request: Request) -> Response:
    user = sessions.staff(request)
    return await _question(request, user, notice=request.query_params.get("saved", ""))


async def question_post(request: Request) -> Response:
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    name = request.path_params["name"]
    index, shown, group = await _posted_group(request, user, form)
    expected = {s: _int(str(form.get(f"v.{i}", "0")), "a version") for i, s in enumerate(group.students)}
    items = [str(v) for v in form.getlist("item")]
    try:
        adjustment = float(str(form.get("adjustment", "0") or "0"))
    except ValueError:
        raise StudentError("the adjustment must be a number of points, such as -0.5 or 1") from None
    try:
        await run_in_threadpool(
            marks.save,
            request.app.state.store,
            shown.rubric,
            assignment=name,
            answers=group.answers,
            items=items,
            adjustment=adjustment,
            comment=str(form.get("comment", "")),
            actor=user.id,
            expected=expected,
        )
    except MarkConflict as conflict:
        mine = {"items": items, "adjustment": adjustment, "comment": form.get("comment")}
        status = http.status_of(conflict)
        return await _question(request, user, index=index, conflict=conflict, mine=mine, status=status)
    following = min(index + 1, len(shown.groups) - 1)
    return RedirectResponse(f"{request.url.path}?g={following}{_view(form)}&saved={index}", status_code=303)


async def _posted_group(request: Request, user: Any, form: Any) -> tuple[int, questions.Shown, answers.Group]:
    """The group a form was filled in for (``g``, ``group``, ``size``), in the TA's view (``all``)."""
    config: ServiceConfig = request.app.state.config
    name, cell = request.path_params["name"], request.path_params["cell"]
    store = request.app.state.store
    index = _int(str(form.get("g", "0")), "the group")
    share = await run_in_threadpool(_share, store, user, name, cell, form.get("all") == "1")
    shown = await run_in_threadpool(lambda: questions.show(store, config.course_root, name, cell, index, share=share))
    if shown is None:
        raise NotFound(f"no answer to {cell} has been autograded yet")
    # the group is named by its answers' fingerprint and its members by position, never by name on the page
    group = shown.find(str(form.get("group", "")), _int(str(form.get("size", "0")), "the group's size"))
    return index, shown, group


def _view(form: Any) -> str:
    """The query that keeps the TA's view after a POST: names shown or hidden, every answer or their share."""
    view = f"&names={form.get('names')}" if form.get("names") in ("0", "1") else ""
    return view + ("&all=1" if form.get("all") == "1" else "")


def _share(store: Any, user: Any, assignment: str, cell: str, everything: bool) -> shares.Share | None:
    """The signed-in TA's share of the question, unless they asked for every answer (admins see every answer)."""
    if everything or user.role == "admin":
        return None
    return shares.mine(store, assignment, cell, user.id)


async def _question(
    request: Request,
    user: Any,
    notice: str = "",
    index: int | None = None,
    conflict: Any = None,
    mine: dict[str, Any] | None = None,
    status: int = 200,
    preview: Any = None,
) -> Response:
    config: ServiceConfig = request.app.state.config
    name, cell = request.path_params["name"], request.path_params["cell"]
    at = index if index is not None else _int(request.query_params.get("g", "0"), "the group")
    student = request.query_params.get("student") or None  # from a regrade request: that student's answer
    same_as = request.query_params.get("group") or None  # after a split: the group that is left
    store = request.app.state.store
    everything = request.query_params.get("all") == "1" or student is not None
    share = await run_in_threadpool(_share, store, user, name, cell, everything)
    shown = await run_in_threadpool(
        lambda: questions.show(store, config.course_root, name, cell, at, student, same_as, share)
    )
    asked = request.query_params.get("names") or ""  # 1 shows them, 0 hides them; else the course's setting
    names = asked == "1" or (asked != "0" and not config.anonymous_grading) or student is not None
    saved = None
    if notice.isdigit() and shown is not None:
        saved = int(notice) + 1
    response = render(
        request,
        "question.html",
        status=status,
        user=user,
        assignment=name,
        cell=cell,
        shown=shown,
        names=names,
        saved=saved,
        conflict=conflict,
        mine=mine,
        preview=preview,
        everything=request.query_params.get("all") == "1",
        request_path=f"/admin/assignments/{name}/written/{cell}",
        done=request.query_params.get("done", ""),
        answer_html=answer_html,
    )
    response.headers["Content-Security-Policy"] = POLICY
    return response


async def split_post(request: Request) -> Response:
    """Take one answer out of its group of identical answers: it is graded on its own from now on."""
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    name, cell = request.path_params["name"], request.path_params["cell"]
    _, _, group = await _posted_group(request, user, form)
    member = _int(str(form.get("member", "")), "the answer to take out")
    if not 0 <= member < len(group.students) or len(group.students) < 2:
        raise StudentError(f"choose one of the {len(group.students)} answers of the group to take out")
    await run_in_threadpool(questions.split, request.app.state.store, name, cell, group.students[member], user.id)
    done = f"Answer {member + 1} was taken out of the group: it is graded on its own from now on."
    query = urlencode({"group": group.same_as, "done": done}) + _view(form)
    return RedirectResponse(f"{request.url.path.removesuffix('/split')}?{query}", 303)


async def item_post(request: Request) -> Response:
    """Edit one rubric item: first a preview of the scores it changes (nothing written), then, confirmed, the edit."""
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    config: ServiceConfig = request.app.state.config
    name, cell = request.path_params["name"], request.path_params["cell"]
    store = request.app.state.store
    grading = await run_in_threadpool(marks.rubric, store, config.course_root, name, cell)
    points_text = str(form.get("points", "")).strip()
    try:
        points = float(points_text) if points_text else None
    except ValueError:
        raise StudentError(f"the new points must be a number, such as 0.5 or -1, not {points_text!r}") from None
    text = str(form.get("text", "")).strip() or None
    key = str(form.get("key", ""))
    confirm = form.get("confirm") == "1"
    try:
        change = await run_in_threadpool(
            lambda: marks.change_item(
                store, grading, assignment=name, key=key, points=points, text=text, actor=user.id, confirm=confirm
            )
        )
    except (KeyError, ValueError) as error:
        raise StudentError(str(error.args[0])) from None
    index = _int(str(form.get("g", "0")), "the group")
    if not confirm:
        return await _question(request, user, index=index, preview=change)
    done = f"Item {key} changed: {change.summary}"
    return RedirectResponse(f"{request.url.path.removesuffix('/items')}?{urlencode({'g': index, 'done': done})}", 303)


async def keys_script(request: Request) -> Response:
    """The grading page's script (``static/marking-keys.js``): one key per rubric item."""
    sessions.staff(request)
    return Response(SCRIPT.read_bytes(), media_type="text/javascript", headers={"Cache-Control": "no-cache"})


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise StudentError(f"{what} must be a whole number, not {value!r}") from None


routes = [
    Route("/admin/marking-keys.js", keys_script, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/written", written_page, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/release", release_post, methods=["POST"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/shares", shares_post, methods=["POST"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/{cell}", question_page, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/{cell}", question_post, methods=["POST"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/{cell}/items", item_post, methods=["POST"], include_in_schema=False),
    Route("/admin/assignments/{name}/written/{cell}/split", split_post, methods=["POST"], include_in_schema=False),
]
