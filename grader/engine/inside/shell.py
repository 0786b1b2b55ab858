"""The kernel inside a forked child: IPython's own shell, with outputs recorded like ipykernel's.

ipykernel is a thin layer over ``IPython.core.interactiveshell.InteractiveShell``:
the same shell compiles and runs every cell, formats results and tracebacks.
This module keeps that shell and replaces only ipykernel's messaging with a
list of nbformat outputs, reproducing what nbclient writes into a notebook
(``recorder.py``: streams, results, displays); and, as ipykernel does:

- An exception becomes an ``error`` output (``ename``, ``evalue``, IPython's
  traceback), through the same ``_showtraceback`` hook ipykernel overrides.
  The traceback is in IPython's "Plain" mode rather than ipykernel's
  "Context": same frames, without the surrounding source lines.  A cell whose
  exception IPython did not show that way (a hook the cell's code installed
  swallowed it: ``set_custom_exc``, a silenced ``showtraceback``...) still gets
  an ``error`` output: ``run_cell`` reads the exception from IPython's own
  ``ExecutionResult`` (see ``unshown_error``).
- ``input()``/``getpass()`` raise ``StdinNotImplementedError``, as in a kernel
  run by nbclient (which never allows stdin).
"""

from __future__ import annotations

import ast
import builtins
import sys
from typing import Any

from IPython.core.compilerop import CachingCompiler
from IPython.core.error import StdinNotImplementedError
from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import InteractiveShell

from . import precompiled
from .recorder import Output, Recorder, RecordingDisplayHook, RecordingDisplayPublisher, Stream


class GradingCompiler(CachingCompiler):
    """IPython's compiler; while ``hide_source`` is set, a cell's source is not put in the line cache.

    The line cache is how tracebacks (and ``inspect.getsource``) find a cell's lines; a student
    function called by a test cell could read the hidden test from it.
    """

    hide_source = False
    course_code: precompiled.Table  # the course's cells, compiled in the zygote (see ``prime``)
    shell: Any = None

    def ast_parse(self, source: str, filename: str = "<unknown>", symbol: str = "exec") -> Any:
        entries = self.course_code.get((source, self.flags)) if symbol == "exec" and self._plain() else None
        if entries is None:
            return super().ast_parse(source, filename, symbol)
        return precompiled.placeholders(entries)

    def _plain(self) -> bool:
        """Whether IPython runs a cell's statements as compiled (nothing rewrites the tree)."""
        shell = self.shell
        return shell is not None and not shell.ast_transformers and shell.ast_node_interactivity == "last_expr"

    def __call__(self, source: Any, filename: str, symbol: str, **kwargs: Any) -> Any:
        entry = precompiled.entry_of(source)
        if entry is None:
            return super().__call__(source, filename, symbol, **kwargs)
        if symbol == entry.symbol and self.flags == entry.flags and not kwargs:
            self.flags |= precompiled.features(entry.code)
            return precompiled.named(entry.code, filename)
        # asked for otherwise than precompiled (a cell changed how IPython runs statements): compile it
        tree: Any = super().ast_parse(entry.text, filename)
        node = tree.body[entry.index]
        module = ast.Interactive([node]) if isinstance(source, ast.Interactive) else ast.Module([node], [])
        return super().__call__(module, filename, symbol, **kwargs)  # type: ignore[arg-type]

    def cache(self, transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
        if not self.hide_source:
            return str(super().cache(transformed_code, number, raw_code))
        name = str(self.get_code_name(raw_code if raw_code is not None else transformed_code, transformed_code, number))
        self._filename_map[name] = number
        return name


HIDDEN_SOURCE = "# (a test cell: its source is not kept)"


class GradingHistory(HistoryManager):
    """IPython's in-memory history; a test cell is stored as a placeholder, never as its source.

    IPython stores a cell in ``In``/``_ih``/``_i<N>`` before running it: student code called by a
    test would otherwise read the hidden test from there while it runs.
    """

    def store_inputs(self, line_num: int, source: str, source_raw: str | None = None) -> None:
        if getattr(self.shell.compile, "hide_source", False):
            source = source_raw = HIDDEN_SOURCE
        super().store_inputs(line_num, source, source_raw)


class GradingShell(InteractiveShell):
    """IPython's shell with ipykernel's output behaviour, recording into a ``Recorder``."""

    displayhook_class = RecordingDisplayHook
    display_pub_class = RecordingDisplayPublisher
    compiler_class = GradingCompiler
    recorder: Recorder
    last_error: tuple[str, str, list[str]] | None = None

    def init_history(self) -> None:
        self.history_manager = GradingHistory(shell=self, parent=self)
        self.configurables.append(self.history_manager)  # type: ignore[arg-type]

    def init_displayhook(self) -> None:
        super().init_displayhook()  # type: ignore[no-untyped-call]
        self.displayhook.recorder = self.recorder  # type: ignore[attr-defined]

    def init_display_pub(self) -> None:
        super().init_display_pub()  # type: ignore[no-untyped-call]
        self.display_pub.recorder = self.recorder  # type: ignore[attr-defined]

    def _showtraceback(self, etype: Any, evalue: Any, stb: Any) -> None:
        self.recorder.flush()
        try:
            text = str(evalue)
        except Exception:  # an exception whose __str__ raises still fails the cell
            text = "<exception str() failed>"
        self.recorder.add(
            {
                "output_type": "error",
                "ename": str(getattr(etype, "__name__", etype)),
                "evalue": text,
                "traceback": [str(line) for line in stb],
            }
        )
        self.last_error = (str(getattr(etype, "__name__", etype)), text, [str(line) for line in stb])


def _no_stdin(*args: Any, **kwargs: Any) -> str:
    raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")


def _no_getpass(*args: Any, **kwargs: Any) -> str:
    raise StdinNotImplementedError("getpass was called, but this frontend does not support input requests.")


def create(recorder: Recorder) -> GradingShell:
    """The shell, built once in the zygote (before any student code exists) and inherited by every child."""
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # a kernel run by nbgrader keeps history in memory only
    # One line per frame.  ipykernel's default, "Context", shows source lines around every frame and
    # costs ~50 ms per failing cell (stack_data parses each file); only the traceback text differs.
    config.InteractiveShell.xmode = "Plain"
    GradingShell.recorder = recorder
    shell = GradingShell.instance(config=config)
    shell.last_error = None
    shell.compile.course_code = {}  # type: ignore[attr-defined]
    shell.compile.shell = shell  # type: ignore[attr-defined]
    return shell


def prime(shell: GradingShell, sources: list[str]) -> None:
    """Work out once what IPython works out from the text alone for the course's own cells.

    Every submission runs the same test cells.  Three steps of ``run_cell`` are
    pure functions of a cell's text: the static input transformation (magics,
    ``!cmd``), whether it needs top-level ``await`` (IPython compiles the
    whole cell to find out), and parsing and compiling its statements
    (``precompiled.py``).  The zygote computes them for the course's cells;
    any other text takes IPython's own path.
    """
    from IPython.core import interactiveshell

    manager = shell.input_transformer_manager
    transform = manager.transform_cell
    should_be_async = interactiveshell._should_be_async  # type: ignore[attr-defined]
    transformed = {source: str(transform(source)) for source in sources}
    is_async = {text: bool(should_be_async(text)) for text in transformed.values()}

    def cached_transform(cell: str) -> str:
        found = transformed.get(cell)
        return found if found is not None else str(transform(cell))

    def cached_should_be_async(cell: str) -> bool:
        found = is_async.get(cell)
        return found if found is not None else bool(should_be_async(cell))

    manager.transform_cell = cached_transform
    interactiveshell._should_be_async = cached_should_be_async  # type: ignore[attr-defined]
    # and what ``run_cell`` parses and compiles: the cell as ``shell.transform_cell`` leaves it
    compiler = shell.compile
    top_level_await = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0) if shell.autoawait else 0
    texts = []
    for source in sources:
        try:
            texts.append(str(shell.transform_cell(source)))  # type: ignore[no-untyped-call]
        except Exception:  # IPython shows the error when the cell runs
            continue
    compiler.course_code.update(  # type: ignore[attr-defined]
        precompiled.compile_cells(texts, compiler.flags, compiler.flags | top_level_await)
    )


def attach(shell: GradingShell) -> None:
    """In the child: student code writes into the recorder and cannot read stdin."""
    sys.stdout = Stream(shell.recorder, "stdout")
    sys.stderr = Stream(shell.recorder, "stderr")
    builtins.input = _no_stdin
    import getpass

    getpass.getpass = _no_getpass


def run_cell(
    shell: GradingShell, source: str, hide_source: bool = False
) -> tuple[int, list[Output], tuple[str, str, list[str]] | None]:
    """Run one cell; its execution count, outputs and the error it raised (if any)."""
    shell.recorder.begin()
    shell.last_error = None
    count = shell.execution_count
    shell.compile.hide_source = hide_source  # type: ignore[attr-defined]
    try:
        result = shell.run_cell(source, store_history=True)  # type: ignore[no-untyped-call]
    finally:
        shell.compile.hide_source = False  # type: ignore[attr-defined]
    if shell.last_error is None:
        hidden = unshown_error(result)
        if hidden is not None:
            shell.recorder.add(hidden)
            shell.last_error = (hidden["ename"], hidden["evalue"], list(hidden["traceback"]))
    shell.recorder.flush()
    outputs = list(shell.recorder.outputs)
    if hide_source and shell.last_error is not None:
        # A cell that raised never reached a result of its own; one recorded anyway was written by
        # the code the test called, to be read as partial credit (nbgrader reads the first one).
        outputs = [output for output in outputs if output.get("output_type") != "execute_result"]
    return count, outputs, shell.last_error


HIDDEN_ERROR = (
    "(IPython did not show this error: code in this notebook replaced how errors are shown; the grader recorded it.)"
)


def unshown_error(result: Any) -> Output | None:
    """The ``error`` output of an exception the cell raised that no error output shows, if any.

    IPython stores what a cell raised in the ``ExecutionResult`` that ``run_cell`` returns,
    whatever hook then handled it; a hook can hide the exception, never unraise it. Only the
    exception's type and text are shown (``traceback.format_exception_only``): no frames, so
    nothing of a test cell's source or of its locals.
    """
    error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
    if not isinstance(error, BaseException):
        return None
    import traceback

    try:
        text = str(error)
    except Exception:  # an exception whose __str__ raises still fails the cell
        text = "<exception str() failed>"
    ename = type(error).__name__
    try:
        lines = [line.rstrip("\n") for line in traceback.format_exception_only(type(error), error)]
    except Exception:
        lines = [f"{ename}: {text}"]
    return {"output_type": "error", "ename": ename, "evalue": text, "traceback": [*lines, HIDDEN_ERROR]}
