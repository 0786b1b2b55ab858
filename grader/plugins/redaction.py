"""Stock ``nbgrader generate_feedback`` shows what the service's feedback shows, and nothing hidden.

The autograded notebooks a TA turns into feedback HTML hold every test cell's full source,
``### BEGIN HIDDEN TESTS`` blocks included (seeds, hidden inputs, reference formulas), and each
failing test's traceback, whose frames quote those lines. ``HideHiddenTests`` runs in
``GenerateFeedback.preprocessors`` (``nbgrader_config.py``) and leaves of each cell what the
service's own feedback gives a student:

* a hidden block is cut out of the source (nbgrader's ``ClearHiddenTests``, which made the
  release), and a comment says that hidden tests ran there;
* an error keeps its name and message (``AssertionError: <the check's sentence>``), not its
  traceback;
* a stream line that repeats a line of the hidden block (Python's warnings quote the line that
  warned) is dropped.

Active HTML (``<script>``, ``on*=`` handlers, ``javascript:`` links, iframes) is made inert too:
in outputs, ``text/html`` and ``text/markdown`` go through nbconvert's own sanitiser
(``clean_html``, bleach), scripts and widgets are dropped, and output metadata keeps only numeric
image sizes, ``unconfined`` and ``alt`` (nbconvert writes ``width=``/``height=`` unquoted, so
``width="1 onerror=..."`` from ``IPython.display`` was a live handler even with ``sanitize_html``);
in a markdown cell that holds a tag, the tags are shown as text, and a ``javascript:``/``vbscript:``
link target loses its scheme.
(``HTMLExporter.sanitize_html``, also set, covers only part of this: nbgrader's feedback template
renders markdown cells itself.)
"""

from __future__ import annotations

import re
from typing import Any

from nbconvert.filters import clean_html
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests

PLACEHOLDER = "# (hidden tests ran here; their source is not part of the feedback)"
TAG = re.compile(r"<(?=[a-zA-Z!/?])")
SCRIPT_SCHEME = re.compile(r"(?i)\b(java|vb)script\s*:")
DROPPED = ("application/javascript", "text/javascript", "application/vnd.jupyter.widget-view+json")
SIZES = ("width", "height")


class HideHiddenTests(ClearHiddenTests):  # type: ignore[misc]
    """Hidden test source, and the tracebacks that quote it, out of feedback."""

    def preprocess_cell(self, cell: NotebookNode, resources: Any, cell_index: int) -> tuple[NotebookNode, Any]:
        hidden = self._hidden_lines(cell.source)
        if hidden is not None and self._remove_hidden_test_region(cell):
            cell.source = cell.source.rstrip("\n") + "\n" + PLACEHOLDER
        if cell.cell_type == "code":
            cell.outputs = [inert(self._redact(output, hidden or set())) for output in cell.get("outputs", [])]
        elif cell.cell_type == "markdown":
            cell.source = inert_markdown(cell.source)
        return cell, resources

    def _hidden_lines(self, source: str) -> set[str] | None:
        """The stripped, non-empty lines of the cell's hidden blocks; None if it has none."""
        lines, inside, found = set(), False, False
        for line in source.split("\n"):
            if self.begin_test_delimeter in line:
                inside = found = True
            elif self.end_test_delimeter in line:
                inside = False
            elif inside and line.strip():
                lines.add(line.strip())
        return lines if found else None

    @staticmethod
    def _redact(output: NotebookNode, hidden: set[str]) -> NotebookNode:
        if output.output_type == "error":
            output.traceback = [f"{output.ename}: {output.evalue}".rstrip(": ")]
        elif output.output_type == "stream" and hidden:
            kept = [line for line in output.text.splitlines(keepends=True) if line.strip() not in hidden]
            output.text = "".join(kept)
        return output


def inert_markdown(source: str) -> str:
    """Markdown whose raw HTML shows as text and whose script links lead nowhere."""
    return SCRIPT_SCHEME.sub(r"\1script-blocked:", TAG.sub("&lt;", source))


def inert(output: NotebookNode) -> NotebookNode:
    """An output with its HTML sanitised, its scripts and widgets dropped (a text line says so) and
    its metadata reduced to what cannot carry markup (``inert_metadata``)."""
    data = output.get("data")
    if output.output_type not in ("display_data", "execute_result") or not data:
        return output
    output.metadata = NotebookNode(inert_metadata(output.get("metadata")))  # type: ignore[no-untyped-call]
    if any(kind in data for kind in DROPPED):
        for kind in DROPPED:
            data.pop(kind, None)
        data.setdefault("text/plain", "(a script or widget output, not shown in feedback)")
    if "text/html" in data:
        data["text/html"] = clean_html(data["text/html"])  # type: ignore[no-untyped-call]
    if "text/markdown" in data:
        data["text/markdown"] = inert_markdown(data["text/markdown"])
    return output


def inert_metadata(metadata: Any) -> dict[str, Any]:
    """Output metadata the templates write into ``<img>`` attributes, only where it carries no markup.

    nbconvert writes an image's ``width``/``height`` unquoted (``width=1 onerror=...`` would add a
    handler) and ``filenames`` as its ``src`` (a student's URL would be fetched when a TA opens the
    page); ``isolated`` would put the output in an iframe. Numeric sizes, the ``unconfined`` flag
    and a text ``alt`` (escaped, quoted) stay, per mimetype and at the top level.
    """
    kept: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        if key in SIZES and isinstance(value, int | float) and not isinstance(value, bool):
            kept[key] = value
        elif (key == "unconfined" and isinstance(value, bool)) or (key == "alt" and isinstance(value, str)):
            kept[key] = value
        elif isinstance(value, dict) and key != "filenames":
            inner = inert_metadata(value)
            if inner:
                kept[key] = inner
    return kept
