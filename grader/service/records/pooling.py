"""Pooled database connections, checked before use only when they may have gone stale.

SQLAlchemy's ``pool_pre_ping`` sends the database a round trip before every checkout, so that a
connection a restart left dead is replaced instead of failing a request. The service takes a
connection from its pools five times a job (three at upload, one for the claim, one for the job:
``benchmarks/scale.py`` counts every round trip in PostgreSQL's own log) and three times for a
status request: five pings of a job's 48 round trips, each waited for.

A connection handed back to its pool a moment ago was answering then. So ``create_engine`` pings a
connection only when it has sat in the pool for more than ``idle_s`` seconds (the dialect's own ping,
as ``pool_pre_ping`` sends it); one that does not answer is thrown away and the pool takes another
(``DisconnectionError``), before any statement of the caller's is sent. In a burst connections go
back to work within milliseconds, and are not pinged; after a quiet spell, or an outage, they are.
The pool hands out the connection returned last, so that under steady traffic the same few stay in
use rather than each sitting idle in turn.

What this gives up: a database restarted less than ``idle_s`` after a connection's last use fails
that connection's next statement, as it would between a ping and the statement. The caller's own
handling applies (``store.DATABASE_ERRORS``: the API answers 503 with a Retry-After, a worker waits
and retries), and SQLAlchemy, seeing the disconnect, replaces every connection the pool held.

Reads take a connection of ``reader(engine)``, a pool of its own on a database server whose
connections run each statement on its own (autocommit): psycopg2 sends no ``BEGIN`` before it and
SQLAlchemy no ``ROLLBACK`` after it, so a one-statement read is one round trip instead of three. It
sees what a transaction under READ COMMITTED, PostgreSQL's default, would see. (Switching a pooled
connection to autocommit and back, instead, costs a ``SET`` each time it is returned.) Writes keep
their transactions, and on psycopg2 an ORM flush of many rows (nbgrader's grades of a notebook, one
``UPDATE`` per test cell) goes as one batch, not a round trip per row.

SQLite has no server to lose, and its driver begins no transaction for a read: there
``create_engine`` and ``reader`` give the engine as before.
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

IDLE_S = 1.0  # a connection back in use within this many seconds of its return is not pinged
_RETURNED = "grader_returned_at"  # in the pool entry's ``info``: when the connection came back (monotonic)


def create_engine(db_url: str | sa.URL, idle_s: float = IDLE_S, autocommit: bool = False, **kwargs: Any) -> sa.Engine:
    """``sqlalchemy.create_engine(db_url, **kwargs)``, made for a database server as this module says.

    ``autocommit``: every statement commits on its own (``reader``). On psycopg2, an ``executemany``
    UPDATE or DELETE (an ORM flush of many rows, as nbgrader's grades) is sent as one batch
    (``executemany_mode="values_plus_batch"``), not one round trip per row."""
    url = sa.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        return sa.create_engine(url, **kwargs)
    # last in, first out: the connection just returned is the next one taken, so in steady traffic one
    # connection stays in use and needs no ping, where first in, first out would let each sit idle in turn
    options: dict[str, Any] = {"pool_use_lifo": True}
    if url.get_driver_name() == "psycopg2":
        options["executemany_mode"] = "values_plus_batch"
    if autocommit:
        options["isolation_level"] = "AUTOCOMMIT"
    engine = sa.create_engine(url, **{**options, **kwargs})
    ping_when_idle(engine, idle_s)
    return engine


def reader(engine: sa.Engine, idle_s: float = IDLE_S) -> sa.Engine:
    """An engine for one-statement reads of ``engine``'s database: on a server, a pool of its own whose
    connections commit every statement on their own, so a read sends no BEGIN before it and no ROLLBACK
    after it. Two statements read this way may see two different commits. On SQLite, ``engine`` itself."""
    if engine.dialect.name == "sqlite":
        return engine
    return create_engine(engine.url, idle_s, autocommit=True)


def ping_when_idle(engine: sa.Engine, idle_s: float) -> None:
    """Ping a connection at checkout when it has been in ``engine``'s pool over ``idle_s`` seconds."""
    dialect = engine.dialect

    def returned(dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED] = time.monotonic()

    def checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        back = record.info.get(_RETURNED)
        if back is not None and time.monotonic() - back <= idle_s:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                raise sa.exc.DisconnectionError(f"a pooled connection did not answer: {error}") from error
            raise

    event.listen(engine, "connect", returned)  # a new connection has just answered
    event.listen(engine, "checkin", returned)
    event.listen(engine, "checkout", checkout)
