"""Who is looking at a page: a signed-in session (a cookie holding the user's token) and its roles.

The API takes ``Authorization: Bearer <token>``; a browser signs in once with the same token
(``/login``) and keeps it in an HttpOnly, SameSite=Strict cookie. Forms that change anything
carry a CSRF field derived from the token, checked on every POST.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from urllib.parse import quote

from starlette.requests import Request

from ...errors import AuthError, Forbidden, StudentError
from ..records.models import User
from ..records.store import Store

COOKIE = "grader_session"
MAX_AGE_S = 14 * 24 * 3600


class SignInNeeded(AuthError):
    """No valid session: the page redirects to the sign-in form."""

    def __init__(self, next_url: str) -> None:
        super().__init__("sign in first")
        self.next_url = next_url


def issue(store: Store, user_id: str, role: str, label: str) -> str:
    """A token for a browser session begun elsewhere (``label``: "hub", "lti"): it expires with the cookie."""
    expires = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(seconds=MAX_AGE_S)
    return store.issue_token(user_id, role, label, expires)


def token(request: Request) -> str:
    return request.cookies.get(COOKIE, "").strip()


def user(request: Request) -> User:
    """The signed-in user; ``SignInNeeded`` (a redirect to /login) otherwise."""
    found = None
    value = token(request)
    if value:
        store: Store = request.app.state.store
        found = store.user_for_token(value)
    if found is None:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInNeeded(path)
    return found


def staff(request: Request) -> User:
    """The signed-in user, who must be a TA or an admin; a 403 page otherwise."""
    found = user(request)
    if not found.is_staff:
        raise Forbidden("this page is for course staff (TAs and admins); your own work is under My submissions")
    return found


def csrf_value(session_token: str) -> str:
    return hmac.new(session_token.encode(), b"grader-csrf", hashlib.sha256).hexdigest()


def check_csrf(request: Request, submitted: object) -> None:
    expected = csrf_value(token(request))
    if not isinstance(submitted, str) or not hmac.compare_digest(submitted, expected):
        raise StudentError("the form is out of date or did not come from this site: reload the page and try again")


def login_url(next_url: str) -> str:
    return "/login?next=" + quote(next_url, safe="/")


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path on this site only (never another host)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value
