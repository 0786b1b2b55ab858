"""Deadlines, extensions, late confirmation, attempt and rate limits, feedback policy: through HTTP."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import course

from ..conftest import Server, fixture_bytes, running_server, submit

RULES = """
c.GraderService.hard_deadline_hours = {"ps2_autograd": 1}
c.GraderService.max_submissions = 3
c.GraderService.min_seconds_between_submissions = 1.5
c.GraderService.feedback_policy = {"ps1_tensors": "score_only", "ps3_regression": "after_deadline"}
c.GraderService.notebook_timeout_s = 60
c.GraderService.counting = "best"
c.Execute.timeout = 90
"""


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def set_due(server: Server, assignment: str, due: dt.datetime) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(server.root)) as gradebook:
        gradebook.update_or_create_assignment(assignment, duedate=due)


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("strict"), RULES)


def test_past_the_hard_deadline_is_refused_until_an_extension(strict: Server) -> None:
    set_due(strict, "ps2_autograd", _utcnow() - dt.timedelta(hours=2))
    token = strict.token("late-lucy")
    data = fixture_bytes("ps2_autograd", "correct")
    with strict.client(token) as client:
        refused = submit(client, "ps2_autograd", data)
        assert refused.status_code == 403
        assert "ps2_autograd closed on" in refused.json()["error"]
        assert strict.store.submissions(student="late-lucy") == []
        env = dict(os.environ, GRADER_COURSE_ROOT=str(strict.root))
        grader = str(Path(sys.executable).parent / "grader")
        granted = subprocess.run(
            [grader, "extension", "late-lucy", "ps2_autograd", "--hours", "5"], env=env, capture_output=True, text=True
        )
        assert granted.returncode == 0, granted.stderr
        assert "late-lucy has 5 extra hour(s) for ps2_autograd" in granted.stdout
        assert submit(client, "ps2_autograd", data).status_code == 202


def test_late_resubmission_needs_confirmation_instead_of_silently_costing_points(strict: Server) -> None:
    set_due(strict, "ps3_regression", _utcnow() + dt.timedelta(hours=1))
    token = strict.token("careful-carl")
    data = fixture_bytes("ps3_regression", "correct")
    with strict.client(token) as client:
        assert submit(client, "ps3_regression", data).status_code == 202
        (first,) = strict.store.submissions(student="careful-carl")
        set_due(strict, "ps3_regression", first.received_at + dt.timedelta(seconds=0.5))  # first was on time
        time.sleep(1.6)
        unconfirmed = submit(client, "ps3_regression", data)
        assert unconfirmed.status_code == 409
        assert "would replace your on-time one" in unconfirmed.json()["error"]
        assert (
            "and cost no late penalty (it is within the late policy's 15 minutes of grace)"
            in (unconfirmed.json()["error"])
        )
        assert "confirm_late=true" in unconfirmed.json()["error"]
        assert len(strict.store.submissions(student="careful-carl")) == 1
        confirmed = client.post(
            "/api/submissions",
            data={"assignment": "ps3_regression", "confirm_late": "true"},
            files={"file": ("nb.ipynb", data)},
        )
        assert confirmed.status_code == 202
    assert len(strict.store.submissions(student="careful-carl")) == 2


def test_rate_limit_and_attempt_limit(strict: Server) -> None:
    set_due(strict, "ps1_tensors", _utcnow() + dt.timedelta(days=1))
    token = strict.token("eager-eve")
    data = fixture_bytes("ps1_tensors", "correct")
    with strict.client(token) as client:
        assert submit(client, "ps1_tensors", data).status_code == 202
        too_soon = submit(client, "ps1_tensors", data)
        assert too_soon.status_code == 429 and "wait" in too_soon.json()["error"]
        for _ in range(2):
            time.sleep(1.6)
            assert submit(client, "ps1_tensors", data).status_code == 202
        time.sleep(1.6)
        exhausted = submit(client, "ps1_tensors", data)
        assert exhausted.status_code == 403
        assert "used all 3 submissions of ps1_tensors" in exhausted.json()["error"]
    assert len(strict.store.submissions(student="eager-eve")) == 3


def test_score_only_policy_hides_per_test_results_from_the_student_not_from_staff(strict: Server) -> None:
    set_due(strict, "ps1_tensors", _utcnow() + dt.timedelta(days=1))
    token = strict.token("quiet-quinn")
    with strict.client(token) as client:
        submission_id = submit(client, "ps1_tensors", fixture_bytes("ps1_tensors", "hard-coded")).json()["id"]
    body = strict.wait_graded(token, submission_id, timeout=300)
    assert body["status"] == "graded" and body["score"] < body["max_score"]
    assert "tests" not in body and body["tests_hidden_until"] == "never (score only)"
    with strict.client(strict.token("ta-tom", "ta")) as client:
        staff_view = client.get(f"/api/submissions/{submission_id}").json()
    assert any(not t["passed"] for t in staff_view["tests"])


def test_whole_notebook_limit_ends_a_slow_notebook_with_a_graded_result(strict: Server) -> None:
    """Each cell stays under the per-cell limit (90 s); together they pass the notebook limit (60 s)."""
    set_due(strict, "ps2_autograd", _utcnow() + dt.timedelta(days=1))
    slow = json.loads(fixture_bytes("ps2_autograd", "correct"))
    for cell in slow["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in ("cubic_slope", "predict", "mse"):
            cell["source"] = "import time\ntime.sleep(25)\n" + "".join(cell["source"])
    token = strict.token("slow-sam")
    with strict.client(token) as client:
        submission_id = submit(client, "ps2_autograd", json.dumps(slow).encode()).json()["id"]
    body = strict.wait_graded(token, submission_id, timeout=300)
    assert body["status"] == "graded"
    assert 0 < body["score"] < body["max_score"]  # what ran before the limit keeps its points
    assert "Grading stopped after 60 s, the limit for a whole notebook" in body["reason"]
    failed = [t for t in body["tests"] if not t["passed"]]
    assert failed and all(t["message"].startswith("Grading stopped after 60 s") for t in failed)


def test_best_attempt_counts_in_the_gradebook_when_configured(strict: Server) -> None:
    from nbgrader.api import Gradebook

    set_due(strict, "ps3_regression", _utcnow() + dt.timedelta(days=1))
    token = strict.token("best-bea")
    with strict.client(token) as client:
        good = submit(client, "ps3_regression", fixture_bytes("ps3_regression", "correct")).json()["id"]
        first = strict.wait_graded(token, good, timeout=300)
        time.sleep(1.6)
        worse = submit(client, "ps3_regression", fixture_bytes("ps3_regression", "grad-not-zeroed")).json()["id"]
        second = strict.wait_graded(token, worse, timeout=300)
    assert second["score"] < first["score"] == first["max_score"]
    with Gradebook(course.gradebook_url(strict.root)) as gradebook:
        counted = gradebook.find_submission("ps3_regression", "best-bea")
        assert counted.score == first["score"]
    with strict.client(strict.token("ta-tia", "ta")) as client:
        rows = client.get("/api/admin/grades").json()
        (row,) = [r for r in rows if r["student"] == "best-bea" and r["assignment"] == "ps3_regression"]
    assert row["raw_score"] == first["score"] and row["attempts"] == 2


def test_after_deadline_policy_shows_per_test_results_once_the_due_date_has_passed(strict: Server) -> None:
    set_due(strict, "ps3_regression", _utcnow() + dt.timedelta(days=1))
    token = strict.token("patient-pat")
    with strict.client(token) as client:
        submission_id = submit(client, "ps3_regression", fixture_bytes("ps3_regression", "sum-instead-of-mean")).json()[
            "id"
        ]
        before = strict.wait_graded(token, submission_id, timeout=300)
        assert before["score"] < before["max_score"]
        assert "tests" not in before and before["tests_hidden_until"] == "the due date"
        set_due(strict, "ps3_regression", _utcnow() - dt.timedelta(minutes=1))
        after = client.get(f"/api/submissions/{submission_id}").json()
    assert any("sum-instead-of-mean" in t["message"] for t in after["tests"] if not t["passed"])


def test_after_deadline_feedback_waits_for_the_students_extended_due_date(strict: Server) -> None:
    """Intake takes the extended due date; feedback must too, or a student with an extension would
    read per-test results while still allowed to resubmit (issue 16)."""
    set_due(strict, "ps3_regression", _utcnow() - dt.timedelta(minutes=5))
    env = dict(os.environ, GRADER_COURSE_ROOT=str(strict.root))
    grader = str(Path(sys.executable).parent / "grader")
    token = strict.token("extended-eve")  # a student the service knows: an extension for a typo is refused
    command = [grader, "extension", "extended-eve", "ps3_regression", "--hours", "24"]
    subprocess.run(command, env=env, check=True, capture_output=True)
    with strict.client(token) as client:
        response = submit(client, "ps3_regression", fixture_bytes("ps3_regression", "correct"))
        assert response.status_code == 202, response.text  # on time, thanks to the extension
        body = strict.wait_graded(token, response.json()["id"], timeout=300)
    assert body["late_penalty"] == 0
    assert "tests" not in body and body["tests_hidden_until"] == "the due date"
    # the exchange listing (JupyterLab's Assignments panel) shows each student their own due date
    listed = {}
    for student in ("extended-eve", "plain-paul"):
        with strict.client(strict.token(student)) as client:
            rows = client.get("/api/assignments").json()
        listed[student] = next(r["due_date"] for r in rows if r["assignment"] == "ps3_regression")
    base = dt.datetime.fromisoformat(listed["plain-paul"].rstrip("Z"))
    assert dt.datetime.fromisoformat(listed["extended-eve"].rstrip("Z")) - base == dt.timedelta(hours=24)


def test_every_regrade_door_selects_the_attempt_that_counts(strict: Server) -> None:
    """``POST /api/admin/regrade`` took the latest attempt while the page and the CLI took the one that
    counts (issue 16); with ``counting = "best"`` they differ. All doors call ``regrading.select``."""
    from grader.service.config import load
    from grader.service.rules import regrading

    attempts = strict.store.submissions(student="best-bea", assignment="ps3_regression")
    assert len(attempts) == 2 and attempts[0].score > attempts[1].score  # the best is the earlier one
    best = attempts[0].id
    selected = [s.id for s in regrading.select(strict.store, load(strict.root), assignment="ps3_regression")]
    assert best in selected and attempts[1].id not in selected  # what the page and grader regrade queue
    with strict.client(strict.token("ta-ted", "ta")) as client:
        queued = client.post("/api/admin/regrade", json={"student": "best-bea", "assignment": "ps3_regression"})
    assert queued.status_code == 202 and queued.json()["submissions"] == [best]
    strict.wait_graded(strict.token("best-bea"), best, timeout=300)


def test_a_regrade_dry_run_after_a_due_date_change_shows_the_late_penalty_going(strict: Server) -> None:
    """Moving a due date later, the dry run said nobody would change, while the real regrade (and stock
    nbgrader on a copy) took the late penalty away (issue 16): the dry run keeps the due date, the
    extensions and each attempt's time, and compares final scores."""
    set_due(strict, "ps3_regression", _utcnow() - dt.timedelta(hours=30))  # two started days late: 20%
    token = strict.token("late-lou")
    with strict.client(token) as client:
        response = submit(client, "ps3_regression", fixture_bytes("ps3_regression", "correct"))
        assert response.status_code == 202, response.text
        body = strict.wait_graded(token, response.json()["id"], timeout=300)
    assert body["late_penalty"] == pytest.approx(0.2 * body["score"])
    set_due(strict, "ps3_regression", _utcnow() + dt.timedelta(days=1))
    env = dict(os.environ, GRADER_COURSE_ROOT=str(strict.root))
    grader = str(Path(sys.executable).parent / "grader")
    dry = subprocess.run(
        [grader, "regrade", "ps3_regression", "--dry-run"], env=env, capture_output=True, text=True, timeout=600
    )
    assert dry.returncode == 0, dry.stderr
    line = next(ln for ln in dry.stdout.splitlines() if ln.startswith("late-lou"))
    assert line.split()[2:5] == [f"{body['final_score']:g}", f"{body['score']:g}", f"{body['late_penalty']:+g}"]
    assert line.endswith(f"  late penalty {body['late_penalty']:g}->0")  # the reason, where no test changes
