"""OIDC login initiation and the resource-link launch (LTI 1.3 core, IMS security framework).

Login: store a fresh state and nonce, send the browser to the platform's auth URL.
Launch: the platform posts back a signed id_token; it must verify against the platform's
JWKS, name this tool's client id as audience, be unexpired, carry a registered deployment
id and the nonce of an unused login whose state came back with it. Only then is the user
signed in, with the role the LMS asserts (``role_for``), as the course user the LMS user maps to
(``members``), and the LMS course it came from is recorded (``record_context``: where its roster
and line items are, for ``roster`` and grade passback).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ...errors import LaunchRefused
from ..records.tables import lti_contexts, lti_logins, now
from . import members
from .platforms import platform

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
INSTRUCTOR_ROLES = ("#Instructor", "#Administrator", "#ContentDeveloper")
SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
)
TA_ROLES = ("#TeachingAssistant", "/Instructor#TeachingAssistant")


@dataclass(frozen=True)
class Launch:
    user: str  # the course user id (``members``), not the LMS's opaque ``sub``
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
    """The service role for the LTI roles the LMS asserts: Instructor (or admin) -> admin, TA -> ta, else student.

    Full role URIs, or the short names some platforms list in NRPS ("Instructor", "TeachingAssistant")."""
    roles = [r if ("#" in r or "/" in r) else f"#{r}" for r in roles]
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
    role = role_for(roles)
    record_context(engine, issuer, claims)
    user = members.launched(engine, issuer, person(claims, role))
    return Launch(user=user, role=role, claims=claims)


def person(claims: dict[str, Any], role: str) -> members.Person:
    """The LMS user a launch's claims describe."""
    lis = claims.get(CLAIM + "lis")
    sourcedid = lis.get("person_sourcedid") if isinstance(lis, dict) else None
    name = claims.get("name") or " ".join(str(claims.get(k) or "") for k in ("given_name", "family_name")).strip()
    return members.Person(
        lms_user_id=str(claims["sub"]),
        role=role,
        name=str(name or ""),
        email=str(claims.get("email") or ""),
        sourcedid=str(sourcedid or ""),
    )


def _url(value: Any) -> str | None:
    """A service URL from a claim: an http(s) URL, else nothing."""
    if isinstance(value, str) and urlsplit(value).scheme in ("http", "https") and len(value) <= 1024:
        return value
    return None


def record_context(engine: Engine, issuer: str, claims: dict[str, Any]) -> None:
    """Store (or refresh) the launch's LMS course: its title, deployment, and where its roster (NRPS) and
    line items (AGS) are. A launch without a service claim keeps what an earlier one recorded."""
    context = claims.get(CLAIM + "context")
    if not isinstance(context, dict) or not context.get("id"):
        return
    nrps, ags = claims.get(NRPS_CLAIM), claims.get(AGS_CLAIM)
    values: dict[str, Any] = {
        "deployment_id": str(claims.get(CLAIM + "deployment_id", ""))[:255],
        "title": str(context.get("title") or context.get("label") or "")[:255],
        "updated_at": now(),
    }
    if isinstance(nrps, dict) and _url(nrps.get("context_memberships_url")):
        values["memberships_url"] = _url(nrps.get("context_memberships_url"))
    if isinstance(ags, dict):
        if _url(ags.get("lineitems")):
            values["lineitems_url"] = _url(ags.get("lineitems"))
        if isinstance(ags.get("scope"), list):
            values["lineitem_scopes"] = json.dumps([str(s) for s in ags["scope"]])
    key = {"issuer": issuer, "context_id": str(context["id"])[:255]}
    where = (lti_contexts.c.issuer == key["issuer"], lti_contexts.c.context_id == key["context_id"])
    for attempt in range(2):
        try:
            with engine.begin() as conn:
                if conn.execute(lti_contexts.update().where(*where).values(**values)).rowcount == 0:
                    conn.execute(lti_contexts.insert().values(**key, **values))
            return
        except IntegrityError:  # another launch from the same course inserted it a moment ago
            if attempt == 1:
                raise


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
