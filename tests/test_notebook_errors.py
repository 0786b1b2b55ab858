"""What a student reads of an error output: one function for ``grader check``, the service's feedback
and ``grader validate``, so the three never disagree on a message."""

from __future__ import annotations

import nbformat

from grader.notebook_errors import error_text, plain
from grader.service.grading.scoring import messages

COLOURED = "\x1b[0;31mAssertionError\x1b[0m: \x1b[1mlosses[0]\x1b[0m differs\x1b[2K"


def test_plain_drops_colours_and_cursor_moves_and_keeps_the_text() -> None:
    assert plain(COLOURED) == "AssertionError: losses[0] differs"
    assert plain("x[0;31m, no escape byte") == "x[0;31m, no escape byte"


def test_error_text_is_name_and_uncoloured_value() -> None:
    assert error_text("AssertionError", "\x1b[31mw.grad is None\x1b[0m") == "AssertionError: w.grad is None"


def test_error_text_of_an_empty_value_is_the_name_alone() -> None:
    """A bare ``assert`` raises with no text: the student reads the name, not a dangling colon."""
    assert error_text("AssertionError", "") == "AssertionError"


def test_the_services_feedback_reads_errors_through_it() -> None:
    cell = nbformat.v4.new_code_cell("assert False")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t1", "points": 1}
    cell.outputs = [
        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[]),
        nbformat.v4.new_output("stream", name="stderr", text="\x1b[33mwarning\x1b[0m\n"),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert messages(nb) == {"t1": "AssertionError\nwarning\n"}
