"""Shared fixtures and the suite's layout over two worker processes.

- ``graded``: the stock-nbgrader grading of every fixture submission, once a session (``tests/graded.py``).
- The session's cache of course releases (``tests/released.py``).
- The course secret of per-student variants (``GRADER_VARIANT_SECRET``), fixed for the run.
- Units of work for pytest-xdist (``-n 2`` in ``pyproject.toml``; ``-n 0`` runs in one process). Much
  of the suite's time is spent waiting (services starting, deadlines, kernels killed, browsers), so
  two processes overlap. Each test file is one unit, kept in one process, so its module fixtures are
  set up once. The files that use ``graded`` (``GRADED_FILES``, checked at collection against what
  each test asks for) are one unit, so the stock grading runs once; being the largest, it goes
  first. The files that use the session's ``dashboard`` service are one unit, run in file order
  (``DASHBOARD_FILES``). The files that use the machine's own brokers are one unit, so they never run at the same
  time. The scheduler reads the unit from the test's file (``pytest_xdist_make_scheduler``): xdist's
  own ``loadgroup`` marks a group by an ``@group`` suffix that pytest 9 renders as
  ``[params]@group]`` for a parametrized test, which xdist then reads as no group. A file
  missing from ``GRADED_FILES`` stops collection with its name; under xdist that error shows
  only as an INTERNALERROR naming a "crashitem", because the worker stops before running anything.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests import released
from tests.graded import graded

__all__ = ["graded"]

GRADED = "graded"
GRADED_FILES = frozenset(
    {
        "tests/course/test_fairness.py",
        "tests/course/test_feedback_html_inert.py",
        "tests/course/test_no_points_for_nothing.py",
        "tests/engine/test_autograde.py",
        "tests/engine/test_hostile_hooks.py",
        "tests/service/web/test_api.py",
        "tests/service/web/test_exchange.py",
        "tests/service/web/test_hardening.py",
        "tests/plugins/test_mending.py",
    }
)
# The files that use the session's `dashboard` service: one unit, so its tests run in one process in file order,
# as in one process (test_pages.py leaves an attempt graded under a late policy it then removes, which a regrade
# dry run in test_browser.py would otherwise count).
DASHBOARD = "dashboard"
DASHBOARD_FILES = frozenset(
    {"tests/service/web/test_browser.py", "tests/service/web/test_pages.py", "tests/service/web/test_export_all.py"}
)
BROKERS = "brokers"
BROKER_FILES = ("tests/service/queue/", "tests/benchmarks/test_scale_benchmark.py", "tests/engine/test_claims.py")


def unit(path: str) -> str:
    """The unit of work a test file belongs to: ``graded``, ``brokers`` or the file itself."""
    if path in GRADED_FILES:
        return GRADED
    if path in DASHBOARD_FILES:
        return DASHBOARD
    if path.startswith(BROKER_FILES):
        return BROKERS
    return path


# The course secret that draws each student's variant values (grader.variants): one fixed secret for the whole
# run, so that stock nbgrader, the engine and the service draw the same values for the same student.
TEST_VARIANT_SECRET = "tests-only-variant-secret-0123456789abcdef"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("GRADER_VARIANT_SECRET", TEST_VARIANT_SECRET)
    released.install(worker=hasattr(config, "workerinput"))
    _alembic_head_once()


def _alembic_head_once() -> None:
    """nbgrader stamps each new gradebook with its migrations' head, which it asks a new ``alembic heads`` process
    for (~1.2 s of CPU) every time: dozens of times a run in the test processes. The answer depends only on the
    installed nbgrader, so each test process asks once (nbgrader's own commands and the service still ask)."""
    import functools

    from nbgrader import api

    if not hasattr(api.get_alembic_version, "cache_info"):
        api.get_alembic_version = functools.cache(api.get_alembic_version)


def pytest_unconfigure(config: pytest.Config) -> None:
    released.uninstall()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shared = ((GRADED, GRADED_FILES, "GRADED_FILES"), (DASHBOARD, DASHBOARD_FILES, "DASHBOARD_FILES"))
    for fixture, listed, name in shared:
        using = {_file(item) for item in items if fixture in getattr(item, "fixturenames", ())}
        if using - listed:  # (a listed file none of whose selected tests uses it is fine: `-k`, node ids)
            raise pytest.UsageError(
                f"tests/conftest.py: {name} must list every test file that uses the `{fixture}` fixture; "
                f"add {sorted(using - listed)}"
            )
    # stable: the two largest units first (the stock grading, then the brokers'), then in order, so that
    # neither is what one worker is left running alone at the end
    items.sort(key=lambda item: {GRADED: 0, BROKERS: 1}.get(unit(_file(item)), 2))


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid.split("::")[0])

    return ByUnit(config, log)
