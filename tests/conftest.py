"""Shared fixtures and the suite's layout over two worker processes.

- ``graded``: the stock-nbgrader grading of every fixture submission, once a session (``tests/graded.py``).
- The session's cache of course releases (``tests/released.py``).
- Groups for pytest-xdist (``-n 2 --dist loadgroup``, the default in ``pyproject.toml``): the suite runs
  in two processes, and much of its time is spent waiting (services starting, deadlines, kernels
  killed, browsers), so the two overlap. Each test file is one group, kept in one process, so its
  module fixtures are set up once. Every file with a test that uses ``graded`` joins one group, so the
  stock grading runs once, in one process; it goes first, being the longest. The files that use the
  machine's own brokers (Redis, RabbitMQ) form one group, so they never run at the same time.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests import released
from tests.graded import graded

__all__ = ["graded"]

GRADED = "graded"
BROKERS = "brokers"
BROKER_FILES = (
    "tests/service/queue/",
    "tests/benchmarks/test_scale_benchmark.py",
    "tests/engine/test_claims.py",
)


def pytest_configure(config: pytest.Config) -> None:
    released.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    released.uninstall()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    graded_files = {item.nodeid.split("::")[0] for item in items if GRADED in getattr(item, "fixturenames", ())}

    def group(item: pytest.Item) -> str:
        path = item.nodeid.split("::")[0]
        if path in graded_files:
            return GRADED
        if path.startswith(BROKER_FILES):
            return BROKERS
        return path

    for item in items:
        item.add_marker(pytest.mark.xdist_group(group(item)))
    if getattr(config.option, "loadgroup", False) and hasattr(items[0] if items else None, "_id"):
        _suffix_groups(items, group)
    items.sort(key=lambda item: group(item) != GRADED)  # stable: the longest group first, the rest in order


def _suffix_groups(items: list[pytest.Item], group: Callable[[pytest.Item], str]) -> None:
    """pytest-xdist 3.8 tells the controller each test's group by appending ``@group`` to ``item._nodeid``;
    pytest 9 reads the id from ``item._id``, so the groups never arrive and the files (and the stock
    grading) are spread over both workers. Append it where pytest 9 reads it."""
    from _pytest.nodeid import coerce_node_id

    for item in items:
        item._id = coerce_node_id(f"{item.nodeid}@{group(item)}")
