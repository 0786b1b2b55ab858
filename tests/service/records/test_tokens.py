"""Token lifetimes: labels, expiry, listing without secrets, revoking one token, and what `grader serve` prints."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

from grader.errors import NotFound
from grader.service.records.store import Store, hash_token
from grader.service.records.tables import now
from grader.service.serve import first_tokens
from grader.service.web.sessions import COOKIE

from ..conftest import Server

SUBMIT = (
    ".venv/bin/grader submit tests/fixtures/submissions/ps2_autograd/grad-not-zeroed.ipynb --assignment ps2_autograd"
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'tokens.db'}", create=True)


def test_an_expired_token_is_refused_and_listed_as_expired(store: Store) -> None:
    old = store.issue_token("eve", "student", label="week 1", expires_at=now() - dt.timedelta(seconds=1))
    new = store.issue_token("eve", "student", label="week 2", expires_at=now() + dt.timedelta(days=30))
    assert store.user_for_token(old) is None and store.token_state(old) == "expired"
    user = store.user_for_token(new)
    assert user is not None and user.id == "eve" and store.token_state(new) == "active"
    assert store.token_state("never-issued") is None
    rows = {row.label: row for row in store.list_tokens()}
    assert (rows["week 1"].state, rows["week 2"].state) == ("expired", "active")
    assert rows["week 1"].id == hash_token(old)[:8] and rows["week 2"].user == "eve"
    assert store.active_tokens("eve") == 1


def test_revoking_one_token_by_its_identifier_leaves_the_others(store: Store) -> None:
    first = store.issue_token("finn", "ta")
    second = store.issue_token("finn", "ta")
    revoked = store.revoke_token_id(hash_token(first)[:8])
    assert (revoked.user, revoked.role, revoked.state) == ("finn", "ta", "revoked")
    assert store.user_for_token(first) is None and store.token_state(first) == "revoked"
    assert store.user_for_token(second) is not None
    with pytest.raises(NotFound, match="no token matches the identifier 'ffff"):
        store.revoke_token_id("ffff" if not hash_token(second).startswith("ffff") else "0000")
    with pytest.raises(NotFound, match="a token identifier is 4 to 64 hex digits"):
        store.revoke_token_id("zz")


def test_serve_issues_the_first_tokens_once_then_says_how_to_get_new_ones(store: Store) -> None:
    first = first_tokens(store, "http://127.0.0.1:8000", SUBMIT)
    assert "admin:        " in first and "demo-student: " in first
    admin = first.split("admin:        ")[1].split()[0]
    demo = first.split("demo-student: ")[1].split()[0]
    assert first.endswith(f"\n  GRADER_URL=http://127.0.0.1:8000 GRADER_TOKEN={demo} {SUBMIT}")
    user = store.user_for_token(admin)
    assert user is not None and (user.id, user.role) == ("admin", "admin")
    assert {row.label for row in store.list_tokens()} == {"serve"}
    again = first_tokens(store, "http://127.0.0.1:8000", SUBMIT)
    assert again == (
        "Tokens: issued on the first start (2 active; `grader tokens list` shows them).\n"
        "  A new admin token: grader tokens issue admin --role admin"
    )
    assert len(store.list_tokens()) == 2  # nothing new was minted
    store.revoke_tokens("admin")
    assert "admin:        " in first_tokens(store, "http://127.0.0.1:8000", SUBMIT)  # no admin token left: a new one


def test_the_service_printed_the_first_tokens_once(server: Server) -> None:
    assert server.log is not None
    log = server.log.read_text()
    assert log.count("admin:        ") == 1 and log.count("demo-student: ") == 1


def test_revoke_ends_the_browser_session_and_the_api_answers_401(server: Server) -> None:
    token = server.token("rita-ta", "ta")
    with httpx.Client(base_url=server.url, timeout=30, follow_redirects=False) as browser:
        browser.cookies.set(COOKIE, token)
        assert browser.get("/admin").status_code == 200
        with server.client(token) as api:
            assert api.get("/api/submissions/999999").status_code != 401
            server.store.revoke_token_id(hash_token(token)[:8])
            refused = api.get("/api/submissions/999999")
        assert refused.status_code == 401 and "invalid or revoked token" in refused.text
        page = browser.get("/admin")
        assert page.status_code in (302, 303) and page.headers["location"] == "/login?next=/admin"


def test_an_expired_token_gets_a_401_that_says_to_ask_the_ta(server: Server) -> None:
    token = server.store.issue_token("old-oscar", "student", expires_at=now() - dt.timedelta(minutes=1))
    with server.client(token) as api:
        refused = api.get("/api/submissions/999999")
    assert refused.status_code == 401
    assert "this token has expired: ask your TA for a new one" in refused.text
    with httpx.Client(base_url=server.url, timeout=30, follow_redirects=False) as browser:
        form = browser.get("/login")
        assert form.status_code == 200
        page = browser.post("/login", data={"token": token, "next": "/me"})
    assert page.status_code == 401
    assert "That token has expired. Ask your TA for a new one." in page.text
    assert COOKIE not in page.headers.get("set-cookie", "")
