"""The course secret (made on the service's first start, one sentence when missing later) and the release check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import course
from grader.errors import ConfigurationError
from grader.variants import check, marked, secret

GRADER = str(Path(sys.executable).with_name("grader"))
PS3 = "ps3_regression"


def without_secret() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != secret.ENVIRONMENT}


@pytest.fixture
def course_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(secret.ENVIRONMENT)
    return course.copy_course(tmp_path / "course")


def test_missing_secret_is_one_sentence_before_anything_is_graded(course_copy: Path) -> None:
    from grader.engine.engine import Engine

    with pytest.raises(ConfigurationError) as caught:
        Engine(course_copy)
    assert str(caught.value) == (
        f"This course gives students variants but has no course secret: restore {course_copy / 'variant_secret.txt'} "
        "from your backup, or, if no student has fetched an assignment yet, create it with `grader variants "
        "--create-secret` (or set $GRADER_VARIANT_SECRET)."
    )


def test_a_course_without_variants_needs_no_secret(course_copy: Path) -> None:
    from grader.engine.engine import Engine

    for assignment in ("ps2_autograd", PS3):  # the two that mark variants
        shutil.rmtree(course_copy / "source" / assignment)
    Engine(course_copy)  # no error: nothing is drawn


def test_the_service_makes_the_secret_on_its_first_start_only(course_copy: Path) -> None:
    with pytest.raises(
        ConfigurationError, match=r"has no course secret: restore .*variant_secret\.txt from your backup"
    ):
        marked.ensure_secret(course_copy, first_run=False)
    made = marked.ensure_secret(course_copy, first_run=True)
    assert made == course_copy / "variant_secret.txt"
    assert made.stat().st_mode & 0o777 == 0o600 and len(made.read_text().strip()) == 64
    assert marked.ensure_secret(course_copy, first_run=False) is None  # kept from then on
    kept = made.read_text()
    refused = subprocess.run(
        [GRADER, "variants", "--create-secret"], cwd=course_copy, env=without_secret(), capture_output=True, text=True
    )
    assert refused.returncode != 0 and "a new one would change every student's variant values, so it is kept" in (
        refused.stderr
    )
    assert made.read_text() == kept


def test_grader_variants_shows_the_marks_and_a_students_values(course_copy: Path) -> None:
    (course_copy / "variant_secret.txt").write_text("a-secret-for-this-test-only-0123456789\n")
    shown = subprocess.run(
        [GRADER, "variants", PS3, "ada"], cwd=course_copy, env=without_secret(), capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:3] == [
        f"{PS3}, cell `shop_values` (25 combinations):",
        "  TRUE_SLOPE = 3.0  choices [2.0, 2.5, 3.0, 3.5, 4.0]",
        "  TRUE_INTERCEPT = 5.0  choices [3.0, 4.0, 5.0, 6.0, 7.0]",
    ]
    assert lines[3].startswith("  ada: TRUE_SLOPE = ")


def test_stock_nbgrader_without_the_secret_grades_nothing(course_copy: Path) -> None:
    course.generate_releases(course_copy, [PS3])
    correct = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / PS3 / "correct.ipynb"
    course.place_submission(course_copy, "ada", PS3, correct)
    with pytest.raises(course.NbgraderError) as caught:
        course.autograde(course_copy, PS3, "ada")
    assert "This course gives students variants but has no course secret" in str(caught.value)
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.gradebook_url(course_copy)) as gradebook, pytest.raises(MissingEntry):
        gradebook.find_submission_notebook(PS3, "ada", PS3)  # failed closed: nbgrader recorded no submission
    assert not (course_copy / "autograded" / "ada" / PS3 / f"{PS3}.ipynb").exists()


def test_the_instructors_solution_passes_under_every_ps3_variant(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    assert check.check(root, PS3, open(os.devnull, "w")) == []


def test_a_release_whose_variant_fails_the_solution_is_refused(course_copy: Path) -> None:
    """An instructor's test that holds only for their own values (the lesson's mean sales) refuses the release."""
    (course_copy / "variant_secret.txt").write_text("a-secret-for-this-test-only-0123456789\n")
    course.generate_releases(course_copy, [PS3])
    released = (course_copy / "release" / PS3 / f"{PS3}.ipynb").read_bytes()
    path = course_copy / "source" / PS3 / f"{PS3}.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade_id") == "shop_values":
            text = text.replace("# variant: [2.0, 2.5, 3.0, 3.5, 4.0]", "# variant: [3.0, 4.0]")
            text = text.replace("# variant: [3.0, 4.0, 5.0, 6.0, 7.0]", "# variant: [5.0]")
        if meta.get("grade_id") == "test_make_data":
            mistake = 'assert abs(float(sales.mean()) - 19.65) < 0.5, "the shop sells about 19.65 a day"\n'
            text = text.replace("### BEGIN HIDDEN TESTS", mistake + "### BEGIN HIDDEN TESTS")
        cell["source"] = text
    path.write_text(json.dumps(nb))
    refused = subprocess.run(
        [GRADER, "release", PS3], cwd=course_copy, env=without_secret(), capture_output=True, text=True, timeout=600
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "grader release: refused, release/ is unchanged: " in refused.stderr
    assert "with TRUE_SLOPE = 4.0, TRUE_INTERCEPT = 5.0 (the values student id 'variant-check-" in refused.stderr
    assert "the instructor's solution loses test_make_data: the shop sells about 19.65 a day" in refused.stderr
    assert (course_copy / "release" / PS3 / f"{PS3}.ipynb").read_bytes() == released
