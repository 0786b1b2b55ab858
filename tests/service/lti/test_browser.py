"""The whole launch in Chromium: the student clicks the tool's link in the LMS, the LMS initiates the login,
the tool sends the browser to the LMS's auth endpoint, whose page auto-posts the id_token to /lti/launch;
the browser lands on the dashboard signed in; and the dashboard's roster sync button. Needs
/usr/bin/chromium (skipped without it, like tests/service/web/test_browser.py, unless
GRADER_REQUIRE_BROWSER=1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ...browser import ARTIFACTS, launched, require_chromium
from ..conftest import Server
from .platform import CONTEXT, INSTRUCTOR, LEARNER, LMS

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


def test_the_dashboard_button_syncs_the_roster(chromium: Browser, roster_tool: Server, lms: LMS) -> None:
    """The instructor launches from the LMS, opens Settings and presses the course's sync button."""
    lms.members[CONTEXT] = [
        {"user_id": "h-t", "roles": [INSTRUCTOR], "name": "Prof Hopper", "email": "h.prof@uni.example"},
        {"user_id": "h-s1", "roles": [LEARNER], "lis_person_sourcedid": "h-S1", "given_name": "Hal"},
        {"user_id": "h-s2", "roles": [LEARNER], "email": "h.two@uni.example"},
    ]
    lms.user = ("h-t", [INSTRUCTOR])
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{lms.url}/start?tool={roster_tool.url}")
        page.wait_for_url(f"{roster_tool.url}/admin*", timeout=20_000)
        page.goto(f"{roster_tool.url}/admin/settings")
        form = page.locator("form", has_text=lms.issuer)
        expect(form.get_by_role("button")).to_have_text(f"Sync the roster of PyTorch ({CONTEXT})")
        form.get_by_role("button").click()
        notice = page.get_by_role("status")
        expect(notice).to_contain_text(
            f"Synced the roster of PyTorch ({CONTEXT}): 2 active student(s), 1 staff; 2 added (h-s1, h.two), "
            "0 reactivated, 1 updated (h-t), 0 dropped, 0 unchanged."
        )
        notice.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "lti-roster-sync.png"), full_page=True)
        # the students are in the gradebook now: the dashboard lists them
        page.goto(f"{roster_tool.url}/admin")
        expect(page.locator("body")).to_contain_text("h.two")
    finally:
        context.close()
