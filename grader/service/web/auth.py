"""Who is asking: bearer tokens (stored hashed) and roles."""

from __future__ import annotations

from starlette.requests import Request

from ...errors import AuthError, Forbidden
from ..records.models import User
from ..records.store import Store


def user(request: Request) -> User:
    """The caller, from ``Authorization: Bearer <token>``; 401 otherwise."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("missing token: send 'Authorization: Bearer <token>' (get one from your TA)")
    store: Store = request.app.state.store
    found = store.user_for_token(token.strip())
    if found is None:
        raise AuthError("invalid or revoked token")
    return found


def staff(request: Request) -> User:
    """The caller, who must be a TA or an admin; 403 otherwise."""
    found = user(request)
    if not found.is_staff:
        raise Forbidden("this needs a TA or admin token")
    return found
