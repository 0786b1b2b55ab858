"""The service on PostgreSQL: its tables and nbgrader's gradebook in one real database.

A database of its own on the local server (``GRADER_TEST_POSTGRES``, default
``postgresql+psycopg2://postgres@127.0.0.1:5432``; ``.ci/run`` starts the server when it is down),
dropped afterwards. Stock ``nbgrader export`` and the dashboard read the same grades.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from grader import course

from ..conftest import QUICK, Server, fixture_bytes, fresh_database, grade, running_server


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with fresh_database("grader_test") as url:
        yield url


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory, database: str) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("postgres"), QUICK, db_url=database)


def test_grades_land_in_postgresql_where_stock_nbgrader_reads_them(pg_server: Server, database: str) -> None:
    right = grade(pg_server, "pg-alice", "ps1_tensors", fixture_bytes("ps1_tensors", "correct"))
    wrong = grade(pg_server, "pg-bob", "ps1_tensors", fixture_bytes("ps1_tensors", "hard-coded"))
    assert right["status"] == wrong["status"] == "graded"
    assert right["score"] == right["max_score"] and wrong["score"] < right["score"]
    assert not (pg_server.root / "gradebook.db").exists()  # nothing went to SQLite

    # the service's tables and nbgrader's are in the same PostgreSQL database
    engine = sa.create_engine(database)
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        assert {"grader_submissions", "grader_jobs", "submitted_assignment", "grade"} <= tables
        statuses = conn.execute(sa.text("SELECT status FROM grader_jobs")).scalars().all()
    engine.dispose()
    assert statuses == ["graded", "graded"]

    # stock `nbgrader export`, pointed at the same database, sees the service's scores
    out = pg_server.root / "export.csv"
    course.nbgrader(pg_server.root, "export", "--to", str(out), db_url=database)
    exported = csv.DictReader(io.StringIO(out.read_text()))
    rows = {r["student_id"]: r for r in exported if r["assignment"] == "ps1_tensors"}
    assert float(rows["pg-alice"]["raw_score"]) == right["score"]
    assert float(rows["pg-bob"]["raw_score"]) == wrong["score"]

    # and so does the dashboard
    from grader.service.web.sessions import COOKIE

    with pg_server.client(None) as client:
        client.cookies.set(COOKIE, pg_server.token("pg-ta", "ta"))
        page = client.get("/admin")
    assert page.status_code == 200 and "pg-alice" in page.text and "pg-bob" in page.text
