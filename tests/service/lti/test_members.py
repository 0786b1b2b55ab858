"""LMS users to course user ids (``grader.service.lti.members``) on SQLite and PostgreSQL: readable,
fixed at first sight, never an id someone already has (a local account, a gradebook student)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from grader import course
from grader.service.lti.members import Change, Person, drop_missing, launched, readable_id, upsert
from grader.service.records import schema
from grader.service.records.tables import lti_members, tokens, users

from ..conftest import fresh_database

ISSUER = "https://lms.example"


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    from nbgrader.api import Gradebook

    course.put_bin_on_path()  # nbgrader makes its tables by running alembic

    def ready(url: str) -> Engine:
        with Gradebook(url) as gradebook:  # nbgrader's tables, and a student of its own
            gradebook.add_student("gb_student")
        made = sa.create_engine(url)
        schema.upgrade(made)
        return made

    if request.param == "sqlite":
        made = ready(f"sqlite:///{tmp_path / 'gradebook.db'}")
        yield made
        made.dispose()
        return
    with fresh_database("grader_members") as url:
        made = ready(url)
        yield made
        made.dispose()


@pytest.mark.parametrize(
    ("person", "wanted"),
    [
        (Person("u1", "student", sourcedid="S 0042/Ada", email="x@y"), "s-0042-ada"),
        (Person("u1", "student", email="Grace.Hopper+cs@uni.example"), "grace.hopper-cs"),
        (Person("8f3a-ØÆ", "student"), "8f3a"),
        (Person("..", "student"), "lms-user"),
        (Person("u", "student", sourcedid="x" * 300), "x" * 64),
    ],
)
def test_the_readable_id(person: Person, wanted: str) -> None:
    assert readable_id(person) == wanted


def test_ids_are_never_taken_from_someone_and_fixed_at_first_sight(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(users.insert().values(id="local_admin", role="admin"))
        conn.execute(users.insert().values(id="localxadmin", role="student"))  # '_' is not a wildcard here
    taker = Person("lms-1", "student", sourcedid="local_admin")
    assert launched(engine, ISSUER, taker) == "local_admin-2"
    assert launched(engine, ISSUER, Person("lms-2", "student", sourcedid="local_admin")) == "local_admin-3"
    assert launched(engine, ISSUER, Person("lms-3", "admin", sourcedid="gb_student")) == "gb_student-2"
    # the same LMS user with another sourcedid: the same id
    assert launched(engine, ISSUER, Person("lms-1", "student", sourcedid="other")) == "local_admin-2"
    with engine.connect() as conn:
        roles = dict(conn.execute(sa.select(users.c.id, users.c.role)).all())
    assert roles["local_admin"] == "admin" and roles["gb_student-2"] == "admin"
    # another issuer's user with the same LMS user id is someone else
    assert launched(engine, "https://other.example", taker) == "local_admin-4"


def test_changes_drops_and_reactivation(engine: Engine) -> None:
    ada = Person("lms-ada", "student", name="Ada", email="ada@uni.example")
    with engine.begin() as conn:
        assert upsert(conn, ISSUER, ada) == ("ada", Change.ADDED)
        assert upsert(conn, ISSUER, ada) == ("ada", Change.UNCHANGED)
        # a launch without name or email erases nothing
        assert upsert(conn, ISSUER, Person("lms-ada", "student")) == ("ada", Change.UNCHANGED)
        assert upsert(conn, ISSUER, Person("lms-ada", "ta", name="Ada L.")) == ("ada", Change.UPDATED)
        conn.execute(tokens.insert().values(token_hash="h" * 64, user_id="ada", created_at=sa.func.now(), label="lti"))
        conn.execute(tokens.insert().values(token_hash="k" * 64, user_id="ada", created_at=sa.func.now(), label="cli"))
        assert drop_missing(conn, ISSUER, ["someone-else"]) == ["ada"]
        assert drop_missing(conn, ISSUER, ["someone-else"]) == []  # already dropped
    with engine.connect() as conn:
        row = conn.execute(sa.select(lti_members)).one()
        revoked = dict(conn.execute(sa.select(tokens.c.label, tokens.c.revoked_at)).all())
    assert (row.status, row.role, row.name, row.email) == ("dropped", "ta", "Ada L.", "ada@uni.example")
    assert row.dropped_at is not None
    assert revoked["lti"] is not None and revoked["cli"] is None
    with engine.begin() as conn:
        assert upsert(conn, ISSUER, Person("lms-ada", "ta")) == ("ada", Change.REACTIVATED)
    with engine.connect() as conn:
        row = conn.execute(sa.select(lti_members)).one()
    assert (row.status, row.dropped_at) == ("active", None)
