"""Which of a course's assignments mark variants, and the secret they need, checked at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

from ..errors import AuthoringError
from . import secret
from .spec import VariantCell, find_cells


def cells(root: Path, assignment: str) -> list[VariantCell]:
    """The variant cells of ``assignment``'s source notebook (``source/<name>/<name>.ipynb``)."""
    path = root / "source" / assignment / f"{assignment}.ipynb"
    if not path.is_file():
        return []
    try:
        nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as error:  # unreadable JSON: the release step says so in its own words
        raise AuthoringError(f"{path} cannot be read as a notebook: {error}") from error
    return find_cells(nb, str(path.relative_to(root)))


def assignments(root: Path) -> list[str]:
    """The assignments of the course at ``root`` whose source notebook marks variants."""
    folder = root / "source"
    if not folder.is_dir():
        return []
    names = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    return [name for name in names if cells(root, name)]


def require_secret(root: Path, loaded: Any = None) -> bytes | None:
    """The course secret when some assignment marks variants (one sentence when it is missing); else None."""
    if not assignments(root):
        return None
    return secret.require(root, loaded)
