"""The exchange plugin end to end: the STOCK nbgrader student commands against a real service on loopback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader import course

from ..conftest import FIXTURES, Server

NBGRADER = str(Path(sys.executable).parent / "nbgrader")
COURSE = "pytorch101"
ASSIGNMENT = "ps1_tensors"
PLUGIN = {
    "exchange": "GraderExchange",
    "fetch_assignment": "GraderFetchAssignment",
    "submit": "GraderSubmit",
    "list": "GraderList",
    "fetch_feedback": "GraderFetchFeedback",
    "release_assignment": "GraderReleaseAssignment",
    "release_feedback": "GraderReleaseFeedback",
    "collect": "GraderCollect",
}
PLUGIN_CONFIG = "".join(f'c.ExchangeFactory.{key} = "grader.exchange.{name}"\n' for key, name in PLUGIN.items())


@dataclass
class Student:
    """A student's working directory (not the course repository) with its own nbgrader_config.py."""

    home: Path
    env: dict[str, str]
    token: str

    def nbgrader(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [NBGRADER, *args], cwd=self.home, env=env or self.env, capture_output=True, text=True, timeout=300
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.nbgrader(*args)
        assert proc.returncode == 0, f"nbgrader {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc


def make_student(server: Server, root: Path, user: str, extra_config: str = "") -> Student:
    home = root / user
    home.mkdir(parents=True)
    (home / "nbgrader_config.py").write_text(
        f'c = get_config()\nc.CourseDirectory.course_id = "{COURSE}"\n{PLUGIN_CONFIG}{extra_config}'
    )
    token = server.token(user)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "JUPYTER"))}
    env.update(
        GRADER_URL=server.url,
        GRADER_TOKEN=token,
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
        JUPYTER_DATA_DIR=str(home / ".local-jupyter"),
    )
    return Student(home, env, token)


def hidden_test_lines(server: Server, assignment: str) -> set[str]:
    source = nbformat.read(server.root / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    hidden = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
    secret = {
        line.strip()
        for cell in source.cells
        for block in hidden.findall(cell.source)
        for line in block.splitlines()
        if len(line.strip()) > 15
    }
    # a line the instructor also wrote outside the hidden blocks (a visible test's hint) is no secret
    visible = "\n".join(hidden.sub("", cell.source) for cell in source.cells)
    return {line for line in secret if line not in visible}


@pytest.fixture(scope="module")
def graded(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Student, dict]]:  # type: ignore[type-arg]
    """A student who fetched ps1_tensors, answered it (some tests fail) and submitted it; graded by the service."""
    student = make_student(server, tmp_path_factory.mktemp("exchange"), "xch-graded")
    student.ok("fetch_assignment", ASSIGNMENT)
    shutil.copy(FIXTURES / ASSIGNMENT / "unintended-broadcast.ipynb", student.home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    proc = student.ok("submit", ASSIGNMENT)
    assert f"Submitted as: {COURSE} {ASSIGNMENT} " in proc.stderr
    with server.client(student.token) as client:
        (submission,) = client.get("/api/submissions").json()
    body = server.wait_graded(student.token, submission["id"])
    assert body["status"] == "graded", body
    assert 0 < body["score"] < body["max_score"]
    yield student, body


def test_fetch_gives_the_release_and_never_clobbers(server: Server, tmp_path: Path) -> None:
    student = make_student(server, tmp_path, "xch-fetch")
    proc = student.ok("fetch_assignment", ASSIGNMENT)
    assert f"Fetched as: {COURSE} {ASSIGNMENT}" in proc.stderr
    fetched = student.home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert fetched.read_bytes() == (server.root / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes()
    text = fetched.read_text()
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    assert not {line for line in hidden_test_lines(server, ASSIGNMENT) if line in text}

    fetched.write_text(fetched.read_text().replace("raise NotImplementedError()", "x = 1  # my work"))
    mine = fetched.read_bytes()
    again = student.nbgrader("fetch_assignment", ASSIGNMENT)
    assert again.returncode != 0
    assert "You already have a copy of the assignment" in again.stderr
    assert fetched.read_bytes() == mine

    extra = student.home / ASSIGNMENT / "scratch.txt"
    extra.write_text("notes")
    replaced = student.ok("fetch_assignment", ASSIGNMENT, "--replace")
    assert fetched.read_bytes() == mine and extra.exists()  # --replace only restores missing files
    fetched.unlink()
    replaced = student.ok("fetch_assignment", ASSIGNMENT, "--replace")
    assert "Replacing missing file" in replaced.stderr and "raise NotImplementedError()" in fetched.read_text()

    unknown = student.nbgrader("fetch_assignment", "ps9_nothing")
    assert unknown.returncode != 0 and "not released" in unknown.stderr and ASSIGNMENT in unknown.stderr


def test_fetch_follows_path_includes_course(server: Server, tmp_path: Path) -> None:
    student = make_student(server, tmp_path, "xch-course-dir", "c.Exchange.path_includes_course = True\n")
    student.ok("fetch_assignment", ASSIGNMENT)
    assert (student.home / COURSE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    assert not (student.home / ASSIGNMENT).exists()
    listing = json.loads(student.ok("list", "--json").stdout)
    assert {a["assignment_id"]: a["status"] for a in listing}[ASSIGNMENT] == "fetched"


def test_list_shows_released_fetched_and_submitted(
    server: Server, tmp_path: Path, graded: tuple[Student, dict]
) -> None:  # type: ignore[type-arg]
    fresh = make_student(server, tmp_path, "xch-list")
    proc = fresh.ok("list")
    assert "Released assignments:" in proc.stderr
    assert any(line.endswith(f"] {COURSE} {ASSIGNMENT}") for line in proc.stderr.splitlines()), proc.stderr
    released = json.loads(fresh.ok("list", "--json").stdout)
    assert {a["assignment_id"] for a in released} == set(course.assignments(server.root))
    assert all(a["status"] == "released" and a["course_id"] == COURSE for a in released)
    assert json.loads(fresh.ok("list", "--cached", "--json").stdout) == []

    student, body = graded
    text = student.ok("list").stderr
    assert f"{COURSE} {ASSIGNMENT} (already downloaded)" in text
    listing = {a["assignment_id"]: a for a in json.loads(student.ok("list", "--json").stdout)}
    assert listing[ASSIGNMENT]["status"] == "fetched"
    assert listing[ASSIGNMENT]["notebooks"] == [
        {"notebook_id": ASSIGNMENT, "path": str(student.home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")}
    ]
    assert listing["ps2_autograd"]["status"] == "released"

    (submitted,) = json.loads(student.ok("list", "--cached", "--json").stdout)
    assert (submitted["course_id"], submitted["student_id"], submitted["assignment_id"]) == (
        COURSE,
        "xch-graded",
        ASSIGNMENT,
    )
    (attempt,) = submitted["submissions"]
    assert attempt["status"] == "submitted" and attempt["grading_status"] == "graded"
    assert attempt["score"] == body["final_score"] and attempt["has_exchange_feedback"]
    cached = student.ok("list", "--cached").stderr
    assert f"{COURSE} xch-graded {ASSIGNMENT} {attempt['timestamp']}" in cached
    assert f"[graded {body['final_score']:g}/{body['max_score']:g}]" in cached


def test_fetch_feedback_writes_a_student_safe_page(server: Server, graded: tuple[Student, dict]) -> None:  # type: ignore[type-arg]
    student, body = graded
    proc = student.ok("fetch_feedback", ASSIGNMENT)
    (page,) = (student.home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html")
    assert f"Fetched feedback: {page}" in proc.stderr
    html = page.read_text()
    assert f"Score: {body['final_score']:g} / {body['max_score']:g}" in html
    assert body["tests"] and any(not t["passed"] for t in body["tests"])
    for test in body["tests"]:
        assert test["name"] in html
        assert f"{test['points']:g} / {test['max_points']:g}" in html
    assert "FAIL" in html and "PASS" in html
    assert "HIDDEN TESTS" not in html and "BEGIN SOLUTION" not in html
    assert not {line for line in hidden_test_lines(server, ASSIGNMENT) if line in html}

    (submitted,) = json.loads(student.ok("list", "--cached", "--json").stdout)
    (attempt,) = submitted["submissions"]
    assert attempt["has_local_feedback"] and not attempt["feedback_updated"]
    assert Path(attempt["local_feedback_path"]) == page.parent
    assert "(feedback already fetched)" in student.ok("list", "--cached").stderr


def test_missing_or_invalid_token_fails_clearly(server: Server, tmp_path: Path) -> None:
    student = make_student(server, tmp_path, "xch-token")
    missing = student.nbgrader("list", env={**student.env, "GRADER_TOKEN": ""})
    assert missing.returncode != 0
    assert "No grading service token: set GRADER_TOKEN" in missing.stderr
    invalid = student.nbgrader("fetch_assignment", ASSIGNMENT, env={**student.env, "GRADER_TOKEN": "not-a-token"})
    assert invalid.returncode != 0
    assert "refused (401): invalid or revoked token" in invalid.stderr
    assert not (student.home / ASSIGNMENT).exists()
    no_url = student.nbgrader("list", env={**student.env, "GRADER_URL": ""})
    assert no_url.returncode != 0 and "No grading service URL: set GRADER_URL" in no_url.stderr


def test_submit_refusals_are_reported(server: Server, tmp_path: Path) -> None:
    student = make_student(server, tmp_path, "xch-refused")
    not_fetched = student.nbgrader("submit", ASSIGNMENT)
    assert not_fetched.returncode != 0 and "Assignment not found at" in not_fetched.stderr
    student.ok("fetch_assignment", ASSIGNMENT)
    shutil.copy(FIXTURES / "ps2_autograd" / "correct.ipynb", student.home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    wrong = student.nbgrader("submit", ASSIGNMENT)
    assert wrong.returncode != 0 and "refused (422)" in wrong.stderr and "another assignment" in wrong.stderr
    assert server.store.submissions(student="xch-refused") == []


def test_instructor_commands_say_the_service_owns_them(server: Server, tmp_path: Path) -> None:
    student = make_student(server, tmp_path, "xch-instructor")
    proc = student.nbgrader("list", "--inbound")
    assert proc.returncode != 0 and "submissions live in the grading service" in proc.stderr


def test_course_config_with_the_plugin_still_runs_stock_tools(tmp_path: Path) -> None:
    """TAs share nbgrader_config.py: selecting the plugin there must not break the other nbgrader commands."""
    root = course.copy_course(tmp_path / "course")
    with (root / "nbgrader_config.py").open("a") as config:
        config.write("\n" + PLUGIN_CONFIG)
    output = course.nbgrader(root, "db", "assignment", "list")
    assert "Assignments" in output or "assignment" in output.lower()


def test_fetch_hands_each_student_their_own_variant_and_grades_them_on_it(server: Server, tmp_path: Path) -> None:
    """ps3's shop differs per student (grader.variants): two students fetch with stock nbgrader, their notebooks
    differ in the marked cell only, each holds the student's own values, and a correct answer gets full marks."""
    from grader import variants

    ps3 = "ps3_regression"
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    release_nb = nbformat.read(server.root / "release" / ps3 / f"{ps3}.ipynb", as_version=4)
    (cell,) = variants.find_cells(release_nb, ps3)
    names = [f"xch-variant-{n}" for n in range(40)]
    first = names[0]
    other = next(
        n
        for n in names
        if variants.student_values(key, ps3, n, [cell]) != variants.student_values(key, ps3, first, [cell])
    )
    fetched = {}
    for user in (first, other):
        student = make_student(server, tmp_path, user)
        student.ok("fetch_assignment", ps3)
        fetched[user] = (student, nbformat.read(student.home / ps3 / f"{ps3}.ipynb", as_version=4))
    a, b = fetched[first][1], fetched[other][1]
    assert [i for i, (x, y) in enumerate(zip(a.cells, b.cells, strict=True)) if x != y] == [cell.index]
    for user, (_, nb) in fetched.items():
        values = variants.student_values(key, ps3, user, [cell])
        text = nb.cells[cell.index].source
        assert "variant:" not in text, "the marks and the other choices stay on the server"
        for name, value in values.items():
            assert f"{name} = {value!r}\n" in text

    student, nb = fetched[other]
    answers = nbformat.read(FIXTURES / ps3 / "correct.ipynb", as_version=4)
    for i, answer in enumerate(answers.cells):
        if answer.get("metadata", {}).get("nbgrader", {}).get("solution"):
            nb.cells[i].source = answer.source
    nbformat.write(nb, student.home / ps3 / f"{ps3}.ipynb")
    student.ok("submit", ps3)
    with server.client(student.token) as client:
        (submission,) = client.get("/api/submissions").json()
    body = server.wait_graded(student.token, submission["id"])
    assert body["status"] == "graded" and body["score"] == body["max_score"], body
