"""The engine's cached gradebook connection survives a database restart (a real PostgreSQL of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import course
from grader.engine import inprocess
from tests.service.queue.cluster import Postgres


def test_a_cached_gradebook_connection_is_replaced_after_the_database_restarts() -> None:
    from nbgrader.api import Gradebook

    course.put_bin_on_path()
    inprocess.apply()
    postgres = Postgres()
    try:
        with Gradebook(postgres.url()) as gradebook:
            gradebook.update_or_create_student("before")
        postgres.stop()
        postgres.start()  # every pooled connection is now dead
        with Gradebook(postgres.url()) as gradebook:
            gradebook.update_or_create_student("after")
            assert sorted(s.id for s in gradebook.students) == ["after", "before"]
    finally:
        postgres.close()


def test_metadata_validation_remembers_only_valid_values_and_tells_types_apart() -> None:
    import jsonschema  # type: ignore[import-untyped]
    from nbgrader.nbgraderformat import v3

    inprocess.apply()
    schema = v3.MetadataValidatorV3().schema
    cached = inprocess._CachedJsonschema(jsonschema)
    good = {"grade": True, "grade_id": "t1", "locked": True, "points": 2, "schema_version": 3, "solution": False}
    cached.validate(good, schema)
    cached.validate(dict(good), schema)  # remembered: the same value
    assert len(cached._valid[id(schema)]) == 1
    for bad in ({**good, "points": "2"}, {**good, "grade": 1}, {**good, "grade_id": ("t1",)}):
        for _ in range(2):  # never remembered: the same error each time, as jsonschema's own validate gives
            with pytest.raises(jsonschema.ValidationError) as caught:
                cached.validate(bad, schema)
            with pytest.raises(jsonschema.ValidationError) as stock:
                jsonschema.validate(bad, schema)
            assert caught.value.message == stock.value.message
    assert len(cached._valid[id(schema)]) == 1
    assert inprocess._exact({"a": [1, 2.0, None]}) != inprocess._exact({"a": [1, 2, None]})
    assert inprocess._exact({"a": (1,)}) is None


def test_gradebooks_opened_in_bound_write_in_the_callers_one_transaction(tmp_path: Path) -> None:
    import sqlalchemy as sa
    from nbgrader.api import Gradebook

    from tests.service.conftest import fresh_database

    def students(url: str) -> list[str]:
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                return sorted(conn.execute(sa.text("SELECT id FROM student")).scalars())
        finally:
            engine.dispose()

    course.put_bin_on_path()
    inprocess.apply()
    elsewhere = f"sqlite:///{tmp_path / 'other.db'}"
    with fresh_database("grader_bound") as url:
        with Gradebook(url):
            pass  # nbgrader's tables
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn, conn.begin():
                with inprocess.bound(conn):
                    with Gradebook(url) as first, Gradebook(url) as second:
                        assert first.db is second.db  # one session on the caller's connection
                        first.update_or_create_student("kept")  # nbgrader commits ...
                        assert second.find_student("kept").id == "kept"
                    with Gradebook(elsewhere) as other:  # another database: a session, and commits, of its own
                        other.update_or_create_student("sqlite")
                    assert students(url) == []  # ... but nothing is visible before the caller commits
                    assert students(elsewhere) == ["sqlite"]
            assert students(url) == ["kept"]

            with pytest.raises(RuntimeError, match="the job failed"):
                with engine.connect() as conn, conn.begin():
                    with inprocess.bound(conn):
                        with Gradebook(url) as gradebook:
                            gradebook.update_or_create_student("lost")
                        raise RuntimeError("the job failed")
            assert students(url) == ["kept"]  # rolled back with the caller's transaction

            with Gradebook(url) as outside:  # outside ``bound``: nbgrader's own session and commits again
                outside.update_or_create_student("outside")
            assert students(url) == ["kept", "outside"]
        finally:
            engine.dispose()
