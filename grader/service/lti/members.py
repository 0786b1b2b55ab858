"""LMS users and the course user ids they map to (``grader_lti_members``), decided once at first sight.

The id is readable (the LMS's ``lis_person_sourcedid``, else the email's local part, else the LMS user
id), reduced to what nbgrader accepts as a student id, and never one already in use: not another
member's, not a local account's (a token issued with ``grader tokens``/``grader roster``), not a
student already in nbgrader's gradebook. So an LMS can never take over an account it did not create.
Once stored, a launch and a roster sync both find the same id, and nothing changes it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from ..records.tables import lti_members, now, tokens, users

MAX_ID = 64
# nbgrader's own student table, in the same database (the gradebook): only its ids are read
_NBGRADER_STUDENTS = sa.table("student", sa.column("id"))


@dataclass(frozen=True)
class Person:
    """An LMS user as the LMS describes them (launch claims or an NRPS member)."""

    lms_user_id: str
    role: str  # the service role (``launch.role_for``)
    name: str = ""
    email: str = ""
    sourcedid: str = ""


class Change(enum.Enum):
    ADDED = "added"
    UPDATED = "updated"  # role, name or email changed in the LMS
    UNCHANGED = "unchanged"
    REACTIVATED = "reactivated"  # was dropped, is back


def readable_id(person: Person) -> str:
    """The id to try first: sourcedid, else the email's local part, else the LMS user id; safe for nbgrader."""
    raw = person.sourcedid or person.email.partition("@")[0] or person.lms_user_id
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", raw.strip().lower()).strip(".-")[:MAX_ID].strip(".-")
    return cleaned or "lms-user"


def _taken(conn: Connection, wanted: str) -> set[str]:
    """The ids beginning with ``wanted`` that someone already has."""
    like = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    found = set(conn.execute(sa.select(users.c.id).where(users.c.id.like(like, escape="\\"))).scalars())
    found |= set(
        conn.execute(sa.select(lti_members.c.user_id).where(lti_members.c.user_id.like(like, escape="\\"))).scalars()
    )
    if sa.inspect(conn).has_table("student"):
        column = _NBGRADER_STUDENTS.c.id
        found |= set(conn.execute(sa.select(column).where(column.like(like, escape="\\"))).scalars())
    return found


def _free_id(conn: Connection, wanted: str) -> str:
    taken = _taken(conn, wanted)
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def _ensure_user(conn: Connection, user_id: str, role: str) -> None:
    existing = conn.execute(sa.select(users.c.role).where(users.c.id == user_id)).scalar()
    if existing is None:
        conn.execute(users.insert().values(id=user_id, role=role))
    elif existing != role:
        conn.execute(users.update().where(users.c.id == user_id).values(role=role))


def upsert(conn: Connection, issuer: str, person: Person) -> tuple[str, Change]:
    """The course user id of ``person`` (given one at first sight) and what changed; the user account
    carries the role the LMS gives. Within the caller's transaction."""
    row = conn.execute(
        sa.select(lti_members).where(lti_members.c.issuer == issuer, lti_members.c.lms_user_id == person.lms_user_id)
    ).first()
    at = now()
    if row is None:
        user_id = _free_id(conn, readable_id(person))
        conn.execute(
            lti_members.insert().values(
                issuer=issuer,
                lms_user_id=person.lms_user_id,
                user_id=user_id,
                role=person.role,
                name=person.name[:255],
                email=person.email[:255],
                status="active",
                synced_at=at,
            )
        )
        _ensure_user(conn, user_id, person.role)
        return user_id, Change.ADDED
    values: dict[str, object] = {"synced_at": at}
    change = Change.UNCHANGED
    # a launch often carries no name or email (privacy settings): what is not given is not erased
    name, email = person.name[:255] or row.name, person.email[:255] or row.email
    if (row.role, row.name, row.email) != (person.role, name, email):
        values.update(role=person.role, name=name, email=email)
        change = Change.UPDATED
    if row.status != "active":
        values.update(status="active", dropped_at=None)
        change = Change.REACTIVATED
    conn.execute(
        lti_members.update()
        .where(lti_members.c.issuer == issuer, lti_members.c.lms_user_id == person.lms_user_id)
        .values(**values)
    )
    _ensure_user(conn, row.user_id, person.role)
    return str(row.user_id), change


def launched(engine: Engine, issuer: str, person: Person) -> str:
    """The course user id for a verified launch by ``person`` (recorded at first sight, made active)."""
    for attempt in range(3):
        try:
            with engine.begin() as conn:
                return upsert(conn, issuer, person)[0]
        except IntegrityError:  # a launch or sync of the same user at the same moment: read theirs
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def drop_missing(conn: Connection, issuer: str, present: Iterable[str]) -> list[str]:
    """Mark every active member of ``issuer`` whose LMS user id is not in ``present`` dropped (never
    deleted: their grades stay), end their LMS sessions; the course user ids dropped."""
    keep = set(present)
    active = conn.execute(
        sa.select(lti_members.c.lms_user_id, lti_members.c.user_id).where(
            lti_members.c.issuer == issuer, lti_members.c.status == "active"
        )
    ).all()
    gone = [(lms, user) for lms, user in active if lms not in keep]
    at = now()
    for lms, user in gone:
        conn.execute(
            lti_members.update()
            .where(lti_members.c.issuer == issuer, lti_members.c.lms_user_id == lms)
            .values(status="dropped", dropped_at=at, synced_at=at)
        )
        conn.execute(
            tokens.update()
            .where(tokens.c.user_id == user, tokens.c.label == "lti", tokens.c.revoked_at.is_(None))
            .values(revoked_at=at)
        )
    return sorted(str(user) for _, user in gone)
