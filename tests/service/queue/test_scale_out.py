"""Scale-out guarantees, each against real servers (``cluster``): PostgreSQL, Redis, ``grader serve
--broker-url`` and two ``grader worker`` processes on course copies of their own, in process groups of
their own, as two hosts (no network namespaces: the servers must be reachable on 127.0.0.1).

- a worker killed with SIGKILL mid-grade: another worker grades the job, recorded once;
- the broker restarted (losing every message) while jobs are queued: none lost;
- the database unavailable for a while: the API answers 503 with Retry-After, nothing accepted is
  lost, the worker waits and records the grade when the database is back;
- a submission that kills every worker that runs it: failed after ``max_attempts`` with a clear
  message, while the queue keeps moving;
- the same job delivered several times: one result.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from grader.service import config
from grader.service.queue import broker, leases
from grader.service.records import schema

from ..conftest import fixture_bytes, submit
from .cluster import BIN, Cluster, slow, start_cluster

A = "ps1_tensors"

NO_DATABASE = "the database did not answer"
WAIT_LINE = "the grader is unavailable for a moment (503: its database); trying again in 5 s"


def worker_logs(cluster: Cluster) -> str:
    return "".join(w.log.read_text(errors="replace") for w in cluster.workers)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # host2 may use one CPU only: its default concurrency follows (the CPU share it has); with root, each
    # worker has a network of its own and reaches PostgreSQL and Redis only through their Unix sockets
    own_network = os.geteuid() == 0
    yield from start_cluster(tmp_path_factory.mktemp("cluster"), hosts=2, taskset={2: "0"}, own_network=own_network)


def upload(cluster: Cluster, student: str, data: bytes) -> tuple[str, int]:
    token = cluster.server.token(student)
    with cluster.server.client(token) as client:
        response = submit(client, A, data)
    assert response.status_code == 202, response.text
    return token, int(response.json()["id"])


def nbgrader_score(cluster: Cluster, student: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(cluster.postgres.url()) as gradebook:
        return float(gradebook.find_submission(A, student).score)


def test_workers_on_two_hosts_grade_into_postgresql(cluster: Cluster) -> None:
    graded = []
    for n, fixture in enumerate(["correct", "hard-coded", "correct", "hard-coded"]):
        token, sid = upload(cluster, f"so-{n}", fixture_bytes(A, fixture))
        graded.append((n, sid, cluster.server.wait_graded(token, sid)))
    assert [g["score"] == g["max_score"] for _, _, g in graded] == [True, False, True, False]
    for n, sid, g in graded:
        assert nbgrader_score(cluster, f"so-{n}") == g["score"]  # nbgrader's gradebook holds the same grade
        assert cluster.job(sid).worker in {w.worker_name for w in cluster.workers}
    # the notebooks travelled in the database, not through the service's folder
    assert not (cluster.server.root / "service-data" / "submissions").exists()
    engine = cluster.engine()
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM grader_files")).scalar() == 2  # two distinct notebooks
    engine.dispose()
    # each host graded in its own working copy
    hosts = {w.root for w in cluster.workers if list((w.root / "autograded").glob(f"*/{A}/*.ipynb"))}
    assert hosts, "no worker wrote an autograded notebook"
    # host2 runs on one CPU: one kernel at a time; torch and BLAS one thread each
    assert "1 kernel(s) at a time on 1 CPU(s)" in cluster.workers[1].log.read_text()
    if os.geteuid() == 0:  # each worker in a network namespace of its own, as on another host
        namespaces = {os.readlink(f"/proc/{w.process.pid}/ns/net") for w in cluster.workers if w.process}
        assert len(namespaces) == 2 and os.readlink("/proc/self/ns/net") not in namespaces


def test_worker_killed_mid_grade_is_taken_over_and_recorded_once(cluster: Cluster) -> None:
    token, sid = upload(cluster, "so-killed", slow(5))
    holder = cluster.holder(cluster.wait_running(sid))
    time.sleep(1.0)  # well inside the 5 s cell
    cluster.supervisor.watching.clear()
    holder.kill()
    result = cluster.server.wait_graded(token, sid, timeout=120)
    assert result["status"] == "graded" and result["score"] == result["max_score"]
    job = cluster.job(sid)
    assert job.attempts == 2 and job.worker != holder.worker_name  # another worker took it over
    engine = cluster.engine()
    with engine.connect() as conn:
        jobs = conn.execute(sa.text("SELECT count(*) FROM grader_jobs WHERE submission_id = :s"), {"s": sid}).scalar()
        rows = conn.execute(
            sa.text(
                "SELECT count(*) FROM submitted_assignment sa JOIN assignment a ON sa.assignment_id = a.id "
                "WHERE sa.student_id = 'so-killed' AND a.name = :a"
            ),
            {"a": A},
        ).scalar()
    engine.dispose()
    assert jobs == 1 and rows == 1
    assert nbgrader_score(cluster, "so-killed") == result["score"]
    holder.start()  # the host comes back


def test_duplicate_delivery_records_one_result(cluster: Cluster) -> None:
    token, sid = upload(cluster, "so-dup", slow(2))
    job_id = cluster.job(sid).id
    celery = broker.app(config.load(cluster.server.root, db_url=cluster.postgres.url(), broker_url=cluster.redis.url))
    for _ in range(3):  # while it is queued or being graded
        broker.publish(celery, job_id)
    result = cluster.server.wait_graded(token, sid)
    graded_at = cluster.job(sid).finished_at
    for _ in range(3):  # and after it was graded
        broker.publish(celery, job_id)
    deadline = time.monotonic() + 30
    while cluster.redis.queued() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    job = cluster.job(sid)
    assert job.attempts == 1 and job.status == "graded" and job.finished_at == graded_at
    assert cluster.server.wait_graded(token, sid) == result
    assert nbgrader_score(cluster, "so-dup") == result["score"]
    logs = worker_logs(cluster)
    assert logs.count(f"job {job_id}: graded, failed or held by another worker already") >= 5


def test_broker_restart_loses_no_queued_job(cluster: Cluster) -> None:
    for worker in cluster.workers:
        worker.stop()
    submitted = [upload(cluster, f"so-broker-{n}", fixture_bytes(A, "correct")) for n in range(3)]
    deadline = time.monotonic() + 10
    while cluster.redis.queued() < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.redis.queued() >= 3  # published, waiting in the broker
    cluster.redis.stop()
    cluster.redis.start()  # without persistence: every message is gone
    assert cluster.redis.queued() == 0
    for worker in cluster.workers:
        worker.start()
    for token, sid in submitted:
        result = cluster.server.wait_graded(token, sid, timeout=120)
        assert result["status"] == "graded" and result["score"] == result["max_score"]
        assert cluster.job(sid).attempts == 1


def test_database_outage_answers_503_and_loses_nothing(cluster: Cluster) -> None:
    token, sid = upload(cluster, "so-outage", slow(4))
    cluster.wait_running(sid)
    unrecorded = worker_logs(cluster).count(NO_DATABASE)
    cluster.postgres.stop()
    try:
        with cluster.server.client(token) as client:
            refused = submit(client, A, fixture_bytes(A, "correct"))
            status = client.get(f"/api/submissions/{sid}")
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
        assert "the gradebook database is not answering; nothing was lost" in refused.json()["error"]
        assert status.status_code == 503
        page = httpx.get(f"{cluster.server.url}/login", timeout=10)
        assert page.status_code == 200  # a page that needs no database still answers
        # a student submitting with `grader submit` now waits as the 503 says, and gets through later
        notebook = cluster.server.root / "ps1_tensors.ipynb"
        notebook.write_bytes(fixture_bytes(A, "correct"))
        patient = subprocess.Popen(
            [str(BIN / "grader"), "submit", str(notebook)],
            env={**os.environ, "GRADER_URL": cluster.server.url, "GRADER_TOKEN": token},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(patient.stdout or []), daemon=True)
        reader.start()
        # the database stays down until the student has been told to wait and the grading has finished
        # and could not be recorded, however slowly this machine starts `grader submit` or grades
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (
            any(WAIT_LINE in line for line in lines) and worker_logs(cluster).count(NO_DATABASE) > unrecorded
        ):
            time.sleep(0.5)
    finally:
        cluster.postgres.start()
    patient.wait(timeout=240)
    reader.join(timeout=10)
    out = "".join(lines)
    assert patient.returncode == 0, out
    assert WAIT_LINE in out
    assert "graded" in out
    result = cluster.server.wait_graded(token, sid, timeout=120)
    assert result["status"] == "graded" and result["score"] == result["max_score"]
    assert nbgrader_score(cluster, "so-outage") == result["score"]
    assert worker_logs(cluster).count(NO_DATABASE) > unrecorded
    # and the service takes submissions again
    token2, sid2 = upload(cluster, "so-after-outage", fixture_bytes(A, "correct"))
    assert cluster.server.wait_graded(token2, sid2)["status"] == "graded"


def test_poison_submission_fails_after_bounded_attempts_and_the_queue_moves(cluster: Cluster) -> None:
    """A submission whose grading kills the worker (as the OOM killer would, or a crash in the grader):
    here each worker that holds it is SIGKILLed as soon as it claims it."""
    token, poison = upload(cluster, "so-poison", slow(30))
    poison_job = cluster.job(poison).id
    killed: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def killer() -> None:
        while not stop.is_set():
            try:
                row = cluster.job(poison)
                if row is not None and row.status == "running" and row.worker and row.worker not in killed:
                    holder = cluster.holder(row.worker)
                    assert holder.alive(), f"{row.worker} holds the job but is not running"
                    holder.kill()
                    killed.append(row.worker)
            except BaseException as error:  # the test fails with it, instead of a killer that died quietly
                errors.append(error)
                return
            time.sleep(0.1)

    cluster.supervisor.watching.set()
    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        others = [upload(cluster, f"so-healthy-{n}", fixture_bytes(A, "correct")) for n in range(2)]
        result = cluster.server.wait_graded(token, poison, timeout=240)
        for other_token, other in others:
            assert cluster.server.wait_graded(other_token, other, timeout=120)["status"] == "graded"
    finally:
        stop.set()
        thread.join(5)
    assert errors == []
    assert result["status"] == "failed"
    assert result["reason"] == leases.POISON.format(n=3)
    assert len(killed) == 3
    engine = cluster.engine()
    with engine.connect() as conn:
        error = conn.execute(sa.text("SELECT error FROM grader_jobs WHERE id = :j"), {"j": poison_job}).scalar()
    engine.dispose()
    assert error == "killed every worker that ran it (3 attempts)"
    # and the queue page says what happened
    from grader.service.web.sessions import COOKIE

    with cluster.server.client(None) as client:
        client.cookies.set(COOKIE, cluster.server.token("so-ta", "ta"))
        page = client.get("/admin/queue")
    assert page.status_code == 200 and "killed every worker that ran it" in page.text
    assert f"broker redis://127.0.0.1:{cluster.redis.port}/0" in page.text


def test_worker_refuses_a_database_whose_schema_is_behind(cluster: Cluster) -> None:
    engine = cluster.engine()
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE grader_alembic_version SET version_num = '0001'"))
    try:
        worker = cluster.workers[0]
        run = subprocess.run(
            [str(BIN / "grader"), "worker", "--db-url", cluster.postgres.url(), "--broker-url", cluster.redis.url],
            cwd=worker.root,
            env={**os.environ, "GRADER_COURSE_ROOT": str(worker.root)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE grader_alembic_version SET version_num = :head"), {"head": schema.head()})
        engine.dispose()
    assert run.returncode == 2
    assert f"is at schema revision 0001, this grader needs {schema.head()}" in run.stderr


def test_late_policy_set_on_the_dashboard_reaches_every_worker(cluster: Cluster) -> None:
    """The settings page saves the policy in the database too; each worker writes it into its own course
    copy before its next job, so a late submission loses the same share whichever host grades it."""
    import datetime as dt
    import json

    from grader.plugins import late_policy
    from grader.service.rules import deadlines

    settings = config.load(cluster.server.root, db_url=cluster.postgres.url(), broker_url=cluster.server.broker_url)
    before = late_policy.current(cluster.server.root)
    deadlines.set_due_date(settings, A, leases.now() - dt.timedelta(hours=30))  # two started days late
    policy = {"percent_per_day": 25, "unit": "day", "grace_minutes": 0, "max_percent": 100}
    try:
        deadlines.set_late_policy(cluster.server.store, settings, policy)
        uploaded = [upload(cluster, f"so-late-{n}", fixture_bytes(A, "correct")) for n in range(4)]
        results = [cluster.server.wait_graded(token, sid) for token, sid in uploaded]
    finally:
        deadlines.set_due_date(settings, A, None)
        deadlines.set_late_policy(cluster.server.store, settings, dict(before))
    for result in results:
        assert result["late_penalty"] == pytest.approx(0.5 * result["score"])  # 2 days x 25%, not the default
    graded_by = {cluster.job(r["id"]).worker for r in results}
    for worker in cluster.workers:
        if worker.worker_name in graded_by:
            applied = json.loads((worker.root / late_policy.POLICY_FILE).read_text())
            assert applied == {k: (float(v) if k != "unit" else v) for k, v in policy.items()}
