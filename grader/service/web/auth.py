"""Who is asking: bearer tokens (stored hashed) and roles."""

from __future__ import annotations

from starlette.requests import Request

from ...errors import AuthError, Forbidden
from ..records.models import User
from ..records.store import Store
from . import hub


def user(request: Request) -> User:
    """The caller, from ``Authorization: Bearer <token>``; 401 otherwise."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    hub_identity = hub.of(request)
    schemes = ("bearer", "token") if hub_identity is not None else ("bearer",)
    if scheme.lower() not in schemes or not token.strip():
        raise AuthError("missing token: send 'Authorization: Bearer <token>' (get one from your TA)")
    store: Store = request.app.state.store
    found = store.user_for_token(token.strip())
    if found is None and hub_identity is not None:  # under JupyterHub: a hub API token ($JUPYTERHUB_API_TOKEN)
        found = hub_identity.user_for_token(store, token.strip())
    if found is None:
        raise AuthError(_refusal(store, token.strip()))
    return found


EXPIRED = "this token has expired: ask your TA for a new one"
INVALID = "invalid or revoked token"


def _refusal(store: Store, token: str) -> str:
    """Why ``token`` is refused: an expired token says so (its holder needs a new one), anything else does not."""
    return EXPIRED if store.token_state(token) == "expired" else INVALID


def staff(request: Request) -> User:
    """The caller, who must be a TA or an admin; 403 otherwise."""
    found = user(request)
    if not found.is_staff:
        raise Forbidden("this needs a TA or admin token")
    return found
