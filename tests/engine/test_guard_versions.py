"""The guard skips a namespace whose version tag did not move: every change still shows at the next test.

``Guard.check`` compares a protected module's or class's items only when its dictionary's version
tag (``grader/engine/inside/versions.py``) differs from the one it had when last found intact. These tests
make the changes that the skipping could miss if the tags were read wrongly: a change after several
clean checks, the same change again after it was put back, a change to a class, an added attribute,
a change undone by the cell itself (not reported, as before).
"""

from __future__ import annotations

import types

import pytest

from grader.engine.inside import versions

from .conftest import Session

TEST = "import torch\nassert torch.allclose(torch.ones(2), torch.ones(2))\n"


def test_tags_are_read_on_this_interpreter() -> None:
    """Where they cannot be, the guard compares in full (slower, as safe); here they must work."""
    assert versions.usable


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("a", object()),
        lambda d: d.__setitem__("new", 1),
        lambda d: d.pop("a"),
        lambda d: d.update(a=2),
        lambda d: d.setdefault("other", 1),
        lambda d: d.popitem(),
        lambda d: d.clear(),
    ],
)
def test_every_change_to_a_dictionary_moves_its_tag(change: types.FunctionType) -> None:
    namespace = {"a": 1}
    tag = versions.tag(namespace)
    assert tag is not None and tag.read() == tag.clean
    change(namespace)
    assert tag.read() != tag.clean


def test_setting_the_same_value_again_changes_nothing_and_keeps_the_tag() -> None:
    value = object()
    namespace = {"a": value}
    tag = versions.tag(namespace)
    assert tag is not None
    namespace["a"] = value
    assert tag.read() == tag.clean


def test_a_class_tag_watches_the_dictionary_behind_vars() -> None:
    class Probe:
        def method(self) -> int:
            return 1

    found = versions.class_dict(Probe)
    assert found is not None and found.keys() == vars(Probe).keys()
    tag = versions.tag(found)
    assert tag is not None
    Probe.method = lambda self: 2  # type: ignore[method-assign]
    assert tag.read() != tag.clean


def test_a_change_after_clean_checks_is_caught(session: Session) -> None:
    for _ in range(3):  # each test finds everything intact: the tags are marked clean
        assert session.run(TEST, test=True).tampered == ()
    session.run("import torch\ntorch.allclose = lambda *a, **k: True\n")
    assert session.run(TEST, test=True).tampered == ("torch.allclose was replaced",)
    assert session.run(TEST, test=True).tampered == ()


def test_the_same_change_made_again_is_caught_again(session: Session) -> None:
    session.run("import torch\n_fake = lambda *a, **k: True\ntorch.allclose = _fake\n")
    assert session.run(TEST, test=True).tampered == ("torch.allclose was replaced",)
    session.run("torch.allclose = _fake\n")
    assert session.run(TEST, test=True).tampered == ("torch.allclose was replaced",)


def test_changes_to_a_class_are_caught_each_time(session: Session) -> None:
    assert session.run(TEST, test=True).tampered == ()
    session.run("import torch\ntorch.Tensor.__eq__ = lambda self, other: True\n")
    assert session.run(TEST, test=True).tampered == ("torch.Tensor.__eq__ was added",)
    session.run("torch.nn.Module.helper = 1\n")
    assert session.run(TEST, test=True).tampered == ("torch.nn.modules.module.Module.helper was added",)


def test_a_change_in_a_module_the_tests_reach_deep_inside_is_caught(session: Session) -> None:
    assert session.run(TEST, test=True).tampered == ()
    session.run("import grader.checks._report as _r\n_r.call = lambda *a, **k: None\n")
    assert session.run(TEST, test=True).tampered == ("grader.checks._report.call was replaced",)


def test_a_change_the_cell_undid_itself_is_not_reported(session: Session) -> None:
    assert session.run(TEST, test=True).tampered == ()
    session.run("import torch\n_real = torch.allclose\ntorch.allclose = None\ntorch.allclose = _real\n")
    assert session.run(TEST, test=True).tampered == ()
