"""``grader autograde`` grades on a running ``grader serve``'s warm engine (``grader.engine.doors.lend``).

Each test runs the real command against a real ``grader serve`` of a course copy and reads the gradebook
they share: the first line says whose engine graded, the scores are those of the command's own engine,
and whatever the serve cannot or will not do, the command does itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import course
from grader.engine import loans, protocol
from grader.engine.bookkeeping import autograde
from grader.engine.limits import Limits
from tests.fixtures.claims import root_only
from tests.fixtures.spec import SUBMISSIONS
from tests.service.conftest import Server, running_server

A = "ps2_autograd"
PLAN = {"a-correct": "correct", "b-grad-not-zeroed": "grad-not-zeroed", "c-mse-sum": "mse-sum"}
ONE_WORKER = "c.GraderService.workers = 1\n"
NOBODY = 65534
LENT = "grader autograde: Grading on the warm engine of `grader serve` (pid {pid}), already running for this course."


def place(root: Path, plan: dict[str, str]) -> None:
    for student, fixture in plan.items():
        course.place_submission(root, student, A, SUBMISSIONS / A / f"{fixture}.ipynb")


def autograde_command(root: Path, *extra: str) -> subprocess.Popen[str]:
    grader = str(Path(sys.executable).parent / "grader")
    return subprocess.Popen(
        [grader, "autograde", A, "--course", str(root), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_autograde(root: Path, *extra: str) -> tuple[int, list[str], str]:
    """The command's exit status, its stderr's lines after the course line, and its stdout."""
    proc = autograde_command(root, *extra)
    out, err = proc.communicate(timeout=600)
    lines = [line for line in err.splitlines() if not line.startswith("grader: course ")]
    return proc.returncode, lines, out


def scores(root: Path) -> dict[tuple[str, str], float]:
    return {(r.student, r.grade_id): r.score for r in course.cell_scores(root, A)}


def full_marks(graded: dict[tuple[str, str], float], student: str) -> bool:
    """Every test cell of ``student`` scored (a correct submission's cells all do; each fixture here loses some)."""
    cells = [score for (who, _), score in graded.items() if who == student]
    return bool(cells) and min(cells) > 0


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = running_server(tmp_path_factory.mktemp("lend"), ONE_WORKER)
    srv = next(server)
    place(srv.root, PLAN)
    yield srv
    server.close()


def test_the_command_grades_on_the_serves_warm_engine_with_the_scores_of_its_own(serving: Server) -> None:
    assert serving.process is not None and serving.log is not None
    status, lines, out = run_autograde(serving.root)
    assert status == 0, (lines, out)
    assert lines[0] == LENT.format(pid=serving.process.pid)
    assert "Autograded 3 submission(s) of ps2_autograd" in out
    assert "lending the engine to `grader autograde`" in serving.log.read_text()
    lent = scores(serving.root)

    status, lines, out = run_autograde(serving.root, "--own-engine")
    assert status == 0, (lines, out)
    assert not any("grader serve" in line for line in lines), lines
    own = scores(serving.root)
    assert lent == own
    assert {s for s, _ in own} == set(PLAN)
    assert full_marks(lent, "a-correct")
    assert not full_marks(lent, "b-grad-not-zeroed") and not full_marks(lent, "c-mse-sum")


def test_a_changed_configuration_is_not_lent_and_the_command_grades_itself(serving: Server) -> None:
    config = serving.root / "nbgrader_config.py"
    before = config.read_text()
    config.write_text(before + "\n# edited after grader serve started\n")
    try:
        status, lines, out = run_autograde(serving.root, "--student", "a-correct")
    finally:
        config.write_text(before)
    assert status == 0, (lines, out)
    assert serving.process is not None
    assert lines[0] == (
        f"grader autograde: `grader serve` (pid {serving.process.pid}) runs for this course but cannot lend its "
        "engine: nbgrader_config.py changed since it read it (restart `grader serve` to use the new one); "
        "starting this command's own engine."
    )
    assert "Autograded 1 submission(s)" in out


def test_the_serve_refuses_other_limits_and_malformed_requests(serving: Server) -> None:
    gradebook = course.gradebook_url(serving.root)
    request = loans.Request(
        A, ("a-correct",), 1, True, str(serving.root), gradebook, course.config_digest(serving.root), Limits(5.0)
    )
    serve = loans.find(serving.root, gradebook)
    assert serve is not None
    try:
        refused = serve.ask(request)
    finally:
        serve.close()
    assert refused is not None and "cannot lend its engine: it grades with other limits" in refused

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(loans.address(serving.root, gradebook))
        protocol.send(sock, {**request.message(), "jobs": 10_000})
        answer = protocol.receive(sock)
    assert answer == {
        "op": "refused",
        "reason": f"a request this serve cannot read (jobs must be a whole number from 1 to {loans.MAX_JOBS})",
    }


def test_another_users_process_is_not_answered(serving: Server) -> None:
    root_only("connecting as another user needs root")
    address = loans.address(serving.root, course.gradebook_url(serving.root))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other user: connects, asks, and reports what came back
        os.close(read)
        code = 1
        try:
            os.setuid(NOBODY)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(30)
                sock.connect(address)
                os.write(write, b"answered:" + sock.recv(100))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    os.waitpid(pid, 0)
    assert said == b"answered:"  # connected, then closed without a word
    assert serving.log is not None
    assert f"refused to lend the engine to process {pid} of user {NOBODY}" in serving.log.read_text()


def test_a_name_held_by_another_user_is_told_nothing(tmp_path: Path) -> None:
    root_only("binding as another user needs root")
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    place(root, {"a-correct": "correct"})
    address = loans.address(root, course.gradebook_url(root))
    ready_read, ready_write = os.pipe()
    heard_read, heard_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the squatter: binds the name first and keeps whatever it is sent
        os.close(ready_read)
        os.close(heard_read)
        try:
            os.setuid(NOBODY)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.bind(address)
                sock.listen(1)
                os.write(ready_write, b"1")
                conn, _ = sock.accept()
                conn.settimeout(60)
                os.write(heard_write, b"heard:" + conn.recv(100))
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(heard_write)
    assert os.read(ready_read, 1) == b"1"
    status, lines, out = run_autograde(root)
    os.waitpid(pid, 0)
    with os.fdopen(heard_read, "rb") as pipe:
        heard = pipe.read()
    assert status == 0, (lines, out)
    assert heard == b"heard:"  # the command hung up without sending its request
    assert not any("grader serve" in line for line in lines), lines
    assert full_marks(scores(root), "a-correct")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
def test_a_serve_gone_mid_batch_leaves_the_rest_to_the_commands_own_engine(tmp_path: Path, how: int) -> None:
    """Killed, the serve just vanishes; stopped (SIGTERM), it hands the batch back before it closes its engine,
    so the submission it was grading is not reported as a failure but graded again by the command."""
    server = running_server(tmp_path, ONE_WORKER)
    srv = next(server)
    try:
        slow = json.loads((SUBMISSIONS / A / "correct.ipynb").read_text())  # sleeps, then answers correctly
        slow["cells"].insert(
            0,
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "sleeper",
                "metadata": {},
                "outputs": [],
                "source": "import time\ntime.sleep(6)",
            },
        )
        place(srv.root, {"a-correct": "correct", "c-correct": "correct"})
        target = srv.root / "submitted" / "b-sleeps" / A
        target.mkdir(parents=True)
        (target / f"{A}.ipynb").write_text(json.dumps(slow))
        assert srv.process is not None
        proc = autograde_command(srv.root, "--jobs", "1")
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # killed once the serve has reported its first outcome, while it sleeps
            seen.append(line.rstrip("\n"))
            if line.startswith("[") and " 1/3 " in line:
                os.killpg(srv.process.pid, how)
                break
        rest, out = proc.stderr.read(), proc.stdout.read() if proc.stdout else ""
        status = proc.wait(600)
    finally:
        server.close()
    lines = [line for line in [*seen, *rest.splitlines()] if not line.startswith("grader: course ")]
    assert status == 0, (lines, out)
    assert lines[0] == LENT.format(pid=srv.process.pid)
    [gone] = [line for line in lines if "stopped answering" in line]
    assert gone.endswith("after 1 of 3 submission(s); grading the other 2 on this command's own engine.")
    assert "Autograded 3 submission(s) of ps2_autograd" in out
    graded = scores(srv.root)
    assert all(full_marks(graded, s) for s in ("a-correct", "b-sleeps", "c-correct"))


def test_a_stopped_batch_starts_nothing_more() -> None:
    import threading

    stop = threading.Event()
    stop.set()
    # no configuration at all: a grading that started would fail on it, and give an outcome
    assert autograde.grade_many(None, A, ["a", "b"], stop=stop) == []  # type: ignore[arg-type]


def test_the_lender_says_why_it_would_not_grade_a_batch_as_the_commands_own_engine_would(tmp_path: Path) -> None:
    """In process, on a real (unstarted) engine of a course copy: each difference named, none for the same."""
    from grader.engine.doors.lend import Lender
    from grader.engine.engine import Engine

    root = course.copy_course(tmp_path / "course")
    engine = Engine(root, limits=Limits(5.0))
    try:
        lender = Lender(engine)
        same = loans.Request(A, ("a",), 1, True, str(root), lender.gradebook, course.config_digest(root), Limits(5.0))
        assert lender.refusal(same) is None
        other_course = loans.Request(A, ("a",), 1, True, str(tmp_path), lender.gradebook, same.config, Limits(5.0))
        assert lender.refusal(other_course) == "it grades another course or gradebook"
        (root / "nbgrader_config.py").write_text((root / "nbgrader_config.py").read_text() + "\n# edited\n")
        changed = loans.Request(
            A, ("a",), 1, True, str(root), lender.gradebook, course.config_digest(root), same.limits
        )
        assert lender.refusal(changed) == (
            "nbgrader_config.py changed since it read it (restart `grader serve` to use the new one)"
        )
        limits = loans.Request(A, ("a",), 1, True, str(root), lender.gradebook, same.config, Limits(9.0))
        assert lender.refusal(limits) == f"it grades with other limits ({engine.limits}; this command: {Limits(9.0)})"
    finally:
        engine.close()
