"""The misconception catalogue: every code explained, every example a student's own message, nothing hidden.

The table it is built from (``docs/reference/misconception-table.md``) is kept current by
``tests/course/test_fairness.py::test_the_docs_keep_the_current_misconception_table``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from grader_docs import catalogue

from grader import course

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def page() -> str:
    return catalogue.render(catalogue.TABLE.read_text(), catalogue.explanations())


def hidden_lines() -> list[str]:
    """Every line of every hidden-test block in the course's source notebooks that holds a value (a number or a
    string): what a student must never see. Lines of plain PyTorch (``with torch.no_grad():``) are left out."""
    found = []
    for assignment in course.assignments(REPO):
        notebook = json.loads((REPO / "source" / assignment / f"{assignment}.ipynb").read_text())
        for cell in notebook["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", source, re.DOTALL):
                lines = [line.strip() for line in block.splitlines() if len(line.strip()) >= 12]
                found += [line for line in lines if re.search(r"\d|[\"']", line)]
    return found


def test_every_code_in_the_table_and_in_grader_checks_has_an_entry(page: str) -> None:
    rows = catalogue.rows(catalogue.TABLE.read_text())
    assert len(rows) > 100
    codes = {row.code for row in rows} | set(catalogue.explanations())
    missing = [code for code in sorted(codes) if f"`{code}`" not in page]
    assert missing == []
    for code in {row.code for row in rows}:
        assert f"(misconception-{code.lower()})=" in page


def test_every_example_is_a_message_from_the_table(page: str) -> None:
    messages = {row.message for row in catalogue.rows(catalogue.TABLE.read_text())}
    examples = [line[2:] for line in page.splitlines() if line.startswith("> ") and "Likely cause" not in line]
    assert examples and all(example in messages for example in examples)


def test_no_hidden_test_line_reaches_the_catalogue(page: str) -> None:
    hidden = hidden_lines()
    assert len(hidden) > 50  # the source notebooks' hidden tests were found
    shown = page + catalogue.TABLE.read_text()
    assert [line for line in hidden if line in shown] == []


def test_a_code_without_an_explanation_stops_the_build() -> None:
    table = catalogue.TABLE.read_text() + "| `no-such-code` | ps1_tensors | `x` | `test_x` | something. |\n"
    with pytest.raises(ValueError, match="no-such-code"):
        catalogue.render(table, catalogue.explanations())


def test_a_table_that_is_not_the_fixtures_table_is_refused() -> None:
    with pytest.raises(ValueError, match="header"):
        catalogue.rows("| code | message |\n|---|---|\n")
    with pytest.raises(ValueError, match="not a row"):
        catalogue.rows(catalogue.HEADER + "\n|---|---|---|---|---|\n| `a` | b |\n")
