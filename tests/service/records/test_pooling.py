"""Pooled connections pinged only after they sat idle, against a real PostgreSQL that is stopped and restarted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa

from grader.service.records import pooling
from grader.service.records.store import DATABASE_ERRORS, Store
from tests.service.queue.cluster import Postgres, StatementLog


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    server = Postgres()
    try:
        yield server
    finally:
        server.close()


def counting_pings(engine: sa.Engine) -> list[float]:
    """The times the dialect's real ping ran on ``engine`` (it still runs: this only counts)."""
    pings: list[float] = []
    real = engine.dialect.do_ping

    def do_ping(dbapi_connection: object) -> bool:
        pings.append(time.monotonic())
        return real(dbapi_connection)

    engine.dialect.do_ping = do_ping  # type: ignore[method-assign]
    return pings


def backend(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


def test_a_connection_back_in_use_at_once_is_not_pinged_and_one_that_sat_idle_is(postgres: Postgres) -> None:
    engine = pooling.create_engine(postgres.url(), idle_s=0.5)
    try:
        pings = counting_pings(engine)
        first = backend(engine)  # a new connection: it has just answered
        for _ in range(20):  # a burst: each checkout within milliseconds of the last return
            assert backend(engine) == first
        assert pings == []
        time.sleep(0.7)
        assert backend(engine) == first
        assert len(pings) == 1  # idle for 0.7 s: pinged once, answered, kept
        assert backend(engine) == first
        assert len(pings) == 1
    finally:
        engine.dispose()


def test_after_a_restart_an_idle_connection_is_replaced_before_the_callers_statement(postgres: Postgres) -> None:
    engine = pooling.create_engine(postgres.url(), idle_s=0.2)
    try:
        pings = counting_pings(engine)
        before = backend(engine)
        postgres.stop()
        postgres.start()  # the pooled connection is now dead
        time.sleep(0.3)
        after = backend(engine)  # no error: the ping found it dead and the pool connected again
        assert after != before and len(pings) == 1
    finally:
        engine.dispose()


def test_a_restart_within_the_idle_window_fails_one_statement_as_a_database_error_then_recovers(
    postgres: Postgres,
) -> None:
    """The price of not pinging a connection just used: one statement fails, as the API's 503 and a
    worker's retry expect (``DATABASE_ERRORS``), and the pool is renewed."""
    engine = pooling.create_engine(postgres.url(), idle_s=3600)
    try:
        before = backend(engine)
        postgres.stop()
        postgres.start()
        with pytest.raises(DATABASE_ERRORS):
            backend(engine)
        assert backend(engine) != before
    finally:
        engine.dispose()


def test_sqlite_engines_have_no_ping() -> None:
    engine = pooling.create_engine("sqlite://")
    try:
        assert len(engine.pool.dispatch.checkout) == 0
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
    finally:
        engine.dispose()


def during(log: StatementLog, action: Callable[[], object]) -> list[str]:
    """The statements the server received while ``action`` ran."""
    log.since()
    action()
    return log.since()


def test_a_read_is_one_round_trip_and_a_write_keeps_its_transaction(postgres: Postgres) -> None:
    store = Store(postgres.url(), create=True)
    try:
        token = store.issue_token("ada", "student")
        store.user_for_token(token)  # the reads' pool connects (and asks the server its version)
        sent = StatementLog(postgres)
        reads = during(sent, lambda: [store.user_for_token(token) for _ in range(3)])
        assert len(reads) == 3 and all(r.startswith("SELECT grader_users.id, grader_users.role") for r in reads), reads
        assert not any(r in ("BEGIN", "ROLLBACK", "SELECT 1") for r in reads)

        written = during(sent, lambda: store.ensure_user("grace", "ta"))
        assert written[0] == "BEGIN" and written[-1] == "COMMIT", written

        # a connection that served a read goes back to the pool in its transactional mode: a failed write
        # after it leaves nothing behind
        def failing_write() -> None:
            with store.transaction() as conn:
                conn.execute(sa.text("INSERT INTO grader_users (id, role) VALUES ('half', 'student')"))
                raise RuntimeError("the rest of the write failed")

        store.user_for_token(token)
        with pytest.raises(RuntimeError):
            failing_write()
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM grader_users WHERE id = 'half'")).scalar_one() == 0
    finally:
        store.engine.dispose()


def test_an_update_of_many_rows_is_one_round_trip(postgres: Postgres) -> None:
    """An ``executemany`` UPDATE, as an ORM flush of nbgrader's grades sends it: one batch, not a statement a row."""
    engine = pooling.create_engine(postgres.url())
    table = sa.Table("scores", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("v", sa.Float))
    try:
        table.create(engine)
        with engine.begin() as conn:
            conn.execute(table.insert(), [{"id": i, "v": 0.0} for i in range(16)])
        update = table.update().where(table.c.id == sa.bindparam("b_id")).values(v=sa.bindparam("b_v"))

        def update_all() -> None:
            with engine.begin() as conn:
                conn.execute(update, [{"b_id": i, "b_v": float(i)} for i in range(16)])

        sent = during(StatementLog(postgres), update_all)
        assert [s.split(" ", 1)[0] for s in sent] == ["BEGIN", "UPDATE", "COMMIT"], sent
        assert sent[1].count("UPDATE scores") == 16
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.sum(table.c.v))).scalar_one() == sum(range(16))
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()
