"""Grading written answers by rubric into nbgrader's own gradebook: groups, shared items, conflicts, the audit.

Real nbgrader throughout: the course is released and the answers autograded by stock ``nbgrader autograde``;
what a TA saves is read back through nbgrader's ``Gradebook`` (as formgrader reads it) and ``nbgrader export``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader import course
from grader.errors import AuthoringError, MarkConflict, NotFound, RegradeAlreadyAsked, RegradeRefused, StudentError
from grader.service.marking import answers, marks, regrades, release
from grader.service.records.store import Store
from grader.service.rules import written

from ..conftest import fresh_database

A = "ps2_autograd"
CELL = "sum_gradient"
CORRECT = Path(__file__).resolve().parents[2] / "fixtures" / "submissions" / A / "correct.ipynb"
WRITTEN = {
    "ada": "The gradient is **2x**: the mean divides by N = 4, the sum does not.",
    "bob": "the gradient is 2x:   the mean divides by N = 4,\nthe sum does not.",  # the same, normalised
    "cy": "It is x/2 as before.",
    "dee": None,  # left as released
}


@dataclass
class Course:
    root: Path
    store: Store
    url: str


def _submission(text: str | None) -> bytes:
    nb = nbformat.read(CORRECT, as_version=4)
    for cell in nb.cells:
        if text is not None and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == CELL:
            cell.source = text
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def course_(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    """The course on SQLite (its own gradebook.db) and on PostgreSQL (nbgrader's and the service's tables in
    one database, as with ``grader serve --db-url``)."""
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(fresh_database("marks")) if request.param == "postgresql" else None
        root = course.copy_course(tmp_path_factory.mktemp("marking") / "course")
        course.generate_releases(root, [A], db_url=db_url)
        for student, text in WRITTEN.items():
            course.place_notebook(root, student, A, _submission(text))
        course.nbgrader(root, "autograde", A, "--create", "--force", db_url=db_url)
        url = course.gradebook_url(root, db_url)
        yield Course(root, Store(url, create=True), url)


def _nbgrader_grade(url: str, student: str, cell: str = CELL) -> tuple[float, str | None, bool]:
    with Gradebook(url) as gradebook:
        grade = gradebook.find_grade(cell, A, A, student)
        comment = gradebook.find_comment(cell, A, A, student)
        return float(grade.score), comment.comment, bool(grade.needs_manual_grade)


def test_answers_are_read_from_what_nbgrader_autograded_and_identical_ones_grouped(course_: Course) -> None:
    found = answers.read(course_.root, A, CELL)
    assert [a.student for a in found] == ["ada", "bob", "cy", "dee"]
    assert [a.blank for a in found] == [False, False, False, True]
    assert [g.students for g in answers.groups(found)] == [("ada", "bob"), ("cy",), ("dee",)]
    # nbgrader itself: a changed answer waits for a person, the untouched one is already 0
    assert _nbgrader_grade(course_.url, "ada")[2] is True
    assert _nbgrader_grade(course_.url, "dee") == (0.0, "No response.", False)


def test_a_group_graded_once_writes_each_members_score_and_comment_to_nbgrader(course_: Course) -> None:
    rubric = marks.rubric(course_.store, course_.root, A, CELL)
    group = answers.groups(answers.read(course_.root, A, CELL))[0]
    saved = marks.save(
        course_.store,
        rubric,
        assignment=A,
        answers=group.answers,
        items=["1", "2"],
        comment="Say why N is 4.",
        actor="ta-one",
        expected={},
    )
    assert [(m.student, m.score, m.version) for m in saved] == [("ada", 2.0, 1), ("bob", 2.0, 1)]
    for student in ("ada", "bob"):
        score, comment, waiting = _nbgrader_grade(course_.url, student)
        assert (score, waiting) == (2.0, False)
        assert comment == (
            "[+1] derives dL/dx = 2x for the sum of squares\n"
            "[+1] the factor 4 is the number of elements N the mean divides by\n"
            "Say why N is 4."
        )
    # stock nbgrader's export totals the autograded and the written points alike
    course.nbgrader(course_.root, "export", "--to", str(course_.root / "grades.csv"), db_url=course_.url)
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO((course_.root / "grades.csv").read_text()))}
    autograded_only = float(rows["cy"]["raw_score"])
    assert float(rows["ada"]["raw_score"]) == autograded_only + 2.0


def test_a_second_ta_saving_over_a_first_sees_a_conflict_and_nothing_is_written(course_: Course) -> None:
    rubric = marks.rubric(course_.store, course_.root, A, CELL)
    (cy,) = answers.read(course_.root, A, CELL, students=["cy"])
    marks.save(course_.store, rubric, assignment=A, answers=[cy], items=["m"], actor="ta-one", expected={})
    with pytest.raises(MarkConflict) as raised:
        marks.save(course_.store, rubric, assignment=A, answers=[cy], items=["1"], actor="ta-two", expected={})
    message = str(raised.value)
    assert message.startswith("ta-one saved sum_gradient for cy at ")
    assert message.endswith(
        "(items m, 0 points) after you opened it: nothing of yours was saved; keep theirs, or save yours again over it"
    )
    assert marks.marks(course_.store, A, CELL)["cy"].items == ("m",)
    assert _nbgrader_grade(course_.url, "cy")[0] == 0.0
    # choosing to save over it, from the version the conflict showed
    marks.save(
        course_.store,
        rubric,
        assignment=A,
        answers=[cy],
        items=["1"],
        actor="ta-two",
        expected={"cy": raised.value.theirs.version},
    )
    assert _nbgrader_grade(course_.url, "cy")[0] == 1.0


def test_editing_a_shared_item_previews_then_rescores_every_answer_it_was_applied_to(course_: Course) -> None:
    rubric = marks.rubric(course_.store, course_.root, A, CELL)
    before = {s: m.score for s, m in marks.marks(course_.store, A, CELL).items()}
    preview = marks.change_item(course_.store, rubric, assignment=A, key="1", points=0.5, actor="prof")
    assert preview.summary == "3 score(s) of sum_gradient change, by -0.5 point(s)."
    assert marks.marks(course_.store, A, CELL) and _nbgrader_grade(course_.url, "ada")[0] == before["ada"]  # unwritten
    done = marks.change_item(course_.store, rubric, assignment=A, key="1", points=0.5, actor="prof", confirm=True)
    assert done == preview
    after = marks.marks(course_.store, A, CELL)
    assert {s: after[s].score for s in ("ada", "bob", "cy")} == {"ada": 1.5, "bob": 1.5, "cy": 0.5}
    assert _nbgrader_grade(course_.url, "bob")[0] == 1.5
    assert marks.rubric(course_.store, course_.root, A, CELL).item("1").points == 0.5  # shared from now on
    audit = marks.history(course_.store, A, CELL, "bob")
    assert [(c.actor, c.added, c.removed, c.old_score, c.new_score) for c in audit] == [
        ("ta-one", ("1", "2"), (), None, 2.0),
        ("prof", (), (), 2.0, 1.5),
    ]
    assert audit[-1].what == "item 1 edited by prof: 1 -> 0.5 points"


def test_a_key_the_rubric_lacks_or_a_student_never_autograded_is_one_sentence(course_: Course) -> None:
    rubric = marks.rubric(course_.store, course_.root, A, CELL)
    (ada,) = answers.read(course_.root, A, CELL, students=["ada"])
    with pytest.raises(NotFound, match=r"^sum_gradient has no rubric item with key .z. \(it has 1, 2, 3, m\)$"):
        marks.save(course_.store, rubric, assignment=A, answers=[ada], items=["z"], actor="ta", expected={"ada": 1})
    ghost = answers.Answer("ghost", A, CELL, "text", "markdown")
    with pytest.raises(NotFound, match="nbgrader's gradebook has no sum_gradient of ps2_autograd for ghost"):
        marks.save(course_.store, rubric, assignment=A, answers=[ghost], items=["1"], actor="ta", expected={})
    assert "ghost" not in marks.marks(course_.store, A, CELL)
    with pytest.raises(NotFound, match="ps2_autograd has no written-answer question 'nope'"):
        marks.rubric(course_.store, course_.root, A, "nope")
    assert json.loads(json.dumps([c.what for c in marks.history(course_.store, A, CELL, "ghost")])) == []


def test_written_points_count_once_released_and_until_then_the_lms_is_told_to_wait(course_: Course) -> None:
    """(after the tests above: ada's sum_gradient 1.5 of 3; nobody answered shape_1x4, which nbgrader scored 0.)"""
    pending = written.written(course_.store, A, "ada")
    assert [(q.cell, q.max_points, q.released, q.points) for q in pending.questions] == [
        ("shape_1x4", 2.0, False, 0.0),
        ("sum_gradient", 3.0, False, 1.5),
    ]
    assert (pending.points, pending.maximum, pending.pending) == (0.0, 5.0, True)
    assert written.combined(10.0, 20.0, pending) == written.Total(10.0, 25.0, True)
    assert written.combined(10.0, 20.0, pending).grading_progress == "PendingManual"
    assert release.release(course_.store, course_.root, A, [CELL], actor="prof") == [CELL]
    half = written.written(course_.store, A, "ada")
    assert (half.points, half.pending) == (1.5, True)  # shape_1x4 is not released yet
    assert release.student_view(course_.store, course_.root, "dee", [A])[0].points == 0.0  # left as released
    assert release.release(course_.store, course_.root, A, actor="prof") == [CELL, "shape_1x4"]
    done = written.everyone(course_.store, A, ["ada", "cy"])
    assert {s: (w.points, w.pending) for s, w in done.items()} == {"ada": (1.5, False), "cy": (0.5, False)}
    assert written.combined(10.0, 20.0, done["ada"]).grading_progress == "FullyGraded"
    (shown, _) = release.student_view(course_.store, course_.root, "ada", [A])
    assert (shown.cell, shown.points, shown.max_points, shown.comment) == (CELL, 1.5, 3.0, "Say why N is 4.")
    assert [(i.points, i.text) for i in shown.items] == [
        (0.5, "derives dL/dx = 2x for the sum of squares"),
        (1.0, "the factor 4 is the number of elements N the mean divides by"),
    ]
    assert not shown.may_ask  # released without a regrade deadline
    with pytest.raises(NotFound, match=r"^ps2_autograd has no written-answer question 'nope' \(it has: "):
        release.release(course_.store, course_.root, A, ["nope"], actor="prof")
    with pytest.raises(StudentError, match="the regrade deadline 2000-01-01 00:00 UTC has passed already"):
        release.release(course_.store, course_.root, A, actor="prof", regrades_until=dt.datetime(2000, 1, 1))


def test_a_regrade_request_is_asked_once_before_its_deadline_and_answered_with_the_score_then(
    course_: Course,
) -> None:
    store, at = course_.store, dt.datetime(2026, 12, 1, 12, 0)
    until = at + dt.timedelta(days=7)
    release.withdraw(store, A, CELL)
    with pytest.raises(RegradeRefused, match=r"^the grade of sum_gradient \(ps2_autograd\) has not been released"):
        regrades.ask(store, A, CELL, "cy", "I named N.", now=at)
    release.release(store, course_.root, A, [CELL], actor="prof", now=at - dt.timedelta(days=1))
    with pytest.raises(RegradeRefused, match=r"^staff did not open regrade requests for sum_gradient"):
        regrades.ask(store, A, CELL, "cy", "I named N.", now=at)
    release.release(store, course_.root, A, [CELL], actor="prof", regrades_until=until, now=at)
    with pytest.raises(RegradeRefused, match=r"closed at 2026-12-08 12:00 UTC$"):
        regrades.ask(store, A, CELL, "cy", "I named N.", now=until + dt.timedelta(minutes=1))
    with pytest.raises(StudentError, match=r"^the reason for your request is empty: say in a sentence or two"):
        regrades.ask(store, A, CELL, "cy", "   ", now=at)
    asked = regrades.ask(store, A, CELL, "cy", "  I named N: the mean divides by 4.  ", now=at)
    assert (asked.reason, asked.score_asked, asked.open) == ("I named N: the mean divides by 4.", 0.5, True)
    with pytest.raises(RegradeAlreadyAsked, match=r"you asked for a regrade of sum_gradient .* on 2026-12-01 12:00"):
        regrades.ask(store, A, CELL, "cy", "Again.", now=at)
    assert [r.student for r in regrades.queue(store)] == ["cy"]
    rubric = marks.rubric(store, course_.root, A, CELL)
    (cy,) = answers.read(course_.root, A, CELL, students=["cy"])
    mark = marks.marks(store, A, CELL)["cy"]
    marks.save(store, rubric, assignment=A, answers=[cy], items=["1", "2"], actor="ta", expected={"cy": mark.version})
    with pytest.raises(StudentError, match=r"^the reply is empty"):
        regrades.reply(store, asked.id, "ta", "")
    answered = regrades.reply(store, asked.id, "ta", "You did: +1.", now=at + dt.timedelta(hours=2))
    assert (answered.open, answered.replied_by, answered.score_asked, answered.score_replied) == (False, "ta", 0.5, 1.5)
    assert regrades.queue(store) == [] and regrades.queue(store, open_only=False) == [answered]
    (shown,) = [r for r in release.student_view(store, course_.root, "cy", [A]) if r.cell == CELL]
    assert shown.request == answered and shown.points == 1.5 and not shown.may_ask
    with pytest.raises(NotFound, match=r"^no regrade request 999$"):
        regrades.reply(store, 999, "ta", "x")


def test_stock_formgrader_shows_the_scores_and_comments_a_ta_saved(course_: Course, tmp_path: Path) -> None:
    """nbgrader's own formgrader (its API, as its pages read it), started on the course: the same score and comment
    as the marks, for a graded answer and an untouched one."""
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = course_.root / "nbgrader_config.py"
    if f"c.CourseDirectory.db_url = {course_.url!r}" not in config.read_text():
        with config.open("a") as file:
            file.write(f"\nc.CourseDirectory.db_url = {course_.url!r}\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter")}
    command = [str(Path(sys.executable).parent / "jupyter"), "server", "--no-browser", f"--port={port}"]
    command += ["--IdentityProvider.token=formgrader-test", f"--ServerApp.root_dir={course_.root}", "--allow-root"]
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(command, cwd=course_.root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/formgrader/api"
    try:
        with httpx.Client(headers={"Authorization": "token formgrader-test"}, timeout=30) as client:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                try:
                    if client.get(f"{base}/status").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert server.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
            rubric = marks.rubric(course_.store, course_.root, A, CELL)
            (ada,) = answers.read(course_.root, A, CELL, students=["ada"])
            before = marks.marks(course_.store, A, CELL).get("ada")
            version = {"ada": before.version} if before else {}
            marks.save(course_.store, rubric, assignment=A, answers=[ada], items=["1"], actor="ta", expected=version)
            for student in ("ada", "dee"):
                (notebook,) = client.get(f"{base}/student_notebook_submissions/{student}/{A}").json()
                grades = client.get(f"{base}/grades", params={"submission_id": notebook["id"]}).json()
                comments = client.get(f"{base}/comments", params={"submission_id": notebook["id"]}).json()
                grade = next(g for g in grades if g["name"] == CELL)
                comment = next(c for c in comments if c["name"] == CELL)
                mark = marks.marks(course_.store, A, CELL).get(student)
                if mark is None:  # left as released: nbgrader's own 0, nobody graded it
                    assert (grade["auto_score"], grade["manual_score"], grade["needs_manual_grade"]) == (
                        0.0,
                        None,
                        False,
                    )
                else:
                    assert grade["manual_score"] == mark.score
                    assert grade["needs_manual_grade"] is False
                    assert comment["manual_comment"] == marks.comment_text(mark, rubric)
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def test_a_rubrics_file_broken_while_the_service_runs_is_one_sentence_and_changes_nothing(course_: Course) -> None:
    file = course_.root / "source" / A / "rubrics.toml"
    kept = file.read_text()
    before = marks.marks(course_.store, A, CELL)
    try:
        file.write_text(kept.replace("[sum_gradient]", "[sum_gradient", 1))
        with pytest.raises(AuthoringError) as raised:
            marks.rubric(course_.store, course_.root, A, CELL)
    finally:
        file.write_text(kept)
    message = str(raised.value)
    assert message.startswith("the rubrics of ps2_autograd cannot be used, so nothing can be graded or saved: ")
    assert "does not parse as TOML" in message and "Traceback" not in message
    assert message.endswith(
        "Fix source/ps2_autograd/rubrics.toml (`grader validate ps2_autograd` lists the same problems)"
    )
    assert marks.marks(course_.store, A, CELL) == before
