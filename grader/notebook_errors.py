"""Why a notebook file cannot be read, in one sentence a student can act on.

The service's upload refuses such a file with this sentence (HTTP 422); ``grader autograde``
records the notebook as graded 0 with the same sentence.  ``error_text`` is the other way round: what
a student reads of an error a graded notebook shows (``grader check``, the service's feedback,
``grader validate``).  Neither the engine nor the service owns either, so both may import them.
"""

from __future__ import annotations

import json
import re

import nbformat

from .errors import NotANotebook, TooLarge

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
UTF8_BOM = b"\xef\xbb\xbf"
SAVED_BY_JUPYTER = "upload the .ipynb file saved by Jupyter"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""A terminal escape sequence, as IPython colours a traceback with."""


def read(data: bytes, max_bytes: int | None = None, upgrade: bool = False) -> nbformat.NotebookNode:
    """The notebook in ``data``, validated; ``NotANotebook`` (or ``TooLarge``) saying why not.

    ``upgrade`` accepts nbformat 3, converted to 4 as nbgrader does; else only nbformat 4 is a notebook.
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(
            f"the notebook is {len(data) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB. "
            "Clear large outputs (Edit > Clear Outputs of All Cells) and submit again."
        )
    text = _text(data)
    raw = _json(text)
    body = ("cells", "worksheets") if upgrade else ("cells",)
    if not isinstance(raw, dict) or not any(key in raw for key in body) or "nbformat" not in raw:
        raise NotANotebook("the file is JSON but not a Jupyter notebook (no 'cells' or 'nbformat')")
    version = raw.get("nbformat")
    if version != 4 and not (upgrade and version == 3):
        raise NotANotebook(
            f"the notebook uses nbformat {version}; open it in JupyterLab 4 and save it again (nbformat 4)"
        )
    try:
        nb = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
        nbformat.validate(nb)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise NotANotebook(f"the notebook is not valid nbformat 4: {first}") from None
    return nb  # type: ignore[no-any-return]


def problem(data: bytes, upgrade: bool = True) -> str:
    """Why ``data`` is not a readable notebook, or '' when it is one."""
    try:
        read(data, upgrade=upgrade)
    except NotANotebook as error:
        return str(error)
    return ""


def check_python(nb: nbformat.NotebookNode) -> None:
    """Refuse a notebook whose kernel is not Python (the service's rule; nbgrader puts the release's kernel back)."""
    language = nb.metadata.get("kernelspec", {}).get("language") or nb.metadata.get("language_info", {}).get("name")
    if language not in (None, "python"):
        raise NotANotebook(f"the notebook's kernel language is {language!r}; this course grades Python notebooks")


def plain(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves): what a web page or file can show."""
    return ANSI.sub("", text)


def error_text(ename: str, evalue: object) -> str:
    """An error output as a student reads it: ``Name: value``, uncoloured; only the name when it says nothing."""
    return f"{ename}: {plain(str(evalue))}".rstrip(": ")


def _text(data: bytes) -> str:
    if not data.strip():
        raise NotANotebook(f"the file is empty ({len(data)} bytes), not valid JSON: {SAVED_BY_JUPYTER}")
    if data.startswith(UTF16_BOMS):
        raise NotANotebook(
            "the file is not UTF-8 text but UTF-16 (it starts with a byte-order mark): "
            "save the notebook from Jupyter, which writes UTF-8, and upload that file"
        )
    if data.startswith(UTF8_BOM):
        raise NotANotebook(
            "the file is not valid JSON: it starts with a byte-order mark, which Jupyter never writes; "
            "save the notebook from Jupyter and upload that file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotANotebook(f"the file is not UTF-8 text (byte {error.start}): upload the .ipynb file itself") from None


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise NotANotebook(
            f"the file is not valid JSON for a notebook: it is nested too deeply to read; {SAVED_BY_JUPYTER}"
        ) from None
    except json.JSONDecodeError as error:
        body = text.strip()
        if body.startswith("{") and not body.endswith("}"):
            raise NotANotebook(
                f"the file is not valid JSON: it ends early, as if cut off after {len(text.encode())} bytes; "
                "upload the complete .ipynb file saved by Jupyter"
            ) from None
        raise NotANotebook(f"the file is not valid JSON ({error}): {SAVED_BY_JUPYTER}") from None
