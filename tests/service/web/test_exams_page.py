"""A timed exam through a real ``grader serve``: start on /me in Chromium (keyboard, axe), the server's end, a
submission within it, one more minute from staff, an accommodated student's longer clock, and the refusal after
the end. Time passing is the stored end moved into the past (the server's clock decides), never a sleep.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from grader.service.records.tables import exam_starts
from grader.service.rules import exams

from ...browser import launched, require_chromium
from ..conftest import QUICK, Server, fixture_bytes, running_server, submit

require_chromium()

from axe_playwright_python.sync_playwright import Axe  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

A = "ps1_tensors"
WCAG_22_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}}
HONOUR = "I will work alone and use only the course notes."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    opens = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=1)
    closes = opens + dt.timedelta(hours=4)
    settings = QUICK + (
        f"c.GraderService.exams = {{'{A}': {{'opens': '{opens:%Y-%m-%dT%H:%M}', 'closes': '{closes:%Y-%m-%dT%H:%M}', "
        f"'duration_minutes': 60, 'grace_minutes': 1, 'honour': {HONOUR!r}}}}}\n"
    )
    yield from running_server(tmp_path_factory.mktemp("exam"), settings)


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.removesuffix("Z"))


def test_a_student_starts_on_the_page_by_keyboard_and_the_server_fixes_the_end(served: Server) -> None:
    ada = served.token("ada")
    with served.client(ada) as client:
        early = submit(client, A, fixture_bytes(A, "correct"))
        assert early.status_code == 403, early.text
        assert early.json()["error"] == (
            "ps1_tensors is an exam: start it first (Start exam on your page of the service, /me)"
        )
        assert client.get(f"/api/exams/{A}").json()["started_at"] is None
    with launched() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(f"{served.url}/login")
        page.get_by_label("Your access token").fill(ada)
        page.get_by_label("Your access token").press("Enter")
        page.wait_for_url(lambda url: "/login" not in url)
        section = page.get_by_role("region", name=f"Exam: {A}")
        expect(section).to_contain_text("60 minutes from when you start")
        assert Axe().run(page, options=WCAG_22_AA).violations_count == 0
        section.get_by_label(HONOUR).focus()
        page.keyboard.press("Space")
        section.get_by_role("button", name=f"Start exam {A}").focus()
        page.keyboard.press("Enter")
        expect(section).to_contain_text("Your time ends at")
        expect(section).to_contain_text("submissions are accepted 1 minutes after it")
        assert Axe().run(page, options=WCAG_22_AA).violations_count == 0
    with served.client(ada) as client:
        clock = client.get(f"/api/exams/{A}").json()
        assert _utc(clock["ends_at"]) - _utc(clock["started_at"]) == dt.timedelta(minutes=60)
        assert 3500 < clock["seconds_left"] <= 3600
        again = client.post(f"/api/exams/{A}/start", json={"honour": True}).json()  # another laptop: the same end
        assert again["ends_at"] == clock["ends_at"]
        graded = submit(client, A, fixture_bytes(A, "correct"))
        assert graded.status_code == 202, graded.text


def test_staff_give_more_time_and_an_accommodated_student_has_a_longer_clock(served: Server) -> None:
    exam = exams.parse({A: _settings(served)})[A]
    exams.import_csv(served.store, "student_id,multiplier,extra_minutes,note\nbea,1.5,5,DSO\n", {"bea"}, {A: exam})
    bea = served.token("bea")
    with served.client(bea) as client:
        refused = client.post(f"/api/exams/{A}/start", json={})
        assert refused.status_code == 400 and refused.json()["error"].startswith(
            f"accept the honour statement of {A} to start it"
        )
        clock = client.post(f"/api/exams/{A}/start", json={"honour": True}).json()
    assert _utc(clock["ends_at"]) - _utc(clock["started_at"]) == dt.timedelta(minutes=95)  # 60 x 1.5 + 5
    with served.client(served.token("ta-one", "ta")) as client:
        more = client.post(f"/api/admin/exams/{A}/extend", json={"student": "bea", "minutes": 10})
        bad = client.post(f"/api/admin/exams/{A}/extend", json={"student": "bea", "minutes": -1})
    assert more.status_code == 200 and _utc(more.json()["ends_at"]) - _utc(clock["ends_at"]) == dt.timedelta(minutes=10)
    assert bad.status_code == 400 and bad.json()["error"] == "give a number of minutes above 0, not -1"
    with served.client(bea) as client:
        assert client.post(f"/api/admin/exams/{A}/extend", json={"student": "bea", "minutes": 5}).status_code == 403
    assert [e[1:3] for e in exams.events(served.store, A, "bea")] == [("start", "bea"), ("extend", "ta-one")]


def test_after_the_end_and_the_grace_a_submission_is_refused_and_nothing_stored_changes(served: Server) -> None:
    ada = served.token("ada")
    before = [s.id for s in served.store.submissions(student="ada", assignment=A)]
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=2)
    with served.store.engine.begin() as conn:  # her hour is over (1 minute of grace, too)
        conn.execute(
            sa.update(exam_starts).where(exam_starts.c.student == "ada").values(ends_at=past.replace(microsecond=0))
        )
    with served.client(ada) as client:
        late = submit(client, A, fixture_bytes(A, "correct"))
    assert late.status_code == 403
    assert late.json()["error"] == (
        f"your exam {A} ended at {past:%Y-%m-%d %H:%M:%S} UTC (and its 1 minute of grace): this submission was not "
        "accepted; what you submitted before is kept"
    )
    assert [s.id for s in served.store.submissions(student="ada", assignment=A)] == before


def _settings(served: Server) -> dict[str, object]:
    from grader.service import config as service_config

    return dict(service_config.load(served.root).exams[A])
