"""The service's schema migrations: a fresh database, one made before migrations, one made by a newer grader."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from grader.errors import ConfigurationError
from grader.service.records import schema, tables
from grader.service.records.store import Store

from ..conftest import fresh_database

GRADER = str(Path(sys.executable).parent / "grader")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gradebook.db'}"
        return
    with fresh_database("grader_schema") as database:
        yield database


def test_migrations_build_exactly_the_tables_the_code_uses(url: str) -> None:
    engine = sa.create_engine(url)
    assert schema.upgrade(engine) == (None, schema.head())
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        differences = [d for d in compare_metadata(context, tables.metadata) if d[0] != "remove_table"]
    assert differences == []
    assert schema.upgrade(engine) == (schema.head(), schema.head())  # again: nothing to do
    engine.dispose()


def test_a_database_from_before_migrations_is_upgraded_keeping_its_rows(url: str, tmp_path: Path) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # what the embedded service of the previous release created
        config = schema._config(conn)
        from alembic import command

        command.upgrade(config, schema.BASELINE)
        conn.execute(sa.text("DROP TABLE grader_alembic_version"))
        conn.execute(sa.text("INSERT INTO grader_users (id, role) VALUES ('ann', 'student')"))
        conn.execute(
            sa.text(
                "INSERT INTO grader_submissions (student, assignment, received_at, path, sha256, status, reason) "
                "VALUES ('ann', 'ps1', '2026-11-01 10:00:00', :p, 'abc', 'graded', '')"
            ),
            {"p": str(tmp_path / "old.ipynb")},
        )
    (tmp_path / "old.ipynb").write_bytes(b"{}")
    engine.dispose()
    proc = subprocess.run([GRADER, "db", "current", "--db-url", url], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == f"service schema: 0001 (this grader needs {schema.head()}: grader db upgrade)"
    with pytest.raises(ConfigurationError, match=f"revision 0001, this grader needs {schema.head()}: back it up"):
        Store(url)  # every command but grader db upgrade refuses it
    proc = subprocess.run([GRADER, "db", "upgrade", "--db-url", url], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"service schema: 0001 -> {schema.head()}"
    store = Store(url)
    [old] = store.submissions()
    assert (old.student, old.status) == ("ann", "graded") and store.notebook(old) == b"{}"
    store.engine.dispose()


def test_a_database_upgraded_by_a_newer_grader_is_refused(url: str) -> None:
    engine = sa.create_engine(url)
    schema.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE grader_alembic_version SET version_num = '0099'"))
    schema._current.clear()
    with pytest.raises(ConfigurationError, match="schema revision 0099, which this grader's code does not know"):
        Store(url)
    engine.dispose()


def test_no_command_but_grader_db_upgrade_migrates_a_database(url: str, tmp_path: Path) -> None:
    """``Store()`` migrated the schema when constructed, so ``grader tokens issue`` could silently upgrade a
    production database that docs/operators/upgrades.md says to back up first (issue 16). Now every command checks,
    says what to run and exits; only ``grader db upgrade`` upgrades (and ``grader serve`` creates the
    tables in an empty database)."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        from alembic import command

        command.upgrade(schema._config(conn), schema.BASELINE)  # an older release's database
    engine.dispose()
    schema._current.clear()
    env = {"GRADER_DB_URL": url, "PATH": str(Path(sys.executable).parent)}
    for args in (["tokens", "issue", "tia", "--role", "ta"], ["export", "canvas"], ["regrade", "ps1_tensors"]):
        # from a folder that is not a course: the course is the installed one, whose database is $GRADER_DB_URL
        proc = subprocess.run([GRADER, *args], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert proc.returncode != 0, (args, proc.stdout, proc.stderr)
        assert f"revision 0001, this grader needs {schema.head()}: back it up, then run `grader db upgrade" in (
            proc.stderr
        ), (args, proc.stderr)
    with sa.create_engine(url).connect() as conn:
        assert schema.revision(conn) == schema.BASELINE  # untouched
    with pytest.raises(ConfigurationError, match="is at schema revision 0001"):
        Store(url, create=True)  # grader serve's first-run creation does not apply: the database is not empty


def test_an_empty_database_is_created_only_by_serve_or_db_upgrade(url: str) -> None:
    schema._current.clear()
    with pytest.raises(ConfigurationError, match="has no grading service tables yet: start `grader serve` once"):
        Store(url)
    store = Store(url, create=True)
    assert store.created
    assert not Store(url, create=True).created
    store.engine.dispose()
