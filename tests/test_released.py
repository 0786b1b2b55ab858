"""The session's cache of releases (``tests/released.py``): one generation per set of inputs for the whole run."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests import released


def _course(root: Path) -> Path:
    (root / "source" / "ps1").mkdir(parents=True)
    (root / "source" / "ps1" / "ps1.ipynb").write_text("{}")
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    return root


def _fake_generate(log: Path) -> Callable[[Path, Iterable[str], str | None], None]:
    def generate(root: Path, names: Iterable[str], db_url: str | None = None) -> None:
        with log.open("a") as out:
            out.write(f"{root.name}\n")
        time.sleep(1.0)  # long enough for the other asker to ask meanwhile
        for name in names:
            (root / "release" / name).mkdir(parents=True)
            (root / "release" / name / f"{name}.ipynb").write_text(f"released by {root.name}")
        (root / "gradebook.db").write_text("gradebook")

    return generate


def _generated_once_and_both_got_it(log: Path, roots: list[Path]) -> None:
    assert len(log.read_text().splitlines()) == 1  # generated once
    made = {(root / "release" / "ps1" / "ps1.ipynb").read_text() for root in roots}
    assert len(made) == 1 and all((root / "gradebook.db").read_text() == "gradebook" for root in roots)


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own, and nbgrader replaced by ``_fake_generate`` writing to the returned log."""
    generated = tmp_path / "generated.log"
    monkeypatch.setattr(released, "uncached", _fake_generate(generated))
    monkeypatch.setattr(released, "_folder", tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    return generated


def test_two_processes_asking_at_once_generate_the_release_once_and_both_get_it(tmp_path: Path, log: Path) -> None:
    """As two xdist workers do: the second waits on the first's lock, then copies what it kept."""
    roots = [_course(tmp_path / name) for name in ("first", "second")]
    children = []
    for root in roots:
        pid = os.fork()
        if pid == 0:  # the child: ask for the release, and say how it went in its exit code
            code = 1
            try:
                released.generate_releases(root, ["ps1"])
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    assert [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children] == [0, 0]
    _generated_once_and_both_got_it(log, roots)


def test_two_threads_asking_at_once_wait_on_the_same_lock_file(tmp_path: Path, log: Path) -> None:
    """Each call opens the lock file anew, so ``flock`` excludes threads of one process too."""
    roots = [_course(tmp_path / name) for name in ("first", "second")]
    failures: list[BaseException] = []

    def ask(root: Path) -> None:
        try:
            released.generate_releases(root, ["ps1"])
        except BaseException as error:  # reported below, on the test's own thread
            failures.append(error)

    threads = [threading.Thread(target=ask, args=(root,)) for root in roots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    _generated_once_and_both_got_it(log, roots)


def test_a_copy_that_failed_partway_does_not_stop_the_next_call(tmp_path: Path, log: Path) -> None:
    """A staging folder this process left behind (a copy that raised) is cleared, not tripped over."""
    root = _course(tmp_path / "first")
    key = released._inputs(root, ("ps1",))
    leftover = tmp_path / "cache" / f"{key}.staging-{os.getpid()}" / "release" / "ps1"
    leftover.mkdir(parents=True)
    (leftover / "half-copied.ipynb").write_text("{")
    released.generate_releases(root, ["ps1"])
    kept = tmp_path / "cache" / key
    assert sorted(p.name for p in (kept / "release" / "ps1").iterdir()) == ["ps1.ipynb"]
    second = _course(tmp_path / "second")
    released.generate_releases(second, ["ps1"])
    _generated_once_and_both_got_it(log, [root, second])
