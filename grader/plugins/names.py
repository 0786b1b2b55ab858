"""Every ``grader.*`` class or module ``nbgrader_config.py`` names must import, checked at start-up.

nbgrader imports a preprocessor, a late-penalty plug-in or an exchange class by its dotted name only
when a command first needs it: a name that no longer imports would fail each grading, one by one,
as an infrastructure fault. The engine checks them all when it loads the configuration instead, and
a name this package used before its plug-ins moved into ``grader.plugins`` and ``grader.student`` is
answered with its new one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from traitlets.utils.importstring import import_item

from ..errors import ConfigurationError

MOVED = {
    f"grader.{name}": f"grader.plugins.{name}"
    for name in ("integrity", "isolation", "kernel_logging", "late_policy", "mending", "output_limit", "redaction")
} | {"grader.check": "grader.student.check", "grader.client": "grader.student.client"}

DOTTED = re.compile(r"grader(\.[A-Za-z_]\w*)+")


def named(config: Any) -> Iterator[tuple[str, str]]:
    """``(Section.key, dotted name)`` for every ``grader.*`` name among the configuration's values."""
    for section, values in config.items():
        if not hasattr(values, "items"):
            continue
        for key, value in values.items():
            for item in value if isinstance(value, list | tuple) else (value,):
                if isinstance(item, str) and DOTTED.fullmatch(item):
                    yield f"{section}.{key}", item


def check(config: Any) -> None:
    """Raise ``ConfigurationError`` naming the first ``grader.*`` name that does not import, and its new name."""
    for where, name in named(config):
        try:
            import_item(name)
        except (ImportError, AttributeError) as error:
            module = next((old for old in MOVED if name == old or name.startswith(old + ".")), None)
            hint = f"; it moved: write {MOVED[module] + name[len(module) :]!r}" if module else "; check the spelling"
            raise ConfigurationError(
                f"nbgrader_config.py: {where} names {name!r}, which does not import ({error}){hint}"
            ) from error
