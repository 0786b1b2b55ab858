"""The similarity report's staff pages in a real browser, over the service's graded attempts.

Four ps3 students are graded by the running service: two who wrote it on their own, one who copied the
first with every variable renamed, and one whose notebook is the copier's before a resubmission (only the
attempt that counts is compared). A TA finds the copy from the assignment page, opens the two side by
side with the shared code marked, changes the threshold and downloads the CSV; a student gets 403.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator

import nbformat
import pytest

from grader import variants

from ...browser import ARTIFACTS, launched, require_chromium
from ...similarity.planted import ASSIGNMENT, independent, notebook, renamed
from ..conftest import QUICK, Server, grade, running_server
from .test_pages import browser

require_chromium()

from playwright.sync_api import Page, expect  # noqa: E402

STUDENTS = ("sim-ada", "sim-ben", "sim-zed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service of its own: no other test's ps3 submissions in its report."""
    yield from running_server(tmp_path_factory.mktemp("similarity"), QUICK)


@pytest.fixture(scope="module")
def class_graded(server: Server) -> Server:
    """sim-ada and sim-ben wrote ps3 themselves, ben in the notebook handed out to ada (ada's shop, not his:
    grader.variants); sim-zed first sent work of their own, then ada's, renamed."""
    solutions = independent()
    ada, ben = solutions["student-01"], solutions["student-02"]
    copied = {gid: renamed(code) for gid, code in ada.items()}
    plan = [
        ("sim-ada", ada),
        ("sim-ben", ben),
        ("sim-zed", solutions["student-04"]),
        ("sim-zed", copied),
    ]
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    for student, cells in plan:
        handed_to = "sim-ada" if student == "sim-ben" else student
        nb = variants.personalise(notebook(cells), key, ASSIGNMENT, handed_to)
        data = nbformat.writes(nb).encode()  # type: ignore[no-untyped-call]
        result = grade(server, student, ASSIGNMENT, data)
        assert result["status"] == "graded", result
    return server


@pytest.fixture
def page() -> Iterator[Page]:
    with launched() as chromium:
        context = chromium.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
        yield context.new_page()
        context.close()


def test_a_ta_finds_the_copy_and_reads_it_side_by_side(page: Page, class_graded: Server) -> None:
    page.goto(class_graded.url + f"/login?next=/admin/assignments/{ASSIGNMENT}")
    page.get_by_label("Your access token").fill(class_graded.token("ta-tess", "ta"))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name=ASSIGNMENT, exact=True)).to_be_visible()
    page.get_by_role("link", name="Similarity").click()
    expect(page.get_by_role("heading", name=f"Similarity: {ASSIGNMENT}")).to_be_visible()
    pairs = page.get_by_role("table", name="Similar pairs, most similar first")
    rows = pairs.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("sim-ada")
    expect(rows.first).to_contain_text("sim-zed")
    expect(rows.first.get_by_role("link", name="sim-ada")).to_have_attribute("href", "/admin/students/sim-ada")
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    cells = variants.find_cells(notebook({}), ASSIGNMENT)
    shop = {s: variants.student_values(key, ASSIGNMENT, s, cells) for s in ("sim-ada", "sim-ben")}
    assert shop["sim-ada"] != shop["sim-ben"]
    ada = ", ".join(f"{k} = {v!r}" for k, v in shop["sim-ada"].items())
    expect(page.get_by_role("heading", name="Notebooks holding another student's values")).to_be_visible()
    foreign = page.locator("#foreign li")
    expect(foreign).to_have_count(1)
    expect(foreign.first).to_contain_text(
        f"sim-ben's notebook holds {ada}, which are not sim-ben's own values but sim-ada's; the cell's metadata says "
        "it was handed out to sim-ada."
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "similarity.png"), full_page=True)

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV").click()
    rows_csv = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    assert [(r["student_a"], r["student_b"]) for r in rows_csv] == [("sim-ada", "sim-zed")]

    page.get_by_role("link", name="side by side").click()
    expect(page.get_by_role("heading", name=f"sim-ada and sim-zed: {ASSIGNMENT}")).to_be_visible()
    train = page.get_by_role("region", name="train_step (shared code)")
    expect(train.locator("mark").first).to_be_visible()
    expect(page.get_by_label("sim-zed: train_step")).to_contain_text("my_")  # the copier's renamed variables
    page.screenshot(path=str(ARTIFACTS / "similarity-pair.png"), full_page=True)

    page.go_back()
    page.get_by_label("List pairs at least this similar").fill("0.2")
    page.get_by_role("button", name="Show").click()
    expect(page.get_by_role("status")).to_contain_text("3 submissions compared")
    page.goto(
        class_graded.url + f"/admin/assignments/{ASSIGNMENT}/similarity?threshold=7"
    )  # the field's min/max stop 7
    expect(page.get_by_role("alert")).to_have_text("the threshold must lie between 0.2 and 1 (or 20% and 100%), not 7")


def test_a_student_is_refused_every_similarity_page(class_graded: Server) -> None:
    with browser(class_graded, class_graded.token("sim-ada")) as student:
        for path in ("", ".csv", "/sim-ada/sim-zed"):
            response = student.get(f"/admin/assignments/{ASSIGNMENT}/similarity{path}")
            assert response.status_code == 403, path
            assert "this page is for course staff" in response.text and "sim-zed" not in response.text


def test_with_fewer_than_two_graded_students_the_page_says_so(class_graded: Server) -> None:
    with browser(class_graded, class_graded.token("ta-tess", "ta")) as ta:
        response = ta.get("/admin/assignments/ps4_functions/similarity")
        missing = ta.get("/admin/assignments/ps9_nothing/similarity")
        csv_bad = ta.get(f"/admin/assignments/{ASSIGNMENT}/similarity.csv?threshold=high")
    assert response.status_code == 200
    assert "ps4_functions: a similarity report needs at least two submissions" in response.text
    assert missing.status_code == 404
    assert csv_bad.status_code == 400
    assert "the threshold must be a number such as 0.5 or 50%" in csv_bad.text
