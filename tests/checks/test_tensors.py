"""grader.checks.tensors: messages asserted as text."""

from __future__ import annotations

import pytest
import torch

from grader import checks
from grader.checks import misconceptions


def message(fn, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_close_returns_none_within_float32_tolerance() -> None:
    x = torch.rand(3, 4)
    assert checks.assert_close(x * (1 + 1e-6), x, name="w") is None


def test_not_a_tensor() -> None:
    assert message(checks.assert_close, 3.0, torch.tensor(3.0), name="loss") == (
        "loss: expected a torch.Tensor, got a float."
    )


def test_shape_mismatch_names_both_shapes_and_the_hint() -> None:
    text = message(
        checks.assert_close,
        torch.zeros(64, 64),
        torch.zeros(64),
        name="residuals(pred, target)",
        hint=misconceptions.UNINTENDED_BROADCAST,
    )
    assert text.startswith("residuals(pred, target) has shape (64, 64), expected shape (64,).\n\n")
    assert "Likely cause [unintended-broadcast]: " in text


def test_dtype_is_compared_before_values() -> None:
    text = message(checks.assert_close, torch.zeros(2, dtype=torch.float64), torch.ones(2), name="y")
    assert text == "y has dtype torch.float64, expected dtype torch.float32."


def test_device_mismatch() -> None:
    text = message(checks.assert_close, torch.zeros(2), torch.zeros(2, device="meta"), name="y")
    assert text == "y is on device cpu, expected device meta."


def test_value_mismatch_counts_elements_and_reports_the_greatest_difference() -> None:
    expected = torch.tensor([[0.5, -1.0], [1.5, 0.25]])
    actual = expected.clone()
    actual[1, 0] += 0.75
    actual[0, 1] += 0.25
    text = message(checks.assert_close, actual, expected, name="x.grad")
    assert text.splitlines() == [
        "x.grad (a tensor of shape (2, 2), dtype torch.float32, device cpu) does not match the reference.",
        "Mismatched elements: 2 / 4 (50.0%)",
        "Greatest relative difference: 50% at index (1, 0)",
        "Allowed: absolute 1e-05 plus relative 0.0001",
    ]


def test_message_never_contains_the_reference_values() -> None:
    secret = torch.tensor([1234.5678, 8765.4321])
    text = message(checks.assert_close, torch.zeros(2), secret, name="r")
    assert "1234" not in text and "8765" not in text
    assert "Greatest relative difference: 100% at index (1,)" in text


def test_zero_reference_is_never_revealed() -> None:
    """Saying "the reference is 0 there" (or the difference there) would give a hidden element away."""
    text = message(checks.assert_close, torch.tensor([0.0, 0.25]), torch.zeros(2), name="r")
    assert "Mismatched elements: 1 / 2 (50.0%)" in text
    assert "reference is 0" not in text and "0.25" not in text and "difference" not in text


def test_zero_reference_elements_are_skipped_for_the_worst_difference() -> None:
    text = message(checks.assert_close, torch.tensor([0.5, 3.0]), torch.tensor([0.0, 2.0]), name="r")
    assert "Mismatched elements: 2 / 2 (100.0%)" in text
    assert "Greatest relative difference: 50% at index (1,)" in text
    assert "0.5" not in text


def test_nan_is_reported() -> None:
    text = message(checks.assert_close, torch.tensor([float("nan"), 1.0]), torch.tensor([0.0, 1.0]), name="loss")
    assert "Mismatched elements: 1 / 2 (50.0%)" in text
    assert "loss contains 1 NaN or infinite value(s)." in text


def test_scalar_mismatch_has_no_index() -> None:
    text = message(checks.assert_close, torch.tensor(2.0), torch.tensor(1.0), name="loss")
    assert "Greatest relative difference: 100%\n" in text


def test_explicit_tolerance_overrides_default() -> None:
    checks.assert_close(torch.tensor([1.05]), torch.tensor([1.0]), atol=0.1, rtol=0.0)


@pytest.mark.parametrize(
    ("factor", "expected"),
    [(4.0, 4.0), (1.0, 1.0), (2.0, 2.0), (-1.0, -1.0)],
)
def test_scale_factor_recognises_a_constant_multiple(factor: float, expected: float) -> None:
    reference = torch.tensor([[0.5, -1.0], [1.5, 0.25]])
    k = checks.scale_factor(reference * factor, reference)
    assert k == pytest.approx(expected)


def test_scale_factor_is_none_for_unrelated_values() -> None:
    assert checks.scale_factor(torch.tensor([1.0, 1.0]), torch.tensor([1.0, -1.0])) is None
    assert checks.scale_factor(torch.tensor([1.0]), torch.tensor([0.0])) is None
    assert checks.scale_factor(torch.ones(3), torch.ones(2)) is None


def test_metadata_assertions() -> None:
    t = torch.zeros(2, 3, dtype=torch.int64)
    checks.assert_shape(t, (2, 3))
    checks.assert_dtype(t, torch.int64)
    checks.assert_device(t, "cpu")
    assert message(checks.assert_floating, t, name="ids") == (
        "ids has dtype torch.int64, expected a floating-point dtype."
    )
    assert message(checks.assert_shape, [1, 2], (2,), name="v") == "v: expected a torch.Tensor, got a list."


def test_tensors_in_walks_nested_results() -> None:
    a, b, c = torch.zeros(1), torch.ones(1), torch.ones(2)
    assert [t.shape for t in checks.tensors_in((a, [b, {"k": c}], 3.0))] == [a.shape, b.shape, c.shape]
