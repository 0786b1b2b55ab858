"""The tool's OAuth 2 client-credentials grant against the test LMS, which checks the signed assertion
with the tool's published JWKS for real; and ``services.call``: bearer token, 5xx, a 401 retried once."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from grader.errors import InfrastructureError, LmsError
from grader.service.lti import platforms, services

from ..conftest import Server
from .platform import CONTEXT, LMS, MEMBERSHIP, NRPS_SCOPE

AGS_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


@pytest.fixture
def registered(tool: Server, platform: LMS) -> Iterator[platforms.Platform]:
    """The platform as the tool registered it, with no token cached and an empty course on the LMS."""
    found = platforms.platform(tool.store.engine, platform.issuer)
    services.forget_token(found, [NRPS_SCOPE])
    services.forget_token(found, [NRPS_SCOPE, AGS_SCORE])
    platform.members.setdefault(CONTEXT, [])
    yield found
    platform.down, platform.refuse_next = False, 0


def test_a_token_is_granted_for_known_scopes_and_cached(
    tool: Server, platform: LMS, registered: platforms.Platform
) -> None:
    before = len(platform.grants)
    token = services.access_token(tool.store.engine, registered, [AGS_SCORE, NRPS_SCOPE, "https://unknown.example/x"])
    assert platform.tokens[token] == frozenset({NRPS_SCOPE, AGS_SCORE})
    # the same scopes in another order: the cached token, no new grant
    assert (
        services.access_token(tool.store.engine, registered, [NRPS_SCOPE, AGS_SCORE, "https://unknown.example/x"])
        == token
    )
    assert len(platform.grants) == before + 1


def test_the_assertion_is_signed_by_the_tools_key_for_the_token_url(
    tool: Server, registered: platforms.Platform
) -> None:
    key = platforms.tool_key(tool.store.engine)
    first = jwt.decode(services.assertion(tool.store.engine, registered), key, algorithms=["RS256"])
    second = jwt.decode(services.assertion(tool.store.engine, registered), key, algorithms=["RS256"])
    assert first.header["kid"] == key.kid and first.header["alg"] == "RS256"
    claims = first.claims
    assert claims["iss"] == claims["sub"] == registered.client_id
    assert claims["aud"] == registered.token_url
    assert claims["exp"] - claims["iat"] == 300
    assert claims["jti"] != second.claims["jti"]


def test_a_forged_assertion_is_refused_with_the_platforms_answer(
    tool: Server, platform: LMS, registered: platforms.Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = platforms.tool_key(tool.store.engine)
    forged = RSAKey.generate_key(2048, parameters={"kid": real.kid, "use": "sig", "alg": "RS256"})
    monkeypatch.setattr(services, "tool_key", lambda engine: forged)
    with pytest.raises(LmsError) as caught:
        services.access_token(tool.store.engine, registered, [NRPS_SCOPE])
    error = caught.value
    assert isinstance(error, InfrastructureError)
    assert error.status == 401
    assert json.loads(error.answer)["error"] == "invalid_client"
    assert str(error).startswith(
        f"the LMS refused this tool an access token: the LMS answered 401 at {platform.token_url}: "
    )
    assert "the client assertion does not verify" in str(error)


def test_unknown_scopes_only_is_a_400(tool: Server, registered: platforms.Platform) -> None:
    with pytest.raises(LmsError) as caught:
        services.access_token(tool.store.engine, registered, ["https://unknown.example/x"])
    assert caught.value.status == 400 and "invalid_scope" in caught.value.answer


def test_the_lms_down_is_an_lms_error(tool: Server, platform: LMS, registered: platforms.Platform) -> None:
    platform.down = True
    with pytest.raises(LmsError) as caught:
        services.access_token(tool.store.engine, registered, [NRPS_SCOPE])
    assert caught.value.status == 500 and caught.value.answer == "the LMS is down"
    assert str(caught.value) == (
        f"the LMS refused this tool an access token: the LMS answered 500 at {platform.token_url}: the LMS is down"
    )
    # a service that answers 500 (the token was granted before the LMS went down)
    platform.down = False
    services.access_token(tool.store.engine, registered, [NRPS_SCOPE])
    platform.down = True
    url = platform.memberships_url()
    with pytest.raises(LmsError) as caught:
        services.call(tool.store.engine, registered, "GET", url, [NRPS_SCOPE], accept=MEMBERSHIP)
    assert str(caught.value) == f"the LMS answered 500 at {url}: the LMS is down"


def test_an_lms_that_does_not_answer_is_an_lms_error(tool: Server, registered: platforms.Platform) -> None:
    from ..conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/nowhere"
    gone = platforms.Platform(**{**registered.__dict__, "token_url": url})
    with pytest.raises(LmsError) as caught:
        services.access_token(tool.store.engine, gone, [NRPS_SCOPE])
    assert caught.value.status is None
    assert str(caught.value).startswith(f"the LMS refused this tool an access token: the LMS at {url} did not answer")


def test_call_sends_the_bearer_token_and_the_accept_header(
    tool: Server, platform: LMS, registered: platforms.Platform
) -> None:
    answer = services.call(
        tool.store.engine, registered, "GET", platform.memberships_url(), [NRPS_SCOPE], accept=MEMBERSHIP
    )
    assert answer.status_code == 200 and answer.headers["content-type"].startswith(MEMBERSHIP)
    method, path, authorization = platform.requests[-1]
    assert (method, path) == ("GET", f"/nrps/{CONTEXT}/memberships")
    assert platform.tokens[authorization.removeprefix("Bearer ")] == frozenset({NRPS_SCOPE})
    # a 4xx is the caller's to judge: returned, not raised
    wrong = services.call(tool.store.engine, registered, "GET", platform.memberships_url(), [NRPS_SCOPE])
    assert wrong.status_code == 406


def test_a_401_gets_a_new_token_and_one_retry(tool: Server, platform: LMS, registered: platforms.Platform) -> None:
    engine, url = tool.store.engine, platform.memberships_url()
    old = services.access_token(engine, registered, [NRPS_SCOPE])
    platform.refuse_next = 1
    seen = len(platform.requests)
    answer = services.call(engine, registered, "GET", url, [NRPS_SCOPE], accept=MEMBERSHIP)
    assert answer.status_code == 200
    sent = [r for r in platform.requests[seen:] if r[1].startswith("/nrps/")]
    assert len(sent) == 2 and sent[0][2] == f"Bearer {old}" and sent[1][2] != sent[0][2]
    # still refused after the retry: the 401 is returned, with no third try
    platform.refuse_next = 5
    seen = len(platform.requests)
    again = services.call(engine, registered, "GET", url, [NRPS_SCOPE], accept=MEMBERSHIP)
    assert again.status_code == 401
    assert len([r for r in platform.requests[seen:] if r[1].startswith("/nrps/")]) == 2
