"""Small helpers for writing MyST Markdown from text the code holds (help strings, defaults)."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\*_\[\]<>|{}$])")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")


def text(value: str) -> str:
    """``value`` as Markdown text on one line: whitespace folded, code spans kept, other markup escaped."""
    value = " ".join(value.split())
    out, at = [], 0
    for span in _CODE_SPAN.finditer(value):
        out += [_SPECIAL.sub(r"\\\1", value[at : span.start()]), span.group(0)]
        at = span.end()
    out.append(_SPECIAL.sub(r"\\\1", value[at:]).replace("`", "\\`"))
    return "".join(out)


def code(value: str) -> str:
    """``value`` as an inline code span, fenced with more backticks than it holds in a row."""
    value = " ".join(value.split())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or longest else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def label(*parts: str) -> str:
    """A MyST target name from ``parts``: lower case, anything but letters and digits turned into ``-``."""
    return "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)
