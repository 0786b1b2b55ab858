"""Feedback HTML is inert in a real browser, for staff and for students (issue 17).

A submission of ``ps2_autograd`` (the correct fixture) carries active HTML: ``<script>``, ``on*=``
handlers, ``javascript:`` links, iframes (``srcdoc`` and ``javascript:``), a form, an SVG, an image
whose metadata breaks out of nbconvert's unquoted ``width=`` attribute, a Javascript output, an
isolated HTML output, in outputs stored in the notebook and in outputs its own code displays when
``nbgrader autograde`` re-executes it (``IPython.display``), in a markdown cell, in a print and in
the error a test cell raises. Every payload, if it ran, would set ``window.__pwned``, change
``document.title``, log ``pwned-...`` or open a dialog.

Each page is opened in Debian's Chromium (Playwright, as ``tests/service/web/test_browser.py``):
the feedback HTML stock ``nbgrader generate_feedback`` writes (what a TA opens and hands out), the
service's student feedback page (what ``nbgrader fetch_feedback`` writes) and the dashboard's
attempt table (what staff see), both built from the messages the service takes from the graded
notebook. Links are clicked, buttons pressed, images hovered; then nothing has fired, in the page
or any frame, the title is the page's own, and the scores are still shown. A positive control
shows the same payloads do fire in an unsanitised page, so the checks can see them.

Needs ``/usr/bin/chromium``: skipped without it, unless ``GRADER_REQUIRE_BROWSER=1``, where it fails.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page

from grader import course
from tests.course.test_hidden_stays_hidden import active_parts
from tests.fixtures.spec import SUBMISSIONS

# the browser, its skip (or, under GRADER_REQUIRE_BROWSER, failure) when Chromium is absent, and its fixture
from tests.service.web.test_browser import chromium  # noqa: F401

A = "ps2_autograd"


def fire(marker: str, where: str = "window") -> str:
    """JavaScript (no spaces: it must survive an unquoted attribute) that marks that it ran."""
    return f"{where}.__pwned='{marker}';{where}.document.title='pwned';console.log('pwned-{marker}')"


def payload(tag: str) -> str:
    """Every kind of active HTML the issue names, and a few more, each with its own marker."""
    return "".join(
        [
            f"<script>{fire('script-' + tag)}</script>",
            f'<img src=x onerror="{fire("onerror-" + tag)}" onmouseover="{fire("hover-" + tag)}">',
            f'<a href="javascript:{fire("link-" + tag)}">pwn-link-{tag}</a>',
            f'<iframe srcdoc="<script>{fire("srcdoc-" + tag, "parent")}</script>"></iframe>',
            f'<iframe src="javascript:{fire("iframe-" + tag, "parent")}"></iframe>',
            f'<svg onload="{fire("svg-" + tag)}"><circle r="1"/></svg>',
            f'<details open ontoggle="{fire("toggle-" + tag)}"><summary>s</summary></details>',
            f'<form action="javascript:{fire("form-" + tag)}"><button>pwn-button-{tag}</button></form>',
            f'<object data="javascript:{fire("object-" + tag)}"></object>',
            f'<meta http-equiv="refresh" content="0;url=javascript:{fire("refresh-" + tag)}">',
            f'<b onclick="{fire("click-" + tag)}">pwn-click-{tag}</b>',
        ]
    )


STATIC = payload("static")
EXECUTED = payload("run")
SVG_OUT = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{fire("svgout")}"/>'
MD_OUT = f"[pwn-link-md](javascript:{fire('md')}) {payload('md')}"
PNG_WIDTH = f"1 onerror={fire('png')}"  # nbconvert writes an image's width unquoted: a space starts an attribute
# Run by the kernel when autograde re-executes the submission: every display path IPython offers.
DISPLAYING_CELL = "\n".join(
    [
        "from IPython.display import HTML, SVG, Javascript, Markdown, display",
        f"display(HTML({EXECUTED!r}))",
        f"display(Javascript({fire('js')!r}))",
        f"display(Markdown({MD_OUT!r}))",
        f"display(SVG({SVG_OUT!r}))",
        f"display({{'image/png': 'iVBORw0KGgo='}}, raw=True, metadata={{'image/png': {{'width': {PNG_WIDTH!r}}}}})",
        f"display({{'text/html': {payload('isolated')!r}}}, raw=True, metadata={{'text/html': {{'isolated': True}}}})",
        f"print({payload('print')!r})",
        f"HTML({payload('result')!r})",
    ]
)
MARKDOWN_CELL = f"My notes: {payload('markdown')} [pwn-link-mdcell](javascript:{fire('mdcell')})"
# The wrong submission's mse() writes active HTML to stderr and raises with it: the test cell's message.
RAISING_MSE = (
    "def mse(pred, target):\n    import sys\n"
    f"    sys.stderr.write({payload('stderr')!r})\n    raise ValueError({payload('error')!r})"
)


def static_outputs() -> list[Any]:
    """Outputs stored in the submitted notebook (autograde clears them; they must not come back live)."""
    return [
        nbformat.v4.new_output("display_data", data={"text/html": STATIC, "text/plain": "x"}),
        nbformat.v4.new_output("execute_result", data={"text/html": STATIC, "text/plain": "x"}, execution_count=1),
        nbformat.v4.new_output("display_data", data={"application/javascript": fire("static-js")}),
    ]


def hostile(wrong: bool) -> bytes:
    """The correct fixture plus active HTML everywhere; ``wrong``: mse() raises with it, too."""
    nb = nbformat.read(SUBMISSIONS / A / "correct.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = static_outputs()
        if wrong and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "mse":
            cell.source = RAISING_MSE
    added = [nbformat.v4.new_markdown_cell(MARKDOWN_CELL), nbformat.v4.new_code_cell(DISPLAYING_CELL)]
    for i, cell in enumerate(added):
        cell.id = f"student-html-{i}"
    nb.cells[2:2] = added
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course copy where stock nbgrader autograded the three and wrote their feedback."""
    root = course.copy_course(tmp_path_factory.mktemp("inert") / "course")
    course.generate_releases(root, [A])
    course.place_submission(root, "correct", A, SUBMISSIONS / A / "correct.ipynb")
    course.place_notebook(root, "hostile", A, hostile(wrong=False))
    course.place_notebook(root, "hostile-wrong", A, hostile(wrong=True))
    course.autograde(root, A)
    course.nbgrader(root, "generate_feedback", A, "--force")
    return root


def opened(browser: Browser, url: str | None = None, content: str | None = None) -> tuple[Page, list[str]]:
    """A page at ``url`` (or with ``content``), offline, recording every dialog and ``pwned`` log."""
    context = browser.new_context()
    context.route(re.compile(r"^(https?|wss?)://"), lambda route: route.abort())  # MathJax's CDN and the like
    page = context.new_page()
    fired: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        fired.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        if "pwned" in message.text:
            fired.append(message.text)

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    if url is not None:
        page.goto(url, wait_until="load")
    else:
        page.set_content(content or "", wait_until="load")
    return page, fired


def poke(page: Page) -> None:
    """What a reader does: click every link and button a student put there, hover their images."""
    for target in page.locator("a, button, b, summary, img").all():
        tag = target.evaluate("e => e.tagName")
        if tag in ("IMG", "SUMMARY") or (target.text_content() or "").startswith("pwn-"):
            try:
                target.hover(timeout=1000, force=True)
                target.click(timeout=1000, force=True, no_wait_after=True)
            except Exception:  # hidden or detached elements: nothing to click
                pass
    page.wait_for_timeout(700)


def what_ran(page: Page, fired: list[str]) -> list[str]:
    ran = list(fired)
    for frame in page.frames:
        try:
            marker = frame.evaluate("() => window.__pwned")
        except Exception:  # a frame gone: it set no marker here
            continue
        if marker is not None:
            ran.append(f"window.__pwned={marker} in {frame.url[:60]}")
    if page.title() == "pwned":
        ran.append("document.title changed")
    return ran


def check_inert(browser: Browser, path: Path, title: str) -> str:
    """Open ``path``, poke it; nothing ran, its title is ``title``; returns its visible text."""
    page, fired = opened(browser, url=path.as_uri())
    try:
        assert what_ran(page, fired) == [], path  # on load
        assert page.title() == title
        poke(page)
        assert what_ran(page, fired) == [], path
        assert page.title() == title
        assert page.url == path.as_uri()  # no javascript:/refresh navigation either
        # poking clicked every <summary>, folding what was open: the reader unfolds them all to read
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        return page.inner_text("body")
    finally:
        page.context.close()


def test_the_payloads_fire_in_an_unsanitised_page(chromium: Browser) -> None:  # noqa: F811 (the fixture)
    """Positive control: the detector sees scripts, handlers, links, iframes and forms that run."""
    page, fired = opened(chromium, content=f"<title>ok</title>{payload('raw')}")
    try:
        poke(page)
        ran = what_ran(page, fired)
        assert "document.title changed" in ran
        assert any("pwned-script-raw" in r for r in ran)
        assert any("pwned-onerror-raw" in r for r in ran)
        assert any("pwned-link-raw" in r for r in ran)
        assert any("pwned-click-raw" in r for r in ran)
    finally:
        page.context.close()


def _score(text: str) -> tuple[float, float]:
    found = re.search(rf"{A} \(Score: ([\d.]+) / ([\d.]+)\)", text)
    assert found, text[:500]
    return float(found[1]), float(found[2])


def test_stock_generate_feedback_html_is_inert_and_keeps_the_scores(graded: Path, chromium: Browser) -> None:  # noqa: F811 (the fixture)
    pages = {p.parent.parent.name: p for p in (graded / "feedback").glob(f"*/{A}/{A}.html")}
    assert set(pages) == {"correct", "hostile", "hostile-wrong"}
    texts = {student: check_inert(chromium, path, title=A) for student, path in pages.items()}
    for student, path in pages.items():
        assert active_parts(path.read_text()) == [], student
    # a correct student's feedback is intact: full marks, every test cell listed, the code shown
    full = _score(texts["correct"])
    assert full[0] > 0 and full[1] - full[0] == 5  # the written answers' 5 points, given by a person (0 until then)
    assert _score(texts["hostile"]) == full  # what the student displayed costs nothing and hides nothing
    assert _score(texts["hostile-wrong"])[0] < full[0]
    for text in texts.values():
        assert text.count("Test cell (Score:") == 13 and "def mean_square_loss" in text
    # the student's HTML is shown as text (or sanitised away), not run
    assert "pwn-link-run" in texts["hostile"] and "<script>" in texts["hostile"]
    assert "ValueError" in texts["hostile-wrong"]


def _messages(root: Path, student: str) -> dict[str, str]:
    from grader.service.grading.scoring import messages

    return messages(nbformat.read(root / "autograded" / student / A / f"{A}.ipynb", as_version=4))


def _view(root: Path, student: str) -> dict[str, Any]:
    """What ``feedback.view`` gives for this graded notebook: per test, the service's message."""
    texts = _messages(root, student)
    scores = [s for s in course.cell_scores(root, A) if s.student == student]
    tests: list[dict[str, Any]] = [
        {
            "name": s.grade_id,
            "points": s.score,
            "max_points": s.max_score,
            "passed": s.score >= s.max_score,
            "message": texts.get(s.grade_id, ""),
        }
        for s in scores
    ]
    score, max_score = sum(s.score for s in scores), sum(s.max_score for s in scores)
    return {
        "id": 7,
        "student": student,
        "assignment": A,
        "received_at": "2026-01-01T00:00:00Z",
        "status": "graded",
        "reason": payload("reason"),
        "score": score,
        "max_score": max_score,
        "late_penalty": 0.0,
        "final_score": score,
        "graded_at": "2026-01-01T00:01:00Z",
        "tests": tests,
    }


def test_students_and_staffs_service_pages_are_inert(graded: Path, chromium: Browser, tmp_path: Path) -> None:  # noqa: F811 (the fixture)
    from grader.service.web.exchange_api import feedback_html
    from grader.service.web.pages import templates

    view = _view(graded, "hostile-wrong")
    assert any("<script>" in t["message"] for t in view["tests"])  # the student's HTML is in a message
    # the student's page, as nbgrader fetch_feedback writes it
    student_page = tmp_path / "student.html"
    student_page.write_text(feedback_html(view, f"{A}.ipynb"))
    text = check_inert(chromium, student_page, title=f"Feedback: {A} / {A}.ipynb")
    assert f"Score: {view['final_score']:g} / {view['max_score']:g}" in text and "FAIL" in text and "<script>" in text
    # the staff's dashboard: a student's attempts, as /admin/students/{student} renders them
    submission = SimpleNamespace(
        id=7, assignment=A, status="graded", received_at=dt.datetime(2026, 1, 1), graded_at=dt.datetime(2026, 1, 1)
    )
    fragment = templates.get_template("_attempts.html").render(
        attempts=[{"submission": submission, "view": view, "late": False}], user=SimpleNamespace(is_staff=True)
    )
    staff_page = tmp_path / "staff.html"
    staff_page.write_text(f"<!DOCTYPE html><html><head><title>staff</title></head><body>{fragment}</body></html>")
    text = check_inert(chromium, staff_page, title="staff")
    assert f"final {view['final_score']:g}" in text and "failed" in text and "<script>" in text


def test_output_metadata_keeps_real_image_sizes_only() -> None:
    """A correct student's image keeps its size and alt text; markup, URLs and iframes go."""
    from grader.plugins.redaction import inert_metadata

    real = {"image/png": {"width": 320, "height": 240.5, "unconfined": True, "alt": "loss curve"}}
    assert inert_metadata(real) == real
    hostile = {
        "image/png": {"width": "1 onerror=alert(1)", "height": True, "alt": 3},
        "filenames": {"image/png": "https://tracker.example/p.png"},
        "text/html": {"isolated": True},
        "width": "1 onerror=alert(2)",
        "height": 10,
    }
    assert inert_metadata(hostile) == {"height": 10}
    assert inert_metadata(None) == {}
