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

import sqlalchemy as sa
from sqlalchemy.engine import Connection


def insert(conn: Connection, students: Iterable[str]) -> None:
    """The rows of ``students`` that are missing, in ``conn``'s transaction (PostgreSQL only)."""
    from nbgrader.api import Student
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    rows = [{"id": student} for student in dict.fromkeys(students)]
    if rows and conn.dialect.name == "postgresql":
        conn.execute(pg_insert(Student.__table__).values(rows).on_conflict_do_nothing())


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
