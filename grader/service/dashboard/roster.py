"""The roster: students from a CSV into nbgrader's gradebook, each with a new token."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

import sqlalchemy as sa

from ..config import ServiceConfig
from ..records import students
from ..records.store import Store

COLUMNS = ("id", "first_name", "last_name", "email")
STUDENT = sa.table("student", sa.column("id", sa.String))  # nbgrader's: who is on the course's roster


class RosterError(Exception):
    pass


def read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        raise RosterError(f"{path} does not exist")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "id" not in reader.fieldnames:
            raise RosterError(f"{path}: the first line must name the columns, with 'id' (have {reader.fieldnames})")
        rows = []
        for line, row in enumerate(reader, start=2):
            student = (row.get("id") or "").strip()
            if not student:
                raise RosterError(f"{path}, line {line}: empty id")
            if any(c in student for c in "/\\ ") or student.startswith("."):
                raise RosterError(f"{path}, line {line}: id {student!r} may not contain '/', '\\\\' or spaces")
            rows.append({k: (row.get(k) or "").strip() for k in COLUMNS})
    ids = [r["id"] for r in rows]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RosterError(f"{path}: duplicate ids {duplicates}")
    return rows


def import_roster(config: ServiceConfig, path: Path) -> list[tuple[str, str]]:
    """Add or update every student in the gradebook; return (id, new token) pairs. All or nothing on bad input."""
    from nbgrader.api import Gradebook

    rows = read(path)
    students.add(config.db_url, [row["id"] for row in rows])
    with Gradebook(config.db_url) as gradebook:
        for row in rows:
            gradebook.update_or_create_student(
                row["id"],
                first_name=row["first_name"] or None,
                last_name=row["last_name"] or None,
                email=row["email"] or None,
            )
    store = Store(config.db_url)
    return [(row["id"], store.issue_token(row["id"], "student")) for row in rows]


def not_on_roster(engine: sa.Engine, candidates: Iterable[str]) -> list[str]:
    """Those of ``candidates`` that nbgrader's gradebook in ``engine``'s database does not list as students
    (every one, where it has no students table yet), in the order given. Reads only."""
    names = list(dict.fromkeys(candidates))
    with engine.connect() as conn:
        if not names or not sa.inspect(conn).has_table("student"):
            return names
        known = set(conn.execute(sa.select(STUDENT.c.id).where(STUDENT.c.id.in_(names))).scalars())
    return [name for name in names if name not in known]


def unknown_students_warning(engine: sa.Engine, candidates: Iterable[str]) -> str | None:
    """One sentence naming those of ``candidates`` not on the roster (``not_on_roster``) and how to add them;
    None when every one is on it. A token of someone off the roster still works: a typo would go unseen."""
    unknown = not_on_roster(engine, candidates)
    if not unknown:
        return None
    one = len(unknown) == 1
    found = (
        f"{', '.join(unknown)} {'is' if one else 'are'} not on the course roster "
        f"(no such student{'' if one else 's'} in the gradebook); "
        f"{'the token is issued and works' if one else 'their tokens are issued and work'}"
    )
    return (
        f"{found}, but check the spelling, or add them with `grader roster ROSTER.csv` "
        "(columns id,first_name,last_name,email)."
    )
