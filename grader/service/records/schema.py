"""The service's database schema: migrations applied in order, each once, recorded in the database.

``upgrade`` brings a database to this code's schema (``grader db upgrade``;
``grader serve`` does it at start-up).  Workers only ``check``: a worker whose
code does not match the database refuses to start, with the command to run.

A database created before migrations existed (tables but no version) is
recognised as revision 0001 and upgraded from there.  On PostgreSQL the whole
upgrade is one transaction under an advisory lock, so two processes starting
at once cannot both apply a migration, and a failed migration changes nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from ...errors import ConfigurationError

SCRIPTS = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "grader_alembic_version"
BASELINE = "0001"
_LOCK_KEY = 0x67726164  # "grad": the advisory lock that serialises upgrades on PostgreSQL

_current: set[str] = set()  # database URLs this process has seen at head
_guard = threading.Lock()


def _config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.attributes["connection"] = conn
    return config


def head() -> str:
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None
    return found


def _stamped(conn: Connection) -> str | None:
    return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


def revision(conn: Connection) -> str | None:
    """The database's revision; ``BASELINE`` for tables made before migrations, None for none at all."""
    found = _stamped(conn)
    if found is None and sa.inspect(conn).has_table("grader_jobs"):
        return BASELINE
    return found


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Apply the migrations this database lacks; returns (revision before, revision after)."""
    url = engine.url.render_as_string(hide_password=False)
    with _guard, engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        before = revision(conn)
        known = {s.revision for s in ScriptDirectory.from_config(_config()).walk_revisions()}
        if before is not None and before not in known:
            raise ConfigurationError(_newer(before))
        config = _config(conn)
        if before == BASELINE and _stamped(conn) is None:
            command.stamp(config, BASELINE)
        command.upgrade(config, "head")
        after = revision(conn) or head()
    _current.add(url)
    return before, after


def check(engine: Engine) -> None:
    """Refuse to run on a database whose schema is not this code's (bad configuration: fails at start-up)."""
    url = engine.url.render_as_string(hide_password=False)
    if url in _current:
        return
    with engine.connect() as conn:
        found = revision(conn)
    wanted = head()
    if found == wanted:
        _current.add(url)
        return
    known = {s.revision for s in ScriptDirectory.from_config(_config()).walk_revisions()}
    if found is not None and found not in known:
        raise ConfigurationError(_newer(found))
    if found is None:
        raise ConfigurationError(
            f"the database {engine.url.render_as_string(hide_password=True)} has no grading service tables yet: "
            "start `grader serve` once (it creates them in an empty database), or run `grader db upgrade`"
        )
    raise ConfigurationError(
        f"the database {engine.url.render_as_string(hide_password=True)} is at schema revision {found or 'none'}, "
        f"this grader needs {wanted}: back it up, then run `grader db upgrade --db-url URL` (see DEPLOYMENT.md)"
    )


def create_if_empty(engine: Engine) -> bool:
    """``grader serve``'s first run: a database without the service's tables gets them (nothing is lost:
    there is nothing there). A database that has them is only checked, never upgraded: that is
    ``grader db upgrade``'s job, after a backup. True when the tables were created."""
    with engine.connect() as conn:
        found = revision(conn)
    if found is not None:
        check(engine)
        return False
    upgrade(engine)
    return True


def _newer(found: str) -> str:
    return (
        f"the database is at schema revision {found}, which this grader's code does not know: it was upgraded "
        "by a newer version. Install that version here too (every service and worker must run the same one)."
    )
