"""Registered platforms (LMSs) and the tool's own RSA key, both in the service's database."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from joserfc.jwk import RSAKey
from sqlalchemy.engine import Engine

from ...errors import LaunchRefused, StudentError
from ..records.tables import lti_keys, lti_platforms, now


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    auth_url: str
    token_url: str
    jwks_url: str
    deployment_ids: tuple[str, ...]


def add_platform(engine: Engine, platform: Platform) -> None:
    """Store (or replace) the platform with this issuer."""
    if not platform.deployment_ids:
        raise StudentError("give at least one --deployment-id")
    values = {
        "client_id": platform.client_id,
        "auth_url": platform.auth_url,
        "token_url": platform.token_url,
        "jwks_url": platform.jwks_url,
        "deployment_ids": json.dumps(list(platform.deployment_ids)),
    }
    with engine.begin() as conn:
        conn.execute(lti_platforms.delete().where(lti_platforms.c.issuer == platform.issuer))
        conn.execute(lti_platforms.insert().values(issuer=platform.issuer, created_at=now(), **values))


def _platform(row: Any) -> Platform:
    return Platform(
        row.issuer, row.client_id, row.auth_url, row.token_url, row.jwks_url, tuple(json.loads(row.deployment_ids))
    )


def platforms(engine: Engine) -> list[Platform]:
    with engine.connect() as conn:
        return [_platform(r) for r in conn.execute(sa.select(lti_platforms).order_by(lti_platforms.c.issuer))]


def platform(engine: Engine, issuer: str) -> Platform:
    """The registered platform ``issuer``; ``LaunchRefused`` if there is none."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(lti_platforms).where(lti_platforms.c.issuer == issuer)).first()
    if row is None:
        raise LaunchRefused(f"the platform {issuer!r} is not registered with this tool (grader lti add-platform)")
    return _platform(row)


def tool_key(engine: Engine) -> RSAKey:
    """The tool's RSA key: generated on first use, then always the same one."""
    with engine.begin() as conn:
        row = conn.execute(sa.select(lti_keys).order_by(lti_keys.c.created_at).limit(1)).first()
        if row is None:
            key = RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(8), "use": "sig", "alg": "RS256"})
            pem = key.as_pem(private=True).decode()
            conn.execute(lti_keys.insert().values(kid=key.kid, private_pem=pem, created_at=now()))
            row = conn.execute(sa.select(lti_keys).order_by(lti_keys.c.created_at).limit(1)).one()
    return RSAKey.import_key(row.private_pem, parameters={"kid": row.kid, "use": "sig", "alg": "RS256"})


def jwks(engine: Engine) -> dict[str, Any]:
    """The tool's public key set (what the platform checks our signed assertions with)."""
    return {"keys": [tool_key(engine).as_dict(private=False)]}
