"""Inside a kernel: the audit hook that refuses what would watch or rewrite later cells (``deny_hooks``).

Installed before the first student cell (it cannot be removed), it refuses the hooks that would
watch or rewrite later cells or reach into memory: ``sys.settrace``/``sys.setprofile``, new audit
hooks, ``gc``'s object walks, ``ctypes``' reads of raw memory and of the interpreter's own C API;
and any way of reaching a frame (and from it the locals and code of whoever called) asked for by a
cell's code, except, during a test cell, by the test cell's own code.  The other defences are the
guard's (``guard.py``).  This module is itself one of those the guard keeps intact
(``watched.MODULES``): the hook reads its constants from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

DENIED_EVENTS = frozenset(
    {
        "sys.addaudithook",
        "sys.settrace",
        "sys.setprofile",
        "sys._current_frames",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        # ctypes' raw memory reads and object-from-address; ctypes.memmove raises no event (see SECURITY.md)
        "ctypes.cdata",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.PyObj_FromPtr",
    }
)
# Ways to get hold of a frame (and from it the locals and code of whoever called): while a student's
# code is on the stack, these are refused.
FRAME_EVENTS = frozenset({"sys._getframe"})
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "__code__"})
CELL_PREFIX = "<ipython-input-"
HELPERS = (f"{os.sep}inspect.py", f"{os.sep}traceback.py")  # the standard library's ways to hand out frames


def deny_hooks() -> Callable[[bool], None]:
    """Install the audit hook (it cannot be removed); returns the switch that marks a test cell running.

    Refused from then on: new audit hooks, tracing and profiling, ``gc``'s object walks, ctypes'
    raw memory reads; and any way of reaching a frame asked for by a cell's code (directly, or
    through ``inspect``/``traceback``), except, during a test cell, by the test cell's own code.
    Libraries a cell calls may still look at frames (torch does, to record where a call came from).
    """
    testing = [False]
    busy = [False]
    # The hook's own copies: a cell that rebinds this module's names (or the builtins) within one cell, before
    # the guard puts them back, changes nothing the installed hook reads.
    denied, frame_events, frame_attributes = DENIED_EVENTS, FRAME_EVENTS, FRAME_ATTRIBUTES
    helpers, cell_prefix, getframe, kind, length = HELPERS, CELL_PREFIX, sys._getframe, type, len

    def asked_by_a_cell() -> str | None:
        """The notebook cell asking for a frame, if a cell's code asks (directly or through
        ``inspect``/``traceback``), and which cell runs at the bottom of the stack; else None."""
        frame = getframe(2)  # 0: here, 1: audit, 2: who asked (the audited call itself is C)
        while frame is not None and frame.f_code.co_filename.endswith(helpers):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None or not frame.f_code.co_filename.startswith(cell_prefix):
            return None
        asking = frame.f_code.co_filename
        bottom = asking
        while frame is not None:
            if frame.f_code.co_filename.startswith(cell_prefix):
                bottom = frame.f_code.co_filename
            frame = frame.f_back  # type: ignore[assignment]
        return None if testing[0] and asking == bottom else asking

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event in denied or (event == "ctypes.dlsym" and kind(args[0]).__name__ == "PyDLL"):
            raise RuntimeError(f"{event} is not available while a notebook is graded")
        if busy[0] or not (
            event in frame_events
            or (event == "object.__getattr__" and length(args) > 1 and args[1] in frame_attributes)
        ):
            return
        busy[0] = True
        try:
            asking = asked_by_a_cell()
        finally:
            busy[0] = False
        if asking is None:
            return
        what = event if event in frame_events else f".{args[1]}"
        raise RuntimeError(f"{what} is not available to a notebook's code while it is graded")

    def switch(on: bool) -> None:
        testing[0] = on

    sys.addaudithook(audit)
    return switch
