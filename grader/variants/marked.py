"""Which of a course's assignments mark variants, and the secret they need, checked at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

from ..errors import AuthoringError, ConfigurationError
from . import secret
from .spec import VariantCell, find_cells


def cells(root: Path, assignment: str) -> list[VariantCell]:
    """The variant cells of ``assignment``'s source notebook (``source/<name>/<name>.ipynb``); marks in another
    notebook of the assignment are an error (only the assignment's own notebook is checked and drawn)."""
    folder = root / "source" / assignment
    found: list[VariantCell] = []
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        except Exception as error:  # unreadable JSON: the release step says so in its own words
            raise AuthoringError(f"{path} cannot be read as a notebook: {error}") from error
        marked = find_cells(nb, str(path.relative_to(root)))
        if marked and path.name != f"{assignment}.ipynb":
            raise AuthoringError(
                f"{path.relative_to(root)} marks variants: put them in the assignment's own notebook, "
                f"{assignment}.ipynb (only that one is drawn for each student and checked before a release)"
            )
        found += marked
    return found


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


def ensure_secret(root: Path, first_run: bool) -> Path | None:
    """Make the course secret when some assignment marks variants and none exists yet: the path made, else None.

    Only on a first run (``first_run``: nothing can have drawn students' values yet); afterwards a
    missing secret is a ``ConfigurationError``, since a new one would change every student's values.
    """
    if not assignments(root) or secret.read(root) is not None:
        return None
    if not first_run:
        raise ConfigurationError(secret.missing(secret.secret_path(root)))
    return secret.create(root)
