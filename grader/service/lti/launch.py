"""OIDC login initiation and the resource-link launch (LTI 1.3 core, IMS security framework).

Login: store a fresh state and nonce, send the browser to the platform's auth URL.
Launch: the platform posts back a signed id_token; it must verify against the platform's
JWKS, name this tool's client id as audience, be unexpired, carry a registered deployment
id and the nonce of an unused login whose state came back with it. Only then is the user
signed in, with the role the LMS asserts (``role_for``).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy.engine import Engine

from ...errors import LaunchRefused
from ..records.tables import lti_logins, now
from .platforms import platform

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
INSTRUCTOR_ROLES = ("#Instructor", "#Administrator", "#ContentDeveloper")
SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
)
TA_ROLES = ("#TeachingAssistant", "/Instructor#TeachingAssistant")


@dataclass(frozen=True)
class Launch:
    user: str
    role: str
    claims: dict[str, Any]


def login_redirect(engine: Engine, params: dict[str, str], launch_url: str) -> str:
    """Where the browser goes to start a launch: the platform's auth URL with a new state and nonce."""
    issuer = params.get("iss", "")
    found = platform(engine, issuer)
    if params.get("client_id") and params["client_id"] != found.client_id:
        raise LaunchRefused("the login names another client id than the one registered for this platform")
    state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    with engine.begin() as conn:
        conn.execute(lti_logins.insert().values(state=state, nonce=nonce, issuer=issuer, created_at=now()))
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": found.client_id,
        "redirect_uri": launch_url,
        "login_hint": params.get("login_hint", ""),
        "state": state,
        "nonce": nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    return f"{found.auth_url}?{urlencode(query)}"


def role_for(roles: list[str]) -> str:
    """The service role for the LTI roles the LMS asserts: Instructor (or admin) -> admin, TA -> ta, else student."""
    if any(r.endswith(TA_ROLES) for r in roles):
        return "ta"
    if any(r.endswith(INSTRUCTOR_ROLES) for r in roles):
        return "admin"
    return "student"


def verify(engine: Engine, id_token: str, state: str) -> Launch:
    """The launch in ``id_token``, checked; ``LaunchRefused`` (nothing stored) if any check fails."""
    try:
        unverified = json.loads(jws.extract_compact(id_token.encode()).payload)
    except (JoseError, ValueError) as error:
        raise LaunchRefused(f"the id_token is not a signed JWT ({error})") from None
    issuer = str(unverified.get("iss", "")) if isinstance(unverified, dict) else ""
    found = platform(engine, issuer)
    try:
        keys = KeySet.import_key_set(httpx.get(found.jwks_url, timeout=10).raise_for_status().json())
        token = jwt.decode(id_token, keys, algorithms=["RS256"])
    except httpx.HTTPError as error:
        raise LaunchRefused(f"could not fetch the platform's keys from {found.jwks_url}: {error}") from None
    except (JoseError, ValueError) as error:
        raise LaunchRefused(f"the id_token's signature does not verify with the platform's keys ({error})") from None
    claims = dict(token.claims)
    registry = jwt.JWTClaimsRegistry(
        iss={"essential": True, "value": found.issuer}, exp={"essential": True}, sub={"essential": True}
    )
    try:
        registry.validate(claims)
    except JoseError as error:
        raise LaunchRefused(f"the id_token is not valid: {error}") from None
    audience = claims.get("aud")
    if found.client_id not in (audience if isinstance(audience, list) else [audience]):
        raise LaunchRefused("the id_token's audience is not this tool's client id")
    if claims.get(CLAIM + "deployment_id") not in found.deployment_ids:
        raise LaunchRefused("the id_token's deployment id is not registered for this platform")
    if claims.get(CLAIM + "message_type") != "LtiResourceLinkRequest":
        raise LaunchRefused("only resource-link launches are supported")
    _use_nonce(engine, state, str(claims.get("nonce", "")), issuer)
    roles = [str(r) for r in claims.get(CLAIM + "roles", [])]
    return Launch(user=str(claims["sub"]), role=role_for(roles), claims=claims)


def _use_nonce(engine: Engine, state: str, nonce: str, issuer: str) -> None:
    with engine.begin() as conn:
        used = conn.execute(
            lti_logins.update()
            .where(
                lti_logins.c.state == state,
                lti_logins.c.nonce == nonce,
                lti_logins.c.issuer == issuer,
                lti_logins.c.used_at.is_(None),
            )
            .values(used_at=now())
        ).rowcount
    if used != 1:
        raise LaunchRefused("this launch was already used, or its state and nonce do not match a login: start again")
