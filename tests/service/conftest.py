"""A real service on loopback: ``grader serve`` in a subprocess, on a copy of the course."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from grader import course
from grader.service.records.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "submissions"
POSTGRES = os.environ.get("GRADER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    root: Path
    url: str
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    db_url: str | None = None  # another database than the course's gradebook.db (grader serve --db-url)
    broker_url: str | None = None  # publish to `grader worker`s instead of grading in the service

    @functools.cached_property
    def store(self) -> Store:
        return Store(course.gradebook_url(self.root, self.db_url))

    def token(self, user: str, role: str = "student") -> str:
        return self.store.issue_token(user, role)

    def client(self, token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def start(self) -> None:
        self.log = self.root / "server.log"
        port = self.url.rsplit(":", 1)[1]
        command = [str(Path(sys.executable).parent / "grader"), "serve", "--port", port]
        command += ["--db-url", self.db_url] if self.db_url else []
        command += ["--broker-url", self.broker_url] if self.broker_url else []
        self.process = launch(command, self.root, self.log)
        wait_ready(self.process, self._healthy, self.log, "the service")

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(30)

    def wait_graded(self, token: str, submission_id: int, timeout: float = 240) -> dict:  # type: ignore[type-arg]
        deadline = time.monotonic() + timeout
        with self.client(token) as client:
            while time.monotonic() < deadline:
                wait = f"{max(0.0, min(20.0, deadline - time.monotonic())):.1f}"  # answered once graded
                body = client.get(f"/api/submissions/{submission_id}", params={"wait": wait}, timeout=60).json()
                if body["status"] in ("graded", "failed"):
                    return dict(body)
        raise AssertionError(f"submission {submission_id} not graded in {timeout} s: {body}")


def launch(command: list[str], root: Path, log: Path) -> subprocess.Popen[bytes]:
    """``command`` on the course copy ``root`` in a process group of its own, logging to ``log``."""
    return subprocess.Popen(
        command,
        cwd=root,
        env=dict(os.environ, GRADER_COURSE_ROOT=str(root)),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(process: subprocess.Popen[bytes], ready: Callable[[], bool], log: Path, what: str) -> None:
    """Until ``ready()``; a process that exits first, or is not ready in 5 minutes, fails with its log.

    A first start registers the course's assignments with nbgrader (some 30 s on a busy two-core machine)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if ready():
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start:\n{log.read_text(errors='replace')[-4000:]}")


@contextlib.contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A database of its own on the local PostgreSQL (``GRADER_TEST_POSTGRES``), dropped afterwards."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = sa.create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as error:
        raise RuntimeError(f"PostgreSQL is not reachable at {POSTGRES} (.ci/run starts it): {error}") from None
    try:
        yield f"{POSTGRES}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def submit(client: httpx.Client, assignment: str, data: bytes, name: str = "nb.ipynb") -> httpx.Response:
    return client.post("/api/submissions", data={"assignment": assignment}, files={"file": (name, data)})


def grade(server: Server, student: str, assignment: str, data: bytes) -> dict:  # type: ignore[type-arg]
    """Submit ``data`` as ``student`` and wait for the graded result."""
    token = server.token(student)
    with server.client(token) as client:
        response = submit(client, assignment, data)
    assert response.status_code == 202, response.text
    return server.wait_graded(token, response.json()["id"], timeout=300)


def fixture_bytes(assignment: str, name: str) -> bytes:
    return (FIXTURES / assignment / f"{name}.ipynb").read_bytes()


def with_solution(assignment: str, grade_id: str, code: str, base: str = "correct") -> bytes:
    """The ``base`` fixture with one answer cell replaced by ``code``."""
    import json

    nb = json.loads(fixture_bytes(assignment, base))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            cell["source"] = code
            break
    else:
        raise KeyError(grade_id)
    return json.dumps(nb).encode()


def running_server(base: Path, settings: str, db_url: str | None = None) -> Iterator[Server]:
    """``grader serve`` on a fresh copy of the course whose nbgrader_config.py ends with ``settings``."""
    root = course.copy_course(base / "course")
    with (root / "nbgrader_config.py").open("a") as config:
        config.write("\n" + settings)
    course.generate_releases(root, db_url=db_url)
    srv = Server(root, f"http://127.0.0.1:{free_port()}", db_url=db_url)
    srv.start()
    try:
        yield srv
    finally:
        srv.kill(signal.SIGTERM)


# Tighter limits than the course's, so the limit tests finish quickly; two workers, as at a deadline.
# The notebook limit leaves room for a never-ending cell to use up its 10 s of its own time on a loaded
# machine: such a cell's kernel is reniced (about a tenth of a core's share), and at 90 s it once
# reached the notebook limit first, so the cells after it did not run (test_limits, with stock nbgrader
# grading in other tests on the same 2 CPUs).
QUICK = "c.Execute.timeout = 10\nc.GraderService.notebook_timeout_s = 180\nc.GraderService.workers = 2\n"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("service"), QUICK)


A = "ps2_autograd"


def seed(server: Server) -> dict[str, str]:
    """ps2 was due a day and an hour ago; alice and bob have a two-day extension, carol has none.

    alice: correct; bob: grad-not-zeroed, then sum-instead-of-mean; carol: grad-not-zeroed, late.
    """
    from grader.service import config
    from grader.service.rules import deadlines

    tokens = {name: server.token(name) for name in ("alice", "bob", "carol")}
    tokens["ta"] = server.token("ta-tess", "ta")
    settings = config.load(server.root)
    from nbgrader.api import Gradebook

    with Gradebook(settings.db_url) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=dt.datetime.utcnow() - dt.timedelta(days=1, hours=1))
    for student in ("alice", "bob"):
        deadlines.grant_extension(settings, A, student, hours=48)
    plan = [
        ("alice", "correct"),
        ("bob", "grad-not-zeroed"),
        ("bob", "sum-instead-of-mean"),
        ("carol", "grad-not-zeroed"),
    ]
    for student, fixture in plan:
        with server.client(tokens[student]) as client:
            response = submit(client, A, fixture_bytes(A, fixture))
        assert response.status_code == 202, response.text
        server.wait_graded(tokens[student], response.json()["id"])
    return tokens


@pytest.fixture(scope="session")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """A service of its own with known data for the dashboard tests (pages over HTTP and in a browser)."""
    for server in running_server(tmp_path_factory.mktemp("dashboard"), QUICK):
        yield server, seed(server)
