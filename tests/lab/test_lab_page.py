"""The grading page inside a real ``jupyter lab`` (``grader.lab``), in Chromium, against a real service.

A student's working folder with its own ``nbgrader_config.py`` (service URL and token); ``jupyter lab``
started there with the extension enabled; the page at ``/grader/`` submits the notebook of the student's
folder and shows each attempt's score, late penalty, test messages and which attempt counts; a late
resubmission asks first; a refused one shows the service's reason. Also the exchange's
``c.GraderSubmit.confirm_late`` (``nbgrader submit``), on the same service.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ..browser import ARTIFACTS, launched, require_chromium
from ..service.conftest import FIXTURES, QUICK, Server, free_port, running_server

A = "ps2_autograd"
BIN = Path(sys.executable).parent
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
    token: str
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


def set_due(server: Server, due: dt.datetime) -> None:
    from nbgrader.api import Gradebook

    from grader.service import config

    with Gradebook(config.load(server.root).db_url) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=due)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("lab-service"), QUICK)


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


@pytest.fixture(scope="module")
def lab(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    home, _ = student_home(server, tmp_path_factory.mktemp("lab"), "lab-student")
    port, token = free_port(), "lab-test-token"
    command = [str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}", f"--ServerApp.token={token}"]
    command += ["--ServerApp.jpserver_extensions={'grader.lab': True}", f"--ServerApp.root_dir={home}", "--allow-root"]
    log = (home.parent / "lab.log").open("wb")
    process = subprocess.Popen(command, cwd=home, env=clean_env(home), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
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
        raise RuntimeError((home.parent / "lab.log").read_text()[-3000:])
    try:
        yield Lab(home, url, token, process)
    finally:
        process.terminate()
        process.wait(30)


def test_the_page_submits_shows_scores_asks_before_late_and_explains_refusals(server: Server, lab: Lab) -> None:
    require_chromium()
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    set_due(server, dt.datetime.utcnow() + dt.timedelta(days=3))
    notebook = lab.home / A / f"{A}.ipynb"
    shutil.copy(FIXTURES / A / "correct.ipynb", notebook)
    with launched() as browser:
        page = browser.new_context(viewport={"width": 1100, "height": 800}).new_page()
        page.goto(f"{lab.url}/grader/?token={lab.token}")
        section = page.locator(f"#a-{A}")
        section.get_by_role("button", name=f"Submit {A}").click()
        expect(section.locator(".error")).to_have_count(0)
        first = section.locator("tr.attempt").nth(0)
        expect(first).to_contain_text("graded", timeout=240_000)
        expect(first).to_contain_text("this one counts")
        expect(section.locator("td.msg").first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "lab-scores-on-time.png"))

        backdate(server, "lab-student")
        set_due(server, dt.datetime.utcnow() - dt.timedelta(days=1, hours=1))
        section.get_by_role("button", name=f"Submit {A}").click()
        question = section.locator("p.question")
        expect(question).to_contain_text("Submit late, with the late penalty?")
        expect(question).to_contain_text("late penalty")
        page.screenshot(path=str(ARTIFACTS / "lab-scores-confirm-late.png"))
        assert len(server.store.submissions(student="lab-student")) == 1  # nothing sent before yes
        section.get_by_role("button", name="Yes, submit late").click()
        second = section.locator("tr.attempt").nth(1)
        expect(second).to_contain_text("graded", timeout=240_000)
        expect(second).to_contain_text("this one counts")  # the service's rule (latest) picks it
        expect(first).not_to_contain_text("this one counts")
        penalty = float(second.locator("td.penalty").inner_text())
        assert penalty > 0
        page.screenshot(path=str(ARTIFACTS / "lab-scores-late.png"), full_page=True)

        shutil.copy(FIXTURES / "ps1_tensors" / "correct.ipynb", notebook)  # not this assignment's notebook
        section.get_by_role("button", name=f"Submit {A}").click()
        error = section.locator(".error")
        expect(error).to_contain_text("Not submitted:")
        text = error.inner_text()
        assert "Traceback" not in text and "\n" not in text.strip()
        page.screenshot(path=str(ARTIFACTS / "lab-scores-refused.png"))
    attempts = server.store.submissions(student="lab-student")
    assert len(attempts) == 2


def test_nbgrader_submit_confirm_late(server: Server, tmp_path: Path) -> None:
    home, token = student_home(server, tmp_path, "lab-cli")
    shutil.copy(FIXTURES / A / "correct.ipynb", home / A / f"{A}.ipynb")
    env = clean_env(home)
    set_due(server, dt.datetime.utcnow() + dt.timedelta(days=3))

    def submit(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "nbgrader"), "submit", A, *extra], cwd=home, env=env, capture_output=True, text=True, timeout=300
        )

    assert submit().returncode == 0
    server.wait_graded(token, server.store.submissions(student="lab-cli")[0].id)
    backdate(server, "lab-cli")
    set_due(server, dt.datetime.utcnow() - dt.timedelta(days=1, hours=1))
    refused = submit()
    assert refused.returncode != 0
    assert "refused (409)" in refused.stderr and "--GraderSubmit.confirm_late=True" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert len(server.store.submissions(student="lab-cli")) == 1
    late = submit("--GraderSubmit.confirm_late=True")
    assert late.returncode == 0, late.stderr
    attempts = server.store.submissions(student="lab-cli")
    assert len(attempts) == 2
    body = server.wait_graded(token, attempts[-1].id)
    assert body["status"] == "graded" and body["late_penalty"] > 0, json.dumps(body)
