"""Extensions that would have made a phantom student or a zero (issue 52): refused with one sentence, nothing written.

An extension on an assignment without a due date made nbgrader's own bookkeeping raise (``None + timedelta``) on
every notebook of the student, which was then recorded as 0: it is refused, by ``grader extension`` and by the
Settings page, as is a due date removed under extensions. A typo in a student's id or an unknown assignment is
refused too, instead of adding a student to the gradebook or printing a traceback.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from grader import course
from grader.errors import NoDueDate
from grader.service import config as service_config
from grader.service.rules import deadlines
from grader.service.web.sessions import COOKIE

from ..conftest import Server, running_server

GRADER = str(Path(sys.executable).parent / "grader")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from running_server(tmp_path_factory.mktemp("extensions"), "")


def _extension(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GRADER_COURSE_ROOT=str(server.root))
    return subprocess.run([GRADER, "extension", *args], env=env, capture_output=True, text=True, timeout=120)


def _gradebook(server: Server) -> tuple[set[str], dict[tuple[str, str], dt.timedelta | None]]:
    """The gradebook's students, and every submission row (with its extension)."""
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(server.root)) as book:
        students = {s.id for s in book.students}
        rows = {(a.name, s.student.id): s.extension for a in book.assignments for s in a.submissions}
    return students, rows


def _roster(server: Server, *students: str) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(server.root)) as book:
        for student in students:
            book.update_or_create_student(student)


def test_the_command_refuses_an_extension_without_a_due_date_an_unknown_student_or_assignment(server: Server) -> None:
    _roster(server, "student-b", "student-c")
    before = _gradebook(server)
    for args, says in (
        (
            ("student-c", "ps2_autograd", "--hours", "24"),
            "grader extension: ps2_autograd has no due date, so there is nothing to extend: set its due date first "
            "(Settings page, Due dates), then grant the extension\n",
        ),
        (
            ("nobdy", "ps1_tensors", "--hours", "24"),
            "grader extension: no student 'nobdy' on the course's roster: check the spelling, or add them first "
            "with `grader roster ROSTER.csv` (columns id,first_name,last_name,email)\n",
        ),
        (
            ("student-b", "ps9", "--hours", "1"),
            "grader extension: no assignment 'ps9' in the gradebook (known: ps1_tensors, ps2_autograd, "
            "ps3_regression, ps4_functions); a new one is added by `grader release ps9`\n",
        ),
    ):
        done = _extension(server, *args)
        course_line, *rest = done.stderr.splitlines(keepends=True)  # which course it found, then one sentence
        assert course_line.startswith("grader: course ") and (done.returncode, done.stdout, rest) == (2, "", [says])
    assert _gradebook(server) == before  # nothing written: no phantom student, no submission row


def test_with_a_due_date_the_extension_is_granted_and_the_due_date_cannot_be_removed_under_it(server: Server) -> None:
    settings = service_config.load(server.root)
    _roster(server, "student-d")
    deadlines.set_due_date(settings, "ps3_regression", dt.datetime(2026, 12, 24, 17, 0))
    done = _extension(server, "student-d", "ps3_regression", "--hours", "24")
    assert (done.returncode, done.stdout) == (0, "student-d has 24 extra hour(s) for ps3_regression\n"), done.stderr
    assert _gradebook(server)[1][("ps3_regression", "student-d")] == dt.timedelta(hours=24)
    with pytest.raises(NoDueDate) as refused:
        deadlines.set_due_date(settings, "ps3_regression", None)
    assert str(refused.value) == (
        "ps3_regression cannot lose its due date while student-d has an extension of it: remove it first "
        "(extension of 0 hours)"
    )
    assert deadlines.due_of(settings, "ps3_regression") == dt.datetime(2026, 12, 24, 17, 0)
    assert _extension(server, "student-d", "ps3_regression", "--hours", "0").returncode == 0
    deadlines.set_due_date(settings, "ps3_regression", None)  # no extension left: it can go
    assert deadlines.due_of(settings, "ps3_regression") is None


def test_a_student_with_a_token_but_no_submission_yet_can_be_given_an_extension(server: Server) -> None:
    settings = service_config.load(server.root)
    server.token("token-tom")
    deadlines.set_due_date(settings, "ps4_functions", dt.datetime(2026, 12, 24, 17, 0))
    done = _extension(server, "token-tom", "ps4_functions", "--hours", "2")
    assert done.returncode == 0, done.stderr
    assert _gradebook(server)[1][("ps4_functions", "token-tom")] == dt.timedelta(hours=2)


def test_the_settings_page_refuses_them_with_the_same_sentence(server: Server) -> None:
    _roster(server, "student-e")
    before = _gradebook(server)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        client.cookies.set(COOKIE, server.token("ta-tess", "ta"))
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/admin/settings").text)
        assert found
        for fields, status, says in (
            ({"student": "student-e", "assignment": "ps2_autograd"}, 409, "ps2_autograd has no due date"),
            ({"student": "nobdy", "assignment": "ps1_tensors"}, 404, "no student &#39;nobdy&#39; on the course&#39;s"),
        ):
            page = client.post(
                "/admin/settings", data={"csrf": found.group(1), "action": "extension", "hours": "24", **fields}
            )
            assert page.status_code == status and says in page.text, page.text[-2000:]
    assert _gradebook(server) == before
