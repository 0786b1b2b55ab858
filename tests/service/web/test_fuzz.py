"""Schemathesis fuzzes the served OpenAPI schema against the real server: never a 500.

Cases come from schemathesis's Hypothesis strategies for every operation of
``/openapi.json``, sent to the running ``grader serve`` with a student's
token and with none (schemathesis's own pytest plugin does not load under
this pytest, so the loop is written out).
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from ..conftest import Server


def operations(server: Server) -> list:  # type: ignore[type-arg]
    schema = schemathesis.openapi.from_dict(httpx.get(f"{server.url}/openapi.json").json())
    return [result.ok() for result in schema.get_all_operations()]


def test_schema_covers_the_api(server: Server) -> None:
    labels = {op.label for op in operations(server)}
    assert {
        "POST /api/submissions",
        "GET /api/submissions",
        "GET /api/submissions/{submission_id}",
        "GET /api/admin/grades",
        "POST /api/admin/regrade",
        "GET /api/assignments/{assignment}/release",
    } <= labels


@pytest.mark.parametrize("authenticated", [True, False], ids=["student-token", "no-token"])
def test_no_server_error_for_any_request_the_schema_allows(server: Server, authenticated: bool) -> None:
    headers = {"Authorization": f"Bearer {server.token('fuzzer')}"} if authenticated else {}
    for operation in operations(server):

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case) -> None:  # type: ignore[no-untyped-def]
            case.call_and_validate(base_url=server.url, headers=headers, checks=[not_a_server_error])

        fuzz()
