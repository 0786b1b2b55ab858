"""Roster sync (LTI Names and Roles) against the test LMS and a real ``grader serve``: students into
nbgrader's gradebook, staff into the service's users, stable ids, drops that keep grades, paging, an
LMS that fails half-way, the command line."""

from __future__ import annotations

import html
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from grader.errors import LmsError, NotFound
from grader.service import config as service_config
from grader.service.lti import roster
from grader.service.records.tables import lti_members, tokens, users

from ..conftest import Server, fixture_bytes, grade
from .conftest import grader
from .platform import CLAIM, CONTEXT, INSTRUCTOR, LEARNER, LMS, TA
from .test_launch import login, post_launch


def member(sub: str, roles: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    return {"user_id": sub, "roles": roles or [LEARNER], "status": "Active", **fields}


def launch(tool: Server, platform: LMS, sub: str, roles: list[str], **claims: Any) -> str:
    """A launch of ``sub`` from the LMS's course (which records the course); the page's text."""
    query = login(tool, platform)
    token = platform.id_token(query["nonce"], sub=sub, **{CLAIM + "roles": roles}, **claims)
    answer = post_launch(tool, token, query["state"])
    assert answer.status_code == 200, answer.text
    return html.unescape(answer.text)


def sync(tool: Server, platform: LMS) -> roster.RosterSync:
    return roster.sync(tool.store.engine, service_config.load(tool.root).db_url, platform.issuer)


def gradebook_students(tool: Server) -> dict[str, tuple[str | None, str | None, str | None]]:
    from nbgrader.api import Gradebook

    with Gradebook(service_config.load(tool.root).db_url) as gradebook:
        return {s.id: (s.first_name, s.last_name, s.email) for s in gradebook.students}


def stored(tool: Server, platform: LMS) -> dict[str, tuple[str, str, str]]:
    """The LMS's members as the tool keeps them: LMS user id -> (course user id, role, status)."""
    with tool.store.engine.connect() as conn:
        rows = conn.execute(sa.select(lti_members).where(lti_members.c.issuer == platform.issuer)).all()
    return {r.lms_user_id: (r.user_id, r.role, r.status) for r in rows}


def role_of(tool: Server, user_id: str) -> str | None:
    with tool.store.engine.connect() as conn:
        return conn.execute(sa.select(users.c.role).where(users.c.id == user_id)).scalar()


def course(prefix: str) -> list[dict[str, Any]]:
    return [
        member(f"{prefix}-t", [INSTRUCTOR], name="Prof Ada", email=f"{prefix}.prof@uni.example"),
        member(f"{prefix}-ta", [TA], email=f"{prefix}.ta@uni.example"),
        member(f"{prefix}-s1", lis_person_sourcedid=f"{prefix}-S1", given_name="Sam", family_name="One"),
        member(f"{prefix}-s2", email=f"{prefix}.Two@uni.example"),
        member(f"{prefix}-s3", ["Learner"]),  # short role name, no sourcedid or email: the LMS user id
    ]


def test_sync_adds_students_to_the_gradebook_and_staff_and_a_resync_changes_nothing(
    roster_tool: Server, lms: LMS
) -> None:
    assert "Signed in from the LMS as a-t (admin)" in launch(roster_tool, lms, "a-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("a")
    done = sync(roster_tool, lms)
    assert done.added == ("a-s1", "a-s3", "a.ta", "a.two")
    assert done.updated == ("a-t",)  # launched before, the LMS now gives a name and email
    assert (done.dropped, done.reactivated, done.students, done.staff) == ((), (), 3, 2)
    assert stored(roster_tool, lms) == {
        "a-t": ("a-t", "admin", "active"),
        "a-ta": ("a.ta", "ta", "active"),
        "a-s1": ("a-s1", "student", "active"),
        "a-s2": ("a.two", "student", "active"),
        "a-s3": ("a-s3", "student", "active"),
    }
    students = gradebook_students(roster_tool)
    assert students["a-s1"] == ("Sam", "One", None)
    assert students["a.two"] == (None, None, "a.Two@uni.example")
    assert "a-s3" in students and "a.ta" not in students and "a-t" not in students
    assert [role_of(roster_tool, u) for u in ("a-t", "a.ta", "a-s1")] == ["admin", "ta", "student"]
    # a student's launch after the sync is the same course user
    assert "Signed in from the LMS as a-s1 (student)" in launch(roster_tool, lms, "a-s1", [LEARNER])

    members_before = stored(roster_tool, lms)
    again = sync(roster_tool, lms)
    assert again.unchanged == ("a-s1", "a-s3", "a-t", "a.ta", "a.two")
    assert (again.added, again.updated, again.dropped, again.reactivated) == ((), (), (), ())
    assert stored(roster_tool, lms) == members_before
    assert gradebook_students(roster_tool) == students
    assert again.words() == (
        f"roster of PyTorch ({CONTEXT}): 3 active student(s), 2 staff; 0 added, 0 reactivated, 0 updated, "
        "0 dropped, 5 unchanged"
    )


def test_a_dropped_member_is_marked_keeps_their_grades_and_can_come_back(roster_tool: Server, lms: LMS) -> None:
    launch(roster_tool, lms, "b-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("b")
    sync(roster_tool, lms)
    graded = grade(roster_tool, "b-s1", "ps1_tensors", fixture_bytes("ps1_tensors", "correct"))
    assert graded["status"] == "graded" and graded["score"] == graded["max_score"]
    session = launch(roster_tool, lms, "b-s1", [LEARNER])
    assert "as b-s1 (student)" in session

    # b-s1 leaves the course; b-s2 is listed but inactive
    lms.members[CONTEXT] = [m for m in course("b") if m["user_id"] != "b-s1"]
    next(m for m in lms.members[CONTEXT] if m["user_id"] == "b-s2")["status"] = "Inactive"
    done = sync(roster_tool, lms)
    assert done.dropped == ("b-s1", "b.two") and done.added == ()
    assert stored(roster_tool, lms)["b-s1"] == ("b-s1", "student", "dropped")
    with roster_tool.store.engine.connect() as conn:
        dropped_at = conn.execute(
            sa.select(lti_members.c.dropped_at).where(lti_members.c.lms_user_id == "b-s1")
        ).scalar_one()
        live_lti = conn.execute(
            sa.select(sa.func.count())
            .select_from(tokens)
            .where(tokens.c.user_id == "b-s1", tokens.c.label == "lti", tokens.c.revoked_at.is_(None))
        ).scalar_one()
    assert dropped_at is not None and live_lti == 0
    # nothing deleted: still in the gradebook, the graded attempt and its score still there
    assert "b-s1" in gradebook_students(roster_tool)
    (attempt,) = roster_tool.store.submissions(student="b-s1")
    assert attempt.score == graded["score"]
    from nbgrader.api import Gradebook

    with Gradebook(service_config.load(roster_tool.root).db_url) as gradebook:
        assert gradebook.find_submission("ps1_tensors", "b-s1").score == graded["score"]

    # back in the course: the same id, active again
    lms.members[CONTEXT] = course("b")
    back = sync(roster_tool, lms)
    assert back.reactivated == ("b-s1", "b.two") and back.added == ()
    assert stored(roster_tool, lms)["b-s1"] == ("b-s1", "student", "active")


def test_the_roster_is_fetched_page_by_page(roster_tool: Server, lms: LMS) -> None:
    launch(roster_tool, lms, "c-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("c") + [member(f"c-x{i:02}") for i in range(14)]
    lms.page_size = 2
    done = sync(roster_tool, lms)
    assert len(done.added) == 18 and done.students == 17
    pages = [path for _, path, _ in lms.requests if path.startswith("/nrps/")]
    assert pages == [f"/nrps/{CONTEXT}/memberships"] + [f"/nrps/{CONTEXT}/memberships?page={n}" for n in range(1, 10)]
    # a long list is named in part
    assert "18 added (c-s1, c-s3, c-x00, c-x01, c-x02, c-x03, c-x04, c-x05, c-x06, c-x07, c-x08, c-x09 and 6 more)" in (
        done.words()
    )


def test_an_lms_that_fails_changes_nothing(roster_tool: Server, lms: LMS) -> None:
    launch(roster_tool, lms, "d-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("d")
    lms.page_size = 2
    sync(roster_tool, lms)
    before = (stored(roster_tool, lms), gradebook_students(roster_tool))
    # the LMS drops three members but fails on the second page: nobody is dropped
    lms.members[CONTEXT] = course("d")[:2] + [member(f"d-n{i}") for i in range(3)]
    lms.fail_pages = {1}
    with pytest.raises(LmsError) as caught:
        sync(roster_tool, lms)
    url = f"{lms.memberships_url()}?page=1"
    assert str(caught.value) == f"the LMS answered 500 at {url}: page 1 is down"
    assert (stored(roster_tool, lms), gradebook_students(roster_tool)) == before
    # wholly down
    lms.fail_pages, lms.down = set(), True
    with pytest.raises(LmsError, match="answered 500"):
        sync(roster_tool, lms)
    assert (stored(roster_tool, lms), gradebook_students(roster_tool)) == before
    # an empty list is never a course: refused, nothing dropped
    lms.down, lms.members[CONTEXT] = False, []
    with pytest.raises(LmsError, match="it listed no active members: nothing was changed"):
        sync(roster_tool, lms)
    assert stored(roster_tool, lms) == before[0]


def test_the_command_line_prints_the_summary(roster_tool: Server, lms: LMS) -> None:
    never = grader(roster_tool.root, "lti", "sync-roster", "--issuer", lms.issuer)
    assert never.returncode == 2
    assert never.stderr.strip().endswith(
        f"grader: no LMS course from {lms.issuer} is recorded yet: launch the tool once from the LMS "
        "(as the instructor, from the course), then sync the roster"
    )
    launch(roster_tool, lms, "e-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("e")
    first = grader(roster_tool.root, "lti", "sync-roster", "--issuer", lms.issuer, "--context", CONTEXT)
    assert first.returncode == 0, first.stderr
    assert first.stdout == (
        f"grader lti sync-roster: roster of PyTorch ({CONTEXT}): 3 active student(s), 2 staff; "
        "4 added (e-s1, e-s3, e.ta, e.two), 0 reactivated, 1 updated (e-t), 0 dropped, 0 unchanged\n"
    )
    lms.down = True
    failed = grader(roster_tool.root, "lti", "sync-roster", "--issuer", lms.issuer)
    assert failed.returncode == 2
    assert "grader: the LMS refused this tool an access token: the LMS answered 500 at" in failed.stderr


def test_no_course_recorded_is_a_clear_error(roster_tool: Server, lms: LMS) -> None:
    with pytest.raises(NotFound, match="launch the tool once from the LMS"):
        roster.sync(roster_tool.store.engine, service_config.load(roster_tool.root).db_url, lms.issuer)


def test_the_dashboard_button_syncs_for_staff_only(roster_tool: Server, lms: LMS) -> None:
    from grader.service.web import sessions

    launch(roster_tool, lms, "g-t", [INSTRUCTOR])
    lms.members[CONTEXT] = course("g")
    form = {"issuer": lms.issuer, "context": CONTEXT}
    student = roster_tool.token("g-student")
    with httpx.Client(base_url=roster_tool.url, cookies={"grader_session": student}) as client:
        refused = client.post("/admin/lti/sync-roster", data={**form, "csrf": sessions.csrf_value(student)})
    assert refused.status_code == 403
    ta = roster_tool.token("g-ta-local", "ta")
    with httpx.Client(base_url=roster_tool.url, cookies={"grader_session": ta}, timeout=60) as client:
        forged = client.post("/admin/lti/sync-roster", data=form)
        assert forged.status_code == 400 and "the form is out of date" in html.unescape(forged.text)
        assert stored(roster_tool, lms) == {"g-t": ("g-t", "admin", "active")}
        settings = client.get("/admin/settings")
        assert f'name="issuer" value="{lms.issuer}"' in settings.text
        done = client.post("/admin/lti/sync-roster", data={**form, "csrf": sessions.csrf_value(ta)})
        assert done.status_code == 200
        assert (
            f"Synced the roster of PyTorch ({CONTEXT}): 3 active student(s), 2 staff; 4 added (g-s1, g-s3, g.ta, "
            "g.two), 0 reactivated, 1 updated (g-t), 0 dropped, 0 unchanged." in html.unescape(done.text)
        )
        lms.down = True
        failed = client.post("/admin/lti/sync-roster", data={**form, "csrf": sessions.csrf_value(ta)})
    assert failed.status_code == 502
    assert (
        f"The roster was not synced: the LMS answered 500 at {lms.memberships_url()}: the LMS is down"
        in html.unescape(failed.text)
    )
    assert len(stored(roster_tool, lms)) == 5
