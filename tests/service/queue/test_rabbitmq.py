"""The same service on RabbitMQ instead of Redis: the broker is a URL (``amqp://``), nothing else changes.

A virtual host of its own on the local RabbitMQ server (``rabbitmqctl``; ``.ci/run`` starts the
server when it is down), deleted afterwards.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from ..conftest import fixture_bytes, submit
from .cluster import Cluster, slow, start_cluster

A = "ps1_tensors"


def rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def amqp_url() -> Iterator[str]:
    if not shutil.which("rabbitmqctl"):
        raise RuntimeError("rabbitmqctl not found: apt-get install rabbitmq-server (.ci/run starts it)")
    vhost = f"grader-test-{secrets.token_hex(4)}"
    rabbitmqctl("add_vhost", vhost)
    rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
    try:
        yield f"amqp://guest:guest@127.0.0.1:5672/{vhost}"
    finally:
        rabbitmqctl("delete_vhost", vhost)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, amqp_url: str) -> Iterator[Cluster]:
    yield from start_cluster(tmp_path_factory.mktemp("rabbit"), hosts=2, broker_url=amqp_url)


def test_rabbitmq_broker_grades_and_survives_a_killed_worker(cluster: Cluster) -> None:
    server = cluster.server
    token = server.token("rb-ann")
    with server.client(token) as client:
        right = submit(client, A, fixture_bytes(A, "correct")).json()["id"]
        wrong = submit(client, A, fixture_bytes(A, "hard-coded")).json()["id"]
        slow_id = submit(client, A, slow(5)).json()["id"]
    # the slow job is caught running first: a free worker may take it at once and finish it while the
    # other two are still being graded (one worker can be slow to start on a loaded machine)
    holder = cluster.holder(cluster.wait_running(slow_id))
    time.sleep(1.0)
    holder.kill()
    first, second = server.wait_graded(token, right), server.wait_graded(token, wrong)
    assert first["score"] == first["max_score"] and second["score"] < second["max_score"]
    result = server.wait_graded(token, slow_id, timeout=120)
    assert result["status"] == "graded" and result["score"] == result["max_score"]
    job = cluster.job(slow_id)
    assert job.attempts == 2 and job.worker != holder.worker_name
    with server.client(token) as client:
        assert client.get("/api/health").json()["queue"] == {"graded": 3}
