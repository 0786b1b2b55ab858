"""A forked kernel records outputs the way nbclient records them from ipykernel."""

from __future__ import annotations

from .conftest import Session


def test_print_is_a_stdout_stream_and_the_last_expression_an_execute_result(session: Session) -> None:
    run = session.run("print('hello')\n1 + 1")
    assert run.outputs == [
        {"output_type": "stream", "name": "stdout", "text": "hello\n"},
        {"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": "2"}, "metadata": {}},
    ]
    assert run.execution_count == 1 and run.error is None


def test_execution_count_increases_per_cell(session: Session) -> None:
    assert session.run("x = 1").execution_count == 1
    assert session.run("x").outputs[0]["execution_count"] == 2


def test_streams_are_flushed_stdout_then_stderr_before_a_result(session: Session) -> None:
    run = session.run("import sys\nsys.stderr.write('warn\\n')\nprint('a')\nprint('b')\n0.5")
    kinds = [(o["output_type"], o.get("name")) for o in run.outputs]
    assert kinds == [("stream", "stdout"), ("stream", "stderr"), ("execute_result", None)]
    assert run.outputs[0]["text"] == "a\nb\n"


def test_an_exception_is_an_error_output_with_name_value_and_traceback(session: Session) -> None:
    run = session.run("def f():\n    raise ValueError('bad shape')\nf()")
    assert run.error == ("ValueError", "bad shape")
    (error,) = run.outputs
    assert error["output_type"] == "error" and error["ename"] == "ValueError" and error["evalue"] == "bad shape"
    assert any("f()" in line for line in error["traceback"])


def test_a_syntax_error_is_an_error_output(session: Session) -> None:
    run = session.run("x = (")
    assert run.outputs[0]["ename"] == "SyntaxError"


def test_python_warnings_reach_stderr_as_in_a_kernel(session: Session) -> None:
    run = session.run("import warnings\nwarnings.warn('careful')")
    (stream,) = run.outputs
    assert stream["name"] == "stderr" and "UserWarning: careful" in stream["text"]


def test_display_and_clear_output(session: Session) -> None:
    run = session.run(
        "from IPython.display import display, clear_output\ndisplay('one')\nclear_output()\ndisplay('two')"
    )
    assert run.outputs == [{"output_type": "display_data", "data": {"text/plain": "'two'"}, "metadata": {}}]


def test_output_written_to_file_descriptors_is_captured(session: Session) -> None:
    run = session.run("import os\nos.write(1, b'from C\\n')\nos.system('echo from a child process')")
    text = "".join(o.get("text", "") for o in run.outputs if o.get("name") == "stdout")
    assert "from C" in text and "from a child process" in text


def test_input_is_refused_like_a_kernel_without_stdin(session: Session) -> None:
    run = session.run("input('name? ')")
    assert run.error is not None and run.error[0] == "StdinNotImplementedError"


def test_magics_work(session: Session) -> None:
    run = session.run("%time x = 1")
    assert run.error is None


def test_a_flood_of_output_is_truncated_not_fatal(session: Session) -> None:
    run = session.run("for _ in range(50_000):\n    print('x' * 100)")
    # flushed every 0.2 s as ipykernel does: on a slow machine the flood arrives as several stream outputs
    assert {(o["output_type"], o["name"]) for o in run.outputs} == {("stream", "stdout")}
    text = "".join(o["text"] for o in run.outputs)
    assert run.error is None and len(text) < 2_100_000
    assert text.endswith("[output truncated by the grader: too much output]\n")
