"""The dashboard's "Tests of the tests" page in a real browser, after a real ``grader validate``.

A small course (``minicourse``) with a hidden test weakened to a shape check is validated from the
command line; ``grader serve`` on that course then shows the report to a TA (the surviving mutants with
their changed line, the test cells, the verdict) and refuses it to a student (403). Needs Debian's
Chromium, like the dashboard's other browser tests.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from grader import course

from ..browser import ARTIFACTS, launched, require_chromium
from ..service.conftest import Server, free_port
from ..service.web.test_pages import browser
from .conftest import Validated

require_chromium()

from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture(scope="module")
def validated(weakened: Validated) -> Iterator[Server]:
    """``grader serve`` on the weakened course, once ``grader validate`` has written its report."""
    root = weakened.root
    code, out, err, report = weakened.result
    assert code == 1 and report is not None and report["survivors"] > 0, out + err
    course.generate_releases(root)
    server = Server(root, f"http://127.0.0.1:{free_port()}")
    server.start()
    try:
        yield server
    finally:
        server.kill(signal.SIGTERM)


@pytest.fixture
def page() -> Iterator[Page]:
    with launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        yield context.new_page()
        context.close()


def test_a_ta_reads_the_surviving_mutants_from_the_assignment_page(page: Page, validated: Server) -> None:
    page.goto(validated.url + "/login?next=/admin/assignments/gd_step")
    page.get_by_label("Your access token").fill(validated.token("ta-tess", "ta"))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="gd_step", exact=True)).to_be_visible()
    page.get_by_role("link", name="Tests of the tests").click()
    expect(page.get_by_role("heading", name="Tests of the tests: gd_step")).to_be_visible()
    expect(page.get_by_role("status").first).to_contain_text("FAILED")
    survivors = page.get_by_role("table", name="Surviving mutants")
    expect(survivors).to_contain_text("+ w += lr * w.grad")
    expect(survivors).to_contain_text("sign-flipped")
    expect(page.get_by_role("table", name="Test cells").get_by_role("rowheader", name="test_sgd_step")).to_be_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "validation.png"), full_page=True)


def test_a_student_is_refused_the_validation_page(page: Page, validated: Server) -> None:
    token = validated.token("dave")
    with browser(validated, token) as student:
        response = student.get("/admin/assignments/gd_step/validation")
    assert response.status_code == 403
    assert "this page is for course staff" in response.text and "sgd_step" not in response.text
    page.goto(validated.url + "/login?next=/admin/assignments/gd_step/validation")
    page.get_by_label("Your access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Not for you")).to_be_visible()


def test_without_a_report_the_page_says_how_to_make_one(validated: Server) -> None:
    report = validated.root / "validation" / "gd_step.json"
    kept = report.read_bytes()
    report.unlink()
    try:
        with browser(validated, validated.token("ta-tess", "ta")) as ta:
            response = ta.get("/admin/assignments/gd_step/validation")
            missing = ta.get("/admin/assignments/nothing/validation")
    finally:
        report.write_bytes(kept)
    assert response.status_code == 200
    assert (
        "No validation report yet. On the course's machine, run <code>grader validate gd_step</code>" in response.text
    )
    assert missing.status_code == 404
