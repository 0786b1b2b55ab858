"""``grader autograde``'s progress line: redrawn in place on a terminal, and a message after it on a line of its own."""

from __future__ import annotations

import io

from grader.engine.bookkeeping.autograde import Outcome, Status
from grader.engine.doors.batch import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def graded(student: str) -> Outcome:
    return Outcome(student, "ps1_tensors", Status.COMPLETED, "", 0.1)


def test_a_message_after_the_bar_starts_a_line_of_its_own() -> None:
    out = Terminal()
    progress = Progress(3, out)
    progress(graded("a"))
    progress.break_line()
    out.write("grader autograde: `grader serve`'s engine stopped answering\n")
    lines = out.getvalue().split("\n")
    assert lines[0].startswith("\r[##########....................] 1/3")
    assert lines[1] == "grader autograde: `grader serve`'s engine stopped answering"


def test_no_empty_line_before_the_bar_is_drawn_or_in_a_log_file() -> None:
    out = Terminal()
    Progress(3, out).break_line()
    assert out.getvalue() == ""
    log = io.StringIO()
    progress = Progress(3, log)
    progress(graded("a"))
    progress.break_line()
    assert log.getvalue().startswith("[##########....................] 1/3") and log.getvalue().count("\n") == 1
