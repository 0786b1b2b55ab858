"""Hub API tokens against a real JupyterHub: the exchange's $JUPYTERHUB_API_TOKEN is the student's identity."""

from __future__ import annotations

import httpx

from ..conftest import Server
from .conftest import Hub


def test_a_students_hub_token_lists_assignments(hub_and_service: tuple[Hub, Server]) -> None:
    hub, srv = hub_and_service
    token = hub.user_token("alice")
    for scheme in ("token", "Bearer"):
        response = httpx.get(f"{srv.url}/api/assignments", headers={"Authorization": f"{scheme} {token}"})
        assert response.status_code == 200, response.text
        assert {item["assignment"] for item in response.json()} >= {"ps2_autograd"}
    assert srv.store.submissions(student="alice") == []


def test_a_tas_hub_token_is_staff_and_an_outsiders_is_refused(hub_and_service: tuple[Hub, Server]) -> None:
    hub, srv = hub_and_service
    ta = hub.user_token("tom")
    response = httpx.get(f"{srv.url}/api/admin/grades", headers={"Authorization": f"token {ta}"})
    assert response.status_code == 200, response.text
    outsider = hub.user_token("olga")
    response = httpx.get(f"{srv.url}/api/assignments", headers={"Authorization": f"token {outsider}"})
    assert response.status_code == 403
    assert "nbgrader-c1" in response.text and "formgrade-c1" in response.text


def test_an_unknown_token_is_still_401(hub_and_service: tuple[Hub, Server]) -> None:
    _, srv = hub_and_service
    response = httpx.get(f"{srv.url}/api/assignments", headers={"Authorization": "token not-a-token"})
    assert response.status_code == 401
