"""nbgrader's tables read directly, through one pooled engine: the answers nbgrader's Gradebook gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from nbgrader.api import Gradebook

from grader import course
from grader.errors import UnknownAssignment
from grader.service.grading.intake import assignment_cells
from grader.service.records import nbgrader_tables
from tests.fixtures.sql import sent_statements

from ..conftest import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def gradebook_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: no nbgrader table yet."""
    course.put_bin_on_path()  # nbgrader runs `alembic` to stamp a new gradebook
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gradebook.db'}"
        return
    with fresh_database("nbtables") as url:
        yield url
        nbgrader_tables.engine(url).dispose()


def test_an_empty_database_gets_nbgraders_tables_and_no_assignment(gradebook_url: str) -> None:
    with pytest.raises(UnknownAssignment, match=r"^unknown assignment 'ps9'; this course has: $"):
        assignment_cells(gradebook_url, "ps9")
    with Gradebook(gradebook_url) as gradebook:  # the tables nbgrader would have made, and nothing in them
        assert gradebook.assignments == []


def test_the_notebook_is_nbgraders_first_and_unknown_names_are_listed(gradebook_url: str) -> None:
    with Gradebook(gradebook_url) as gradebook:
        gradebook.add_assignment("ps2")
        gradebook.add_assignment("ps1")
        gradebook.add_notebook("zeta", "ps1")
        gradebook.add_notebook("alpha", "ps1")
        expected = gradebook.find_assignment("ps1").notebooks[0].name
    assert expected == "alpha"
    assert assignment_cells(gradebook_url, "ps1").notebook == expected
    with pytest.raises(UnknownAssignment, match=r"^assignment 'ps2' has no released notebook yet$"):
        assignment_cells(gradebook_url, "ps2")
    with pytest.raises(UnknownAssignment, match=r"^unknown assignment 'ps3'; this course has: ps1, ps2$"):
        assignment_cells(gradebook_url, "ps3")


def test_uploads_after_the_first_reuse_one_connection(gradebook_url: str) -> None:
    with Gradebook(gradebook_url) as gradebook:
        gradebook.add_assignment("ps1")
        gradebook.add_notebook("ps1", "ps1")
    assignment_cells(gradebook_url, "ps1")  # the first: its pool opens a connection
    opened: list[object] = []

    def connected(connection: object, record: object) -> None:
        opened.append(connection)

    sa.event.listen(sa.pool.Pool, "connect", connected)  # any engine's
    try:
        for _ in range(10):
            assert assignment_cells(gradebook_url, "ps1").notebook == "ps1"
    finally:
        sa.event.remove(sa.pool.Pool, "connect", connected)
    assert opened == []  # a Gradebook per upload opened a new connection each time


def test_a_known_assignment_is_one_query(gradebook_url: str) -> None:
    with Gradebook(gradebook_url) as gradebook:
        gradebook.add_assignment("ps1")
        gradebook.add_notebook("ps1", "ps1")
    assignment_cells(gradebook_url, "ps1")  # the first also makes sure nbgrader's tables are there
    with sent_statements() as statements:
        assert assignment_cells(gradebook_url, "ps1").notebook == "ps1"
    assert len(statements) == 1, statements
