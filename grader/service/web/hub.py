"""JupyterHub as the identity: ``grader serve`` running as a hub service.

Under a hub (``JUPYTERHUB_API_TOKEN`` and ``JUPYTERHUB_SERVICE_PREFIX`` / ``JUPYTERHUB_CLIENT_ID`` in the
environment, as the hub sets them for a managed service) the service trusts the hub for who is asking:

* the exchange inside a student's single-user server sends its ``$JUPYTERHUB_API_TOKEN``
  (``Authorization: token …`` or ``Bearer …``); the service resolves it with the hub's ``/hub/api/user``
  through JupyterHub's own ``HubOAuth.user_for_token``;
* a browser signs in with the hub's OAuth (``/hub-login`` → hub authorize → ``/oauth_callback``), driven by
  ``HubOAuth`` (state, PKCE, ``token_for_code``), then gets the service's normal cookie session;
* the course role comes from hub groups, nbgrader's convention: ``formgrade-<course>`` → ta,
  ``nbgrader-<course>`` → student. Anyone else gets a 403 naming the group they need.

Without a hub nothing changes: ``hub_identity`` is ``None`` and tokens are the only way in.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...errors import Forbidden, StudentError
from ..records.models import User
from ..records.store import Store

STATE_COOKIE = "grader_hub_state"


class NotInCourse(Forbidden):
    """A hub user in neither of the course's groups."""


def under_hub(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("JUPYTERHUB_API_TOKEN")) and bool(
        env.get("JUPYTERHUB_SERVICE_PREFIX") or env.get("JUPYTERHUB_CLIENT_ID")
    )


def course_from(course_root: Path) -> str:
    """``c.CourseDirectory.course_id`` from the course's ``nbgrader_config.py`` (empty if none)."""
    path = course_root / "nbgrader_config.py"
    if not path.is_file():
        return ""
    from ... import course

    loaded = course.read_config(course_root)
    value = loaded.get("CourseDirectory", {}).get("course_id", "")
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Groups:
    course: str

    @property
    def staff(self) -> str:
        return f"formgrade-{self.course}"

    @property
    def students(self) -> str:
        return f"nbgrader-{self.course}"

    def role(self, model: dict[str, Any]) -> str:
        """The course role of a hub user model; ``NotInCourse`` if the user is in neither group."""
        groups = set(model.get("groups") or ())
        if self.staff in groups:
            return "ta"
        if self.students in groups:
            return "student"
        name = model.get("name", "?")
        raise NotInCourse(
            f"hub user {name!r} is not in course {self.course!r}: students need the hub group "
            f"{self.students!r}, staff (TAs) the group {self.staff!r}; ask the hub admin to add you"
        )


class HubIdentity:
    """The hub's answer to "who is this", through ``jupyterhub.services.auth.HubOAuth``."""

    def __init__(self, course: str, **hub_settings: Any) -> None:
        from jupyterhub.services.auth import HubOAuth

        if not course:
            raise ValueError(
                "running under JupyterHub needs the course id: set c.CourseDirectory.course_id in the course's "
                "nbgrader_config.py, GraderService.hub_course, or GRADER_HUB_COURSE"
            )
        self.groups = Groups(course)
        self.auth = HubOAuth(**hub_settings)

    def model_for_token(self, token: str) -> dict[str, Any] | None:
        model: dict[str, Any] | None = self.auth.user_for_token(token, sync=True)
        return model

    def user_for_model(self, store: Store, model: dict[str, Any]) -> User:
        role = self.groups.role(model)
        name = str(model["name"])
        store.ensure_user(name, role)
        return User(name, role)

    def user_for_token(self, store: Store, token: str) -> User | None:
        """The course user behind a hub API token; ``None`` if the hub does not know it."""
        model = self.model_for_token(token)
        return None if model is None else self.user_for_model(store, model)


def for_app(course_root: Path, course: str = "") -> HubIdentity | None:
    """The hub identity when ``grader serve`` runs under a hub, else ``None`` (tokens only)."""
    if not under_hub():
        return None
    return HubIdentity(course or os.environ.get("GRADER_HUB_COURSE", "") or course_from(course_root))


def of(request: Request) -> HubIdentity | None:
    found: HubIdentity | None = getattr(request.app.state, "hub", None)
    return found


def login_url(next_url: str) -> str:
    return "/hub-login?next=" + quote(next_url, safe="/")


async def hub_login(request: Request) -> Response:
    """Start the hub's OAuth: remember where to go, then send the browser to the hub's authorize URL."""
    from . import sessions

    hub = of(request)
    if hub is None:
        raise StudentError("this service is not running under JupyterHub: sign in with your token at /login")
    next_url = sessions.safe_next(request.query_params.get("next"))
    verifier, challenge, method = hub.auth.generate_pkce_code_challenge()
    state = hub.auth.generate_state(next_url, code_verifier=verifier)
    query = urlencode(
        {
            "client_id": hub.auth.oauth_client_id,
            "redirect_uri": hub.auth.oauth_redirect_uri,
            "response_type": "code",
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": method,
        }
    )
    response = RedirectResponse(f"{hub.auth.oauth_authorization_url}?{query}", status_code=302)
    response.set_cookie(STATE_COOKIE, state, max_age=hub.auth.oauth_state_max_age, httponly=True, samesite="lax")
    return response


async def oauth_callback(request: Request) -> Response:
    """The hub sends the browser back with a code: trade it for a token, find the course role, open a session."""
    from . import sessions

    hub = of(request)
    if hub is None:
        raise StudentError("this service is not running under JupyterHub")
    state = request.query_params.get("state", "")
    code = request.query_params.get("code", "")
    if not state or not code or request.cookies.get(STATE_COOKIE) != state:
        raise StudentError("the hub sign-in is out of date or did not start here: sign in again")
    next_url = sessions.safe_next(hub.auth.get_next_url(state))
    verifier = hub.auth.get_code_verifier(state)
    hub.auth.clear_oauth_state(state)
    access = await hub.auth.token_for_code(code, code_verifier=verifier, sync=False)
    model = await hub.auth.user_for_token(access, use_cache=False, sync=False)
    if model is None:
        raise StudentError("the hub did not confirm who you are: sign in again")
    store: Store = request.app.state.store
    user = hub.user_for_model(store, model)
    session = sessions.issue(store, user.id, user.role, "hub")
    if next_url == "/":
        next_url = "/admin" if user.is_staff else "/me"
    response = RedirectResponse(next_url, status_code=303)
    response.delete_cookie(STATE_COOKIE)
    response.set_cookie(sessions.COOKIE, session, max_age=sessions.MAX_AGE_S, httponly=True, samesite="lax")
    return response


routes = [
    Route("/hub-login", hub_login, methods=["GET"], include_in_schema=False),
    Route("/oauth_callback", oauth_callback, methods=["GET"], include_in_schema=False),
]
