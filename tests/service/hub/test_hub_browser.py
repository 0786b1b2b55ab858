"""Signing in to the dashboard through JupyterHub's OAuth, in a real browser (Chromium via Playwright).

The student lands on their own page, the TA on the gradebook, a hub user in neither course group on a 403
naming the groups. Needs ``/usr/bin/chromium``; skipped without it unless ``GRADER_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ...browser import launched, require_chromium
from ..conftest import Server
from .conftest import PASSWORD, Hub

require_chromium()

from playwright.sync_api import Browser, Page  # noqa: E402


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    context = chromium.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def hub_sign_in(page: Page, srv: Server, user: str, start: str = "/") -> int:
    """Open ``start`` on the service, sign in on the hub's own login page; the final page's status."""
    page.goto(srv.url + start)
    page.wait_for_url(lambda url: "/hub/login" in url)
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(PASSWORD)
    with page.expect_response(lambda r: "/oauth_callback" in r.url) as callback:
        page.locator("#login_submit").click()
    assert callback.value.status == 303
    page.wait_for_load_state()
    final = page.request.get(page.url)
    return final.status


def test_a_student_lands_on_their_page(page: Page, hub_and_service: tuple[Hub, Server]) -> None:
    _, srv = hub_and_service
    assert hub_sign_in(page, srv, "alice") == 200
    assert page.url == srv.url + "/me"
    assert "alice" in page.content()


def test_a_ta_lands_on_the_dashboard(page: Page, hub_and_service: tuple[Hub, Server]) -> None:
    _, srv = hub_and_service
    assert hub_sign_in(page, srv, "tom") == 200
    assert page.url == srv.url + "/admin"


def test_an_outsider_gets_a_403_naming_the_groups(page: Page, hub_and_service: tuple[Hub, Server]) -> None:
    _, srv = hub_and_service
    page.goto(srv.url + "/")
    page.wait_for_url(lambda url: "/hub/login" in url)
    page.locator("#username_input").fill("olga")
    page.locator("#password_input").fill(PASSWORD)
    with page.expect_response(lambda r: "/oauth_callback" in r.url) as callback:
        page.locator("#login_submit").click()
    assert callback.value.status == 403
    page.wait_for_load_state()
    assert "formgrade-c1" in page.content() and "nbgrader-c1" in page.content()
