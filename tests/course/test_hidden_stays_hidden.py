"""Hidden stays hidden on every path a student's eyes reach (issue 15).

A canary comment is planted in every ``### BEGIN HIDDEN TESTS`` block of every assignment, in a
copy of the course. Then each path that turns a graded notebook into something a student reads
is run for real: stock ``nbgrader autograde`` + ``nbgrader generate_feedback`` (the HTML a TA
hands out), the service's feedback (``grader serve``, the student's API view), the exchange's
``nbgrader fetch_feedback`` and ``grader check``. None may contain a canary, a hidden test's line
or its delimiters; the failing test's sentence must still be there. The feedback HTML must also be
inert: a student's ``<script>``, ``on*=`` handler, ``javascript:`` link or iframe does not survive.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from grader import course
from tests.fixtures.build import fixtures
from tests.fixtures.spec import SUBMISSIONS, Fixture
from tests.service.conftest import QUICK, Server, free_port

ASSIGNMENTS = course.assignments()
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)
ACTIVE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
ACTIVE_LINK = '<a href="javascript:document.title=\'pwned\'">click</a><iframe src="javascript:alert(1)"></iframe>'
INJECTING_CELL = f"from IPython.display import HTML, display\ndisplay(HTML({(ACTIVE + ACTIVE_LINK)!r}))"
INJECTING_MARKDOWN = f"My notes: {ACTIVE} {ACTIVE_LINK} [more](javascript:alert(2))"


def canary(assignment: str, grade_id: str) -> str:
    return f"CANARY-{assignment}-{grade_id}-d41c"


def plant_everywhere(root: Path) -> dict[str, set[str]]:
    """A canary comment in every hidden block of ``root``'s sources; returns each assignment's hidden lines."""
    hidden: dict[str, set[str]] = {}
    for assignment in ASSIGNMENTS:
        path = root / "source" / assignment / f"{assignment}.ipynb"
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if "### BEGIN HIDDEN TESTS" in cell.source:
                gid = cell.metadata["nbgrader"]["grade_id"]
                cell.source = cell.source.replace(
                    "### BEGIN HIDDEN TESTS\n", f"### BEGIN HIDDEN TESTS\n# {canary(assignment, gid)}\n"
                )
        nbformat.write(nb, path)
        hidden[assignment] = {
            line.strip() for c in nb.cells for block in HIDDEN.findall(c.source) for line in block.splitlines()
        }
    course.generate_releases(root)
    for assignment in ASSIGNMENTS:
        release = (root / "release" / assignment / f"{assignment}.ipynb").read_text()
        visible = {line.strip() for c in nbformat.reads(release, as_version=4).cells for line in c.source.splitlines()}
        assert "CANARY-" not in release
        # what a student may see anyway: the visible tests, and lines too short to say anything
        hidden[assignment] = {line for line in hidden[assignment] - visible if len(line) > 15}
    return hidden


def failing(assignment: str) -> Fixture:
    """A misconception fixture of this assignment whose failing test has a message to show."""
    return next(f for f in fixtures(assignment) if f.fails and not f.edits)


def injecting(assignment: str) -> bytes:
    """The correct submission plus a code cell displaying active HTML and a markdown cell with it."""
    nb = nbformat.read(SUBMISSIONS / assignment / "correct.ipynb", as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell(INJECTING_CELL))
    nb.cells.insert(2, nbformat.v4.new_markdown_cell(INJECTING_MARKDOWN))
    for i, cell in enumerate(nb.cells[2:4]):
        cell.id = f"student-html-{i}"
    return nbformat.writes(nb).encode()


def leaks(text: str, assignment: str, hidden: set[str]) -> list[str]:
    found = list(re.findall(r"CANARY-[\w-]+", text))
    found += [d for d in ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS") if d in text]
    unescaped = html.unescape(text)
    found += sorted(line for line in hidden if line in text or line in unescaped)
    return found


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, set[str]]]:
    root = course.copy_course(tmp_path_factory.mktemp("canary") / "course")
    return root, plant_everywhere(root)


def test_stock_generate_feedback_hides_hidden_tests_and_is_inert(planted: tuple[Path, dict[str, set[str]]]) -> None:
    root, hidden = planted
    for assignment in ASSIGNMENTS:
        wrong = failing(assignment)
        course.place_submission(root, "wrong", assignment, SUBMISSIONS / assignment / f"{wrong.name}.ipynb")
        course.place_submission(root, "correct", assignment, SUBMISSIONS / assignment / "correct.ipynb")
        course.place_notebook(root, "injector", assignment, injecting(assignment))
        course.autograde(root, assignment)
        course.nbgrader(root, "generate_feedback", assignment, "--force")
        pages = {p.parent.parent.name: p.read_text() for p in (root / "feedback").glob(f"*/{assignment}/*.html")}
        assert set(pages) == {"wrong", "correct", "injector"}
        for student, page in pages.items():
            assert leaks(page, assignment, hidden[assignment]) == [], (assignment, student)
            assert "hidden tests ran here" in page
        sentence = _first_expected_sentence(root, "wrong", assignment, wrong)
        assert html.escape(sentence, quote=False) in pages["wrong"] or sentence in pages["wrong"]
        assert active_parts(pages["injector"]) == []
        assert "&lt;script&gt;document.title" in pages["injector"]  # shown as text, not run


class _Active(HTMLParser):
    """What a browser would run or load from the page: script text, on* handlers, script links, frames."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        if tag in ("iframe", "frame", "object", "embed"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            if name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith(
                ("javascript:", "vbscript:")
            ):
                self.found.append(f"{tag} {name}={value}")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and "pwned" in data:
            self.found.append("<script> from the student")


def active_parts(page: str) -> list[str]:
    parser = _Active()
    parser.feed(page)
    return parser.found


def _first_expected_sentence(root: Path, student: str, assignment: str, fixture: Fixture) -> str:
    """The first line of the failing test's message, as the autograded notebook has it."""
    nb = nbformat.read(root / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    gid = next(iter(fixture.fails))
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid]
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    return str(error.evalue).splitlines()[0]


@pytest.fixture(scope="module")
def service(planted: tuple[Path, dict[str, set[str]]]) -> Iterator[Server]:
    root, _ = planted
    with (root / "nbgrader_config.py").open("a") as config:
        config.write("\n" + QUICK)
    server = Server(root, f"http://127.0.0.1:{free_port()}")
    server.start()
    try:
        yield server
    finally:
        server.kill(signal.SIGTERM)


def test_service_feedback_and_fetch_feedback_hide_hidden_tests(
    service: Server, planted: tuple[Path, dict[str, set[str]]], tmp_path: Path
) -> None:
    from tests.service.web.test_exchange import make_student

    _, hidden = planted
    for assignment in ASSIGNMENTS:
        wrong = SUBMISSIONS / assignment / f"{failing(assignment).name}.ipynb"
        # the service's own view of the attempt, as the student's API (and the student page) gets it
        student = make_student(service, tmp_path, f"xch-{assignment}")
        student.ok("fetch_assignment", assignment)
        shutil.copy(wrong, student.home / assignment / f"{assignment}.ipynb")
        student.ok("submit", assignment)
        with service.client(student.token) as client:
            (submission,) = client.get("/api/submissions").json()
        body = service.wait_graded(student.token, submission["id"])
        assert body["status"] == "graded" and any(not t["passed"] for t in body["tests"]), body
        assert leaks(json.dumps(body), assignment, hidden[assignment]) == []
        # the exchange: the feedback page nbgrader fetch_feedback writes
        student.ok("fetch_feedback", assignment)
        (page,) = (student.home / assignment / "feedback").glob(f"*/{assignment}.html")
        text = page.read_text()
        assert "FAIL" in text
        assert leaks(text, assignment, hidden[assignment]) == []


def test_grader_check_shows_no_hidden_test(planted: tuple[Path, dict[str, set[str]]], tmp_path: Path) -> None:
    """``grader check`` runs the student's own notebook: only the visible tests are in it."""
    _, hidden = planted
    for assignment in ASSIGNMENTS:
        notebook = tmp_path / f"{assignment}.ipynb"
        notebook.write_bytes((SUBMISSIONS / assignment / f"{failing(assignment).name}.ipynb").read_bytes())
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "grader"), "check", str(notebook)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "visible test" in proc.stdout + proc.stderr
        assert leaks(proc.stdout + proc.stderr, assignment, hidden[assignment]) == []
