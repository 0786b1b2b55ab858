"""The zygote's memory in 2 MiB pages: fewer page-table entries for every fork to copy and every exit to free."""

from __future__ import annotations

import ctypes

MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 * 1024**2


# Collapsing costs about 1 s of CPU and saves about 15 ms a kernel: it pays for itself after some 65
# kernels, so a zygote does it once it has forked that many (a zygote that grades three notebooks never
# pays it), at its first idle moment, or regardless once it has forked four times as many.
HUGE_PAGES_AFTER = 64


class HugePages:
    """When to collapse the zygote's memory into huge pages (``huge_pages``): once, after enough forks."""

    def __init__(self, after: int = HUGE_PAGES_AFTER) -> None:
        self.after = after
        self.forks = 0
        self.done = False

    def forked(self, idle: bool) -> bool:
        """Count a fork; True when this is the moment to collapse (``idle``: no request is waiting)."""
        self.forks += 1
        if self.done or self.forks < self.after or (not idle and self.forks < 4 * self.after):
            return False
        self.done = True
        return True


def huge_pages() -> int:
    """Back the zygote's anonymous memory with 2 MiB pages where the machine allows it; MiB done.

    Importing torch leaves some 280 MiB of anonymous memory (the C++ heap, Python's arenas). Every
    fork copies the page table entry of each 4 KiB page and every exit tears them down: about 20 ms
    of CPU per kernel, an eighth of what a notebook costs. Collapsed into huge pages there is one
    entry per 2 MiB, and fork plus exit take about 5 ms. A child that writes to such a page gets
    its own copy of that 4 KiB page only (the kernel splits the mapping in the child), so nothing
    else changes. Best effort: without transparent huge pages or ``MADV_COLLAPSE`` (Linux before
    6.1) nothing is done. Pages a live kernel still shares with the zygote stay as they are for
    that kernel: the zygote gets collapsed copies.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    done = 0
    for start, end in _anonymous_regions():
        first = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
        last = end & ~(HUGE_PAGE - 1)
        if last - first < HUGE_PAGE:
            continue
        size = last - first
        if libc.madvise(first, size, MADV_HUGEPAGE) == 0 and libc.madvise(first, size, MADV_COLLAPSE) == 0:
            done += size // 1024**2
    return done


def _anonymous_regions() -> list[tuple[int, int]]:
    """The writable private anonymous mappings (and the heap) of this process."""
    regions = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                name = fields[5] if len(fields) > 5 else ""
                if fields[1] == "rw-p" and name in ("", "[heap]"):
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    regions.append((start, end))
    except OSError:
        pass
    return regions
