"""HTML edge: the dashboard for staff (the students' own page: ``me``). Parse, call one function, render.

Server-rendered (Jinja2 templates in ``templates/``, charts in ``charts``): no JavaScript is
needed to use any page. Staff pages need a TA or admin session; a student sees only ``/me``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ... import course
from ...authoring import report as validation
from ...errors import GraderError, InfrastructureError, NotFound, StudentError
from ...plugins import late_policy
from ..config import ServiceConfig
from ..dashboard import charts, regrade, stats
from ..grading import feedback
from ..lti import outbox
from ..records.models import Submission
from ..records.store import Store
from ..rules import deadlines
from ..rules.counting import counting
from . import downloads, http, hub, sessions

# The validation report's body (grader validate) is shared with its standalone HTML: both template folders.
templates = Jinja2Templates(directory=[str(Path(__file__).parent / "templates"), str(validation.TEMPLATES)])
templates.env.globals["charts"] = charts
templates.env.filters["when"] = lambda value: "" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"
templates.env.filters["pts"] = lambda value: "–" if value is None else f"{value:g}"
templates.env.filters["pct"] = lambda value: f"{100 * value:.0f}%"
templates.env.filters["counted"] = lambda n, word: f"{n} {word if n == 1 else word + 's'}"  # 1 student, 2 students

GRADEBOOK_SORTS = ("student", "total")


def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    user = context.pop("user", None)
    token = sessions.token(request)
    context.update(user=user, csrf=sessions.csrf_value(token) if token else "")
    return templates.TemplateResponse(request, name, context, status_code=status)


async def login_form(request: Request) -> Response:
    return render(request, "login.html", next=sessions.safe_next(request.query_params.get("next")), error="")


async def login(request: Request) -> Response:
    form = await request.form()
    token = str(form.get("token", "")).strip()
    target = sessions.safe_next(str(form.get("next", "")))
    store: Store = request.app.state.store
    user = store.user_for_token(token) if token else None
    if user is None:
        if token and store.token_state(token) == "expired":
            error = "That token has expired. Ask your TA for a new one."
        else:
            error = "That token is not valid (or was revoked). Paste the whole token your TA gave you."
        return render(request, "login.html", status=401, next=target, error=error)
    if target == "/":
        target = "/admin" if user.is_staff else "/me"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(sessions.COOKIE, token, max_age=sessions.MAX_AGE_S, httponly=True, samesite="strict", path="/")
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(sessions.COOKIE, path="/")
    return response


async def home(request: Request) -> Response:
    user = sessions.user(request)
    return RedirectResponse("/admin" if user.is_staff else "/me", status_code=303)


async def gradebook(request: Request) -> Response:
    user = sessions.staff(request)
    config: ServiceConfig = request.app.state.config
    book = await run_in_threadpool(stats.standings, request.app.state.store, config)
    query = request.query_params.get("q", "").strip()
    sort = request.query_params.get("sort", "student")
    descending = request.query_params.get("dir", "asc") == "desc"
    assignment_names = [a.name for a in book.assignments]
    if sort not in GRADEBOOK_SORTS and sort not in assignment_names:
        sort = "student"
    students = [s for s in book.students if query.lower() in s.lower()]

    def key(student: str) -> Any:
        if sort == "student":
            return student
        if sort == "total":
            return (book.total(student), student)
        final = book.entries[(student, sort)].final
        return (final if final is not None else -1.0, student)

    students.sort(key=key, reverse=descending)
    lms = sorted(outbox.passback(request.app.state.store.engine).values(), key=lambda p: (p.student, p.assignment))
    return render(
        request,
        "gradebook.html",
        user=user,
        book=book,
        students=students,
        q=query,
        sort=sort,
        descending=descending,
        passback=lms,
    )


async def assignment_page(request: Request) -> Response:
    user = sessions.staff(request)
    name = request.path_params["name"]
    report = await run_in_threadpool(stats.assignment_report, request.app.state.store, request.app.state.config, name)
    if report is None:
        raise NotFound(f"no assignment {name!r}")
    bins = stats.histogram(report.finals, report.info.max_score)
    arrivals = stats.over_time(report.received, report.info.due)
    names = [t.name for t in report.tests]
    rates = [round(100 * t.pass_rate) for t in report.tests]
    return render(
        request,
        "assignment.html",
        user=user,
        report=report,
        bins=bins,
        arrivals=arrivals,
        test_names=names,
        test_rates=rates,
    )


async def validation_page(request: Request) -> Response:
    """The latest ``grader validate`` report of an assignment: the tests of its tests, for staff."""
    user = sessions.staff(request)
    name = request.path_params["name"]
    config: ServiceConfig = request.app.state.config
    if name not in course.assignments(config.course_root):
        raise NotFound(f"no assignment {name!r}")
    found = await run_in_threadpool(validation.shown, config.course_root, name)
    report, changed = (found.report, found.changed) if found else (None, ())
    return render(request, "validation.html", user=user, assignment=name, r=report, changed=changed)


async def student_page(request: Request) -> Response:
    user = sessions.staff(request)
    student = request.path_params["student"]
    shown = history(request, student, staff=True)
    if not shown["attempts"] and student not in stats.course(request.app.state.config)[1]:
        raise NotFound(f"no student {student!r}: not on the roster and no submissions")
    lms = sorted(outbox.passback(request.app.state.store.engine, student).values(), key=lambda p: p.assignment)
    failures = request.app.state.store.job_failures(student)  # the reasons staff see, the student does not
    return render(request, "student.html", user=user, passback=lms, failures=failures, **shown)


def history(request: Request, student: str, staff: bool) -> dict[str, Any]:
    store: Store = request.app.state.store
    config: ServiceConfig = request.app.state.config
    assignments, _, extensions = stats.course(config)
    infos = {a.name: a for a in assignments}
    own = store.submissions(student=student)
    by_assignment: dict[str, list[Submission]] = {}
    for submission in own:
        by_assignment.setdefault(submission.assignment, []).append(submission)
    # the one rule of which attempt counts; the others older than it are folded away (newer ones, still
    # being graded or failed, stay open, and so does the newest when none counts yet)
    chosen = {name: counting(tries, config.counting) for name, tries in by_assignment.items()}
    attempts = []
    for submission in reversed(own):
        view = feedback.view(config, submission, store.results(submission.id), staff=staff)
        info = infos.get(submission.assignment)
        late = info is not None and stats.is_late(submission, info, extensions.get((student, submission.assignment)))
        counts = chosen[submission.assignment]
        is_counting = counts is not None and counts.id == submission.id
        if counts is None:
            folded = submission.id != by_assignment[submission.assignment][-1].id
        else:
            folded = not is_counting and submission.received_at <= counts.received_at
        attempts.append({"submission": submission, "view": view, "late": late, "counts": is_counting, "folded": folded})
    return {"student": student, "attempts": attempts, "assignments": assignments, "rule": config.counting}


async def queue_page(request: Request) -> Response:
    user = sessions.staff(request)
    report = stats.queue_report(request.app.state.store)
    workers = request.app.state.workers
    return render(request, "queue.html", user=user, report=report, health=workers.health())


async def regrade_form(request: Request) -> Response:
    user = sessions.staff(request)
    name = request.path_params["name"]
    if name not in course_assignments(request):
        raise NotFound(f"no assignment {name!r}")
    return render(request, "regrade.html", user=user, assignment=name, run=None, queued=None)


async def regrade_post(request: Request) -> Response:
    """``action=dry-run``: start a dry run (its page shows progress, then the diff); ``action=apply``: queue it."""
    user = sessions.staff(request)
    name = request.path_params["name"]
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    store: Store = request.app.state.store
    config: ServiceConfig = request.app.state.config
    if form.get("action") == "apply":
        queued = regrade.apply(store, config, name)
        request.app.state.workers.notify()
        return render(request, "regrade.html", 202, user=user, assignment=name, run=None, queued=queued)
    # the dry run grades in the background; its page shows how far it has got (and reloads itself) until done
    ident = regrade.RUNS.start(store, config, name)
    return RedirectResponse(f"/admin/assignments/{quote(name)}/regrade/runs/{ident}", status_code=303)


def _dry_run(request: Request) -> regrade.Progress:
    progress = regrade.RUNS.get(request.path_params["run"])
    if progress is None or progress.assignment != request.path_params["name"]:
        raise NotFound("no such dry run (the service keeps the latest few, until it restarts): start another")
    return progress


async def regrade_run(request: Request) -> Response:
    """A dry run's page: its progress while it runs (the page reloads itself: no JavaScript), then the diff."""
    user = sessions.staff(request)
    progress = _dry_run(request)
    return render(
        request,
        "regrade.html",
        user=user,
        assignment=progress.assignment,
        run=progress.result,
        queued=None,
        progress=progress,
    )


async def regrade_status(request: Request) -> Response:
    """A dry run's progress as JSON: stage, attempts graded of all, seconds, finished, and the same words."""
    sessions.staff(request)
    return JSONResponse(_dry_run(request).status(), headers={"Cache-Control": "no-store"})


async def settings_page(request: Request) -> Response:
    user = sessions.staff(request)
    return render(request, "settings.html", user=user, **_settings(request, notice="", error=""))


def _settings(request: Request, notice: str, error: str) -> dict[str, Any]:
    from ..lti import roster

    config: ServiceConfig = request.app.state.config
    assignments, students, extensions = stats.course(config)
    return {
        "lms_courses": roster.contexts(request.app.state.store.engine),
        "assignments": assignments,
        "students": students,
        "extensions": sorted(extensions.items()),
        "policy": late_policy.current(config.course_root),
        "notice": notice,
        "error": error,
    }


async def settings_post(request: Request) -> Response:
    """One form per action: ``due`` (an assignment's due date), ``extension``, ``policy``."""
    user = sessions.staff(request)
    form = await request.form()
    sessions.check_csrf(request, form.get("csrf"))
    config: ServiceConfig = request.app.state.config
    action = form.get("action")
    fields = {key: str(value) for key, value in form.items() if isinstance(value, str)}
    try:
        if action == "due":
            due = deadlines.parse_due(fields.get("due", ""))
            deadlines.set_due_date(config, fields.get("assignment", ""), due)
            when = "no due date" if due is None else f"due {due:%Y-%m-%d %H:%M} UTC"
            notice = f"{fields.get('assignment')} is now {when}."
        elif action == "extension":
            student, assignment = fields.get("student", "").strip(), fields.get("assignment", "")
            try:
                hours = float(fields.get("hours", ""))
            except ValueError:
                raise StudentError("the extension must be a number of hours, such as 48 (0 removes it)") from None
            if not student:
                raise StudentError("name the student who gets the extension")
            if not 0 <= hours <= 24 * 365:
                raise StudentError("the extension must be between 0 and 8760 hours")
            deadlines.grant_extension(config, assignment, student, hours)
            notice = f"{student} has {hours:g} extra hour(s) for {assignment}."
        elif action == "policy":
            values: dict[str, object] = {name: fields.get(name) for name in late_policy.FIELDS}
            try:
                deadlines.set_late_policy(request.app.state.store, config, values)
            except late_policy.PolicyError as error:
                raise StudentError(str(error)) from None
            request.app.state.workers.reload_config()
            notice = "Late policy saved; gradings from now on use it (regrade to apply it to earlier ones)."
        else:
            raise StudentError("unknown settings action")
    except GraderError as error:
        context = _settings(request, notice="", error=str(error))
        return render(request, "settings.html", http.status_of(error), user=user, **context)
    return render(request, "settings.html", user=user, **_settings(request, notice=notice, error=""))


def course_assignments(request: Request) -> list[str]:
    return course.assignments(request.app.state.config.course_root)


async def error_page(request: Request, error: Exception) -> Response:
    """Errors on a page: sign-in redirects, and a page that says what went wrong."""
    if isinstance(error, sessions.SignInNeeded):
        if hub.of(request) is not None:  # under JupyterHub: sign in through the hub's OAuth
            return RedirectResponse(hub.login_url(error.next_url), status_code=303)
        return RedirectResponse(sessions.login_url(error.next_url), status_code=303)
    status = http.status_of(error)
    user = None
    if sessions.token(request) and not isinstance(error, InfrastructureError):
        user = request.app.state.store.user_for_token(sessions.token(request))
    return render(request, "error.html", status=status, user=user, message=str(error), status_code=status)


routes = [
    Route("/", home, methods=["GET"], include_in_schema=False),
    Route("/login", login_form, methods=["GET"], include_in_schema=False),
    Route("/login", login, methods=["POST"], include_in_schema=False),
    Route("/logout", logout, methods=["POST"], include_in_schema=False),
    Route("/admin", gradebook, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}", assignment_page, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/validation", validation_page, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/regrade", regrade_form, methods=["GET"], include_in_schema=False),
    Route("/admin/assignments/{name}/regrade", regrade_post, methods=["POST"], include_in_schema=False),
    Route("/admin/assignments/{name}/regrade/runs/{run}", regrade_run, methods=["GET"], include_in_schema=False),
    Route(
        "/admin/assignments/{name}/regrade/runs/{run}/status", regrade_status, methods=["GET"], include_in_schema=False
    ),
    Route("/admin/students/{student}", student_page, methods=["GET"], include_in_schema=False),
    Route("/admin/queue", queue_page, methods=["GET"], include_in_schema=False),
    Route("/admin/settings", settings_page, methods=["GET"], include_in_schema=False),
    Route("/admin/settings", settings_post, methods=["POST"], include_in_schema=False),
    *downloads.routes,
]
