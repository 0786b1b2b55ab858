"""The course secret that fixes each student's variant values.

It is read from ``$GRADER_VARIANT_SECRET`` when set (tests, deployments with a secret store), else
from the file ``c.Variants.secret_file`` of ``nbgrader_config.py`` (``variant_secret.txt`` in the
course root by default; git ignores it). Lose it, and every student's values change: back it up
with the gradebook. It is needed only by a course whose notebooks mark variants, and only where
values are drawn (the service's fetch, grading, the release check); never on a student's machine.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from traitlets import Unicode
from traitlets.config import Configurable

from ..errors import ConfigurationError

ENVIRONMENT = "GRADER_VARIANT_SECRET"
DEFAULT_FILE = "variant_secret.txt"


class Variants(Configurable):
    """Per-student variants (``grader.variants``): where the course secret is kept."""

    secret_file = Unicode(
        "",
        help=f"The course secret that draws each student's variant values (default: <course root>/{DEFAULT_FILE}; "
        f"${ENVIRONMENT} overrides it). Keep it with the gradebook, out of version control.",
    ).tag(config=True)


def secret_path(root: Path, loaded: Any = None) -> Path:
    """Where the course secret file is for the course at ``root`` (``loaded``: its config, already read)."""
    if loaded is None:
        from .. import course

        loaded = course.read_config(root)
    configured = str(loaded.get("Variants", {}).get("secret_file", "") or "")
    return Path(configured) if configured else root / DEFAULT_FILE


def read(root: Path, loaded: Any = None) -> bytes | None:
    """The course secret, or None when none is set; a short one, or two that differ, fail here."""
    path = secret_path(root, loaded)
    from_file = _checked(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else None
    from_environment = _checked(os.environ[ENVIRONMENT], f"${ENVIRONMENT}") if os.environ.get(ENVIRONMENT) else None
    if from_file and from_environment and from_file != from_environment:
        raise ConfigurationError(
            f"${ENVIRONMENT} and {path} hold two different course secrets, which would give students two different "
            "sets of values: keep one"
        )
    found = from_environment or from_file
    return found.encode() if found else None


def _checked(text: str, where: str) -> str:
    text = text.strip()
    if len(text) < 16:
        raise ConfigurationError(f"the course secret in {where} is under 16 characters: put a long random one there")
    return text


def require(root: Path, loaded: Any = None) -> bytes:
    """The course secret; one sentence saying where to put it when there is none."""
    found = read(root, loaded)
    if found is None:
        raise ConfigurationError(missing(secret_path(root, loaded)))
    return found


def missing(path: Path) -> str:
    return (
        f"This course gives students variants but has no course secret: restore {path} from your backup, or, "
        "if no student has fetched an assignment yet, create it with `grader variants --create-secret` "
        f"(or set ${ENVIRONMENT})."
    )


def create(root: Path, loaded: Any = None) -> Path:
    """Write a new random course secret (refused when one exists: it would change every student's values)."""
    path = secret_path(root, loaded)
    if path.exists() or os.environ.get(ENVIRONMENT):
        raise ConfigurationError(
            f"a course secret already exists ({path if path.exists() else '$' + ENVIRONMENT}); a new one would "
            "change every student's variant values, so it is kept"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path
