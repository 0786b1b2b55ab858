"""Grading written answers by question in a real browser: keyboard alone, axe-core's WCAG 2.2 AA rules, conflicts.

A real ``grader serve`` grades three ps2 submissions (two identical written answers, one other); a TA grades the
question in Debian's Chromium by keys only; the scores land in nbgrader's own gradebook; a second TA who saves
over the first sees a conflict and nothing of theirs is written.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ...browser import ARTIFACTS, launched, require_chromium
from ..conftest import QUICK, Server, fixture_bytes, grade, running_server

require_chromium()

from axe_playwright_python.sync_playwright import Axe  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from playwright.sync_api import Browser, Page, expect  # noqa: E402

A = "ps2_autograd"
CELL = "sum_gradient"
WCAG_22_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}}
ANSWERS = {
    "alice": "The gradient is **2x**: the mean divides by $N = 4$, the sum does not. <script>alert(1)</script>",
    "bob": "the gradient is 2x: the mean divides by $N = 4$,  the sum does not. <script>alert(1)</script>",
    "carol": "It stays x/2.",
}


def _with_answer(text: str) -> bytes:
    nb = json.loads(fixture_bytes(A, "correct"))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == CELL:
            cell["source"] = text
    return json.dumps(nb).encode()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    for server in running_server(tmp_path_factory.mktemp("marking-page"), QUICK):
        for student, text in ANSWERS.items():
            result = grade(server, student, A, _with_answer(text))
            assert result["status"] == "graded", result
        yield server, {"ta": server.token("ta-one", "ta"), "ta2": server.token("ta-two", "ta")}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


def _page(chromium: Browser, server: Server, token: str) -> Page:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(server.url + "/login")
    page.get_by_label("Your access token").fill(token)
    page.get_by_label("Your access token").press("Enter")
    page.wait_for_url(lambda url: "/login" not in url)
    return page


def _no_violations(page: Page) -> None:
    results = Axe().run(page, options=WCAG_22_AA)
    assert results.violations_count == 0, results.generate_report()


def _nbgrader_score(server: Server, student: str) -> float:
    with Gradebook(f"sqlite:///{server.root / 'gradebook.db'}") as gradebook:
        return float(gradebook.find_grade(CELL, A, A, student).score)


def test_a_ta_grades_a_question_by_keyboard_alone_and_nbgrader_holds_the_scores(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    server, tokens = served
    page = _page(chromium, server, tokens["ta"])
    page.goto(f"{server.url}/admin/assignments/{A}")
    page.get_by_role("link", name="Written answers").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=f"Written answers of {A}")).to_be_visible()
    row = page.get_by_role("row", name=CELL)
    expect(row).to_contain_text("3")  # three answers
    expect(page.get_by_role("progressbar", name=f"{CELL}: 0 of 3 answers graded")).to_be_visible()
    _no_violations(page)

    page.get_by_role("link", name=CELL).focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=f"Grading {CELL} of {A}")).to_be_visible()
    expect(page.get_by_role("heading", name="2 identical answers")).to_be_visible()
    expect(page.get_by_text("Names hidden while grading.")).to_be_visible()
    expect(page.locator(".answer strong")).to_have_text("2x")  # Markdown rendered
    expect(page.locator(".answer math")).to_have_count(1)  # $N = 4$ typeset (MathML: no script runs)
    expect(page.locator(".answer")).to_contain_text("<script>alert(1)</script>")  # shown as text, never run
    assert "alice" not in page.content() and "bob" not in page.content()
    _no_violations(page)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "grading-by-question.png"), full_page=True)

    page.locator("body").focus()
    page.keyboard.press("1")
    expect(page.get_by_role("status")).to_contain_text("Items add up to 1 points.")
    page.keyboard.press("2")
    expect(page.get_by_role("status")).to_contain_text("Applied 2 +1: the factor 4")
    expect(page.get_by_role("status")).to_contain_text("Items add up to 2 points.")
    page.keyboard.press("c")
    page.keyboard.type("Say what happens for N elements.")
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    expect(page.get_by_role("status")).to_have_text("Saved group 1.")
    expect(page.get_by_text("1 of 2 groups graded · group 2 of 2")).to_be_visible()
    assert _nbgrader_score(server, "alice") == _nbgrader_score(server, "bob") == 2.0

    page.wait_for_load_state("load")  # the page's key script has run (on a loaded machine it comes after the text)
    page.keyboard.press("p")
    expect(page.get_by_text("Graded by ta-one: 2 of 3 points.")).to_be_visible()
    expect(page.get_by_role("table")).to_contain_text("1, 2")  # the change, in the audit
    expect(page.get_by_label("Comment for the student")).to_have_value("Say what happens for N elements.")
    _no_violations(page)
    page.context.close()


def test_a_second_ta_saving_over_a_first_sees_both_and_nothing_of_theirs_is_written(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    server, tokens = served
    url = f"{server.url}/admin/assignments/{A}/written/{CELL}?g=1&names=1"
    first, second = _page(chromium, server, tokens["ta"]), _page(chromium, server, tokens["ta2"])
    first.goto(url)
    second.goto(url)
    expect(first.get_by_text("carol")).to_be_visible()  # names shown on request
    first.get_by_label("m -1: gives x/2").check()
    first.get_by_role("button", name="Save and go to the next group").click()
    expect(first.get_by_role("status")).to_have_text("Saved group 2.")
    second.get_by_label("1 +1: derives").check()
    second.get_by_role("button", name="Save and go to the next group").click()
    alert = second.get_by_role("alert")
    expect(alert).to_contain_text("Not saved: ta-one saved sum_gradient for carol at")
    expect(alert).to_contain_text("Their items: m, 0 points")
    expect(second.get_by_label("1 +1: derives")).to_be_checked()  # their own choice, kept in the form
    _no_violations(second)
    assert _nbgrader_score(server, "carol") == 0.0
    second.get_by_role("button", name="Save and go to the next group").click()  # over theirs, knowingly
    expect(second.get_by_role("status")).to_have_text("Saved group 2.")
    assert _nbgrader_score(server, "carol") == 1.0
    for page in (first, second):
        page.context.close()


def test_the_page_sends_a_policy_that_runs_only_its_own_script(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    with server.client(None) as client:
        client.cookies.set("grader_session", tokens["ta"])
        page = client.get(f"/admin/assignments/{A}/written/{CELL}")
        script = client.get("/admin/marking-keys.js")
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith("script-src 'self'")
    assert script.status_code == 200 and "rubric item" in script.text
    assert Path(server.root / "source" / A / "rubrics.toml").exists()


def test_a_ta_takes_one_answer_out_of_its_group_by_keyboard_and_its_mark_stays(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    """(after the tests above: alice and bob's identical answers are one graded group, carol's another.)"""
    server, tokens = served
    page = _page(chromium, server, tokens["ta"])
    page.goto(f"{server.url}/admin/assignments/{A}/written/{CELL}?g=0")
    expect(page.get_by_role("heading", name="2 identical answers")).to_be_visible()
    choice = page.get_by_label("Grade one of these answers on its own")
    expect(choice.locator("option")).to_have_text(["Answer 1 of 2", "Answer 2 of 2"])  # no names
    choice.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text(
        "Answer 2 was taken out of the group: it is graded on its own from now on."
    )
    expect(page.get_by_role("heading", name="The answer")).to_be_visible()
    expect(page.get_by_text("3 of 3 groups graded")).to_be_visible()  # each keeps the mark it had
    _no_violations(page)
    page.context.close()
    assert _nbgrader_score(server, "alice") == _nbgrader_score(server, "bob") == 2.0


def test_a_new_attempt_keeps_the_mark_of_an_unchanged_answer_and_a_changed_one_is_graded_again(
    served: tuple[Server, dict[str, str]],
) -> None:
    """(after the first test graded alice and bob's group: 2 points each)"""
    from grader.service.marking import marks

    server, _ = served
    assert _nbgrader_score(server, "alice") == _nbgrader_score(server, "bob") == 2.0
    assert grade(server, "alice", A, _with_answer(ANSWERS["alice"]))["status"] == "graded"
    assert grade(server, "bob", A, _with_answer("Now I think it is x/2."))["status"] == "graded"
    with Gradebook(f"sqlite:///{server.root / 'gradebook.db'}") as gradebook:
        alice = gradebook.find_grade(CELL, A, A, "alice")
        bob = gradebook.find_grade(CELL, A, A, "bob")
        assert (alice.manual_score, alice.needs_manual_grade) == (2.0, False)
        assert (bob.manual_score, bob.needs_manual_grade) == (None, True)
        assert gradebook.find_comment(CELL, A, A, "bob").manual_comment is None
    assert set(marks.marks(server.store, A, CELL)) == {"alice", "carol"}
    (change,) = [c for c in marks.history(server.store, A, CELL, "bob") if c.actor == "grader"]
    assert change.old_score == 2.0 and change.new_score is None and change.removed == ("1", "2")
    assert change.what.startswith("the answer changed in submission ")
    assert change.what.endswith(": its mark no longer applies, graded again")
    assert change.previous_answer == ANSWERS["bob"]  # the TA sees what it said when it was graded
    with server.client(None) as client:
        client.cookies.set("grader_session", server.token("ta-one", "ta"))
        page = client.get(f"/admin/assignments/{A}/written/{CELL}", params={"student": "bob"})
    assert "This answer changed since it was graded" in page.text and "2 points</summary>" in page.text


def test_staff_release_a_question_the_student_reads_it_and_asks_for_a_regrade_by_keyboard(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    """(after the tests above: alice's answer 2 of 3 points, with a comment.) Until staff release the question,
    alice sees nothing of it; then she reads the items and comment on /me and asks for a regrade, once; the TA
    replies from the queue; alice reads the reply, on /me, through the Lab's API and on the feedback page."""
    server, tokens = served
    alice = server.token("alice")
    with server.client(alice) as client:
        assert client.get("/api/written").json() == []
    student = _page(chromium, server, alice)
    student.goto(f"{server.url}/me")
    expect(student.locator("#written")).to_contain_text("No written answer has been graded and released yet.")

    ta = _page(chromium, server, tokens["ta"])
    ta.goto(f"{server.url}/admin/assignments/{A}/written")
    other = ta.get_by_role("checkbox", name="shape_1x4")
    expect(other).to_be_checked()
    other.focus()
    ta.keyboard.press("Space")  # only sum_gradient is released
    expect(other).not_to_be_checked()
    ta.get_by_label("Students may ask for a regrade until").focus()
    ta.keyboard.type("2099-01-31T17:00")
    ta.get_by_role("button", name="Release the ticked questions").focus()
    ta.keyboard.press("Enter")
    expect(ta.locator("#status")).to_have_text(
        "Released: sum_gradient. Students may ask for a regrade until 2099-01-31 17:00 UTC."
    )
    expect(ta.get_by_role("row", name=CELL)).to_contain_text("Released; regrades until 2099-01-31 17:00 UTC")
    expect(ta.get_by_role("row", name="shape_1x4")).to_contain_text("Not yet")
    _no_violations(ta)

    student.reload()
    written = student.locator("#written")
    expect(written.get_by_role("heading", name=f"{A} · {CELL} · 2 of 3 points")).to_be_visible()
    expect(written.get_by_role("table")).to_contain_text("+1derives dL/dx = 2x for the sum of squares")
    expect(written).to_contain_text("Say what happens for N elements.")
    expect(written).not_to_contain_text("shape_1x4")  # not released
    _no_violations(student)
    student.get_by_label("Why the grade should change").focus()
    student.keyboard.type("I said why N is 4: the mean divides by the number of elements.")
    student.keyboard.press("Tab")
    student.keyboard.press("Enter")
    expect(student.get_by_role("status").first).to_have_text(
        f"Your regrade request for {CELL} ({A}) was sent. Staff will reply here."
    )
    expect(written).to_contain_text("Not answered yet.")
    _no_violations(student)
    with server.client(None) as client:  # a second request, or one for a question not released: one sentence
        client.cookies.set("grader_session", alice)
        csrf = _csrf(alice)
        again = client.post(
            "/me/regrade-requests", data={"csrf": csrf, "assignment": A, "question": CELL, "reason": "x"}
        )
        assert again.status_code == 409 and f"you asked for a regrade of {CELL} ({A}) on " in again.text
        hidden = {"csrf": csrf, "assignment": A, "question": "shape_1x4", "reason": "x"}
        refused = client.post("/me/regrade-requests", data=hidden)
        assert refused.status_code == 403
        assert (
            "the grade of shape_1x4 (ps2_autograd) has not been released: there is nothing to regrade yet"
            in refused.text
        )
        assert client.get("/admin/regrade-requests").status_code == 403  # a student is not staff

    ta.goto(f"{server.url}/admin/regrade-requests")
    request = ta.get_by_role("region", name=f"alice · {A} · {CELL}")
    expect(request).to_contain_text("I said why N is 4")
    _no_violations(ta)
    request.get_by_role("link", name=f"Open alice's answer to {CELL}").focus()
    ta.keyboard.press("Enter")
    expect(ta.locator("section[aria-labelledby=answer-heading] p").first).to_contain_text("alice")  # her answer
    ta.go_back()
    ta.get_by_label("Reply to alice").focus()
    ta.keyboard.type("Agreed that N is named; the derivation is still missing, so the grade stays.")
    ta.keyboard.press("Tab")
    ta.keyboard.press("Enter")
    expect(ta.locator("#status")).to_have_text(f"Replied to alice's request about {CELL} ({A}).")
    expect(ta.get_by_text("No open regrade request.")).to_be_visible()

    student.reload()
    expect(written).to_contain_text("the derivation is still missing, so the grade stays.")
    with server.client(alice) as client:
        (shown,) = client.get("/api/written").json()
        feedback = client.get(f"/api/assignments/{A}/feedback").json()
    assert (shown["question"], shown["points"], shown["max_points"]) == (CELL, 2.0, 3.0)
    assert shown["regrade_request"]["reply"].startswith("Agreed that N is named")
    newest = [f for f in feedback if "html" in f][-1]["html"]
    assert "Written answers (graded by course staff)" in newest and "Say what happens for N elements." in newest
    for page in (student, ta):
        page.context.close()


def _csrf(token: str) -> str:
    from grader.service.web.sessions import csrf_value

    return csrf_value(token)


def test_the_exports_carry_the_released_written_points(served: tuple[Server, dict[str, str]]) -> None:
    """(after the release above: alice's sum_gradient, 2 of 3 points, is released; shape_1x4 is not.)"""
    import csv
    import io
    import zipfile

    server, _ = served
    admin = server.token("prof", "admin")
    with server.client(None) as client:
        client.cookies.set("grader_session", admin)
        canvas = client.get("/admin/export/canvas.csv")
        gradescope = client.get(f"/admin/export/{A}/gradescope.zip")
    with server.client(admin) as client:
        attempts = client.get("/api/submissions", params={"student": "alice"})
    assert canvas.status_code == gradescope.status_code == attempts.status_code == 200
    counting = next(s for s in attempts.json() if s["student"] == "alice" and s["counts"])
    rows = {r["SIS User ID"]: r for r in csv.DictReader(io.StringIO(canvas.text)) if r["SIS User ID"]}
    assert float(rows["alice"][A]) == counting["final_score"] + 2.0  # the tests' points and the released answer's
    with zipfile.ZipFile(io.BytesIO(gradescope.content)) as archive:
        results = json.loads(archive.read("alice/results.json"))
    assert results["score"] == counting["final_score"] + 2.0
    (answer,) = [t for t in results["tests"] if t["name"].startswith("written answer")]
    assert (answer["name"], answer["score"], answer["max_score"]) == (f"written answer {CELL}", 2.0, 3.0)


def test_editing_a_shared_item_on_the_page_previews_then_rescores_by_keyboard(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    """(last: after the tests above, alice has items 1 and 2 of sum_gradient, 2 points; carol item 1.)"""
    server, tokens = served
    page = _page(chromium, server, tokens["ta"])
    page.goto(f"{server.url}/admin/assignments/{A}/written/{CELL}")
    page.get_by_text("Edit a rubric item").focus()
    page.keyboard.press("Enter")
    page.get_by_label("Item", exact=True).select_option("2")
    page.get_by_label("New points (empty: unchanged)").focus()
    page.keyboard.type("0.5")
    page.keyboard.press("Enter")
    preview = page.locator("#item-preview")
    expect(preview).to_contain_text("Not changed yet.")
    expect(preview).to_contain_text("1 score(s) of sum_gradient change, by -0.5 point(s).")
    _no_violations(page)
    assert _nbgrader_score(server, "alice") == 2.0  # nothing written by a preview
    preview.get_by_role("button", name="Change it and score 1 answer(s) again").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text("Item 2 changed: 1 score(s) of sum_gradient change, by -0.5 point(s).")
    assert _nbgrader_score(server, "alice") == 1.5
    with server.client(None) as client:  # a key the rubric lacks: one sentence, nothing changed
        client.cookies.set("grader_session", tokens["ta"])
        wrong = client.post(
            f"/admin/assignments/{A}/written/{CELL}/items",
            data={"csrf": _csrf(tokens["ta"]), "key": "z", "points": "1"},
        )
    assert wrong.status_code == 400 and "sum_gradient has no rubric item with key &#39;z&#39;" in wrong.text
    page.context.close()


def test_an_admin_shares_a_question_out_and_each_ta_sees_their_share(
    chromium: Browser, served: tuple[Server, dict[str, str]]
) -> None:
    """(after the tests above: alice's, bob's and carol's answers are three groups.)"""
    server, tokens = served
    admin = _page(chromium, server, server.token("prof", "admin"))
    admin.goto(f"{server.url}/admin/assignments/{A}/written")
    admin.get_by_label("Question", exact=True).select_option(CELL)
    admin.get_by_label("TA (user id)").fill("ta-two")
    admin.get_by_label("From student id").fill("c")
    admin.get_by_label("to student id").focus()
    admin.keyboard.type("z")
    admin.get_by_role("button", name="Give this TA the question").focus()
    admin.keyboard.press("Enter")
    expect(admin.locator("#status")).to_have_text(f"{CELL}: ta-two: students c to z.")
    expect(admin.get_by_role("row", name=CELL)).to_contain_text("ta-two: students c to z")
    _no_violations(admin)
    admin.context.close()

    two = _page(chromium, server, tokens["ta2"])
    two.goto(f"{server.url}/admin/assignments/{A}/written/{CELL}")
    expect(two.locator("#share")).to_have_text(
        "Your share of this question (ta-two: students c to z): 1 of its 3 groups. Every answer"
    )
    expect(two.get_by_text("1 of 1 groups graded · group 1 of 1")).to_be_visible()
    two.get_by_role("link", name="Every answer").click()
    expect(two.locator("#progress-text")).to_have_text("2 of 3 groups graded · group 1 of 3")  # bob's is new
    two.context.close()
    with server.client(None) as client:  # a TA does not share questions out; nobody else's share changes
        client.cookies.set("grader_session", tokens["ta"])
        form = {"csrf": _csrf(tokens["ta"]), "cell": CELL, "ta": "ta-one", "action": "assign"}
        refused = client.post(f"/admin/assignments/{A}/written/shares", data=form)
        page = client.get(f"/admin/assignments/{A}/written/{CELL}")
    assert refused.status_code == 403 and "only an admin shares out the questions among TAs" in refused.text
    assert 'id="share"' not in page.text  # ta-one has no share: every answer


def test_a_course_that_shows_names_while_grading_says_so_in_its_settings(served: tuple[Server, dict[str, str]]) -> None:
    """(last: restarts the service.) ``anonymous_grading = False`` shows names unless a TA hides them; a value
    that is not True or False stops the service at start with one sentence."""
    from grader.errors import ConfigurationError
    from grader.service import config as service_config

    server, tokens = served
    settings = server.root / "nbgrader_config.py"
    kept = settings.read_text()
    settings.write_text(kept + "\nc.GraderService.anonymous_grading = 'no'\n")
    with pytest.raises(ConfigurationError, match=r"^GraderService.anonymous_grading must be True or False, not 'no'$"):
        service_config.load(server.root)
    settings.write_text(kept + "\nc.GraderService.anonymous_grading = False\n")
    server.kill(signal.SIGTERM)
    server.start()
    with server.client(None) as client:
        client.cookies.set("grader_session", tokens["ta"])
        shown = client.get(f"/admin/assignments/{A}/written/{CELL}", params={"g": "0"})
        hidden = client.get(f"/admin/assignments/{A}/written/{CELL}", params={"g": "0", "names": "0"})
    assert "Names hidden while grading." not in shown.text and "Hide names" in shown.text
    assert "Names hidden while grading." in hidden.text and "Show names" in hidden.text
