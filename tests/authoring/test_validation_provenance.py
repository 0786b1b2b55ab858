"""A validation report that no longer describes its source says so: in the terminal, its HTML, and the dashboard.

The small course (``minicourse``) is a git repository with one commit; its notebook is then edited and, with
the edit uncommitted, ``grader validate`` runs for real. Its table, its standalone HTML and the dashboard's
*Tests of the tests* page (``grader serve``, a real browser) name the commit "with uncommitted changes".
Edited again after the report, the notebook makes the page call the report out of date and name the file;
a file added beside it is named too. Needs Debian's Chromium, like the dashboard's other browser tests.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import course

from ..browser import ARTIFACTS, launched, require_chromium
from ..service.conftest import Server, free_port
from . import minicourse
from .conftest import validate
from .test_provenance import NOTEBOOK, committed_course, edit_intro, git

require_chromium()

from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, tuple[int, str, str]]]:
    """``grader serve`` on the course once ``grader validate`` has run on its uncommitted edit."""
    root = committed_course(tmp_path_factory.mktemp("provenance"))
    commit = git(root, "rev-parse", "--short", "HEAD")
    edit_intro(root, "# One gradient-descent step (edited, not committed)")
    code, out, err, report = validate(root, minicourse.NAME, "--no-mutants")
    assert code == 0 and report is not None, out + err
    assert report["commit"] == commit and report["dirty"] is True, report
    course.generate_releases(root)
    server = Server(root, f"http://127.0.0.1:{free_port()}")
    server.start()
    try:
        yield server, commit, (code, out, err)
    finally:
        server.kill(signal.SIGTERM)


@pytest.fixture
def page(served: tuple[Server, str, tuple[int, str, str]]) -> Iterator[Page]:
    server = served[0]
    with launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(server.url + f"/login?next=/admin/assignments/{minicourse.NAME}/validation")
        page.get_by_label("Your access token").fill(server.token("ta-tess", "ta"))
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name=f"Tests of the tests: {minicourse.NAME}")).to_be_visible()
        yield page
        context.close()


def test_the_terminal_and_the_html_name_the_commit_with_uncommitted_changes(
    served: tuple[Server, str, tuple[int, str, str]],
) -> None:
    server, commit, (_, out, _) = served
    assert f"s at commit {commit} with uncommitted changes\n" in out, out
    html = (server.root / "validation" / f"{minicourse.NAME}.html").read_text()
    assert f"at commit {commit} <strong>with uncommitted changes</strong>" in html


def test_the_page_says_the_report_was_made_with_uncommitted_changes_then_that_it_is_out_of_date(
    page: Page, served: tuple[Server, str, tuple[int, str, str]]
) -> None:
    server, commit, _ = served
    uncommitted = page.locator("#uncommitted")
    expect(uncommitted).to_have_text(
        f"Uncommitted changes: this report was made from commit {commit} with uncommitted changes in "
        f"source/{minicourse.NAME}/, so no commit holds the tests it describes.",
        use_inner_text=True,
    )
    expect(page.get_by_role("status").first).to_contain_text(f"at commit {commit} with uncommitted changes")
    expect(page.locator("#out-of-date")).to_have_count(0)  # the report still describes the source

    edit_intro(server.root, "# One gradient-descent step (edited after the report)")
    (server.root / "source" / minicourse.NAME / "data.csv").write_text("x,y\n1,2\n")
    page.reload()
    stale = page.locator("#out-of-date")
    expect(stale).to_contain_text("Out of date: the assignment's source changed after this report was made")
    expect(stale).to_contain_text(f"{NOTEBOOK} (edited), source/{minicourse.NAME}/data.csv (added).")
    expect(stale).to_contain_text(f"Run grader validate {minicourse.NAME} again.")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "validation-out-of-date.png"))


def test_reverting_the_edit_makes_the_report_current_again(
    page: Page, served: tuple[Server, str, tuple[int, str, str]]
) -> None:
    root: Path = served[0].root
    edit_intro(root, "# One gradient-descent step (edited, not committed)")  # the text the report was made from
    (root / "source" / minicourse.NAME / "data.csv").unlink(missing_ok=True)
    page.reload()
    expect(page.locator("#out-of-date")).to_have_count(0)
    expect(page.locator("#uncommitted")).to_be_visible()
