"""Sphinx configuration of the documentation site (built by ``python docs/build.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]  # the site's extension, and the grader package it documents

project = "The autograded PyTorch course"
author = "the course's maintainers"
copyright = "the course's maintainers"  # Sphinx reads this name

extensions = ["myst_parser", "grader_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_ext",
    "validation",  # reports shown as text by instructors/validation-reports.md, never parsed as pages
    "reference/misconception-table.md",  # the catalogue's source, printed by python -m tests.fixtures.table
    "screenshots",
]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
nitpicky = True

html_theme = "furo"
html_title = project
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
