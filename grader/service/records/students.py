"""nbgrader's ``student`` rows, inserted without colliding with a job that is inserting the same row.

On PostgreSQL a job writes its grade in one transaction (``grading.execution.grading``), so a new
student's row stays uncommitted for the whole notebook. nbgrader's ``update_or_create_student`` looks
the row up, finds nothing, inserts, waits for that transaction and then fails on the unique key: a
second job of the same student, a roster import or an extension granted at that moment would fail
once. ``INSERT ... ON CONFLICT DO NOTHING`` waits the same and then does nothing, so nbgrader's
lookup that follows finds the row. Every door that adds students calls ``insert`` (in a transaction it
holds) or ``add`` (committed at once) first. SQLite has one writer at a time: nothing to do there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def insert(conn: Connection, students: Iterable[str], after: sa.Select[Any] | None = None) -> None:
    """The rows of ``students`` that are missing, in ``conn``'s transaction (PostgreSQL only).

    ``after``: a one-row query run first, in the same statement (a job's advisory lock: one round trip).
    """
    from nbgrader.api import Student
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    names = list(dict.fromkeys(students))
    if not names or conn.dialect.name != "postgresql":
        return
    table = Student.__table__
    if after is None:
        conn.execute(pg_insert(table).values([{"id": name} for name in names]).on_conflict_do_nothing())
        return
    first = after.cte("first")
    rows = sa.values(sa.column("id", sa.String), name="rows").data([(name,) for name in names])
    chosen = sa.select(rows.c.id).select_from(rows.join(first, sa.true()))
    conn.execute(pg_insert(table).from_select(["id"], chosen).on_conflict_do_nothing())


def add(db_url: str, students: Iterable[str]) -> None:
    """The rows of ``students`` that are missing in the gradebook at ``db_url``, committed."""
    if sa.make_url(db_url).get_backend_name() != "postgresql":
        return
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            insert(conn, students)
    finally:
        engine.dispose()
