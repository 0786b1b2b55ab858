"""Shared fixtures: the stock-nbgrader grading of every fixture submission (session-wide), and the
session's cache of course releases (``tests/released.py``)."""

import pytest

from tests import released
from tests.graded import graded

__all__ = ["graded"]


def pytest_configure(config: pytest.Config) -> None:
    released.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    released.uninstall()
