"""The tool's LTI 1.3 endpoints: login initiation, launch, its JWKS and its registration JSON; and the
dashboard's "sync the roster from the LMS" button (on the settings page)."""

from __future__ import annotations

import html

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ...errors import GraderError, LaunchRefused
from ..config import ServiceConfig
from ..lti import launch, platforms, roster
from ..records.store import Store
from . import http, pages, sessions


async def _params(request: Request) -> dict[str, str]:
    values = dict(request.query_params)
    if request.method == "POST":
        form = await request.form(max_files=0, max_fields=32)
        values.update({k: v for k, v in form.items() if isinstance(v, str)})
    return values


def _launch_url(request: Request) -> str:
    return str(request.url_for("lti_launch"))


async def login(request: Request) -> Response:
    """OIDC third-party login initiation: the platform sends iss, login_hint, target_link_uri."""
    params = await _params(request)
    store: Store = request.app.state.store
    url = await run_in_threadpool(launch.login_redirect, store.engine, params, _launch_url(request))
    return RedirectResponse(url, status_code=302)


async def launch_post(request: Request) -> Response:
    """The platform posts the signed id_token (form_post); a valid resource-link launch signs the user in."""
    params = await _params(request)
    id_token, state = params.get("id_token", ""), params.get("state", "")
    if not id_token or not state:
        raise LaunchRefused("the launch needs an id_token and a state (start it from the LMS)")
    store: Store = request.app.state.store
    found = await run_in_threadpool(launch.verify, store.engine, id_token, state)
    token = await run_in_threadpool(sessions.issue, store, found.user, found.role, "lti")
    # a page, not a redirect: the session cookie is SameSite=Strict, and a navigation that began on the
    # LMS's site would not send it; this page's own navigation to / is same-site and does
    name = html.escape(found.user)
    body = (
        '<!doctype html><meta http-equiv="refresh" content="0;url=/"><title>Signed in</title>'
        f'<p>Signed in from the LMS as {name} ({found.role}). <a href="/">Continue</a></p>'
    )
    response = HTMLResponse(body)
    response.set_cookie(sessions.COOKIE, token, max_age=sessions.MAX_AGE_S, httponly=True, samesite="strict", path="/")
    return response


async def jwks(request: Request) -> Response:
    store: Store = request.app.state.store
    return JSONResponse(await run_in_threadpool(platforms.jwks, store.engine))


async def config_json(request: Request) -> Response:
    """What to paste into the LMS's tool registration (an IMS dynamic-registration-style tool configuration)."""
    base = str(request.base_url).rstrip("/")
    return JSONResponse(
        {
            "application_type": "web",
            "client_name": "PyTorch course autograder",
            "response_types": ["id_token"],
            "grant_types": ["implicit", "client_credentials"],
            "initiate_login_uri": f"{base}/lti/login",
            "redirect_uris": [f"{base}/lti/launch"],
            "jwks_uri": f"{base}/lti/jwks.json",
            "token_endpoint_auth_method": "private_key_jwt",
            "scope": " ".join(launch.SCOPES),
            "https://purl.imsglobal.org/spec/lti-tool-configuration": {
                "domain": request.url.hostname,
                "target_link_uri": f"{base}/lti/launch",
                "claims": ["iss", "sub", "name", "email"],
                "messages": [{"type": "LtiResourceLinkRequest", "target_link_uri": f"{base}/lti/launch"}],
            },
        }
    )


async def sync_roster(request: Request) -> Response:
    """Staff: fetch the roster from the LMS now; the settings page again, with what changed or what failed."""
    user = sessions.staff(request)
    form = await request.form(max_files=0, max_fields=8)
    sessions.check_csrf(request, form.get("csrf"))
    store: Store = request.app.state.store
    config: ServiceConfig = request.app.state.config
    try:
        issuer, course = str(form.get("issuer") or "") or None, str(form.get("context") or "") or None
        synced = await run_in_threadpool(roster.sync, store.engine, config.db_url, issuer, course)
    except GraderError as error:
        page = pages._settings(request, notice="", error=f"The roster was not synced: {error}")
        return pages.render(request, "settings.html", http.status_of(error), user=user, **page)
    notice = f"Synced the {synced.words()}."
    return pages.render(request, "settings.html", user=user, **pages._settings(request, notice=notice, error=""))


routes = [
    Route("/lti/login", login, methods=["GET", "POST"], include_in_schema=False),
    Route("/lti/launch", launch_post, methods=["POST"], name="lti_launch", include_in_schema=False),
    Route("/lti/jwks.json", jwks, methods=["GET"], include_in_schema=False),
    Route("/lti/config.json", config_json, methods=["GET"], include_in_schema=False),
    Route("/admin/lti/sync-roster", sync_roster, methods=["POST"], include_in_schema=False),
]
