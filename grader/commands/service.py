"""The service's verbs, for whoever runs it: the service, its workers, its database, access tokens.

Thin edges (``grader.cli`` builds the parser): each parses its arguments and calls one library function.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys


def serve(args: argparse.Namespace) -> int:
    from ..service import serve

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v}
    return serve.run(db_url=args.db_url, broker_url=args.broker_url, **overrides)


def worker(args: argparse.Namespace) -> int:
    from ..service.queue import worker

    return worker.run(db_url=args.db_url, broker_url=args.broker_url, concurrency=args.concurrency, name=args.name)


def db(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from ..service import config as service_config
    from ..service.records import schema

    engine = sa.create_engine(service_config.load(db_url=args.db_url).db_url)
    if args.action == "upgrade":
        before, after = schema.upgrade(engine)
        print(
            f"service schema: {before or 'empty'} -> {after}"
            if before != after
            else f"service schema: {after}, current"
        )
    else:
        with engine.connect() as conn:
            found = schema.revision(conn)
        state = "current" if found == schema.head() else f"this grader needs {schema.head()}: grader db upgrade"
        print(f"service schema: {found or 'empty'} ({state})")
    engine.dispose()
    return 0


def tokens(args: argparse.Namespace) -> int:
    from ..service import config as service_config
    from ..service.dashboard import roster
    from ..service.records.store import Store

    expires_at = None
    if args.action == "issue":
        try:
            expires_at = expiry(args.expires) if args.expires else None
        except ValueError as error:
            print(f"grader tokens: {error}", file=sys.stderr)
            return 2
        if not args.users:
            print("grader tokens issue: name at least one user", file=sys.stderr)
            return 2
    if args.action == "revoke" and bool(args.users) == bool(args.id):
        print("grader tokens revoke: name the users, or give one token's --id (not both)", file=sys.stderr)
        return 2
    store = Store(service_config.load().db_url)
    if args.action == "issue":
        warning = roster.unknown_students_warning(store.reader, args.users) if args.role == "student" else None
        if warning:
            print(f"grader tokens: warning: {warning}", file=sys.stderr)
        for user in args.users:
            print(f"{user}\t{args.role}\t{store.issue_token(user, args.role, args.label, expires_at)}")
    elif args.action == "list":
        print(f"{'id':8}  {'user':16}  {'role':7}  {'label':12}  {'created':16}  {'expires':16}  state")
        for t in store.list_tokens():
            expires = f"{t.expires_at:%Y-%m-%d %H:%M}" if t.expires_at else "never"
            created = f"{t.created_at:%Y-%m-%d %H:%M}"
            print(f"{t.id:8}  {t.user:16}  {t.role:7}  {t.label:12}  {created:16}  {expires:16}  {t.state}")
    elif args.id:
        found = store.revoke_token_id(args.id)
        print(f"token {found.id} of {found.user} revoked")
    else:
        for user in args.users:
            print(f"{user}: {store.revoke_tokens(user)} token(s) revoked")
    return 0


def expiry(text: str) -> dt.datetime:
    """``30d``, ``12h`` (from now) or a date ``2027-01-31`` (its end, UTC): naive UTC, as the store keeps it."""
    import re

    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    match = re.fullmatch(r"(\d+)([dh])", text.strip())
    if match:
        amount = int(match.group(1))
        if amount <= 0:
            raise ValueError(f"--expires {text!r} must be in the future")
        return now + (dt.timedelta(days=amount) if match.group(2) == "d" else dt.timedelta(hours=amount))
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--expires takes a number of days or hours (30d, 12h) or a date (2027-01-31), not {text!r}"
        ) from None
    end = dt.datetime.combine(day, dt.time()) + dt.timedelta(days=1)
    if end <= now:
        raise ValueError(f"--expires {text!r} is in the past")
    return end
