"""A real grading service and a real ``jupyter lab`` of one student, set up as ``pip install`` would.

``installed``: the wheel of this repository (``pip wheel . --no-deps``), its data files unpacked
under a temporary prefix (``etc/jupyter/...``: grader.lab enabled; ``share/jupyter/labextensions/
grader-course-grades``: the prebuilt Lab extension); the Lab is pointed at them with
``JUPYTER_CONFIG_PATH`` / ``JUPYTER_PATH``, as it would find them in the environment's prefix (the
editable install of the test environment installs no data files).  The Python code is the working
tree's (editable install).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ..service.conftest import QUICK, Server, free_port, running_server

A = "ps2_autograd"
B = "ps1_tensors"
STUDENT = "lab-student"
BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
PLUGIN = "".join(
    f'c.ExchangeFactory.{key} = "grader.exchange.{name}"\n'
    for key, name in {
        "exchange": "GraderExchange",
        "fetch_assignment": "GraderFetchAssignment",
        "submit": "GraderSubmit",
        "list": "GraderList",
        "fetch_feedback": "GraderFetchFeedback",
    }.items()
)


@dataclass
class Lab:
    home: Path
    url: str
    token: str  # the Lab's own login token
    student_token: str  # the student's grading-service token
    env: dict[str, str]
    process: subprocess.Popen[bytes]


def backdate(server: Server, student: str) -> None:
    """The student's attempts so far were received two days ago (on time for a due date a day ago)."""
    import sqlalchemy as sa

    from grader.service.records.tables import submissions

    with server.store.engine.begin() as conn:
        conn.execute(
            sa.update(submissions)
            .where(submissions.c.student == student)
            .values(received_at=dt.datetime.utcnow() - dt.timedelta(days=2))
        )


def set_due(server: Server, due: dt.datetime, assignment: str = A) -> None:
    from nbgrader.api import Gradebook

    from grader.service import config

    with Gradebook(config.load(server.root).db_url) as gradebook:
        gradebook.update_or_create_assignment(assignment, duedate=due)


def student_home(server: Server, root: Path, user: str) -> tuple[Path, str]:
    home = root / user
    (home / A).mkdir(parents=True)
    token = server.token(user)
    (home / "nbgrader_config.py").write_text(
        f'c = get_config()\nc.CourseDirectory.course_id = "pytorch101"\n{PLUGIN}'
        f'c.GraderExchange.url = "{server.url}"\nc.GraderExchange.token = "{token}"\n'
    )
    return home, token


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "JUPYTER"))}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"), JUPYTER_DATA_DIR=str(home / ".jdata"))
    return env


def build_wheel(out: Path) -> Path:
    """``pip wheel . --no-deps`` of a copy of the working tree (no build folders left in the tree)."""
    source = out / "source"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "grader", source / "grader", ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    command = [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("grader-*.whl")
    return wheel


@pytest.fixture(scope="package")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="package")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The prefix where ``pip install`` of the wheel puts its data files (``<wheel>.data/data/...``)."""
    prefix = tmp_path_factory.mktemp("prefix")
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            _, marker, rest = name.partition(".data/data/")
            if marker and rest:
                target = prefix / rest
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    return prefix


def lab_env(home: Path, prefix: Path) -> dict[str, str]:
    env = clean_env(home)
    env.update(JUPYTER_PATH=str(prefix / "share" / "jupyter"), JUPYTER_CONFIG_PATH=str(prefix / "etc" / "jupyter"))
    return env


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("lab-service"), QUICK)


@pytest.fixture(scope="package")
def lab(server: Server, installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """``jupyter lab`` in the student's folder; grader.lab and the Lab extension enabled only by the wheel's files."""
    home, student_token = student_home(server, tmp_path_factory.mktemp("lab"), STUDENT)
    env = lab_env(home, installed)
    news = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)  # no "notified about official Jupyter news?" toast over the screenshots
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port, token = free_port(), "lab-test-token"
    command = [str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}", f"--ServerApp.token={token}"]
    command += [f"--ServerApp.root_dir={home}", "--allow-root"]
    log_path = home.parent / "lab.log"
    log = log_path.open("wb")
    process = subprocess.Popen(command, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if process.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/grader/?token={token}", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError(log_path.read_text()[-3000:])
    if process.poll() is not None:
        raise RuntimeError(log_path.read_text()[-3000:])
    try:
        yield Lab(home, url, token, student_token, env, process)
    finally:
        process.terminate()
        process.wait(30)
