"""Inside a real ``jupyter lab`` in Chromium, installed from the wheel: nbgrader's own Assignments panel
and the *Course grades* tab (the prebuilt Lab extension ``grader-course-grades``).

The panel fetches and submits through the exchange plugin; a refused submission shows the
exchange's one sentence (grader.lab's handler ahead of nbgrader's, which would print a traceback),
wrapped inside the dialog; a late resubmission asks and goes through when *Submit* is pressed
again.  The Launcher's *Course grades* card opens ``/grader/`` in a Lab tab; choosing that tab again
after a submission from the panel shows the new attempt with its score and late penalty.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess

from ..browser import ARTIFACTS, launched, require_chromium
from ..service.conftest import FIXTURES, Server
from .conftest import BIN, STUDENT, B, Lab, backdate, set_due


def test_the_assignments_panel_explains_refusals_confirms_late_and_course_grades_shows_scores(
    server: Server, lab: Lab
) -> None:
    require_chromium()
    from playwright.sync_api import Page, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    set_due(server, dt.datetime.utcnow() + dt.timedelta(days=3), B)
    attempts = lambda: server.store.submissions(student=STUDENT, assignment=B)  # noqa: E731

    def tab(page: Page, label: str) -> None:
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=label).click()

    with launched() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.goto(f"{lab.url}/lab?token={lab.token}")
        card = page.locator(".jp-LauncherCard", has_text="Course grades")
        expect(card).to_be_visible(timeout=120_000)
        expect(page.locator(".jp-Launcher-section", has=card).locator(".jp-Launcher-sectionTitle")).to_have_text(
            "Course"
        )
        card.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lab-launcher-course-grades.png"))

        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
        released = page.locator("#released_assignments_list .list_item", has_text=B)
        released.get_by_role("button", name="Fetch").click(timeout=60_000)
        fetched = page.locator("#fetched_assignments_list > .list_item", has_text=B).first
        submit = fetched.get_by_role("button", name="Submit", exact=True)
        expect(submit).to_be_visible(timeout=60_000)
        notebook = lab.home / B / f"{B}.ipynb"
        assert notebook.is_file()  # fetched through the exchange

        shutil.copy(FIXTURES / "ps2_autograd" / "correct.ipynb", notebook)  # another assignment's notebook
        submit.click()
        dialog = page.locator(".jp-Dialog")
        message = dialog.locator("#submission-message pre")
        expect(message).to_contain_text("The grading service refused (422)", timeout=60_000)
        text = message.inner_text()
        assert "Traceback" not in text and 'File "' not in text and "\n" not in text.strip(), text
        fits = message.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        assert fits, "the sentence is cut off at the dialog's right edge"
        page.screenshot(path=str(ARTIFACTS / "lab-panel-refused.png"))
        dialog.locator(".jp-mod-accept").click()
        assert attempts() == []

        shutil.copy(FIXTURES / B / "correct.ipynb", notebook)
        submit.click()
        submitted = page.locator("#submitted_assignments_list .list_item", has_text=B)
        expect(submitted).to_have_count(1, timeout=120_000)
        expect(dialog).to_have_count(0)
        (first,) = attempts()
        server.wait_graded(lab.student_token, first.id)

        tab(page, "Launcher")
        card.click()
        frame = page.frame_locator(".grader-CourseGrades iframe")
        rows = frame.locator(f"#a-{B} tr.attempt")
        expect(rows).to_have_count(1, timeout=60_000)
        expect(rows.nth(0)).to_contain_text("graded")
        expect(rows.nth(0)).to_contain_text("this one counts")

        backdate(server, STUDENT)
        set_due(server, dt.datetime.utcnow() - dt.timedelta(days=1, hours=1), B)
        tab(page, "Assignments")
        fetched.get_by_role("button", name="Submit", exact=True).click()
        expect(message).to_contain_text("Submit late, with this penalty?", timeout=120_000)
        text = message.inner_text()
        assert "late penalty" in text and "Press Submit again within 2 minutes" in text, text
        assert "Course grades" in text and "Traceback" not in text and "--GraderSubmit" not in text, text
        assert len(attempts()) == 1  # nothing sent before the student confirms
        page.screenshot(path=str(ARTIFACTS / "lab-panel-confirm-late.png"))
        dialog.locator(".jp-mod-accept").click()
        fetched.get_by_role("button", name="Submit", exact=True).click()
        expect(fetched.get_by_role("button", name="Submit", exact=True)).to_be_enabled(timeout=120_000)
        expect(dialog).to_have_count(0)
        assert len(attempts()) == 2  # pressed again: submitted late

        tab(page, "Course grades")  # choosing the tab again reloads the page: the new attempt is there
        expect(rows).to_have_count(2, timeout=60_000)
        second = rows.nth(1)
        expect(second).to_contain_text("graded", timeout=240_000)
        expect(second).to_contain_text("this one counts")
        expect(rows.nth(0)).not_to_contain_text("this one counts")
        assert float(second.locator("td.penalty").inner_text()) > 0
        page.screenshot(path=str(ARTIFACTS / "lab-course-grades.png"))
        section = frame.locator(f"#a-{B}")  # the page's own POST works inside the tab's sandbox (_xsrf, same origin)
        section.get_by_role("button", name=f"Submit {B}").click()
        expect(section.locator("p.question")).to_contain_text("Submit late, with the late penalty?", timeout=60_000)
        section.get_by_role("button", name="No").click()
        expect(section.locator(".result")).to_have_text("Not submitted.")
        assert len(attempts()) == 2

        page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
        expect(page.locator(".lm-Menu-itemLabel", has_text="Course grades")).to_be_visible()
        page.keyboard.press("Escape")


def test_the_lab_lists_the_extension_enabled(lab: Lab) -> None:
    listing = subprocess.run(
        [str(BIN / "jupyter"), "labextension", "list"], env=lab.env, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in (listing.stdout + listing.stderr).splitlines() if "grader-course-grades" in line]
    assert len(lines) == 1 and "enabled" in lines[0] and "OK" in lines[0], listing.stdout + listing.stderr
    # grader.lab is on by the wheel's etc/jupyter/jupyter_server_config.d/grader.json alone (no command-line flag)
    assert "grader.lab: the grading page is at /grader/" in (lab.home.parent / "lab.log").read_text()
