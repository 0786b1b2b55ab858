"""Grade passback (LTI AGS) through a real ``grader serve`` with the ``lti-ags`` hook, to the test LMS.

Real submissions are graded by the service; the hook queues the counting final score; the service's
background sender gets a token (client credentials, signed assertion), finds or creates the line
item and posts the score, which the test LMS validates (scopes, media types, body, timestamps).
The LMS goes down, answers 500, loses a line item and refuses a score; the dashboard says so.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
import sqlalchemy as sa

from grader import course, rubrics
from grader.errors import ConfigurationError
from grader.service import config as service_config
from grader.service import hooks
from grader.service.lti import ags, outbox
from grader.service.records.tables import lti_contexts, lti_line_items, lti_members, lti_scores, now
from grader.service.web.sessions import COOKIE

from ..conftest import QUICK, Server, fixture_bytes, running_server, submit
from .conftest import grader
from .lms_ags import LINEITEM_SCOPE, SCORE_SCOPE
from .platform import AGS_SCOPES, CONTEXT, LMS, running_platform

P1 = "ps1_tensors"
P2 = "ps2_autograd"
# the hook on, and a short back-off: 0.5 s, doubling, at most 2 s
SETTINGS = QUICK + 'c.GraderService.after_record = ["lti-ags"]\n'
SETTINGS += "c.GraderService.lti_retry_s = 0.5\nc.GraderService.lti_retry_max_s = 2\n"


def written_max(assignment: str) -> float:
    """The points of the assignment's written answers (graded by a person): part of the LMS's maximum."""
    source = course.REPO_ROOT / "source" / assignment / f"{assignment}.ipynb"
    return sum(c.points for c in rubrics.written_cells(nbformat.read(source, as_version=4)).values())


@pytest.fixture(scope="module")
def lms() -> Iterator[LMS]:
    with running_platform() as platform:
        yield platform


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, lms: LMS) -> Iterator[Server]:
    for srv in running_server(tmp_path_factory.mktemp("ags"), SETTINGS):
        added = grader(
            srv.root,
            "lti",
            "add-platform",
            "--issuer",
            lms.issuer,
            "--client-id",
            lms.client_id,
            "--auth-url",
            f"{lms.url}/auth",
            "--token-url",
            lms.token_url,
            "--jwks-url",
            f"{lms.url}/jwks",
            "--deployment-id",
            lms.deployment_id,
        )
        assert added.returncode == 0, added.stderr
        lms.tool_jwks_url = f"{srv.url}/lti/jwks.json"
        with srv.store.engine.begin() as conn:  # what a launch from the course stores (the AGS claim)
            conn.execute(
                lti_contexts.insert().values(
                    issuer=lms.issuer,
                    context_id=CONTEXT,
                    deployment_id=lms.deployment_id,
                    title="PyTorch",
                    memberships_url=lms.memberships_url(),
                    lineitems_url=lms.lineitems_url(),
                    lineitem_scopes=json.dumps(list(AGS_SCOPES)),
                    updated_at=now(),
                )
            )
        yield srv


def link(service: Server, lms: LMS, student: str) -> str:
    """The student as an LMS user of the course (what a launch or a roster sync stores); their LMS id."""
    with service.store.engine.begin() as conn:
        conn.execute(
            lti_members.insert().values(
                issuer=lms.issuer, lms_user_id=f"lms-{student}", user_id=student, role="student", synced_at=now()
            )
        )
    return f"lms-{student}"


def graded(service: Server, student: str, assignment: str, fixture: str) -> dict[str, Any]:
    token = service.token(student)
    with service.client(token) as client:
        answer = submit(client, assignment, fixture_bytes(assignment, fixture))
    assert answer.status_code == 202, answer.text
    return service.wait_graded(token, answer.json()["id"], timeout=300)


def eventually(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def rows(service: Server, student: str) -> list[Any]:
    with service.store.engine.connect() as conn:
        return conn.execute(
            sa.select(lti_scores).where(lti_scores.c.student == student).order_by(lti_scores.c.id)
        ).all()


def settled(service: Server, student: str, ident: int) -> Any:
    """The outbox row ``ident`` once it is no longer pending, else None."""
    row = next(r for r in rows(service, student) if r.id == ident)
    return None if row.status == "pending" else row


def student_page(service: Server, student: str) -> str:
    with httpx.Client(base_url=service.url, timeout=30) as client:
        client.cookies.set(COOKIE, service.token("ags-admin", "admin"))
        page = client.get(f"/admin/students/{student}")
        assert page.status_code == 200, page.text
        gradebook = client.get("/admin")
        assert gradebook.status_code == 200
    return html.unescape(page.text) + "\n" + html.unescape(gradebook.text)


def stamp(score: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(score["timestamp"]).astimezone(dt.UTC).replace(tzinfo=None)


@pytest.fixture(scope="module")
def ada(service: Server, lms: LMS) -> dict[str, Any]:
    """ada's correct ps1, graded by the service; the LMS has her score."""
    user = link(service, lms, "ada")
    before = now()
    result = graded(service, "ada", P1, "correct")
    assert result["status"] == "graded"
    eventually("ada's score in the LMS", lambda: lms.ags.scores_of(P1, user))
    eventually("recorded as sent", lambda: all(r.status != "pending" for r in rows(service, "ada")))
    return {**result, "before": before, "user": user}


def test_a_recorded_grade_reaches_the_lms(service: Server, lms: LMS, ada: dict[str, Any]) -> None:
    (score,) = lms.ags.scores_of(P1, ada["user"])
    assert score["scoreGiven"] == ada["final_score"] == ada["max_score"] > 0
    # the written answers' points are part of the maximum; until staff grade and release them, the LMS is told so
    assert score["scoreMaximum"] == ada["max_score"] + written_max(P1)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "PendingManual")
    assert ada["before"] <= stamp(score) <= now()
    assert score["timestamp"].endswith("+00:00")
    item = lms.ags.item_for(P1)
    assert item is not None
    assert (item["label"], item["scoreMaximum"], item["tag"]) == (P1, ada["max_score"] + written_max(P1), "grade")
    # the tool asked for exactly the scopes each call needs, with a token it got by its signed assertion
    assert frozenset({LINEITEM_SCOPE}) in lms.grants and frozenset({SCORE_SCOPE}) in lms.grants
    (row,) = rows(service, "ada")
    assert (row.status, row.attempts, row.error) == ("sent", 0, "")
    with service.store.engine.connect() as conn:
        remembered = conn.execute(sa.select(lti_line_items.c.url).where(lti_line_items.c.assignment == P1)).scalar()
    assert remembered == item["id"]
    page = student_page(service, "ada")
    assert f'data-assignment="{P1}" data-status="sent"' in page
    assert "Grades in the LMS (LTI): 1 sent · 0 pending · 0 failed" in page


def test_an_extension_and_a_regrade_send_the_new_score(service: Server, lms: LMS) -> None:
    """bea's ps2 came in a day late (20% off); she gets an extension, her attempt is regraded: the LMS gets
    the full score, newer than the first."""
    from nbgrader.api import Gradebook

    from grader.service.rules import deadlines

    user = link(service, lms, "bea")
    settings = service_config.load(service.root)
    with Gradebook(settings.db_url) as gradebook:
        gradebook.update_or_create_assignment(P2, duedate=dt.datetime.utcnow() - dt.timedelta(days=1, hours=1))
    late = graded(service, "bea", P2, "correct")
    assert late["late_penalty"] > 0
    first = eventually("bea's late score", lambda: lms.ags.scores_of(P2, user))
    assert first[0]["scoreGiven"] == late["final_score"] < late["max_score"]
    deadlines.grant_extension(settings, P2, "bea", hours=48)
    admin = service.token("ags-regrader", "admin")
    with service.client(admin) as client:
        assert client.post("/api/admin/regrade", json={"student": "bea", "assignment": P2}).status_code == 202
    both = eventually("bea's regraded score", lambda: (s := lms.ags.scores_of(P2, user)) and len(s) == 2 and s)
    assert both[1]["scoreGiven"] == late["max_score"] == both[1]["scoreMaximum"] - written_max(P2)
    assert stamp(both[1]) > stamp(both[0])
    eventually("both recorded as sent", lambda: [r.status for r in rows(service, "bea")] == ["sent", "sent"])


def test_scores_wait_while_the_lms_is_down_and_only_the_newest_arrives(service: Server, lms: LMS) -> None:
    """Two grades while the LMS is down: both queued, retried with back-off; once it is back, only the newer
    score is sent (the older is superseded, never sent after it)."""
    user = link(service, lms, "cyd")
    lms.down = True
    try:
        wrong = graded(service, "cyd", P1, "hard-coded")
        eventually("a first failed try", lambda: any(r.attempts >= 1 for r in rows(service, "cyd")))
        right = graded(service, "cyd", P1, "correct")
        assert wrong["final_score"] < right["final_score"]
        newest = eventually(
            "the newer score tried twice",
            lambda: (r := rows(service, "cyd")) and len(r) == 2 and r[1].attempts >= 2 and r,
        )
        pending = newest[1]
        assert pending.status == "pending" and "the LMS" in pending.error and "500" in pending.error
        # back-off: the next try is put off (0.5 s, doubling, at most 2 s), not immediate
        assert pending.next_try_at > pending.recorded_at
        assert f'data-assignment="{P1}" data-status="pending"' in student_page(service, "cyd")
        assert lms.ags.scores_of(P1, user) == []
    finally:
        lms.down = False
    (arrived,) = eventually("cyd's score after the LMS came back", lambda: lms.ags.scores_of(P1, user))
    assert arrived["scoreGiven"] == right["final_score"]
    first, second = eventually(
        "recorded as sent", lambda: (r := rows(service, "cyd")) and r[1].status != "pending" and r
    )
    assert (first.status, second.status) == ("superseded", "sent")
    time.sleep(2.5)  # the superseded one is never sent later
    assert len(lms.ags.scores_of(P1, user)) == 1


def test_a_500_is_retried(service: Server, lms: LMS, ada: dict[str, Any]) -> None:
    lms.ags.next_answers.append((500, "the gradebook is busy"))
    store = service.store
    queued = outbox.record(store, service_config.load(service.root), "ada", P1)
    row = eventually("sent after a 500", lambda: settled(service, "ada", queued))
    assert row.status == "sent"
    assert row.attempts == 1 and (500, "the gradebook is busy") in lms.ags.refused
    assert len(lms.ags.scores_of(P1, ada["user"])) >= 2


def test_a_line_item_deleted_on_the_lms_is_made_again(service: Server, lms: LMS, ada: dict[str, Any]) -> None:
    old = lms.ags.item_for(P1)
    assert old is not None
    with httpx.Client() as client:  # the instructor deletes the column in the LMS
        token = next(t for t, s in lms.tokens.items() if LINEITEM_SCOPE in s)
        assert client.delete(old["id"], headers={"Authorization": f"Bearer {token}"}).status_code == 204
    queued = outbox.record(service.store, service_config.load(service.root), "ada", P1)
    row = eventually("sent", lambda: settled(service, "ada", queued))
    assert row.status == "sent"
    new = lms.ags.item_for(P1)
    assert new is not None and new["id"] != old["id"] and new["scoreMaximum"] == ada["max_score"] + written_max(P1)
    (score,) = lms.ags.scores[new["id"]]
    assert score["scoreGiven"] == ada["final_score"]
    assert abs((stamp(score) - row.recorded_at).total_seconds()) < 0.001  # the time it was recorded, not sent
    with service.store.engine.connect() as conn:
        remembered = conn.execute(sa.select(lti_line_items.c.url).where(lti_line_items.c.assignment == P1)).scalar()
    assert remembered == new["id"]


def test_a_refused_score_fails_with_the_lms_answer_on_the_dashboard(
    service: Server, lms: LMS, ada: dict[str, Any]
) -> None:
    answer = "userId lms-ada is not enrolled in this section"
    lms.ags.next_answers.append((400, answer))
    queued = outbox.record(service.store, service_config.load(service.root), "ada", P1)
    row = eventually("refused", lambda: settled(service, "ada", queued))
    assert row.status == "failed" and row.attempts == 0
    assert answer in row.error and "400" in row.error
    page = student_page(service, "ada")
    assert f'data-assignment="{P1}" data-status="failed"' in page
    assert "the LMS refused it: the LMS refused the score for ada (400 at " in page and answer in page
    assert "ada / ps1_tensors" in page  # the gradebook names the failure
    # a failure blocks nothing: the next score goes through
    again = outbox.record(service.store, service_config.load(service.root), "ada", P1)
    assert eventually("sent again", lambda: settled(service, "ada", again)).status == "sent"


def test_a_student_without_an_lms_user_fails_with_what_to_do(service: Server, lms: LMS) -> None:
    """dan was graded before anyone linked him to the LMS (no launch, no roster sync): his score fails, saying how."""
    graded(service, "dan", P1, "correct")
    row = eventually("dan's score settled", lambda: (r := rows(service, "dan")) and settled(service, "dan", r[-1].id))
    assert row.status == "failed"
    assert "not linked to an LMS user" in row.error and "grader lti sync-roster" in row.error


def test_grader_lti_send_scores_drains_by_hand(service: Server, lms: LMS, ada: dict[str, Any], tmp_path: Path) -> None:
    """While the service's sender is kept out (another holder has the lease), nothing is sent; the command
    sends what is queued at once, whatever its back-off, and says what it did."""
    engine = service.store.engine
    assert outbox._lease(engine, "test-holder")
    try:
        queued = outbox.record(service.store, service_config.load(service.root), "ada", P1)
        busy = grader(service.root, "lti", "send-scores")
        assert busy.returncode == 1 and "another sender" in busy.stdout
        time.sleep(1.0)
        assert next(r for r in rows(service, "ada") if r.id == queued).status == "pending"
    finally:
        outbox._release(engine, "test-holder")
    # the service's sender may get there first: either way the score is sent exactly once
    done = grader(service.root, "lti", "send-scores")
    assert "grader lti send-scores:" in done.stdout, done.stderr
    assert eventually("sent", lambda: settled(service, "ada", queued)).status == "sent"


def test_the_back_off_doubles_up_to_its_cap_and_bad_settings_fail_at_start_up(service: Server) -> None:
    settings = service_config.load(service.root)
    assert [outbox.backoff(settings, n) for n in (1, 2, 3, 4, 10)] == [0.5, 1.0, 2.0, 2.0, 2.0]
    with pytest.raises(ConfigurationError, match=r"GraderService\.lti_retry_s must be positive and at most"):
        service_config.load(service.root, lti_retry_s=0)
    with pytest.raises(ConfigurationError, match=r"lti_retry_s must be positive and at most .*lti_retry_max_s"):
        service_config.load(service.root, lti_retry_s=10, lti_retry_max_s=5)
    assert hooks.after_record(settings) == (outbox.after_record,)


def test_a_forgotten_line_item_is_found_by_its_resource_id_and_a_new_maximum_is_put(
    service: Server, lms: LMS, ada: dict[str, Any]
) -> None:
    """The tool lost what it remembered (a restored backup): it finds the assignment's line item by resourceId
    instead of making a second one. When the assignment's maximum points change, the line item is updated."""
    user = link(service, lms, "eve")
    engine = service.store.engine
    existing = lms.ags.item_for(P1)
    assert existing is not None
    with engine.begin() as conn:
        conn.execute(lti_line_items.delete().where(lti_line_items.c.assignment == P1))
    count = len(lms.ags.items)
    maximum = ada["max_score"] + written_max(P1)

    def score(points: float, out_of: float) -> ags.Score:
        return ags.Score("eve", P1, points, out_of, "Completed", "FullyGraded", now())

    ags.send(engine, score(1.0, maximum))
    assert len(lms.ags.items) == count and lms.ags.item_for(P1) == existing
    with engine.connect() as conn:
        assert (
            conn.execute(sa.select(lti_line_items.c.url).where(lti_line_items.c.assignment == P1)).scalar()
            == (existing["id"])
        )
    ags.send(engine, score(1.0, maximum + 5))  # the tests changed: more points
    assert lms.ags.items[existing["id"]]["scoreMaximum"] == maximum + 5
    ags.send(engine, score(2.0, maximum))
    assert lms.ags.items[existing["id"]]["scoreMaximum"] == maximum
    assert [s["scoreGiven"] for s in lms.ags.scores_of(P1, user)] == [1.0, 1.0, 2.0]


def test_a_queued_score_survives_a_restart_of_the_service(service: Server, lms: LMS, ada: dict[str, Any]) -> None:
    """Queued while the LMS is down, the score is in the database: the restarted service sends it."""
    lms.down = True
    try:
        queued = outbox.record(service.store, service_config.load(service.root), "ada", P1)
        eventually("a failed try", lambda: next(r for r in rows(service, "ada") if r.id == queued).attempts >= 1)
        service.kill(signal.SIGTERM)
    finally:
        lms.down = False
    assert next(r for r in rows(service, "ada") if r.id == queued).status == "pending"
    service.start()
    row = eventually("sent after the restart", lambda: settled(service, "ada", queued))
    assert row.status == "sent" and row.attempts >= 1
    assert abs((stamp(lms.ags.scores_of(P1, ada["user"])[-1]) - row.recorded_at).total_seconds()) < 0.001


def test_the_dashboard_shows_each_students_lms_status_in_a_browser(service: Server, ada: dict[str, Any]) -> None:
    """In Chromium, as an instructor: the gradebook names the failed passback, the student's page says why."""
    from ...browser import launched, require_chromium

    require_chromium()
    from playwright.sync_api import expect

    assert rows(service, "dan"), "runs after test_a_student_without_an_lms_user_fails_with_what_to_do"
    with launched() as browser:
        context = browser.new_context()
        try:
            host = service.url.split("//", 1)[1].split(":")[0]
            token = service.token("ags-browser-admin", "admin")
            context.add_cookies([{"name": COOKIE, "value": token, "domain": host, "path": "/"}])
            page = context.new_page()
            page.goto(f"{service.url}/admin")
            summary = page.locator("#lms-passback")
            expect(summary).to_contain_text("failed: dan / ps1_tensors")
            summary.get_by_role("link", name="dan / ps1_tensors").click()
            page.wait_for_url(f"{service.url}/admin/students/dan")
            row = page.locator(f'#lms-passback tr[data-assignment="{P1}"]')
            expect(row.locator("td").nth(0)).to_have_text("failed")
            expect(row).to_contain_text("the LMS refused it: no LMS course to send dan's score to")
            page.goto(f"{service.url}/admin/students/ada")
            expect(page.locator(f'#lms-passback tr[data-assignment="{P1}"] td').nth(0)).to_have_text("sent")
        finally:
            context.close()


def test_a_student_who_launched_from_the_lms_gets_their_grade_there(service: Server, lms: LMS) -> None:
    """The whole path: a learner launches the tool from the course (the launch records the course's AGS claim and
    maps the LMS user to a course id), submits with the session the launch gave, is graded; the LMS has the
    score under the learner's LMS user id."""
    from .test_launch import login, post_launch

    query = login(service, lms)
    id_token = lms.id_token(query["nonce"], sub="lms-sub-7f3a", email="zoe@uni.example")
    launched = post_launch(service, id_token, query["state"])
    assert launched.status_code == 200, launched.text
    token = launched.cookies[COOKIE]
    user = service.store.user_for_token(token)
    assert user is not None and user.role == "student"
    with service.client(token) as client:
        answer = submit(client, P1, fixture_bytes(P1, "correct"))
    assert answer.status_code == 202, answer.text
    result = service.wait_graded(token, answer.json()["id"], timeout=300)
    (score,) = eventually("the learner's score in the LMS", lambda: lms.ags.scores_of(P1, "lms-sub-7f3a"))
    assert score["scoreGiven"] == result["final_score"]
    assert score["scoreMaximum"] == result["max_score"] + written_max(P1)
    assert eventually("sent", lambda: (r := rows(service, user.id)) and settled(service, user.id, r[-1].id)).status == (
        "sent"
    )


def test_the_scores_url_keeps_the_line_item_url_s_query() -> None:
    """Moodle's line item URLs carry a query (``?type_id=``): ``/scores`` goes on the path, before it."""
    moodle = "https://moodle.example.edu/mod/lti/services.php/2/lineitems/5/lineitem?type_id=1"
    assert (
        ags.scores_url(moodle)
        == "https://moodle.example.edu/mod/lti/services.php/2/lineitems/5/lineitem/scores?type_id=1"
    )
    assert ags.scores_url("https://canvas.example/api/lti/courses/1/line_items/7/") == (
        "https://canvas.example/api/lti/courses/1/line_items/7/scores"
    )


def test_released_written_grades_reach_the_lms_as_fully_graded(service: Server, lms: LMS) -> None:
    """cal's ps1 goes to the LMS as PendingManual; a TA grades her written answers and staff release them on the
    written-answers page: the LMS gets the autograded and written points, FullyGraded."""
    from grader.service.marking import answers, marks
    from grader.service.web.sessions import csrf_value

    user = link(service, lms, "cal")
    notebook = nbformat.reads(fixture_bytes(P1, "correct").decode(), as_version=4)
    for cell in notebook.cells:  # she answers the written questions
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in written_cells(P1):
            cell.source = "A view shares the storage; only the strides change."
    token = service.token("cal")
    with service.client(token) as client:
        sent = submit(client, P1, nbformat.writes(notebook).encode())
    assert sent.status_code == 202, sent.text
    result = service.wait_graded(token, sent.json()["id"], timeout=300)
    first = eventually("cal's pending score", lambda: lms.ags.scores_of(P1, user))
    assert first[-1]["gradingProgress"] == "PendingManual"
    given = 0.0
    for cell in written_cells(P1):
        rubric = marks.rubric(service.store, service.root, P1, cell)
        for answer in answers.read(service.root, P1, cell, students=["cal"]):
            chosen = [i.key for i in rubric.items if i.points > 0][:1]
            (saved,) = marks.save(
                service.store, rubric, assignment=P1, answers=[answer], items=chosen, actor="ta", expected={}
            )
            given += saved.score
    assert given > 0
    token = service.token("ags-releaser", "admin")
    with httpx.Client(base_url=service.url, timeout=60, cookies={COOKIE: token}) as client:
        form = {"csrf": csrf_value(token), "action": "release", "cell": written_cells(P1)}
        answer = client.post(f"/admin/assignments/{P1}/written/release", data=form)
        assert answer.status_code == 303, answer.text
    last = eventually(
        "cal's released score",
        lambda: (s := lms.ags.scores_of(P1, user)) and s[-1]["gradingProgress"] == "FullyGraded" and s,
    )[-1]
    assert last["scoreGiven"] == result["final_score"] + given
    assert last["scoreMaximum"] == result["max_score"] + written_max(P1)


def written_cells(assignment: str) -> list[str]:
    source = course.REPO_ROOT / "source" / assignment / f"{assignment}.ipynb"
    return list(rubrics.written_cells(nbformat.read(source, as_version=4)))
