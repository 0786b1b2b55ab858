"""A test LMS, the platform side of LTI 1.3 for real: its RSA key and JWKS, an OIDC auth endpoint that
answers with a signed id_token in an auto-posting form, served over HTTP by uvicorn in a thread."""

from __future__ import annotations

import html
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from joserfc import jwt
from joserfc.jwk import RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..conftest import free_port
from .lms_ags import AgsBook, ags_routes

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


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
    # the gradebook side of AGS (line items, scores received): tests/service/lti/lms_ags.py
    ags: AgsBook = field(default_factory=AgsBook)

    def token_scopes(self, request: Request) -> frozenset[str]:
        """The scopes the request's ``Authorization: Bearer`` token grants (empty when it is unknown)."""
        kind, _, token = request.headers.get("authorization", "").partition(" ")
        return self.tokens.get(token, frozenset()) if kind.lower() == "bearer" else frozenset()

    @property
    def issuer(self) -> str:
        return self.url

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
            CLAIM + "context": {"id": "course-1", "title": "PyTorch"},
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
                *ags_routes(self),
            ]
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
