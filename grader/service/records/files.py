"""Where submitted notebooks are kept, so that whichever machine grades one can read it.

Two kinds of location, written in the submission's row (its ``path`` column):

- a file path: the embedded default, a folder on the service's machine
  (``service-data/submissions/STUDENT/ASSIGNMENT/STAMP-SHA.ipynb``); the file
  is fsynced before the row is committed and removed if the commit fails;
- ``database:<sha256>``: the bytes in the ``grader_files`` table of the
  gradebook's database, written in the same transaction as the submission
  and its job (``GraderService.submission_files = "database"``, the default
  when a broker is configured: every worker already reaches that database).

The interface a shared object store would implement is these three
functions: ``put`` (inside the submission's transaction; returns the
location), ``get`` (the bytes at a location) and ``discard`` (undo a ``put``
whose transaction failed).  Reading dispatches on the location, so switching
``submission_files`` keeps every earlier submission readable.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .tables import files, now

DATABASE = "database:"
KINDS = ("folder", "database")


def put(
    conn: Connection,
    kind: str,
    folder: Path,
    student: str,
    assignment: str,
    received: dt.datetime,
    digest: str,
    data: bytes,
) -> str:
    """Store ``data`` durably; the location to write in the submission's row."""
    if kind == "database":
        insert = _insert_ignoring_duplicates(conn)
        conn.execute(insert.values(sha256=digest, size=len(data), content=data, created_at=now()))
        return DATABASE + digest
    stamp = received.strftime("%Y%m%dT%H%M%S%f")
    path = folder / student / assignment / f"{stamp}-{digest[:12]}.ipynb"
    _write_durably(path, data)
    return str(path)


def get(engine: Engine, location: str) -> bytes:
    if location.startswith(DATABASE):
        with engine.connect() as conn:
            content = conn.execute(
                sa.select(files.c.content).where(files.c.sha256 == location.removeprefix(DATABASE))
            ).scalar()
        if content is None:
            raise FileNotFoundError(f"no stored notebook {location} in the database")
        return bytes(content)
    return Path(location).read_bytes()


def discard(location: str) -> None:
    """Undo a ``put`` whose transaction failed (a database row goes with its transaction)."""
    if not location.startswith(DATABASE):
        Path(location).unlink(missing_ok=True)


def _insert_ignoring_duplicates(conn: Connection) -> sa.Insert:
    """The same notebook submitted twice is stored once (its sha256 is the key)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(files).on_conflict_do_nothing(index_elements=["sha256"])
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(files).on_conflict_do_nothing(index_elements=["sha256"])


def _write_durably(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
