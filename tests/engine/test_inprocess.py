"""The engine's cached gradebook connection survives a database restart (a real PostgreSQL of its own)."""

from __future__ import annotations

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
