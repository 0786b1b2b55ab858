"""Limits and isolation: a student's runaway code gets a graded result and hurts nobody else."""

from __future__ import annotations

import signal
import time

from ..conftest import Server, grade, submit, with_solution

# ps2's cubic_slope is worth 3 points and tested by test_cubic_slope alone.
CUBIC = "ps2_autograd"
CORRECT_CUBIC_SLOPE = (
    "def cubic_slope(x0):\n"
    "    x = torch.tensor(float(x0), requires_grad=True)\n"
    "    (x**3 + LINEAR_COEF * x).backward()\n"
    "    return x.grad.item()\n"
)


def _tests(body: dict) -> dict:  # type: ignore[type-arg]
    return {t["name"]: t for t in body["tests"]}


def test_infinite_loop_in_a_cell_is_interrupted_and_the_rest_is_graded(server: Server) -> None:
    loop = "def cubic_slope(x0):\n    while True:\n        pass\n"
    body = grade(server, "svc-loop", CUBIC, with_solution(CUBIC, "cubic_slope", loop))
    assert body["status"] == "graded"
    tests = _tests(body)
    assert tests["test_cubic_slope"]["points"] == 0
    assert (
        "CellTimeoutError" in tests["test_cubic_slope"]["message"]
        or "Interrupt" in tests["test_cubic_slope"]["message"]
    )
    others = [t for name, t in tests.items() if name != "test_cubic_slope"]
    assert all(t["passed"] for t in others), [(t["name"], t["message"][:500]) for t in others if not t["passed"]]


def test_memory_blow_up_is_a_memory_error_for_that_student_only(server: Server) -> None:
    code = "def cubic_slope(x0):\n    hog = bytearray(64 * 1024**3)\n    return float(len(hog))\n"
    body = grade(server, "svc-memory", CUBIC, with_solution(CUBIC, "cubic_slope", code))
    tests = _tests(body)
    assert body["status"] == "graded"
    assert tests["test_cubic_slope"]["points"] == 0 and "MemoryError" in tests["test_cubic_slope"]["message"]
    assert sum(t["passed"] for t in tests.values()) == len(tests) - 1


def test_kernel_that_exits_gets_a_graded_result_with_a_clear_message(server: Server) -> None:
    code = "import os\n\ndef cubic_slope(x0):\n    os._exit(3)\n"
    body = grade(server, "svc-exit", CUBIC, with_solution(CUBIC, "cubic_slope", code))
    assert body["status"] == "graded"
    assert body["score"] < body["max_score"]
    assert body["reason"] or any(
        "died" in t["message"].lower() or "dead" in t["message"].lower() for t in body["tests"]
    )


def test_student_code_runs_in_a_private_directory_with_a_clean_environment(server: Server) -> None:
    """The kernel's cwd holds nothing; the course, the gradebook and the grader's secrets are out of reach."""
    probe = (
        "import os\n"
        "def cubic_slope(x0):\n"
        "    seen = {'cwd': os.getcwd(), 'files': os.listdir('.'), 'env': sorted(os.environ),\n"
        "            'up': [p for p in ('../gradebook.db', '../../gradebook.db', '../../../gradebook.db',\n"
        "                               '../source', '../../source', '../../../source') if os.path.exists(p)]}\n"
        "    raise AssertionError(repr(seen))\n"
    )
    body = grade(server, "svc-probe", CUBIC, with_solution(CUBIC, "cubic_slope", probe))
    message = _tests(body)["test_cubic_slope"]["message"]
    seen = eval(message.split("AssertionError: ", 1)[1])
    assert not seen["cwd"].startswith(str(server.root))
    assert seen["files"] == [] and seen["up"] == []
    for secret in ("GRADER_DB_URL", "GRADER_COURSE_ROOT", "GRADER_TOKEN"):
        assert secret not in seen["env"]


def test_kill_9_while_jobs_are_queued_loses_nothing_and_grades_each_once(server: Server) -> None:
    token = server.token("svc-restart")
    ids = []
    # still running when killed, and well inside the 10 s cell limit (an interrupt under load is another test)
    slow = f"{CORRECT_CUBIC_SLOPE}import time\ntime.sleep(6)\n"
    with server.client(token) as client:
        for name in ("correct", "sum-instead-of-mean", "grad-not-zeroed"):
            response = submit(client, CUBIC, with_solution(CUBIC, "cubic_slope", slow, base=name))
            assert response.status_code == 202
            ids.append(response.json()["id"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill while one is running and the others are queued
        if any(s.status == "running" for s in server.store.submissions(student="svc-restart")):
            break
        time.sleep(0.2)
    time.sleep(2)  # well into the grading: the kernel is running the notebook
    server.kill(signal.SIGKILL)
    statuses = {s.id: s.status for s in server.store.submissions(student="svc-restart")}
    assert set(statuses) == set(ids) and "running" in statuses.values()
    assert set(statuses.values()) <= {"queued", "running"}
    server.start()
    results = [server.wait_graded(token, i, timeout=300) for i in ids]
    assert [r["status"] for r in results] == ["graded"] * 3
    assert results[0]["score"] == results[0]["max_score"] > results[1]["score"]
    import sqlalchemy as sa

    from grader.service.records.tables import jobs

    with server.store.engine.connect() as conn:
        finished = conn.execute(
            sa.select(jobs.c.submission_id, jobs.c.status).where(jobs.c.submission_id.in_(ids))
        ).all()
    assert sorted(finished) == sorted((i, "graded") for i in ids)  # one job each, graded once


def test_a_flood_of_output_is_capped_and_the_notebook_graded_normally(server: Server) -> None:
    flood = (
        "import sys\n"
        "for i in range(20_000):\n"  # 40,000 lines: 40 times the output limit, inside the 10 s cell limit under load
        "    print('spam', i)\n"
        "    print('more spam', i, file=sys.stderr)\n" + CORRECT_CUBIC_SLOPE
    )
    body = grade(server, "svc-flood", CUBIC, with_solution(CUBIC, "cubic_slope", flood))
    assert body["status"] == "graded"
    assert body["score"] == body["max_score"], [t for t in body["tests"] if not t["passed"]]
