"""The dashboard and the students' page, over HTTP against a real service with known data.

A course of its own (so every figure is known): four ps2 submissions by three students, graded by
the real engine, one of them late. The browser tests (``test_browser.py``) drive the same pages.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import zipfile
from html import unescape
from pathlib import Path

import httpx
import pytest

from grader.service.web.me import ME_SCRIPT
from grader.service.web.sessions import COOKIE

from ..conftest import A, Server, fixture_bytes, submit


def browser(server: Server, token: str | None) -> httpx.Client:
    """A client that behaves like a signed-in browser: the session cookie, no bearer header."""
    client = httpx.Client(base_url=server.url, timeout=30, follow_redirects=False)
    if token:
        client.cookies.set(COOKIE, token)
    return client


def cells(html: str, row_label: str) -> list[str]:
    """The text of the data cells after the header cell ``row_label`` in its table row."""
    header = rf'<th scope="row">(?:<a [^>]*>)?{re.escape(row_label)}(?:</a>)?</th>'
    row = re.search(rf"{header}(.*?)</tr>", html, re.S)
    assert row, f"no row {row_label!r}"
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def test_pages_need_a_session_and_staff_pages_need_staff(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    with browser(server, None) as anonymous:
        response = anonymous.get("/admin/assignments/ps2_autograd")
        assert response.status_code == 303
        assert response.headers["location"] == "/login?next=/admin/assignments/ps2_autograd"
        refused = anonymous.post("/login", data={"token": "not-a-token", "next": "/admin"})
        assert refused.status_code == 401
        assert "That token is not valid" in refused.text
    with browser(server, tokens["bob"]) as student:
        for page in (
            "/admin",
            "/admin/queue",
            "/admin/students/alice",
            "/admin/assignments/ps2_autograd",
            "/admin/export/canvas.csv",
            "/admin/export/ps2_autograd/gradescope.zip",
        ):
            response = student.get(page)
            assert response.status_code == 403, page
            assert "this page is for course staff" in response.text
        assert student.get("/").headers["location"] == "/me"
    # pages are not API: the OpenAPI schema (which schemathesis fuzzes) lists only /api routes
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert schema["paths"] and all(path.startswith("/api/") for path in schema["paths"])


def test_login_sets_a_strict_http_only_cookie_and_goes_back_where_it_was_asked(
    dashboard: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = dashboard
    with browser(server, None) as client:
        response = client.post("/login", data={"token": tokens["ta"], "next": "/admin/queue"})
        assert response.status_code == 303 and response.headers["location"] == "/admin/queue"
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        # never to another site
        elsewhere = client.post("/login", data={"token": tokens["ta"], "next": "//evil.example/x"})
        assert elsewhere.headers["location"] == "/admin"


def test_gradebook_shows_scores_penalties_attempts_and_averages(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    book = server.store.submissions(assignment=A)
    latest = {s.student: s for s in book}
    with browser(server, tokens["ta"]) as client:
        html = client.get("/admin").text
    for student in ("alice", "bob", "carol"):
        row = cells(html, student)
        chosen = latest[student]
        columns = ["ps1_tensors", "ps2_autograd", "ps3_regression"]
        raw, penalty, final, attempts, last = row[5 * columns.index(A) : 5 * columns.index(A) + 5]
        assert float(raw) == chosen.score
        assert float(penalty) == (chosen.late_penalty or 0.0)
        assert float(final) == pytest.approx((chosen.score or 0) - (chosen.late_penalty or 0))
        assert int(attempts) == sum(1 for s in book if s.student == student)
        assert ("(late)" in last) == (student == "carol")
    assert (latest["carol"].late_penalty or 0) > 0
    averages = cells(html, "Class average")
    finals = [(s.score or 0) - (s.late_penalty or 0) for s in latest.values()]
    assert float(averages[5 + 2]) == pytest.approx(sum(finals) / 3, abs=0.005)


def test_gradebook_filters_and_sorts(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    with browser(server, tokens["ta"]) as client:
        filtered = client.get("/admin", params={"q": "BO"}).text
        assert "1 of" in filtered and ">bob<" in filtered and ">alice<" not in filtered
        ordered = client.get("/admin", params={"sort": "total", "dir": "desc"}).text
    rows = re.findall(r'<th scope="row"><a href="/admin/students/([^"]+)">', ordered)
    totals = {s: float(cells(ordered, s)[-1]) for s in rows}
    assert rows == sorted(rows, key=lambda s: (totals[s], s), reverse=True)
    assert rows[0] == "alice"


def test_assignment_page_counts_misconceptions_tests_and_late_work(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    with browser(server, tokens["ta"]) as client:
        html = client.get(f"/admin/assignments/{A}").text
    # counting attempts: alice correct, bob sum-instead-of-mean, carol grad-not-zeroed; bob's first try too
    assert cells(html, "<code>grad-not-zeroed</code>")[:3] == ["1", "33%", "2"]
    assert cells(html, "<code>sum-instead-of-mean</code>")[:3] == ["1", "33%", "1"]
    assert "3 students graded · 4 submissions" in html
    assert re.search(r"Late submissions \(1\)", html) and "carol" in html.split("Late submissions")[1]
    assert cells(html, "<code>test_gradient_of_repeat</code>")[:2] == ["2 / 3", "67%"]  # carol failed it
    assert html.count('<svg class="chart"') == 3 and re.search(r"<title[^>]*>Final scores of ps2_autograd", html)
    assert re.search(r'class="marker"[^>]*>deadline \d\d \w{3} \d\d:\d\d</text>', html)  # carol came in after it


def test_student_history_and_exports(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    with browser(server, tokens["ta"]) as client:
        history = client.get("/admin/students/bob").text
        nbgrader_csv = client.get("/admin/export/grades.csv")
        canvas = client.get("/admin/export/canvas.csv")
        archive = client.get(f"/admin/export/{A}/gradescope.zip")
        bob_ids = [s.id for s in server.store.submissions(student="bob")]
        one = client.get(f"/admin/submissions/{bob_ids[0]}/results.json")
    assert history.count("<section") == 2 and "Likely cause [grad-not-zeroed]" in history
    assert "attachment" in nbgrader_csv.headers["content-disposition"]
    assert nbgrader_csv.text.splitlines()[0].startswith("assignment,duedate,timestamp,student_id")
    rows = list(csv.reader(io.StringIO(canvas.text)))
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[1][0] == "Points Possible"
    column = rows[0].index(A)
    carol = next(r for r in rows if r[2] == "carol")
    latest = server.store.submissions(student="carol")[-1]
    assert float(carol[column]) == pytest.approx((latest.score or 0) - (latest.late_penalty or 0))
    with zipfile.ZipFile(io.BytesIO(archive.content)) as zipped:
        assert sorted(zipped.namelist()) == ["alice/results.json", "bob/results.json", "carol/results.json"]
        alice = json.loads(zipped.read("alice/results.json"))
    assert alice["score"] == server.store.submissions(student="alice")[-1].score
    assert all(t["status"] == "passed" and t["visibility"] == "visible" for t in alice["tests"])
    first = one.json()
    assert any(t["status"] == "failed" and "grad-not-zeroed" in t["output"] for t in first["tests"])


def test_students_see_only_their_own_work_and_can_submit_from_the_page(
    dashboard: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = dashboard
    with browser(server, tokens["alice"]) as client:
        page = client.get("/me").text
        assert "submission" in page and "bob" not in page and "carol" not in page
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert csrf
        files = {"file": ("mine.ipynb", fixture_bytes(A, "correct"))}
        forged = client.post("/me", data={"assignment": A, "csrf": "0" * 64}, files=files)
        assert forged.status_code == 400 and "did not come from this site" in forged.text
        bad = client.post("/me", data={"assignment": A, "csrf": csrf.group(1)}, files={"file": ("x.ipynb", b"{")})
        assert bad.status_code == 422 and "not valid JSON" in bad.text
        before = len(server.store.submissions(student="alice"))
        accepted = client.post("/me", data={"assignment": A, "csrf": csrf.group(1)}, files=files)
        assert accepted.status_code == 303  # POST/redirect/GET: reloading the page does not submit again
        landing = client.get(accepted.headers["location"])
        assert re.search(r"Submission \d+ of ps2_autograd (received; it is|is graded)", landing.text)
        assert len(server.store.submissions(student="alice")) == before + 1
    server.wait_graded(tokens["alice"], server.store.submissions(student="alice")[-1].id)  # before later tests


def test_the_command_line_exports_what_the_page_downloads(
    dashboard: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    server, tokens = dashboard
    grader = str(Path(sys.executable).parent / "grader")
    env = dict(os.environ, GRADER_COURSE_ROOT=str(server.root))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([grader, "export", *args], env=env, capture_output=True, text=True, timeout=120)

    with browser(server, tokens["ta"]) as client:
        for fmt, page in (("canvas", "/admin/export/canvas.csv"), ("nbgrader", "/admin/export/grades.csv")):
            assert run(fmt).stdout == client.get(page).text, fmt
        from grader import course

        course.nbgrader(server.root, "export", "--to", str(tmp_path / "stock.csv"))  # stock nbgrader, same gradebook
        assert (tmp_path / "stock.csv").read_text() == client.get("/admin/export/grades.csv").text
        archive = client.get(f"/admin/export/{A}/gradescope.zip").content
    target = tmp_path / "gs.zip"
    assert run("gradescope", "--assignment", A, "-o", str(target)).returncode == 0
    with zipfile.ZipFile(target) as ours, zipfile.ZipFile(io.BytesIO(archive)) as page:
        assert {n: ours.read(n) for n in ours.namelist()} == {n: page.read(n) for n in page.namelist()}
    unknown = run("gradescope", "--assignment", "ps9_nothing", "-o", str(tmp_path / "x.zip"))
    assert unknown.returncode == 1 and "no assignment 'ps9_nothing'" in unknown.stderr
    assert "needs --output FILE" in run("gradescope", "--assignment", A).stderr


def loosen(root: Path, grade_id: str) -> str:
    """Make one test of the course's source always pass (as an instructor fixing a too-strict test); the old text."""
    path = root / "source" / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    old = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    cell["source"] = "# loosened: every solution passes\nassert True"
    path.write_text(json.dumps(nb))
    return old


def restore(root: Path, grade_id: str, text: str) -> None:
    path = root / "source" / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)["source"] = (
        text
    )
    path.write_text(json.dumps(nb))


def test_a_regrade_dry_run_shows_the_diff_and_writes_nothing(
    dashboard: tuple[Server, dict[str, str]],
) -> None:
    import os
    import subprocess
    import sys

    server, tokens = dashboard
    recorded = {s.id: (s.score, server.store.results(s.id)) for s in server.store.submissions(assignment=A)}
    jobs_before = server.store.queue_counts()
    gradebook = (server.root / "gradebook.db").read_bytes()
    old = loosen(server.root, "test_gradient_of_repeat")
    try:
        env = dict(os.environ, GRADER_COURSE_ROOT=str(server.root))
        grader = str(Path(sys.executable).parent / "grader")
        cli = subprocess.run([grader, "regrade", A, "--dry-run"], env=env, capture_output=True, text=True, timeout=600)
        with browser(server, tokens["ta"]) as client:
            form = client.get(f"/admin/assignments/{A}/regrade").text
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form)
            assert csrf and "Dry run: show the score diff" in form
            started = client.post(f"/admin/assignments/{A}/regrade", data={"csrf": csrf.group(1), "action": "dry-run"})
            assert started.status_code == 303  # to the run's own page, which shows its progress while it runs
            run_url = started.headers["location"]
            assert run_url.startswith(f"/admin/assignments/{A}/regrade/runs/")
            running = client.get(run_url).text
            assert "Dry run in progress" in running and '<meta http-equiv="refresh" content="1">' in running
            statuses = [client.get(f"{run_url}/status").json()]
            while not statuses[-1]["finished"]:
                time.sleep(0.2)
                statuses.append(client.get(f"{run_url}/status").json())
            page = client.get(run_url)
    finally:
        restore(server.root, "test_gradient_of_repeat", old)
    assert cli.returncode == 0, cli.stderr
    carol = server.store.submissions(student="carol")[-1]
    # carol's counting attempt failed that test (3 points); nobody else's score changes
    assert "3 students, 1 would change" in cli.stdout
    # final scores (raw less the late penalty, which keeps its share: carol was late)
    share = 1 - (carol.late_penalty or 0) / (carol.score or 1)
    before, after = (carol.score or 0) * share, ((carol.score or 0) + 3) * share
    expected = [f"{round(before, 6):g}", f"{round(after, 6):g}", f"{round(after - before, 6):+g}"]
    line = next(ln for ln in cli.stdout.splitlines() if ln.startswith("carol"))
    assert line.split()[:5] == ["carol", str(carol.id), *expected]
    assert "test_gradient_of_repeat 0->3" in line
    assert page.status_code == 200 and "1 of 3 students would change" in page.text
    assert "http-equiv" not in page.text  # done: the page no longer reloads itself
    assert statuses[-1]["stage"] == "done" and statuses[-1]["done"] == statuses[-1]["total"] == 3
    assert all(s["total"] == 3 and not s["finished"] for s in statuses[:-1]) and len(statuses) > 1
    assert any(s["stage"] == "grading" for s in statuses), [s["message"] for s in statuses]
    assert cells(page.text, "carol")[:4] == [str(carol.id), *expected]
    # nothing written: the service's records, its queue and nbgrader's gradebook are as they were
    assert {s.id: (s.score, server.store.results(s.id)) for s in server.store.submissions(assignment=A)} == recorded
    assert server.store.queue_counts() == jobs_before
    assert (server.root / "gradebook.db").read_bytes() == gradebook

    with browser(server, tokens["ta"]) as client:
        applied = client.post(f"/admin/assignments/{A}/regrade", data={"csrf": csrf.group(1), "action": "apply"})
    assert applied.status_code == 202 and "Queued 3 submissions" in applied.text
    regraded = [s.id for s in server.store.submissions(assignment=A) if s.status in ("queued", "running")]
    assert len(regraded) == 3
    for submission_id in regraded:  # the gradebook still holds the old tests: the same scores come back
        assert server.wait_graded(tokens["ta"], submission_id)["score"] == recorded[submission_id][0]


def test_due_dates_extensions_and_the_late_policy_are_set_from_the_page(
    dashboard: tuple[Server, dict[str, str]],
) -> None:
    from nbgrader.api import Gradebook

    from grader import course
    from grader.plugins import late_policy
    from grader.plugins.late_policy import percent_per_day_penalty

    server, tokens = dashboard
    url = course.gradebook_url(server.root)
    with browser(server, tokens["ta"]) as client:
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/admin/settings").text)
        assert csrf

        def post(**fields: str) -> httpx.Response:
            return client.post("/admin/settings", data={"csrf": csrf.group(1), **fields})

        # due date
        assert post(action="due", assignment="ps1_tensors", due="2026-12-24T17:00").status_code == 200
        assert "ps1_tensors</a> (due 2026-12-24 17:00 UTC)" in client.get("/admin").text
        refused = post(action="due", assignment="ps1_tensors", due="tomorrow")
        assert refused.status_code == 400 and "is not a date and time like 2026-12-01T17:00" in refused.text
        with Gradebook(url) as gradebook:
            assert gradebook.find_assignment("ps1_tensors").duedate.isoformat() == "2026-12-24T17:00:00"
        # extension (nbgrader's own)
        assert post(action="extension", student="bob", assignment="ps1_tensors", hours="12").status_code == 200
        for bad, message in (("-1", "between 0 and 8760"), ("soon", "a number of hours")):
            response = post(action="extension", student="bob", assignment="ps1_tensors", hours=bad)
            assert response.status_code == 400 and message in response.text
        with Gradebook(url) as gradebook:
            assert gradebook.find_submission("ps1_tensors", "bob").extension.total_seconds() == 12 * 3600
        # late policy: 1% per started hour, no grace; a bad value changes nothing
        policy = {"percent_per_day": "1", "unit": "hour", "grace_minutes": "0", "max_percent": "100"}
        saved = post(action="policy", **policy)
        assert saved.status_code == 200 and "Late policy saved" in saved.text
        written = (server.root / "late_policy.json").read_text()
        bad = post(action="policy", **{**policy, "percent_per_day": "150"})
        assert bad.status_code == 400 and "percent per day must be between 0 and 100, not 150" in bad.text
        assert (server.root / "late_policy.json").read_text() == written
    # what stock nbgrader reads from nbgrader_config.py
    assert late_policy.current(server.root) == {
        "percent_per_day": 1.0,
        "unit": "hour",
        "grace_minutes": 0.0,
        "max_percent": 100.0,
    }
    # and what the service's next grading applies: erin (no extension) is 25 hours and more late
    erin = server.token("erin")
    with server.client(erin) as api:
        response = submit(api, A, fixture_bytes(A, "correct"))
    graded = server.wait_graded(erin, response.json()["id"])
    with Gradebook(url) as gradebook:
        due = gradebook.find_assignment(A).duedate
    received = server.store.submission(response.json()["id"])
    assert received is not None
    late_s = (received.received_at - due).total_seconds()
    expected = percent_per_day_penalty(graded["score"], late_s, 1.0, 0.0, "hour", 100.0)
    assert graded["late_penalty"] == pytest.approx(expected) and 0 < expected < graded["score"] * 0.3
    (server.root / "late_policy.json").unlink()


def test_counts_are_singular_for_one() -> None:
    """ "1 student graded", never "1 students" (issue 19), on every page that counts."""
    from grader.service.web.pages import templates

    counted = templates.env.from_string(
        "{{ 0|counted('student') }}, {{ 1|counted('student') }}, {{ 2|counted('student') }}"
    )
    assert counted.render() == "0 students, 1 student, 2 students"
    folder = Path(__file__).resolve().parents[3] / "grader" / "service" / "web" / "templates"
    for template in folder.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"\}\}\s+(students|submissions)\b", text), f"{template.name}: a count without |counted"


def test_an_unknown_student_is_a_404_page_not_an_empty_history(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    with browser(server, tokens["ta"]) as client:
        unknown = client.get("/admin/students/nobody-at-all")
        known = client.get("/admin/students/bob")
    assert unknown.status_code == 404, unknown.text[:500]
    assert "no student 'nobody-at-all': not on the roster and no submissions" in unescape(unknown.text)
    assert "No submissions yet" not in unknown.text
    assert known.status_code == 200


# The status of a submission just made on /me (issue 52): the notice's words, its status request
# (/me/submissions/{id}/status) and the page's script; in Chromium, updating itself: test_browser.py.
P1 = "ps1_tensors"
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)


def _upload(server: Server, token: str) -> tuple[int, str]:
    """Upload ps1's correct notebook from the page as the token's student: the submission and the landing page."""
    with browser(server, token) as client:
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/me").text)
        assert csrf
        files = {"file": ("mine.ipynb", fixture_bytes(P1, "correct"))}
        accepted = client.post("/me", data={"assignment": P1, "csrf": csrf.group(1)}, files=files)
        assert accepted.status_code == 303, accepted.text
        location = accepted.headers["location"]
        found = re.search(r"submitted=(\d+)", location)
        assert found
        landing = client.get(location)
    assert landing.status_code == 200
    return int(found.group(1)), landing.text


def test_the_status_request_answers_with_the_graded_score_and_the_page_says_it_without_a_script(
    dashboard: tuple[Server, dict[str, str]],
) -> None:
    server, _ = dashboard
    token = server.token("status-sam")
    sid, landing = _upload(server, token)
    # the landing page: a polite live region that names its status request, one script from this site
    region = re.search(r'<p class="notice" id="progress"([^>]*)>(.*?)</p>', landing, re.S)
    assert region, landing
    attributes, text = region.groups()
    assert 'role="status"' in attributes and 'aria-live="polite"' in attributes
    if f'data-status-url="/me/submissions/{sid}/status"' in attributes:  # not graded yet (it usually is not)
        assert "Reload this page to see the result." in text
        assert '<script src="/me/status.js" defer></script>' in landing
    assert not INLINE_SCRIPT.search(landing)

    with browser(server, token) as client:
        page = client.get(f"/me?submitted={sid}")
        assert page.headers["content-security-policy"] == "script-src 'self'; object-src 'none'; base-uri 'none'"
        answer = client.get(f"/me/submissions/{sid}/status", params={"wait": "60"}, timeout=90)
        assert answer.headers["cache-control"] == "no-store"
        body = answer.json()
        # once graded, the page itself (reloaded, or without JavaScript) says the score, and polls nothing
        graded = client.get(f"/me?submitted={sid}").text
        script = client.get("/me/status.js")
    api = server.wait_graded(token, sid)  # the public API's view of the same submission
    assert api["status"] == "graded" and api["final_score"] == api["max_score"] > 0
    expected = f"Submission {sid} of {P1} is graded: {api['final_score']:g} of {api['max_score']:g} points."
    assert body == {
        "id": sid,
        "assignment": P1,
        "status": "graded",
        "finished": True,
        "message": expected,
        "score": api["score"],
        "max_score": api["max_score"],
        "late_penalty": 0.0,
        "final_score": api["final_score"],
        "reason": "",
    }
    assert f"<span data-message>{expected}</span></p>" in graded
    assert "Reload this page" not in graded and "data-status-url" not in graded and "/me/status.js" not in graded
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert script.content == ME_SCRIPT.read_bytes() and b"dataset.statusUrl" in script.content


def test_the_status_request_is_only_for_the_students_own_submissions(dashboard: tuple[Server, dict[str, str]]) -> None:
    server, tokens = dashboard
    alices = server.store.submissions(student="alice")[0].id
    with browser(server, tokens["bob"]) as bob:
        for path in (f"/me/submissions/{alices}/status", "/me/submissions/999999/status", "/me/submissions/x/status"):
            refused = bob.get(path)
            assert refused.status_code == 404, path
            assert "no such submission of yours" in refused.text
        bad = bob.get(f"/me/submissions/{server.store.submissions(student='bob')[0].id}/status", params={"wait": "61"})
        assert bad.status_code == 400
        assert "wait must be a number of seconds from 0 to 60, not '61'" in unescape(bad.text)
        # someone else's submission number in the page's address shows nothing of theirs
        assert 'id="progress"' not in bob.get(f"/me?submitted={alices}").text
    with browser(server, None) as anonymous:
        asked = anonymous.get(f"/me/submissions/{alices}/status")
        assert asked.status_code == 303 and asked.headers["location"].startswith("/login?next=/me/submissions/")
