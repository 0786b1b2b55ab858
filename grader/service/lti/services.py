"""Calling an LMS's LTI Advantage services (NRPS, AGS) as this tool.

The IMS security framework's OAuth 2 client-credentials grant: the tool proves who it is with a
JWT signed by its own RSA key (``platforms.tool_key``, published at /lti/jwks.json, which the
platform fetches to check it), and gets a short-lived bearer token for the scopes it asks for.
Tokens are kept in this process per platform and scopes until shortly before they expire.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
from joserfc import jwt
from sqlalchemy.engine import Engine

from ...errors import LmsError
from .platforms import Platform, tool_key

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME_S = 300
TIMEOUT_S = 20.0
EARLY_S = 30  # a cached token is dropped this long before the LMS says it expires

_tokens: dict[tuple[str, str, tuple[str, ...]], tuple[str, float]] = {}
_lock = threading.Lock()


def _key(platform: Platform, scopes: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    return (platform.issuer, platform.client_id, tuple(sorted(set(scopes))))


def assertion(engine: Engine, platform: Platform) -> str:
    """The signed JWT that authenticates this tool at ``platform``'s token endpoint (used once)."""
    key = tool_key(engine)
    issued = int(time.time())
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.token_url,
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME_S,
        "jti": secrets.token_urlsafe(24),
    }
    return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "JWT"}, claims, key)


def access_token(engine: Engine, platform: Platform, scopes: Sequence[str]) -> str:
    """A bearer token for ``scopes`` at ``platform``: the cached one while it lasts, else a new grant.

    ``LmsError`` when the token endpoint cannot be reached or refuses (its answer in the error)."""
    cache_key = _key(platform, scopes)
    with _lock:
        cached = _tokens.get(cache_key)
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": assertion(engine, platform),
        "scope": " ".join(cache_key[2]),
    }
    what = "the LMS refused this tool an access token"
    try:
        answer = httpx.post(platform.token_url, data=form, headers={"Accept": "application/json"}, timeout=TIMEOUT_S)
    except httpx.HTTPError as error:
        raise LmsError(platform.token_url, None, str(error) or type(error).__name__, what) from None
    if not answer.is_success:
        raise LmsError(platform.token_url, answer.status_code, answer.text, what)
    try:
        body = answer.json()
        token = str(body["access_token"])
        lifetime = int(body.get("expires_in", 3600))
    except (ValueError, KeyError, TypeError):
        what = "the LMS's token answer has no access_token"
        raise LmsError(platform.token_url, answer.status_code, answer.text, what) from None
    with _lock:
        _tokens[cache_key] = (token, time.monotonic() + max(0, lifetime - EARLY_S))
    return token


def forget_token(platform: Platform, scopes: Sequence[str]) -> None:
    """Drop the cached token for ``platform`` and ``scopes`` (the LMS no longer accepts it)."""
    with _lock:
        _tokens.pop(_key(platform, scopes), None)


def call(
    engine: Engine,
    platform: Platform,
    method: str,
    url: str,
    scopes: Sequence[str],
    *,
    json_body: Any = None,
    content_type: str | None = None,
    accept: str | None = None,
) -> httpx.Response:
    """One request to an LMS service at ``url`` with a bearer token for ``scopes``.

    ``LmsError`` when the LMS cannot be reached, times out or answers 5xx; a 401 drops the cached token
    and the request is sent once more with a new one. Any other answer is returned (the caller judges 4xx)."""
    headers: dict[str, str] = {}
    if accept:
        headers["Accept"] = accept
    content: bytes | None = None
    if json_body is not None:
        content = json.dumps(json_body).encode()
        headers["Content-Type"] = content_type or "application/json"
    elif content_type:
        headers["Content-Type"] = content_type
    for attempt in (1, 2):
        token = access_token(engine, platform, scopes)
        try:
            answer = httpx.request(
                method, url, content=content, headers={**headers, "Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S
            )
        except httpx.HTTPError as error:
            raise LmsError(url, None, str(error) or type(error).__name__) from None
        if answer.status_code >= 500:
            raise LmsError(url, answer.status_code, answer.text)
        if answer.status_code == 401 and attempt == 1:
            forget_token(platform, scopes)
            continue
        return answer
    raise AssertionError("unreachable")  # pragma: no cover
