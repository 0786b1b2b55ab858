"""The course roster from the LMS (LTI Names and Role Provisioning Services 2.0).

For each LMS course (context) a launch recorded, fetch its members page by page, map each to a
course user id (``members``: decided once, stored), and mirror them: students into nbgrader's
gradebook, everyone into the service's users with the role the LMS gives (staff: ``ta``/``admin``).
A member the LMS no longer lists as active is marked dropped (never deleted; their grades stay) and
one who comes back is active again. Everything is fetched before anything is written: an LMS that
fails half-way changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ...errors import LmsError, NotFound
from ..records import students as gradebook_students
from ..records.tables import lti_contexts
from . import members, services
from .launch import role_for
from .platforms import platform

MEMBERSHIP = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MAX_PAGES = 500
RANK = {"student": 0, "ta": 1, "admin": 2}
SHOWN = 12  # ids named per outcome in the summary


@dataclass(frozen=True)
class Context:
    issuer: str
    context_id: str
    title: str
    memberships_url: str | None

    @property
    def label(self) -> str:
        return f"{self.title} ({self.context_id})" if self.title else self.context_id


@dataclass(frozen=True)
class Member:
    """One active member as the LMS lists them, with the roles of every course of this LMS they are in."""

    person: members.Person
    given_name: str
    family_name: str


@dataclass(frozen=True)
class RosterSync:
    """What a sync did: course user ids per outcome (``updated``: role, name or email changed)."""

    courses: tuple[str, ...]
    added: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    dropped: tuple[str, ...]
    reactivated: tuple[str, ...]
    students: int
    staff: int

    def words(self) -> str:
        def some(ids: tuple[str, ...], word: str) -> str:
            if not ids:
                return f"0 {word}"
            more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
            return f"{len(ids)} {word} ({', '.join(ids[:SHOWN])}{more})"

        return (
            f"roster of {', '.join(self.courses)}: {self.students} active student(s), {self.staff} staff; "
            f"{some(self.added, 'added')}, {some(self.reactivated, 'reactivated')}, {some(self.updated, 'updated')}, "
            f"{some(self.dropped, 'dropped')}, {len(self.unchanged)} unchanged"
        )


def contexts(engine: Engine, issuer: str | None = None, context: str | None = None) -> list[Context]:
    """The LMS courses launches recorded, optionally only ``issuer``'s or the one with id ``context``."""
    query = sa.select(lti_contexts).order_by(lti_contexts.c.issuer, lti_contexts.c.context_id)
    if issuer:
        query = query.where(lti_contexts.c.issuer == issuer)
    if context:
        query = query.where(lti_contexts.c.context_id == context)
    with engine.connect() as conn:
        return [Context(r.issuer, r.context_id, r.title, r.memberships_url) for r in conn.execute(query)]


def _next(answer: Any, url: str) -> str | None:
    """The next page's URL from the Link header; only on the same host as the first page."""
    following = answer.links.get("next", {}).get("url")
    if not following:
        return None
    first, then = urlsplit(url), urlsplit(str(following))
    if (first.scheme, first.netloc) != (then.scheme, then.netloc):
        raise LmsError(url, answer.status_code, f"its next page is on another host ({then.netloc})", "roster")
    return str(following)


def fetch(engine: Engine, found: Context) -> list[dict[str, Any]]:
    """Every member the LMS lists for ``found`` (all pages); ``LmsError`` when it fails or refuses."""
    if not found.memberships_url:
        raise NotFound(
            f"the LMS did not offer its roster (Names and Roles service) for {found.label}: enable it for this "
            "tool in the LMS, then launch the tool once again"
        )
    lms = platform(engine, found.issuer)
    url: str | None = found.memberships_url
    everyone: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return everyone
        answer = services.call(engine, lms, "GET", url, [SCOPE], accept=MEMBERSHIP)
        what = f"the LMS refused the roster of {found.label}"
        if not answer.is_success:
            raise LmsError(url, answer.status_code, answer.text, what)
        try:
            page = answer.json()["members"]
        except (ValueError, KeyError, TypeError):
            raise LmsError(url, answer.status_code, answer.text, f"{what}: not a membership container") from None
        if not isinstance(page, list):
            raise LmsError(url, answer.status_code, answer.text, f"{what}: not a membership container")
        everyone += [m for m in page if isinstance(m, dict)]
        url = _next(answer, url)
    raise LmsError(found.memberships_url, None, f"more than {MAX_PAGES} pages", "roster")


def active_members(listed: Iterable[dict[str, Any]]) -> dict[str, Member]:
    """The active members by LMS user id (Inactive or Deleted ones are left out); someone listed in several
    courses gets the highest role any of them gives."""
    found: dict[str, Member] = {}
    for m in listed:
        lms_id = m.get("user_id")
        if not isinstance(lms_id, str) or not lms_id or str(m.get("status", "Active")) != "Active":
            continue
        role = role_for([str(r) for r in m.get("roles", []) if isinstance(r, str)])
        if lms_id in found and RANK[found[lms_id].person.role] >= RANK[role]:
            continue
        given, family = str(m.get("given_name") or ""), str(m.get("family_name") or "")
        person = members.Person(
            lms_user_id=lms_id,
            role=role,
            name=str(m.get("name") or f"{given} {family}".strip()),
            email=str(m.get("email") or ""),
            sourcedid=str(m.get("lis_person_sourcedid") or ""),
        )
        found[lms_id] = Member(person, given, family)
    return found


def sync(engine: Engine, db_url: str, issuer: str | None = None, context: str | None = None) -> RosterSync:
    """Fetch the roster of every recorded course of the chosen LMS(s) and mirror it (module docstring).

    ``--context`` chooses the LMS that course is on: a member is dropped only when they are in none of
    that LMS's recorded courses, so all of them are fetched."""
    chosen = contexts(engine, issuer, context)
    if not chosen:
        which = " ".join(
            f for f in (f"from {issuer}" if issuer else "", f"with id {context!r}" if context else "") if f
        )
        raise NotFound(
            f"no LMS course {which + ' ' if which else ''}is recorded yet: launch the tool once from the LMS "
            "(as the instructor, from the course), then sync the roster"
        )
    courses, fetched = [], {}
    for lms in sorted({c.issuer for c in chosen}):
        listed: list[dict[str, Any]] = []
        for found in contexts(engine, lms):
            listed += fetch(engine, found)
            courses.append(found.label)
        fetched[lms] = active_members(listed)
        if not fetched[lms]:
            raise LmsError(lms, None, "it listed no active members: nothing was changed", "roster")
    outcome: dict[members.Change, list[str]] = {c: [] for c in members.Change}
    dropped: list[str] = []
    students: list[tuple[str, Member]] = []
    staff = 0
    with engine.begin() as conn:  # all of it or none
        for lms, listed_members in fetched.items():
            for member in listed_members.values():
                user_id, change = members.upsert(conn, lms, member.person)
                outcome[change].append(user_id)
                if member.person.role == "student":
                    students.append((user_id, member))
                else:
                    staff += 1
            dropped += members.drop_missing(conn, lms, listed_members)
    _into_gradebook(db_url, students)
    return RosterSync(
        courses=tuple(courses),
        added=tuple(sorted(outcome[members.Change.ADDED])),
        updated=tuple(sorted(outcome[members.Change.UPDATED])),
        unchanged=tuple(sorted(outcome[members.Change.UNCHANGED])),
        dropped=tuple(sorted(dropped)),
        reactivated=tuple(sorted(outcome[members.Change.REACTIVATED])),
        students=len(students),
        staff=staff,
    )


def _into_gradebook(db_url: str, students: list[tuple[str, Member]]) -> None:
    """Every active student in nbgrader's gradebook (added, or their names and email brought up to date)."""
    from nbgrader.api import Gradebook

    gradebook_students.add(db_url, [user_id for user_id, _ in students])
    with Gradebook(db_url) as gradebook:
        for user_id, member in students:
            gradebook.update_or_create_student(
                user_id,
                first_name=member.given_name or None,
                last_name=member.family_name or None,
                email=member.person.email or None,
            )
