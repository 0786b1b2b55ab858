"""The test LMS and a real ``grader serve`` with it registered (through ``grader lti add-platform``);
for the roster tests, a ``grader serve`` of their own and a fresh LMS per test (``lms``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.service.lti import platforms

from ..conftest import Server, running_server
from .platform import CONTEXT, LMS, running_platform

GRADER = str(Path(sys.executable).parent / "grader")


def grader(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GRADER, "--course", str(root), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def platform() -> Iterator[LMS]:
    with running_platform() as p:
        yield p


@pytest.fixture(scope="session")
def tool(tmp_path_factory: pytest.TempPathFactory, platform: LMS) -> Iterator[Server]:
    for srv in running_server(tmp_path_factory.mktemp("lti"), ""):
        added = grader(
            srv.root,
            "lti",
            "add-platform",
            "--issuer",
            platform.issuer,
            "--client-id",
            platform.client_id,
            "--auth-url",
            f"{platform.url}/auth",
            "--token-url",
            f"{platform.url}/token",
            "--jwks-url",
            f"{platform.url}/jwks",
            "--deployment-id",
            "other-deployment",
            "--deployment-id",
            platform.deployment_id,
        )
        assert added.returncode == 0, added.stderr
        platform.tool_jwks_url = f"{srv.url}/lti/jwks.json"
        yield srv


@pytest.fixture(scope="session")
def roster_tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service of its own for roster syncs (which drop whoever the LMS no longer lists)."""
    yield from running_server(tmp_path_factory.mktemp("lti-roster"), "")


@pytest.fixture
def lms(roster_tool: Server) -> Iterator[LMS]:
    """A fresh LMS (an issuer of its own) registered with ``roster_tool``, its course empty."""
    with running_platform() as p:
        registration = platforms.Platform(
            issuer=p.issuer,
            client_id=p.client_id,
            auth_url=f"{p.url}/auth",
            token_url=p.token_url,
            jwks_url=f"{p.url}/jwks",
            deployment_ids=(p.deployment_id,),
        )
        platforms.add_platform(roster_tool.store.engine, registration)
        p.tool_jwks_url = f"{roster_tool.url}/lti/jwks.json"
        p.members[CONTEXT] = []
        yield p
