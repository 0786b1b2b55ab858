"""A real JupyterHub (DummyAuthenticator, no spawner use, a no-op proxy) and `grader serve` as its external service.

The hub answers on its own port (``hub_bind_url``): login, OAuth authorize and the REST API are all the hub's
own handlers, so no configurable-http-proxy is needed. Groups: ``nbgrader-c1`` (alice, a student),
``formgrade-c1`` (tom, a TA); ``olga`` is in neither.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import httpx
import pytest

from grader import course

from ..conftest import Server, free_port, wait_ready

HERE = Path(__file__).resolve().parent
COURSE = "c1"
PASSWORD = "hub-test-password"


@dataclass
class Hub:
    url: str  # http://127.0.0.1:<port>/hub/
    admin_token: str
    process: subprocess.Popen[bytes]

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url + "api/", headers={"Authorization": f"token {self.admin_token}"}, timeout=30
        )

    def user_token(self, user: str) -> str:
        """A hub API token for ``user``, minted with the REST API (as a single-user server's would be)."""
        with self.api() as client:
            response = client.post(f"users/{user}/tokens", json={"note": "grader exchange test"})
        assert response.status_code == 201, response.text
        return str(response.json()["token"])


@pytest.fixture(scope="package")
def hub_and_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hub, Server]]:
    base = tmp_path_factory.mktemp("hub")
    hub_port, service_port = free_port(), free_port()
    service_url = f"http://127.0.0.1:{service_port}"
    service_token, admin_token = secrets.token_hex(16), secrets.token_hex(16)
    (base / "jupyterhub_config.py").write_text(
        textwrap.dedent(
            f"""
            c = get_config()
            c.JupyterHub.authenticator_class = "dummy"
            c.DummyAuthenticator.password = {PASSWORD!r}
            c.Authenticator.allow_all = True
            c.JupyterHub.proxy_class = "noproxy.NoProxy"
            c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
            c.JupyterHub.bind_url = "http://127.0.0.1:{free_port()}"
            c.JupyterHub.cleanup_servers = False
            c.JupyterHub.load_groups = {{
                "nbgrader-{COURSE}": {{"users": ["alice"]}},
                "formgrade-{COURSE}": {{"users": ["tom"]}},
            }}
            c.JupyterHub.services = [
                {{
                    "name": "grader",
                    "api_token": {service_token!r},
                    "oauth_client_id": "service-grader",
                    "oauth_redirect_uri": "{service_url}/oauth_callback",
                    "oauth_no_confirm": True,
                    "oauth_client_allowed_scopes": ["read:users:groups!user"],
                }},
                {{"name": "tester", "api_token": {admin_token!r}}},
            ]
            c.JupyterHub.load_roles = [
                {{"name": "grader-service", "scopes": ["read:users", "read:groups"], "services": ["grader"]}},
                {{"name": "admin", "services": ["tester"]}},
                {{"name": "user", "scopes": ["self", "access:services!service=grader"]}},
            ]
            """
        )
    )
    log = base / "hub.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    hub_bin = str(Path(sys.executable).parent / "jupyterhub")
    process = subprocess.Popen(
        [hub_bin, "-f", "jupyterhub_config.py", "--no-ssl"],
        cwd=base,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    hub = Hub(f"http://127.0.0.1:{hub_port}/hub/", admin_token, process)

    def hub_ready() -> bool:
        try:
            return httpx.get(hub.url + "api/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_ready(process, hub_ready, log, "jupyterhub")
        with hub.api() as client:  # the users must exist (DummyAuthenticator creates them on first login)
            for name in ("alice", "tom", "olga"):
                client.post(f"users/{name}")
        root = course.copy_course(base / "course")
        course.generate_releases(root)
        srv = Server(root, service_url)
        hub_env = {
            "JUPYTERHUB_API_TOKEN": service_token,
            "JUPYTERHUB_CLIENT_ID": "service-grader",
            "JUPYTERHUB_API_URL": hub.url + "api",
            "JUPYTERHUB_HOST": f"http://127.0.0.1:{hub_port}",
            "JUPYTERHUB_OAUTH_CALLBACK_URL": f"{service_url}/oauth_callback",
            "JUPYTERHUB_SERVICE_NAME": "grader",
            "GRADER_HUB_COURSE": COURSE,
        }
        with mock.patch.dict(os.environ, hub_env):
            srv.start()
        try:
            yield hub, srv
        finally:
            srv.kill(signal.SIGTERM)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
