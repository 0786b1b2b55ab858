"""LTI 1.3 launch against the test LMS: login initiation, a verified id_token, the user signed in with
the LMS's role; an expired, mis-addressed, re-played or forged launch is a 401 that creates nothing."""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from joserfc.jwk import RSAKey

from grader.service.lti import launch as lti_launch
from grader.service.records.tables import lti_contexts, lti_members, tokens, users

from ..conftest import Server
from .conftest import grader
from .platform import AGS_CLAIM, AGS_SCOPES, CLAIM, INSTRUCTOR, LEARNER, LMS, NRPS_CLAIM


def login(tool: Server, platform: LMS) -> dict[str, str]:
    """Start a launch as the LMS does; the tool's redirect to the LMS's auth URL, as its query."""
    params = {"iss": platform.issuer, "login_hint": "hint", "target_link_uri": f"{tool.url}/lti/launch"}
    answer = httpx.post(f"{tool.url}/lti/login", data=params, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{platform.url}/auth"
    return {k: v[0] for k, v in parse_qs(location.query).items()}


def post_launch(tool: Server, id_token: str, state: str) -> httpx.Response:
    return httpx.post(f"{tool.url}/lti/launch", data={"id_token": id_token, "state": state}, follow_redirects=False)


def text(answer: httpx.Response) -> str:
    return html.unescape(answer.text)


def counts(tool: Server) -> tuple[int, int]:
    with tool.store.engine.connect() as conn:
        n_users = conn.execute(sa.select(sa.func.count()).select_from(users)).scalar_one()
        n_tokens = conn.execute(sa.select(sa.func.count()).select_from(tokens)).scalar_one()
    return n_users, n_tokens


def test_login_initiation_redirects_with_state_and_nonce(tool: Server, platform: LMS) -> None:
    query = login(tool, platform)
    assert query["client_id"] == platform.client_id
    assert query["redirect_uri"] == f"{tool.url}/lti/launch"
    assert query["response_mode"] == "form_post" and query["scope"] == "openid"
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32 and query["state"] != query["nonce"]
    # GET works too (Moodle initiates with GET)
    get = httpx.get(f"{tool.url}/lti/login", params={"iss": platform.issuer, "login_hint": "h"})
    assert get.status_code == 302


def test_login_from_an_unregistered_platform_is_refused(tool: Server) -> None:
    answer = httpx.post(f"{tool.url}/lti/login", data={"iss": "https://evil.example", "login_hint": "x"})
    assert answer.status_code == 401
    assert "the platform 'https://evil.example' is not registered with this tool" in text(answer)


def test_a_valid_launch_signs_the_learner_in_as_a_student(tool: Server, platform: LMS) -> None:
    query = login(tool, platform)
    answer = post_launch(
        tool, platform.id_token(query["nonce"], sub="learner-42", **{CLAIM + "roles": [LEARNER]}), query["state"]
    )
    assert answer.status_code == 200, answer.text
    assert "Signed in from the LMS as learner-42 (student)" in text(answer)
    cookie = answer.cookies["grader_session"]
    assert tool.store.user_for_token(cookie) is not None
    user = tool.store.user_for_token(cookie)
    assert user is not None and user.id == "learner-42" and user.role == "student"
    with tool.store.engine.connect() as conn:
        labels = conn.execute(sa.select(tokens.c.label).where(tokens.c.user_id == "learner-42")).scalars().all()
    assert labels == ["lti"]
    home = httpx.get(f"{tool.url}/", cookies={"grader_session": cookie}, follow_redirects=True)
    assert home.status_code == 200 and home.url.path == "/me" and "learner-42" in home.text


def test_an_instructor_is_an_admin_and_a_ta_a_ta() -> None:
    assert lti_launch.role_for([INSTRUCTOR]) == "admin"
    assert lti_launch.role_for([LEARNER]) == "student"
    assert (
        lti_launch.role_for(["http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"]) == "ta"
    )
    assert (
        lti_launch.role_for([INSTRUCTOR, "http://purl.imsglobal.org/vocab/lis/v2/membership#TeachingAssistant"]) == "ta"
    )
    assert lti_launch.role_for([]) == "student"


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("expired", {"exp": 1_000_000_000, "iat": 999_999_000}, "the id_token is not valid"),
    ("wrong audience", {"aud": "someone-else"}, "the id_token's audience is not this tool's client id"),
    (
        "unknown deployment",
        {CLAIM + "deployment_id": "nope"},
        "the id_token's deployment id is not registered for this platform",
    ),
    ("other nonce", {"nonce": "not-the-login-nonce"}, "do not match a login"),
]


@pytest.mark.parametrize(("case", "overrides", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_launch_is_a_401_and_creates_nothing(
    tool: Server, platform: LMS, case: str, overrides: dict[str, Any], message: str
) -> None:
    query = login(tool, platform)
    before = counts(tool)
    claims = {"nonce": query["nonce"], "sub": f"bad-{case}", **overrides}
    answer = post_launch(tool, platform.id_token(**claims), query["state"])
    assert answer.status_code == 401
    assert message in text(answer)
    assert "grader_session" not in answer.cookies
    assert counts(tool) == before


def test_a_replayed_launch_is_a_401_and_creates_nothing(tool: Server, platform: LMS) -> None:
    query = login(tool, platform)
    id_token = platform.id_token(query["nonce"], sub="replayer")
    assert post_launch(tool, id_token, query["state"]).status_code == 200
    before = counts(tool)
    again = post_launch(tool, id_token, query["state"])
    assert again.status_code == 401
    assert "this launch was already used" in text(again)
    assert "grader_session" not in again.cookies
    assert counts(tool) == before


def test_a_token_signed_by_another_key_is_a_401(tool: Server, platform: LMS) -> None:
    query = login(tool, platform)
    real = platform.key
    platform.key = RSAKey.generate_key(2048, parameters={"kid": real.kid})
    try:
        forged = platform.id_token(query["nonce"], sub="forger")
    finally:
        platform.key = real
    before = counts(tool)
    answer = post_launch(tool, forged, query["state"])
    assert answer.status_code == 401
    assert "the id_token's signature does not verify with the platform's keys" in text(answer)
    assert counts(tool) == before
    # the state was not spent by the forgery: the real launch still goes through
    assert post_launch(tool, platform.id_token(query["nonce"], sub="forger"), query["state"]).status_code == 200


def test_the_tool_serves_its_jwks_and_registration_json(tool: Server) -> None:
    first = httpx.get(f"{tool.url}/lti/jwks.json").json()
    assert httpx.get(f"{tool.url}/lti/jwks.json").json() == first  # generated once, then the same key
    (key,) = first["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig" and "d" not in key
    config = httpx.get(f"{tool.url}/lti/config.json").json()
    assert config["initiate_login_uri"] == f"{tool.url}/lti/login"
    assert config["redirect_uris"] == [f"{tool.url}/lti/launch"]
    assert config["jwks_uri"] == f"{tool.url}/lti/jwks.json"


def test_grader_lti_platforms_lists_the_registration(tool: Server, platform: LMS) -> None:
    listed = grader(tool.root, "lti", "platforms")
    assert listed.returncode == 0, listed.stderr
    assert f"{platform.issuer}\tclient grader-tool\tdeployments other-deployment,deploy-1" in listed.stdout


def launch_as(tool: Server, platform: LMS, **claims: Any) -> httpx.Response:
    query = login(tool, platform)
    answer = post_launch(tool, platform.id_token(query["nonce"], **claims), query["state"])
    assert answer.status_code == 200, answer.text
    return answer


def test_a_launch_records_its_course_and_where_its_services_are(tool: Server, platform: LMS) -> None:
    launch_as(tool, platform, sub="context-recorder")
    with tool.store.engine.connect() as conn:
        row = conn.execute(sa.select(lti_contexts).where(lti_contexts.c.issuer == platform.issuer)).one()
    assert (row.context_id, row.title, row.deployment_id) == ("course-1", "PyTorch", platform.deployment_id)
    assert row.memberships_url == platform.memberships_url()
    assert row.lineitems_url == platform.lineitems_url()
    assert json.loads(row.lineitem_scopes) == list(AGS_SCOPES)
    # a later launch without the service claims keeps them (and the course is recorded once)
    launch_as(tool, platform, sub="context-recorder", **{NRPS_CLAIM: None, AGS_CLAIM: None})
    with tool.store.engine.connect() as conn:
        rows = conn.execute(sa.select(lti_contexts).where(lti_contexts.c.issuer == platform.issuer)).all()
    assert len(rows) == 1 and rows[0].memberships_url == platform.memberships_url()


def course_user(tool: Server, platform: LMS, sub: str) -> str:
    with tool.store.engine.connect() as conn:
        return str(
            conn.execute(
                sa.select(lti_members.c.user_id).where(
                    lti_members.c.issuer == platform.issuer, lti_members.c.lms_user_id == sub
                )
            ).scalar_one()
        )


def test_the_lms_user_maps_to_a_readable_course_id_fixed_at_first_sight(tool: Server, platform: LMS) -> None:
    lis = CLAIM + "lis"
    first = launch_as(
        tool, platform, sub="opaque-8f3a", email="Ada.L@uni.example", **{lis: {"person_sourcedid": "S 0042/ada"}}
    )
    assert "Signed in from the LMS as s-0042-ada (student)" in text(first)
    # the LMS changes the sourcedid: the course id stays
    launch_as(tool, platform, sub="opaque-8f3a", **{lis: {"person_sourcedid": "new-id"}})
    assert course_user(tool, platform, "opaque-8f3a") == "s-0042-ada"
    # another LMS user with the same sourcedid gets an id of their own
    launch_as(tool, platform, sub="opaque-other", **{lis: {"person_sourcedid": "S 0042/ada"}})
    assert course_user(tool, platform, "opaque-other") == "s-0042-ada-2"
    # no sourcedid: the email's local part
    launch_as(tool, platform, sub="opaque-9", email="Grace.Hopper@uni.example")
    assert course_user(tool, platform, "opaque-9") == "grace.hopper"


def test_the_lms_cannot_take_over_a_local_account(tool: Server, platform: LMS) -> None:
    tool.store.issue_token("local-admin", "admin")
    answer = launch_as(tool, platform, sub="local-admin", **{CLAIM + "roles": [LEARNER]})
    assert "Signed in from the LMS as local-admin-2 (student)" in text(answer)
    with tool.store.engine.connect() as conn:
        role = conn.execute(sa.select(users.c.role).where(users.c.id == "local-admin")).scalar_one()
    assert role == "admin"
