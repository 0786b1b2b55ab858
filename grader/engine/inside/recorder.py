"""Inside a forked child: a cell's outputs, recorded as nbclient records what ipykernel publishes.

ipykernel sends a cell's outputs as messages; nbclient writes them into the notebook. The
``Recorder`` keeps that list of nbformat outputs itself (``shell.py`` runs the cells):

- ``print``/``sys.stdout``/``sys.stderr`` go to two buffers, flushed as
  ``stream`` outputs (stdout first, then stderr) before every display, result
  or error, at the end of the cell, and when a buffer is older than ipykernel's
  flush interval (0.2 s) — the order in which ipykernel publishes them.
- Output written straight to file descriptors 1 and 2 (C extensions,
  ``os.system``) is captured as ipykernel does since 6.0.
- The value of a cell's last expression becomes an ``execute_result`` with the
  shell's ``execution_count``; ``display()`` becomes ``display_data``;
  ``clear_output`` behaves as in nbclient.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher

Output = dict[str, Any]

FLUSH_INTERVAL_S = 0.2  # ipykernel.iostream.OutStream.flush_interval
STREAM_LIMIT_CHARS = 2_000_000  # per stream and cell; nbgrader's LimitOutput trims far below this
TRUNCATED = "\n... [output truncated by the grader: too much output]\n"


class Recorder:
    """The outputs of the cell being run, in the order nbclient would record them."""

    def __init__(self) -> None:
        self.outputs: list[Output] = []
        self._buffers: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._since: dict[str, float] = {}
        self._written: dict[str, int] = {"stdout": 0, "stderr": 0}
        self._clear_pending = False
        self._fd_files: dict[str, Any] = {}

    def begin(self) -> None:
        self.outputs = []
        self._written = {"stdout": 0, "stderr": 0}
        self._clear_pending = False

    def watch_descriptors(self, directory: str) -> None:
        """Send what is written to fd 1 and 2 (not through ``sys.stdout``) into the streams."""
        for fd, name in ((1, "stdout"), (2, "stderr")):
            path = os.path.join(directory, f".{name}")
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            os.dup2(target, fd)
            os.close(target)
            self._fd_files[name] = open(path, encoding="utf-8", errors="replace")

    def _poll_descriptors(self) -> None:
        for name, reader in self._fd_files.items():
            text = reader.read(STREAM_LIMIT_CHARS)
            if text:
                self._buffer(name, text)

    def write(self, name: str, text: str) -> None:
        now = time.monotonic()
        for other, since in sorted(self._since.items(), key=lambda item: item[1]):
            if now - since >= FLUSH_INTERVAL_S:
                self._flush(other)
        self._buffer(name, text)

    def _buffer(self, name: str, text: str) -> None:
        room = STREAM_LIMIT_CHARS - self._written[name]
        if room <= 0:
            return
        if len(text) > room:
            text = text[:room] + TRUNCATED
        self._written[name] += len(text)
        self._buffers[name].append(text)
        self._since.setdefault(name, time.monotonic())

    def _flush(self, name: str) -> None:
        text = "".join(self._buffers[name])
        self._buffers[name] = []
        self._since.pop(name, None)
        if text:
            self._append({"output_type": "stream", "name": name, "text": text})

    def flush(self) -> None:
        self._poll_descriptors()
        self._flush("stdout")
        self._flush("stderr")

    def _append(self, output: Output) -> None:
        if self._clear_pending:
            self.outputs = []
            self._clear_pending = False
        self.outputs.append(output)

    def add(self, output: Output) -> None:
        self.flush()
        self._append(output)

    def clear(self, wait: bool) -> None:
        self.flush()
        if wait:
            self._clear_pending = True
        else:
            self.outputs = []


class Stream:
    """``sys.stdout`` / ``sys.stderr`` of the child: text goes to the recorder."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, recorder: Recorder, name: str) -> None:
        self._recorder = recorder
        self.name = name

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._recorder.write(self.name, text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1 if self.name == "stdout" else 2


def jsonable(value: Any) -> Any:
    """What json can carry; anything else as its ``str`` (ipykernel's ``json_clean``, roughly)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): jsonable(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [jsonable(v) for v in value]
        return str(value)


class RecordingDisplayHook(DisplayHook):
    """The ``execute_result`` of a cell, as ipykernel's ``ZMQShellDisplayHook`` builds it."""

    recorder: Recorder

    def start_displayhook(self) -> None:
        self._result: Output = {"output_type": "execute_result", "data": {}, "metadata": {}}

    def write_output_prompt(self) -> None:
        self._result["execution_count"] = self.prompt_count

    def write_format_data(self, format_dict: Any, md_dict: Any = None) -> None:
        self._result["data"] = jsonable(format_dict)
        self._result["metadata"] = jsonable(md_dict or {})

    def finish_displayhook(self) -> None:
        self.recorder.flush()
        if self._result["data"]:
            self.recorder.add(self._result)


class RecordingDisplayPublisher(DisplayPublisher):
    """``display()`` and ``clear_output()``, as ipykernel's ``ZMQDisplayPublisher``."""

    recorder: Recorder

    def publish(
        self,
        data: Any,
        metadata: Any = None,
        source: Any = None,
        *,
        transient: Any = None,
        update: bool = False,
        **kwargs: Any,
    ) -> None:
        if update:  # nbclient updates an earlier output in place; nothing new is recorded
            self.recorder.flush()
            return
        self.recorder.add({"output_type": "display_data", "data": jsonable(data), "metadata": jsonable(metadata or {})})

    def clear_output(self, wait: bool = False) -> None:
        self.recorder.clear(wait)
