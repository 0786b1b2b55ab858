"""A page inside JupyterLab's own server (``/grader/``): assignments, submit, every attempt's score.

``pip install`` of the package enables it (the wheel installs ``etc/jupyter/jupyter_server_config.d/
grader.json``; after an editable install, ``jupyter server extension enable grader.lab``).  The Lab
opens it in a tab: *Course grades* on the Launcher, in the File menu and the command palette (the
prebuilt JupyterLab extension ``grader-course-grades``: source in ``labextension-src/``, bundle in
``labextension/``, installed by the wheel into ``share/jupyter/labextensions/``).
It also answers the *Submit* of nbgrader's own Assignments panel (``panel.py``): one sentence, never
a traceback.
Its handlers call the grading service server-side with the student's ``c.GraderExchange.url`` /
``c.GraderExchange.token`` (from ``nbgrader_config.py``, else ``$GRADER_URL`` / ``$GRADER_TOKEN``):
the token never reaches the page.  Everything shown is what the service answers: its score, late
penalty, per-test messages, which attempt counts and, for a refused submission, its reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
from jupyter_server.base.handlers import JupyterHandler
from tornado import web
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from .panel import PanelSubmitHandler

PAGE = Path(__file__).with_name("page.html")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "grader.lab"}]


def student_config(root: str) -> tuple[str, str]:
    """The service URL and token the student's nbgrader exchange uses: ``nbgrader_config.py`` where nbgrader
    looks (the Jupyter config path, then ``root``), else ``$GRADER_URL`` and ``$GRADER_TOKEN``, else on a
    JupyterHub the single-user server's own ``$JUPYTERHUB_API_TOKEN`` (as ``GraderExchange`` does)."""
    from jupyter_core.paths import jupyter_config_path

    config = Config()
    for folder in [*reversed(jupyter_config_path()), root]:  # the later, the stronger: as nbgrader merges them
        path = Path(folder) / "nbgrader_config.py"
        if path.is_file():
            config.merge(PyFileConfigLoader(path.name, path=str(path.parent)).load_config())
    section = config.get("GraderExchange", {})
    url = str(section.get("url", "") or os.environ.get("GRADER_URL", ""))
    token = str(
        section.get("token", "") or os.environ.get("GRADER_TOKEN", "") or os.environ.get("JUPYTERHUB_API_TOKEN", "")
    )
    return url.rstrip("/"), token


class Base(JupyterHandler):
    def answer(self, status: int, body: Any) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    async def service(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        url, token = student_config(self.settings.get("server_root_dir", os.getcwd()))
        if not url or not token:
            return 400, {"error": "No grading service URL or token: set c.GraderExchange.url and .token."}
        try:
            async with httpx.AsyncClient(base_url=url, timeout=120) as client:
                response = await client.request(method, path, headers={"Authorization": f"Bearer {token}"}, **kwargs)
        except httpx.HTTPError as error:
            return 502, {"error": f"Cannot reach the grading service at {url} ({type(error).__name__})."}
        try:
            body = response.json()
        except ValueError:
            body = {"error": f"The grading service answered {response.status_code} without JSON."}
        return response.status_code, body


class PageHandler(Base):
    @web.authenticated
    def get(self) -> None:
        self.xsrf_token  # noqa: B018  (sets the _xsrf cookie the page's POSTs send back)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(PAGE.read_text())


WAIT_S = 25  # how long one ``state?wait=ID`` request waits for that attempt's grade (the service allows 60)


class AssignmentsHandler(Base):
    @web.authenticated
    async def get(self) -> None:
        waiting = self.get_argument("wait", "")
        if waiting.isdigit() and 0 < int(waiting) < 2**63:  # the attempt just submitted: answer once it is graded
            await self.service("GET", f"/api/submissions/{int(waiting)}", params={"wait": str(WAIT_S)})
        status, assignments = await self.service("GET", "/api/assignments")
        if status != 200:
            return self.answer(status, assignments)
        status, attempts = await self.service("GET", "/api/submissions")
        if status != 200:
            return self.answer(status, attempts)
        status, written = await self.service("GET", "/api/written")  # released written answers' grades
        if status != 200:
            return self.answer(status, written)
        self.answer(200, {"assignments": assignments, "submissions": attempts, "written": written})


class SubmitHandler(Base):
    @web.authenticated
    async def post(self) -> None:
        request = json.loads(self.request.body or b"{}")
        assignment = str(request.get("assignment", ""))
        status, assignments = await self.service("GET", "/api/assignments")
        if status != 200:
            return self.answer(status, assignments)
        known = {a["assignment"]: a for a in assignments}
        if assignment not in known:
            return self.answer(404, {"error": f"Assignment {assignment!r} is not released."})
        notebook = f"{known[assignment]['notebooks'][0]}.ipynb"
        root = Path(self.settings.get("server_root_dir", os.getcwd()))
        path = root / assignment / notebook
        if not path.is_file():
            return self.answer(404, {"error": f"{assignment}/{notebook} is not in your folder: fetch it first."})
        form = {"assignment": assignment, "confirm_late": "true" if request.get("confirm_late") else ""}
        status, body = await self.service(
            "POST", "/api/submissions", data=form, files={"file": (notebook, path.read_bytes())}
        )
        self.answer(status, body)


def _load_jupyter_server_extension(server_app: Any) -> None:
    web_app = server_app.web_app
    base = web_app.settings["base_url"].rstrip("/")
    web_app.add_handlers(
        ".*$",
        [
            (f"{base}/grader/?", PageHandler),
            (f"{base}/grader/api/state", AssignmentsHandler),
            (f"{base}/grader/api/submit", SubmitHandler),
            (f"{base}/assignments/(?P<action>submit)", PanelSubmitHandler),  # ahead of nbgrader's (panel.py)
        ],
    )
    server_app.log.info("grader.lab: the grading page is at %sgrader/", web_app.settings["base_url"])
