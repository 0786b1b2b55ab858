"""Truncating output never changes a verdict: ``KeepStderr``, the step before nbgrader's ``LimitOutput``.

nbgrader scores a test cell 0 when it wrote to stderr, but its ``LimitOutput`` drops every stream
output once ``max_lines`` lines came before it: a test whose student code floods stdout first and
writes to stderr afterwards would keep its points.  ``KeepStderr`` runs right after the Execute step
(in ``Autograde.autograde_preprocessors``, for stock ``nbgrader autograde`` and the engine alike,
which inserts it where a course's list lacks it) and, in a test cell whose stderr output
``LimitOutput`` would drop, cuts the stdout before it first, with nbgrader's own truncation mark, so
the stderr output is among what is kept and nbgrader's rule sees it.  Nothing changes for a cell
without such a flood.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import IgnorePattern, LimitOutput, NbGraderPreprocessor

TRUNCATED_LINE = "... Output truncated ..."  # what nbgrader's LimitOutput puts where it cut a stream
STEP = "grader.plugins.output_limit.KeepStderr"


def _stream_lines(output: NotebookNode) -> list[str]:
    return str(output.get("text", "")).split("\n")  # as LimitOutput counts them


def keep_stderr(
    outputs: Sequence[NotebookNode], max_lines: int, ignored: Callable[[NotebookNode], bool]
) -> list[NotebookNode]:
    """``outputs`` cut so that nbgrader's ``LimitOutput(max_lines)`` keeps a stderr output the cell wrote.

    ``ignored``: the stderr outputs ``IgnorePattern`` removes (they neither fail a test nor count
    as lines).  ``LimitOutput`` drops every stream output once ``max_lines`` lines came before it; if
    that would drop the first stderr output that counts, the stream outputs before it are cut to
    ``max_lines - 2`` lines the way ``LimitOutput`` cuts (the last kept one ends with its mark), which
    leaves room for the stderr output's first line and mark. Otherwise ``outputs`` is returned as it is
    (so applying it twice changes nothing).
    """

    def counted(output: NotebookNode) -> bool:
        return output.get("output_type") == "stream" and not ignored(output)

    first = next((i for i, o in enumerate(outputs) if counted(o) and o.get("name") == "stderr"), None)
    if first is None or max_lines < 1:
        return list(outputs)
    if sum(len(_stream_lines(o)) for o in outputs[:first] if counted(o)) < max_lines:
        return list(outputs)
    budget, length = max(0, max_lines - 2), 0
    kept: list[NotebookNode] = []
    for output in outputs[:first]:
        if counted(output):
            if length >= budget:
                continue
            lines = _stream_lines(output)
            if len(lines) + length > budget:
                lines = [*lines[: budget - length - 1], TRUNCATED_LINE]
                output = NotebookNode({**output, "text": "\n".join(lines)})  # type: ignore[no-untyped-call]
            length += len(lines)
        kept.append(output)
    return kept + list(outputs[first:])


class KeepStderr(NbGraderPreprocessor):  # type: ignore[misc]
    """Cut a test cell's stdout flood before ``LimitOutput`` would drop its stderr (see the module)."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        max_lines = int(LimitOutput(config=self.config).max_lines)
        ignore = IgnorePattern(config=self.config)
        pattern = re.compile(str(ignore.pattern)) if ignore.enabled and ignore.pattern else None

        def ignored(output: NotebookNode) -> bool:
            return (
                pattern is not None and output.get("name") == "stderr" and bool(pattern.search(output.get("text", "")))
            )

        for cell in nb.cells:
            if cell.cell_type == "code" and utils.is_grade(cell) and cell.get("outputs"):
                cell.outputs = keep_stderr(cell.outputs, max_lines, ignored)
        return nb, resources
