"""The README, the two pointer files, CI and the built site, as the documentation issue asks.

``test_the_site_builds`` builds the whole site as ``python docs/build.py`` does (Sphinx with warnings as
errors, then the link check that fetches nothing), so the README's test command catches a broken page too.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grader_docs
import pytest
from grader_docs import course as course_pages

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
BUILD = ".venv/bin/python docs/build.py"
SET_UP = (
    "# The autograded PyTorch course\n\n"
    "Run the main job (install, then the grading service for this course on http://127.0.0.1:8000; it\n"
    "prints the URL and, on its first start, a student and an admin token to try it with):\n\n"
    "    python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/grader serve\n\n"
    "Run the tests:\n\n"
    "    python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest\n"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def local_links(path: Path) -> list[str]:
    return [url for url in LINK.findall(path.read_text()) if not re.match(r"[a-z]+:", url)]


def test_the_readme_is_short_starts_with_the_two_commands_and_names_the_build() -> None:
    text = README.read_text()
    assert len(text.encode()) < 10_000
    assert text.startswith(SET_UP)
    assert f"\n    {BUILD}\n" in text


@pytest.mark.parametrize("name", ["README.md", "DEPLOYMENT.md", "SECURITY.md"])
def test_every_link_in_the_top_level_files_reaches_a_file(name: str) -> None:
    path = REPO / name
    urls = local_links(path)
    assert urls
    assert [url for url in urls if not (path.parent / url.split("#")[0]).exists()] == []


def test_the_tour_submits_a_notebook_that_exists() -> None:
    named = re.findall(r"grader submit (\S+\.ipynb)", README.read_text())
    assert named and all((REPO / path).is_file() for path in named)


@pytest.mark.parametrize("name", ["DEPLOYMENT.md", "SECURITY.md"])
def test_deployment_and_security_are_pointers_with_no_text_of_the_site(name: str) -> None:
    text = (REPO / name).read_text()
    assert len(text.encode()) < 1_500
    site = "\n".join(page.read_text() for page in DOCS.rglob("*.md"))
    sentences = [s.strip() for s in re.split(r"(?<=[.:;])\s", " ".join(text.split())) if len(s.strip()) > 40]
    assert [s for s in sentences if s in " ".join(site.split())] == []


def test_ci_builds_the_site_before_the_tests() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert lines.index(".venv/bin/python docs/build.py") < lines.index(".venv/bin/python -m pytest")


def test_the_readmes_test_command_installs_what_the_site_needs() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    names = {re.split(r"[<>=!~\[; ]", requirement)[0].lower() for requirement in extras}
    assert {"sphinx", "myst-parser", "furo"} <= names


def test_every_generated_part_a_page_asks_for_exists() -> None:
    asked = {name for page in DOCS.rglob("*.md") for name in grader_docs.MARKER.findall(page.read_text())}
    assert asked == set(grader_docs.GENERATORS)


def test_the_assignments_table_lists_every_assignment_in_source() -> None:
    from grader import course

    table = course_pages.assignments(REPO)
    assert [f"| `{name}` |" in table for name in course.assignments(REPO)] == [True] * len(course.assignments(REPO))


def test_validation_reports_are_shown_as_text_and_linked(tmp_path: Path) -> None:
    assert "None yet" in course_pages.validation_reports(tmp_path / "validation", tmp_path)
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "ps1_tensors.txt").write_text("report\n")
    shown = course_pages.validation_reports(tmp_path / "validation", tmp_path)
    assert "{download}`Download the file </validation/ps1_tensors.txt>`" in shown
    assert "```{literalinclude} /validation/ps1_tensors.txt\n:language: text\n```" in shown


@pytest.mark.filterwarnings("ignore:.*Check CHANGES for Sphinx API modifications")  # myst-parser on Sphinx 9
def test_the_site_builds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_build", DOCS / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    status = build.main([str(tmp_path / "html")])
    out = capsys.readouterr()
    assert status == 0, out.err[-3000:]
    assert ", 0 broken;" in out.out
    for page in ("index", "reference/cli", "reference/config", "reference/misconceptions", "instructors/index"):
        assert (tmp_path / "html" / f"{page}.html").is_file()
