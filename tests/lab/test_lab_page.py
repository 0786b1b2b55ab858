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
import shutil
import subprocess
from pathlib import Path

from grader.service.marking import release

from ..browser import ARTIFACTS, launched, require_chromium
from ..service.conftest import FIXTURES, Server
from .conftest import BIN, STUDENT, A, Lab, backdate, clean_env, set_due, student_home


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
        # after the upload the page asks once, and the service answers when the grade is recorded: no polling
        with page.expect_response(lambda r: "/grader/api/state?wait=" in r.url, timeout=240_000) as waited:
            section.get_by_role("button", name=f"Submit {A}").click()
        assert [s["status"] for s in waited.value.json()["submissions"]] == ["graded"]
        expect(section.locator(".error")).to_have_count(0)
        first = section.locator("tr.attempt").nth(0)
        expect(first).to_contain_text("graded", timeout=240_000)
        expect(first).to_contain_text("this one counts")
        expect(section.locator("td.msg").first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "lab-scores-on-time.png"))

        backdate(server, STUDENT)
        set_due(server, dt.datetime.utcnow() - dt.timedelta(days=1, hours=1))
        section.get_by_role("button", name=f"Submit {A}").click()
        question = section.locator("p.question")
        expect(question).to_contain_text("Submit late, with the late penalty?")
        expect(question).to_contain_text("late penalty")
        page.screenshot(path=str(ARTIFACTS / "lab-scores-confirm-late.png"))
        assert len(server.store.submissions(student=STUDENT, assignment=A)) == 1  # nothing sent before yes
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

        # staff release the written answers' grades (hers were left as released: 0, nobody grades them)
        until = dt.datetime.utcnow().replace(microsecond=0) + dt.timedelta(days=7)
        release.release(server.store, server.root, A, actor="prof", regrades_until=until)
        page.reload()
        written = page.locator(f"#a-{A} .written")
        expect(written).to_contain_text("Written answers (graded by course staff)")
        expect(written).to_contain_text("sum_gradient: 0 of 3 points")
        expect(written).to_contain_text(
            f"You may ask for a regrade on My submissions until {until:%Y-%m-%d %H:%M} UTC."
        )
    attempts = server.store.submissions(student=STUDENT, assignment=A)
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
