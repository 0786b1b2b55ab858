"""grader.checks.costs: large results made on ``meta``, small ones real, and a real call when values are needed."""

from __future__ import annotations

from collections import UserDict
from typing import Any

import pytest
import torch

from grader import checks
from grader.checks import misconceptions

IMAGES = (32, 3, 224, 224)


def data() -> dict[str, torch.Tensor]:
    return {
        "images": torch.rand(*IMAGES),
        "zeros": torch.zeros(IMAGES),
        "full": torch.full(IMAGES, 0.5),
        "channels_last": torch.rand(32, 224, 224, 3).permute(0, 3, 1, 2),
        "tokens": torch.randint(0, 1000, (16, 128)),
        "small": torch.randn(64, 12),
    }


def test_call_on_meta_makes_only_the_large_tensors_on_meta() -> None:
    got = checks.call_on_meta(data)
    assert {k for k, t in got.items() if t.is_meta} == {"images", "zeros", "full", "channels_last"}
    assert tuple(got["images"].shape) == IMAGES and got["images"].dtype == torch.float32
    assert tuple(got["channels_last"].shape) == IMAGES
    assert got["tokens"].device.type == "cpu" and got["tokens"].dtype == torch.int64
    assert bool(((got["tokens"] >= 0) & (got["tokens"] < 1000)).all())  # small tensors have their values


def test_call_on_meta_keeps_what_the_code_asked_for() -> None:
    def made() -> list[torch.Tensor]:
        return [
            torch.rand(IMAGES, dtype=torch.float64),
            torch.randint(256, IMAGES, dtype=torch.uint8),
            torch.zeros(IMAGES, device="cpu"),  # a device of its own: made as written
            torch.ones(IMAGES, requires_grad=True),
        ]

    doubles, bytes_, on_cpu, leaf = checks.call_on_meta(made)
    assert doubles.is_meta and doubles.dtype == torch.float64
    assert bytes_.is_meta and bytes_.dtype == torch.uint8
    assert not on_cpu.is_meta
    assert leaf.is_meta and leaf.requires_grad


def test_call_on_meta_calls_again_when_the_code_needs_values() -> None:
    calls: list[str] = []

    def needs_values() -> dict[str, Any]:
        images = torch.rand(*IMAGES)
        calls.append(images.device.type)
        return {"images": images, "mean": float(images.mean())}  # .item() of a meta tensor raises

    got = checks.call_on_meta(needs_values)
    assert calls == ["meta", "cpu"]
    assert not got["images"].is_meta and 0.45 < got["mean"] < 0.55


def test_call_on_meta_calls_again_when_a_small_result_came_from_a_large_one() -> None:
    def tokens_from_images() -> dict[str, torch.Tensor]:
        images = torch.rand(*IMAGES)
        return {"images": images, "tokens": (images[:16, 0, 0, :128] * 1000).long()}

    got = checks.call_on_meta(tokens_from_images)
    assert not got["tokens"].is_meta  # the test reads the tokens' values: they must be real
    assert bool(((got["tokens"] >= 0) & (got["tokens"] < 1000)).all())


def test_call_on_meta_looks_inside_any_mapping_or_sequence() -> None:
    def in_a_user_dict() -> UserDict[str, Any]:
        images = torch.rand(*IMAGES)
        return UserDict(images=images, tokens=[(images[:16, 0, 0, :128] * 1000).long()])

    got = checks.call_on_meta(in_a_user_dict)
    assert not got["images"].is_meta and not got["tokens"][0].is_meta


def test_call_on_meta_reports_an_error_as_call_does() -> None:
    def broken() -> torch.Tensor:
        return torch.rand(*IMAGES).view(-1, 5)

    with pytest.raises(AssertionError) as info:
        checks.call_on_meta(broken, name="make_data_tensors")
    text = str(info.value)
    assert text.startswith(
        "Calling make_data_tensors() raised RuntimeError: shape '[-1, 5]' is invalid for input of size"
    )
    assert "meta" not in text
    assert text.endswith(str(misconceptions.SHAPE_MISMATCH))


def test_call_on_meta_leaves_no_mode_behind() -> None:
    checks.call_on_meta(data)
    assert not torch.rand(*IMAGES).is_meta
    with pytest.raises(AssertionError):
        checks.call_on_meta(lambda: 1 / 0)
    assert not torch.rand(*IMAGES).is_meta
