"""Debian's Chromium for the browser tests (Playwright drives it): where it is, its flags, where
screenshots go, and the rule for a machine without it.

Without ``/usr/bin/chromium`` (``apt-get install chromium``) a browser test module is skipped with
that reason, unless ``GRADER_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where it fails instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path(os.environ.get("GRADER_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("GRADER_ARTIFACTS", Path(__file__).resolve().parent / "artifacts"))
# As root on a machine without network: no sandbox (root), and none of Chromium's own calls home.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Call at the top of a browser test module, before importing Playwright."""
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} not found: apt-get install chromium (CI installs it)"
    if os.environ.get("GRADER_REQUIRE_BROWSER") == "1":
        raise RuntimeError(reason)
    pytest.skip(reason, allow_module_level=True)


@contextmanager
def launched() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
