"""``grader lti``: register platforms (LMSs), list them, sync the roster from the LMS."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="lti_action", required=True)
    add = actions.add_parser("add-platform", help="register an LMS (its values come from its tool registration)")
    add.add_argument("--issuer", required=True, help="the platform's issuer (iss), e.g. https://canvas.instructure.com")
    add.add_argument("--client-id", required=True, help="the client id the LMS gave this tool")
    add.add_argument("--auth-url", required=True, help="the platform's OIDC authorization endpoint")
    add.add_argument("--token-url", required=True, help="the platform's OAuth2 token endpoint")
    add.add_argument("--jwks-url", required=True, help="the platform's public key set (JWKS) URL")
    add.add_argument("--deployment-id", action="append", required=True, help="a deployment id (repeatable)")
    actions.add_parser("platforms", help="list the registered platforms")
    sync = actions.add_parser(
        "sync-roster", help="fetch the course's members from the LMS (Names and Roles) into the gradebook and users"
    )
    sync.add_argument("--issuer", help="only this platform (default: every platform a launch recorded a course of)")
    sync.add_argument("--context", help="only the platform of this LMS course id (the context id of a launch)")
    actions.add_parser(
        "send-scores", help="send the queued grades to the LMS now (grader serve also does, in the background)"
    )


def run(args: argparse.Namespace) -> int:
    from .. import config as service_config
    from ..records.store import Store
    from . import platforms

    settings = service_config.load()
    store = Store(settings.db_url)
    if args.lti_action == "send-scores":
        from . import outbox

        done = outbox.drain(store.engine, settings, everything=True)
        print(f"grader lti send-scores: {done.words()}")
        return 1 if done.busy or done.failed or done.retrying else 0
    if args.lti_action == "sync-roster":
        from . import roster

        synced = roster.sync(store.engine, settings.db_url, args.issuer, args.context)
        print(f"grader lti sync-roster: {synced.words()}")
        return 0
    if args.lti_action == "add-platform":
        found = platforms.Platform(
            issuer=args.issuer,
            client_id=args.client_id,
            auth_url=args.auth_url,
            token_url=args.token_url,
            jwks_url=args.jwks_url,
            deployment_ids=tuple(args.deployment_id),
        )
        platforms.add_platform(store.engine, found)
        print(f"platform {found.issuer}: client id {found.client_id}, deployments {', '.join(found.deployment_ids)}")
        return 0
    rows = platforms.platforms(store.engine)
    if not rows:
        print("no platforms registered (grader lti add-platform)")
    for p in rows:
        print(f"{p.issuer}\tclient {p.client_id}\tdeployments {','.join(p.deployment_ids)}\tauth {p.auth_url}")
    return 0
