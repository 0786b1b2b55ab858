"""The whole launch in Chromium: the student clicks the tool's link in the LMS, the LMS initiates the login,
the tool sends the browser to the LMS's auth endpoint, whose page auto-posts the id_token to /lti/launch;
the browser lands on the dashboard signed in. Needs /usr/bin/chromium (skipped without it, like
tests/service/web/test_browser.py, unless GRADER_REQUIRE_BROWSER=1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ...browser import launched, require_chromium
from ..conftest import Server
from .platform import INSTRUCTOR, LEARNER, LMS

require_chromium()

from playwright.sync_api import Browser, expect  # noqa: E402


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


@pytest.mark.parametrize(
    ("sub", "roles", "lands_on"), [("browser-learner", [LEARNER], "/me"), ("browser-teacher", [INSTRUCTOR], "/admin")]
)
def test_a_launch_from_the_lms_lands_signed_in(
    chromium: Browser, tool: Server, platform: LMS, sub: str, roles: list[str], lands_on: str
) -> None:
    before, platform.user = platform.user, (sub, roles)
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{platform.url}/start?tool={tool.url}")
        page.wait_for_url(f"{tool.url}{lands_on}*", timeout=20_000)
        expect(page.locator("body")).to_contain_text(sub)
        cookies = {c["name"]: c for c in context.cookies(tool.url)}
        assert cookies["grader_session"]["httpOnly"] is True
        user = tool.store.user_for_token(cookies["grader_session"]["value"])
        assert user is not None and user.id == sub
    finally:
        context.close()
        platform.user = before
