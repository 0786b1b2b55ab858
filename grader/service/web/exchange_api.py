"""HTTP edge for the nbgrader exchange plugin (``grader.exchange``): releases in, feedback out.

Submissions go through the existing ``POST /api/submissions``.  Every answer is
for the caller only: a student sees their own submissions and feedback, and the
feedback page is built from ``feedback.view`` (names, points, messages), never
from nbgrader's ``generate_feedback`` HTML, which shows hidden test source.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ... import variants
from ...errors import NotFound, StudentError
from ...variants import secret as variant_secret
from ..config import ServiceConfig
from ..grading import feedback
from ..marking import release
from ..records.store import Store
from ..rules import deadlines
from . import auth

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
SKIPPED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}
MAX_RELEASE_BYTES = 50 * 1024 * 1024


def release_dir(config: ServiceConfig, assignment: str) -> Path:
    """``release/<assignment>/`` of a released assignment; 404 otherwise."""
    if not NAME.match(assignment) or ".." in assignment:
        raise StudentError(f"{assignment!r} is not an assignment name")
    folder = config.course_root / config.release_directory / assignment
    if not folder.is_dir():
        names = ", ".join(released(config)) or "none yet"
        raise NotFound(f"assignment {assignment!r} is not released; released: {names}")
    return folder


def released(config: ServiceConfig) -> list[str]:
    root = config.course_root / config.release_directory
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and NAME.match(p.name) and p.name not in SKIPPED)


def release_files(folder: Path) -> list[Path]:
    """The files students fetch, relative to ``folder`` (no checkpoints, caches or hidden files)."""
    found = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in SKIPPED or part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(relative)
    return found


def assignment_listing(config: ServiceConfig, student: str | None = None) -> list[dict[str, Any]]:
    """The released assignments, each with its due date: for a ``student``, their own (with any extension)."""
    listing = []
    for name in released(config):
        folder = config.course_root / config.release_directory / name
        due = deadlines.due_of(config, name, student)
        listing.append(
            {
                "assignment": name,
                "due_date": due.isoformat() + "Z" if due else None,
                "notebooks": sorted(
                    p.stem for p in release_files(folder) if p.suffix == ".ipynb" and len(p.parts) == 1
                ),
                "feedback_policy": config.policy(name),
            }
        )
    return listing


def release_payload(config: ServiceConfig, assignment: str, student: str | None = None) -> dict[str, Any]:
    """The release's files for ``student``: each notebook with their own variant values (``grader.variants``);
    with no student (staff), as released, the marks and the instructor's values in it."""
    folder = release_dir(config, assignment)
    files, total = [], 0
    for relative in release_files(folder):
        data = (folder / relative).read_bytes()
        if student and relative.suffix == ".ipynb":
            data = personalised(config.course_root, assignment, student, data)
        total += len(data)
        if total > MAX_RELEASE_BYTES:
            raise StudentError(f"the release of {assignment} is over {MAX_RELEASE_BYTES // 2**20} MB; ask your TA")
        files.append({"path": relative.as_posix(), "content": base64.b64encode(data).decode("ascii")})
    return {"assignment": assignment, "files": files}


def personalised(root: Path, assignment: str, student: str, data: bytes) -> bytes:
    """The notebook ``data`` with ``student``'s variant values; unchanged when it marks none."""
    if b"variant" not in data:
        return data
    nb = nbformat.reads(data.decode("utf-8"), as_version=4)  # type: ignore[no-untyped-call]
    if not variants.find_cells(nb, assignment):
        return data
    mine = variants.personalise(nb, variant_secret.require(root), assignment, student)
    return (nbformat.writes(mine) + "\n").encode("utf-8")  # type: ignore[no-untyped-call,no-any-return]


def _points(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else "–"


def feedback_html(view: dict[str, Any], notebook: str, written: Sequence[release.Released] = ()) -> str:
    """A self-contained, student-safe feedback page for one graded attempt (everything escaped)."""
    e = html.escape
    title = f"Feedback: {view['assignment']} / {notebook}"
    rows = []
    for test in view.get("tests", []):
        mark = "PASS" if test["passed"] else "FAIL"
        message = f"<pre>{e(test['message'])}</pre>" if test.get("message") else ""
        rows.append(
            f'<tr class="{mark.lower()}"><td>{e(test["name"])}</td><td>{mark}</td>'
            f"<td>{_points(test['points'])} / {_points(test['max_points'])}</td><td>{message}</td></tr>"
        )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}"
        "tr.fail td:nth-child(2){color:#b00}tr.pass td:nth-child(2){color:#070}pre{white-space:pre-wrap;margin:0}"
        "</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p>Submitted {e(view['received_at'])} (submission {e(str(view['id']))})</p>",
        f'<p class="score">Score: {_points(view.get("final_score"))} / {_points(view.get("max_score"))}',
    ]
    if view.get("late_penalty"):
        parts.append(f" (raw {_points(view.get('score'))}, late penalty {_points(view['late_penalty'])})")
    parts.append("</p>")
    if view.get("reason"):
        parts.append(f'<p class="reason">{e(view["reason"])}</p>')
    if rows:
        parts.append("<table><tr><th>test</th><th>result</th><th>points</th><th>message</th></tr>")
        parts.extend(rows)
        parts.append("</table>")
    if "tests_hidden_until" in view:
        parts.append(f"<p>Per-test results are shown {e(view['tests_hidden_until'])}.</p>")
    parts.extend(_written_html(written))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _written_html(written: Sequence[release.Released]) -> list[str]:
    """The released written answers: each one's points, rubric items applied and comment."""
    if not written:
        return []
    e = html.escape
    parts = ["<h2>Written answers (graded by course staff)</h2>"]
    for answer in written:
        got = "not graded yet" if answer.points is None else f"{answer.points:g} of {answer.max_points:g} points"
        parts.append(f"<h3>{e(answer.cell)}: {got}</h3>")
        if answer.items:
            parts.append("<table><tr><th>points</th><th>rubric item</th></tr>")
            parts.extend(f"<tr><td>{i.points:+g}</td><td>{e(i.text)}</td></tr>" for i in answer.items)
            parts.append("</table>")
        if answer.comment:
            parts.append(f'<p class="comment"><strong>Comment:</strong> {e(answer.comment)}</p>')
    return parts


def feedback_listing(config: ServiceConfig, store: Store, student: str, assignment: str | None) -> list[dict[str, Any]]:
    """Every attempt of ``student`` (optionally of one assignment), with a feedback page when graded."""
    notebooks: dict[str, str] = {}
    answer = []
    own = store.submissions(student=student, assignment=assignment)
    # the written answers' grades go with each assignment's newest graded attempt: the one nbgrader holds
    newest = {s.assignment: s.id for s in own if s.status == "graded"}
    marked = release.student_view(store, config.course_root, student, list(newest))
    for submission in own:
        view = feedback.view(config, submission, store.results(submission.id), staff=False)
        if submission.assignment not in notebooks:
            folder = config.course_root / config.release_directory / submission.assignment
            names = sorted(p.stem for p in folder.glob("*.ipynb")) if folder.is_dir() else []
            notebooks[submission.assignment] = names[0] if names else submission.assignment
        notebook = notebooks[submission.assignment]
        item: dict[str, Any] = {**view, "notebook": notebook}
        if submission.status == "graded":
            written = [w for w in marked if w.assignment == submission.assignment]
            item["html"] = feedback_html(
                view, notebook, written if newest[submission.assignment] == submission.id else ()
            )
        answer.append(item)
    return answer


async def list_assignments(request: Request) -> Response:
    """
    summary: Released assignments with their notebooks and due dates (for `nbgrader list`).
    responses:
      200: {description: the released assignments}
      401: {description: missing or invalid token}
    """
    user = auth.user(request)
    return JSONResponse(assignment_listing(request.app.state.config, None if user.is_staff else user.id))


async def get_release(request: Request) -> Response:
    """
    summary: The student files of one released assignment, base64 in JSON (for `nbgrader fetch_assignment`).
    parameters:
      - {name: assignment, in: path, required: true, schema: {type: string}}
      - {name: student, in: query, required: false, schema: {type: string}, description: "staff: whose values"}
    responses:
      200: {description: "the release files, a notebook with per-student variants written with the caller's values"}
      401: {description: missing or invalid token}
      404: {description: not released}
    """
    user = auth.user(request)
    student = request.query_params.get("student") if user.is_staff else user.id
    return JSONResponse(release_payload(request.app.state.config, request.path_params["assignment"], student))


async def get_feedback(request: Request) -> Response:
    """
    summary: Your attempts with a student-safe HTML feedback page per graded one (for `nbgrader fetch_feedback`).
    parameters:
      - {name: assignment, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: your attempts}
      401: {description: missing or invalid token}
    """
    user = auth.user(request)
    student = request.query_params.get("student", user.id) if user.is_staff else user.id
    assignment = request.path_params.get("assignment")
    return JSONResponse(feedback_listing(request.app.state.config, request.app.state.store, student, assignment))


routes: list[Route] = [
    Route("/api/assignments", list_assignments, methods=["GET"]),
    Route("/api/assignments/{assignment}/release", get_release, methods=["GET"]),
    Route("/api/assignments/{assignment}/feedback", get_feedback, methods=["GET"]),
    Route("/api/feedback", get_feedback, methods=["GET"]),
]
