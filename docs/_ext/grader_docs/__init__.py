"""The site's generated parts (a Sphinx extension).

A page holds a line ``<!-- generated: NAME -->``; when the site is built, that line is replaced by
what ``GENERATORS[NAME]`` writes from the code and the repository as they are (the command-line and
configuration reference, the misconception catalogue, the list of assignments, the validation
reports). The Markdown files keep only the marker, so nothing generated is committed and nothing can
go stale; ``python docs/build.py`` builds with a fresh environment every time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.util.typing import ExtensionMetadata

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
REPO = Path(__file__).resolve().parents[3]


def _cli() -> str:
    from grader.cli import build_parser

    from . import cli

    return cli.render(build_parser())


def _config() -> str:
    from . import config

    return config.render(REPO)


def _misconceptions() -> str:
    from . import catalogue

    return catalogue.render(catalogue.TABLE.read_text(), catalogue.explanations())


def _misconception_table() -> str:
    from . import catalogue

    return catalogue.TABLE.read_text()


def _assignments() -> str:
    from . import course

    return course.assignments()


def _validation_reports() -> str:
    from . import course

    return course.validation_reports()


def _instructors_toctree() -> str:
    from . import course

    return course.instructors_toctree()


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": _cli,
    "config": _config,
    "misconceptions": _misconceptions,
    "misconception-table": _misconception_table,
    "assignments": _assignments,
    "validation-reports": _validation_reports,
    "instructors-toctree": _instructors_toctree,
}


def expand(source: str) -> str:
    """``source`` with every marker replaced by what its generator writes; an unknown name is an error."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(generated, source)


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    source[0] = expand(source[0])


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
