"""What a notebook changes in a process is taken before and put back after, in this very process."""

from __future__ import annotations

import importlib
import os
import random
import sys
import types
import warnings
from pathlib import Path

import numpy
import pytest
import torch

from grader.engine.forking.process_state import State, remove_added


def test_every_setting_a_notebook_changes_is_put_back_and_nothing_else_is_touched() -> None:
    before = State.take()
    expected_draw = (torch.rand(3), numpy.random.rand(), random.random())
    before.restore()  # the draws above moved the generators: back to where ``before`` found them
    try:
        torch.manual_seed(7)
        numpy.random.seed(7)
        random.seed(7)
        torch.set_default_dtype(torch.float64)
        torch.set_default_device("meta")
        torch.set_printoptions(precision=1)
        torch.set_anomaly_enabled(True)
        numpy.seterr(all="raise")
        numpy.set_printoptions(precision=2)
        warnings.simplefilter("error")
        os.environ["GRADER_TEST_LEFT_BEHIND"] = "1"
        sys.path.append("/nowhere")
        sys.setrecursionlimit(sys.getrecursionlimit() + 7)
    finally:
        differ, forgotten = before.restore()
    assert differ == [] and forgotten == set()
    assert torch.get_default_dtype() == torch.float32 and not torch.is_anomaly_enabled()
    # put back, not merely set to "cpu": a DeviceContext mode would stay on the stack of every call
    assert getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is None
    assert torch._tensor_str.PRINT_OPTS.precision == 4 and numpy.get_printoptions()["precision"] == 8
    assert numpy.geterr()["divide"] == "warn" and "GRADER_TEST_LEFT_BEHIND" not in os.environ
    assert "/nowhere" not in sys.path
    draw = (torch.rand(3), numpy.random.rand(), random.random())
    assert torch.equal(draw[0], expected_draw[0]) and draw[1:] == expected_draw[1:]


def test_a_package_first_imported_after_the_snapshot_is_forgotten_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "imported_by_a_notebook"
    package.mkdir()
    (package / "__init__.py").write_text("from . import part\n")
    (package / "part.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = State.take()
    importlib.import_module("imported_by_a_notebook")
    differ, forgotten = before.restore()
    assert differ == [] and forgotten == {"imported_by_a_notebook"}
    assert not [m for m in sys.modules if m.partition(".")[0] == "imported_by_a_notebook"]


def test_names_added_to_a_guarded_module_are_removed_and_named_submodules_stay() -> None:
    module = types.ModuleType("guarded")
    module.kept = 1
    saved = {"guarded": dict(vars(module))}
    module.helper = lambda: 42
    module.sub = types.ModuleType("guarded.sub")  # what importing a submodule binds in its package
    assert remove_added({"guarded": module}, saved) == ["guarded.helper was added"]
    assert not hasattr(module, "helper") and module.kept == 1 and hasattr(module, "sub")
