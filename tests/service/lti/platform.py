"""A test LMS, the platform side of LTI 1.3 for real: its RSA key and JWKS, an OIDC auth endpoint that
answers with a signed id_token in an auto-posting form, the OAuth 2 token endpoint that checks the
tool's signed client assertion against the tool's own JWKS, and the Names and Roles (NRPS) service;
served over HTTP by uvicorn in a thread."""

from __future__ import annotations

import html
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..conftest import free_port
from .lms_ags import AgsBook, ags_routes

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
AGS_SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
)
KNOWN_SCOPES = frozenset((NRPS_SCOPE, *AGS_SCOPES))
MEMBERSHIP = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
CONTEXT = "course-1"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass
class LMS:
    url: str
    client_id: str = "grader-tool"
    deployment_id: str = "deploy-1"
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "platform-1"}))
    down: bool = False
    # who the next auth request launches as: (sub, roles)
    user: tuple[str, list[str]] = ("lms-user-1", [LEARNER])
    # OAuth 2 access tokens the token endpoint issued: token -> the scopes it grants (tokens_scopes reads them)
    tokens: dict[str, frozenset[str]] = field(default_factory=dict)
    # where the tool publishes its keys (the fixture sets it): the token endpoint checks assertions with them
    tool_jwks_url: str = ""
    token_lifetime_s: int = 3600
    used_jtis: set[str] = field(default_factory=set)
    grants: list[frozenset[str]] = field(default_factory=list)  # the scopes of every token granted, in order
    # every request the LMS received: (method, path with query, Authorization header)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    refuse_next: int = 0  # the next this-many service (NRPS) requests answer 401 whatever their token
    # the course's membership (NRPS), per context id: the members as the LMS lists them; page_size per page
    members: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    page_size: int = 100
    fail_pages: set[int] = field(default_factory=set)  # NRPS pages (0, 1, ...) that answer 500
    # the gradebook side of AGS (line items, scores received): tests/service/lti/lms_ags.py
    ags: AgsBook = field(default_factory=AgsBook)

    def token_scopes(self, request: Request) -> frozenset[str]:
        """The scopes the request's ``Authorization: Bearer`` token grants (empty when it is unknown)."""
        kind, _, token = request.headers.get("authorization", "").partition(" ")
        return self.tokens.get(token, frozenset()) if kind.lower() == "bearer" else frozenset()

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def memberships_url(self, context: str = CONTEXT) -> str:
        return f"{self.url}/nrps/{context}/memberships"

    def lineitems_url(self, context: str = CONTEXT) -> str:
        return f"{self.url}/ags/{context}/lineitems"

    def id_token(self, nonce: str, **overrides: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": self.user[0],
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            CLAIM + "message_type": "LtiResourceLinkRequest",
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": self.deployment_id,
            CLAIM + "roles": self.user[1],
            CLAIM + "resource_link": {"id": "link-1"},
            CLAIM + "context": {"id": CONTEXT, "title": "PyTorch"},
            NRPS_CLAIM: {"context_memberships_url": self.memberships_url(), "service_versions": ["2.0"]},
            AGS_CLAIM: {"scope": list(AGS_SCOPES), "lineitems": self.lineitems_url()},
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        return jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key)

    def app(self) -> Starlette:
        def guard() -> Response | None:
            return Response("the LMS is down", status_code=500) if self.down else None

        async def jwks(request: Request) -> Response:
            return guard() or JSONResponse({"keys": [self.key.as_dict(private=False)]})

        async def auth(request: Request) -> Response:
            """OIDC authorization: check what the tool asks for, answer with a form that posts the id_token."""
            p = request.query_params
            wanted = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none"}
            wrong = [k for k, v in wanted.items() if p.get(k) != v]
            if wrong or p.get("client_id") != self.client_id or not p.get("state") or not p.get("nonce"):
                return Response(f"bad authorization request: {wrong or 'client_id/state/nonce'}", status_code=400)
            token = self.id_token(p["nonce"])
            action = html.escape(p["redirect_uri"])
            return HTMLResponse(
                f'<form id="f" method="post" action="{action}">'
                f'<input type="hidden" name="id_token" value="{token}">'
                f'<input type="hidden" name="state" value="{html.escape(p["state"])}"></form>'
                '<script>document.getElementById("f").submit()</script>'
            )

        async def token(request: Request) -> Response:
            """OAuth 2 client credentials with a signed JWT assertion (IMS security framework 4.1)."""
            if self.down:
                return Response("the LMS is down", status_code=500)
            form = await request.form()

            def refuse(status: int, error: str, why: str) -> Response:
                return JSONResponse({"error": error, "error_description": why}, status_code=status)

            if form.get("grant_type") != "client_credentials":
                return refuse(400, "unsupported_grant_type", "grant_type must be client_credentials")
            if form.get("client_assertion_type") != ASSERTION_TYPE:
                return refuse(400, "invalid_request", f"client_assertion_type must be {ASSERTION_TYPE}")
            async with httpx.AsyncClient() as client:
                keys = KeySet.import_key_set((await client.get(self.tool_jwks_url, timeout=10)).json())
            try:
                claims = jwt.decode(str(form.get("client_assertion", "")), keys, algorithms=["RS256"]).claims
                jwt.JWTClaimsRegistry(
                    iss={"essential": True, "value": self.client_id},
                    sub={"essential": True, "value": self.client_id},
                    aud={"essential": True, "value": self.token_url},
                    exp={"essential": True},
                    jti={"essential": True},
                ).validate(claims)
            except (JoseError, ValueError) as error:
                return refuse(401, "invalid_client", f"the client assertion does not verify: {error}")
            if claims["jti"] in self.used_jtis:
                return refuse(401, "invalid_client", "the client assertion's jti was used before")
            self.used_jtis.add(claims["jti"])
            granted = frozenset(str(form.get("scope", "")).split()) & KNOWN_SCOPES
            if not granted:
                return refuse(400, "invalid_scope", "none of the requested scopes is known")
            issued = secrets.token_urlsafe(16)
            self.tokens[issued] = granted
            self.grants.append(granted)
            body = {"access_token": issued, "token_type": "Bearer", "expires_in": self.token_lifetime_s}
            return JSONResponse({**body, "scope": " ".join(sorted(granted))})

        async def memberships(request: Request) -> Response:
            """NRPS 2.0: the context's members, ``page_size`` at a time, the next page in a Link header."""
            if self.down:
                return Response("the LMS is down", status_code=500)
            if self.refuse_next > 0:
                self.refuse_next -= 1
                return JSONResponse({"error": "invalid_token"}, status_code=401)
            scopes = self.token_scopes(request)
            if not scopes:
                return JSONResponse({"error": "invalid_token"}, status_code=401)
            if NRPS_SCOPE not in scopes:
                return JSONResponse({"error": "insufficient_scope", "scope": NRPS_SCOPE}, status_code=403)
            if MEMBERSHIP not in request.headers.get("accept", ""):
                return Response(f"this endpoint serves {MEMBERSHIP}", status_code=406)
            context = request.path_params["context"]
            if context not in self.members:
                return JSONResponse({"error": "no such context"}, status_code=404)
            everyone = self.members[context]
            page = int(request.query_params.get("page", "0"))
            if page in self.fail_pages:
                return Response(f"page {page} is down", status_code=500)
            chunk = everyone[page * self.page_size : (page + 1) * self.page_size]
            headers = {}
            if (page + 1) * self.page_size < len(everyone):
                headers["Link"] = f'<{self.memberships_url(context)}?page={page + 1}>; rel="next"'
            body = {
                "id": str(request.url),
                "context": {"id": context, "title": "PyTorch"},
                "members": chunk,
            }
            return JSONResponse(body, headers=headers, media_type=MEMBERSHIP)

        async def log(request: Request, call_next: RequestResponseEndpoint) -> Response:
            path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            self.requests.append((request.method, path, request.headers.get("authorization", "")))
            return await call_next(request)

        async def start(request: Request) -> Response:
            """What the LMS does when a student clicks the tool's link: third-party login initiation."""
            tool = request.query_params["tool"]
            query = f"iss={self.issuer}&login_hint={uuid.uuid4().hex}&target_link_uri={tool}/lti/launch"
            return RedirectResponse(f"{tool}/lti/login?{query}&client_id={self.client_id}", status_code=302)

        return Starlette(
            routes=[
                Route("/jwks", jwks),
                Route("/auth", auth),
                Route("/start", start),
                Route("/token", token, methods=["POST"]),
                Route("/nrps/{context}/memberships", memberships),
                *ags_routes(self),
            ],
            middleware=[Middleware(BaseHTTPMiddleware, dispatch=log)],
        )


@contextmanager
def running_platform() -> Iterator[LMS]:
    port = free_port()
    platform = LMS(url=f"http://127.0.0.1:{port}")
    server = uvicorn.Server(uvicorn.Config(platform.app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test platform did not start")
        time.sleep(0.05)
    try:
        yield platform
    finally:
        server.should_exit = True
        thread.join(10)
