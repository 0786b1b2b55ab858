"""Who a submission belongs to, and which attempt counts: another student's name, a replay, a race."""

from __future__ import annotations

import threading

import pytest

from grader import course

from ..conftest import Server, fixture_bytes, submit, with_solution

A = "ps2_autograd"


def _gradebook_rows(server: Server, student: str) -> tuple[int, dict[str, float]]:
    """How many submissions nbgrader's gradebook holds for ``student``, and its score per test cell."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.gradebook_url(server.root)) as gradebook:
        try:
            rows = [s for s in gradebook.find_student(student).submissions if s.assignment.name == A]
        except MissingEntry:
            return 0, {}
        grades = [g for s in rows for n in s.notebooks for g in n.grades if g.cell.cell_type == "code"]
        return len(rows), {g.name: float(g.score) for g in grades}


def test_a_student_cannot_submit_for_another_student(server: Server) -> None:
    token = server.token("svc-impostor")
    server.token("svc-victim")
    with server.client(token) as client:
        response = client.post(
            "/api/submissions",
            params={"student": "svc-victim"},
            data={"assignment": A},
            files={"file": ("nb.ipynb", fixture_bytes(A, "correct"))},
        )
    assert response.status_code == 202, response.text
    server.wait_graded(token, response.json()["id"])
    assert [s.student for s in server.store.submissions(student="svc-impostor")] == ["svc-impostor"]
    assert server.store.submissions(student="svc-victim") == []
    assert _gradebook_rows(server, "svc-victim") == (0, {})
    with server.client(token) as client:
        assert client.get(f"/api/submissions/{response.json()['id']}").json()["student"] == "svc-impostor"


def test_a_replayed_submission_is_a_new_attempt_received_now(server: Server) -> None:
    token = server.token("svc-replay")
    data = with_solution(A, "predict", "def predict(w, x):\n    return x @ w\n")  # records a graph: one test fails
    with server.client(token) as client:
        first = submit(client, A, data).json()
        first_body = server.wait_graded(token, first["id"])
        replay = submit(client, A, data).json()
    replay_body = server.wait_graded(token, replay["id"])
    assert replay["id"] != first["id"]
    assert replay_body["received_at"] > first_body["received_at"]  # its own time: a late replay is late
    assert replay_body["score"] == first_body["score"]
    rows, _ = _gradebook_rows(server, "svc-replay")
    assert rows == 1 and len(server.store.submissions(student="svc-replay")) == 2


@pytest.mark.parametrize("round_", range(3))
def test_racing_submissions_are_all_recorded_and_the_latest_counts(server: Server, round_: int) -> None:
    student = f"svc-race-{round_}"
    token = server.token(student)
    wrong = with_solution(A, "mean_square_loss", "def mean_square_loss(x):\n    return (x**2).sum()\n")
    bodies: dict[str, dict] = {}  # type: ignore[type-arg]
    start = threading.Barrier(2)

    def send(name: str, data: bytes) -> None:
        with server.client(token) as client:
            start.wait()
            bodies[name] = submit(client, A, data).json()

    threads = [
        threading.Thread(target=send, args=("correct", fixture_bytes(A, "correct"))),
        threading.Thread(target=send, args=("wrong", wrong)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    graded = {name: server.wait_graded(token, body["id"]) for name, body in bodies.items()}
    assert graded["correct"]["score"] == graded["correct"]["max_score"]
    assert graded["wrong"]["score"] < graded["wrong"]["max_score"]
    latest = max(graded.values(), key=lambda b: (b["received_at"], b["id"]))
    rows, scores = _gradebook_rows(server, student)
    assert rows == 1, "one nbgrader submission per student and assignment"
    assert len(scores) == len(latest["tests"]), "no duplicated or lost grade rows"
    assert scores == {t["name"]: t["points"] for t in latest["tests"]}, "the gradebook holds the latest attempt"
    assert len(server.store.submissions(student=student)) == 2
