"""Whether a dictionary may have changed since it was last found intact, without reading its items.

CPython gives every dictionary a version tag (PEP 509, ``ma_version_tag``): any insertion, deletion
or replacement of a value gives the dictionary a new tag from a counter that only grows, so a tag
equal to one read earlier means that nothing in it changed since. The guard reads the tags of the
namespaces it protects (torch alone has 1,517 names) instead of comparing every item: comparing
touches every value, and the first comparison in a freshly forked kernel copies every page those
values live on (their reference counts change), ~6 ms per kernel.

The tag is not exposed to Python code; it is read through ``ctypes`` from the dictionary's
structure, at an offset this module checks on a dictionary of its own first (``usable``). Where the
check fails (another interpreter, another layout), no reader is made and every comparison is done
in full, as before. A reader is made in the zygote, before the audit hook refuses ``ctypes``' reads
of raw memory (reading one made earlier raises no audit event).
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

# PyDictObject: PyObject_HEAD (reference count, type), ma_used, then ma_version_tag (64 bits).
OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)


class Tag:
    """The version tag of one dictionary, and ``clean``: the tag it had when last found intact."""

    __slots__ = ("_cell", "_owner", "clean")

    def __init__(self, namespace: dict[Any, Any]) -> None:
        self._owner = namespace  # kept alive while its memory is read
        self._cell = ctypes.c_uint64.from_address(id(namespace) + OFFSET)
        self.clean = int(self._cell.value)  # made before the snapshot is copied: intact as of now

    def read(self) -> int:
        """The tag now: read it before comparing the items, and keep it as ``clean`` if they were
        intact (a change made while they were compared then shows at the next check)."""
        return int(self._cell.value)


def _check() -> bool:
    """Whether the tag reads as PEP 509 describes on this interpreter: every change gives a new one."""
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 14):
        return False
    probe: dict[str, Any] = {"a": 1}
    cell = ctypes.c_uint64.from_address(id(probe) + OFFSET)
    seen = [cell.value]
    for change in (
        lambda: probe.__setitem__("a", 2),
        lambda: probe.__setitem__("b", 1),
        lambda: probe.pop("b"),
        lambda: probe.update({"a": 3}),
        lambda: probe.clear(),
    ):
        change()
        seen.append(cell.value)
    return len(set(seen)) == len(seen) and seen == sorted(seen) and seen[0] != 0


usable = _check()


def tag(namespace: dict[Any, Any]) -> Tag | None:
    """A reader of ``namespace``'s version tag, or None where tags cannot be read here."""
    if not usable or type(namespace) is not dict:
        return None
    return Tag(namespace)


def class_dict(cls: type) -> dict[str, Any] | None:
    """The dictionary behind ``vars(cls)`` (a read-only proxy), or None if it cannot be had."""
    import gc

    try:
        found = [d for d in gc.get_referents(vars(cls)) if type(d) is dict]
    except RuntimeError:  # gc's walks are refused in a kernel (audit.deny_hooks)
        return None
    if len(found) != 1 or found[0].keys() != vars(cls).keys():
        return None
    return found[0]
