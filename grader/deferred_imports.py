"""A dependency's import that this project's processes pay at start-up and almost never use, made on first use.

``jsonschema`` imports ``rfc3987_syntax`` when it is installed (``jupyter-events`` asks for it,
through ``jsonschema[format-nongpl]``), and ``rfc3987_syntax`` builds three Earley parsers from
its grammar when it is imported: about 3 s of CPU on this project's machines, in every process
that imports ``nbformat``, ``nbgrader`` or ``jsonschema``.  It serves one thing only, the
``iri`` and ``iri-reference`` formats of a ``jsonschema.FormatChecker``, which neither
nbformat's nor nbgrader's validation asks for.

``defer()`` puts a stand-in in ``sys.modules`` before ``jsonschema`` is imported.  Its
``is_valid_syntax`` (the one name ``jsonschema`` takes) imports the real module on its first
call and hands the call on; any other name read from it imports the real module too.  What is
validated, and how, does not change; only when the parsers are built.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

DEFERRED = "rfc3987_syntax"
_lock = threading.Lock()


def _real() -> types.ModuleType:
    """The real module, imported the first time it is needed (the stand-in leaves ``sys.modules``)."""
    with _lock:
        module = sys.modules.get(DEFERRED)
        if isinstance(module, _StandIn):
            del sys.modules[DEFERRED]
        return importlib.import_module(DEFERRED)


class _StandIn(types.ModuleType):
    """``rfc3987_syntax`` until something uses it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # import machinery probing dunders: the stand-in has none
        return getattr(_real(), name)


def _is_valid_syntax(term: str, value: str) -> bool:
    return bool(_real().is_valid_syntax(term, value))


def defer() -> bool:
    """Install the stand-in; ``False`` where it would change nothing (the module is not installed,
    or already imported, or ``jsonschema`` already took it)."""
    if DEFERRED in sys.modules or "jsonschema" in sys.modules:
        return False
    spec = importlib.util.find_spec(DEFERRED)
    if spec is None:
        return False
    stand_in = _StandIn(DEFERRED, f"{DEFERRED}, imported on first use ({__name__})")
    stand_in.__spec__ = spec  # what importlib.util.find_spec answers while the stand-in is in sys.modules
    stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[DEFERRED] = stand_in
    return True
