"""grader.checks.gradients: leaves, graphs and .grad."""

from __future__ import annotations

import pytest
import torch

from grader import checks


def message(fn, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_leaf_accepts_a_parameter() -> None:
    assert checks.assert_leaf(torch.zeros(1, requires_grad=True), name="w") is None


def test_leaf_rejects_a_computed_tensor_and_names_the_misconception() -> None:
    w = torch.zeros(1, requires_grad=True)
    text = message(checks.assert_leaf, w - 0.1, name="w")
    assert text.startswith("w is not a leaf tensor: it has grad_fn=SubBackward0.\n\n")
    assert "Likely cause [update-outside-no-grad]" in text


def test_leaf_rejects_a_tensor_without_grad() -> None:
    text = message(checks.assert_leaf, torch.zeros(1), name="w")
    assert text.startswith("w does not require grad (requires_grad=False); a trainable parameter must.")


def test_graph_attached() -> None:
    x = torch.ones(2, requires_grad=True)
    checks.assert_graph_attached((x * 2).sum(), name="loss")
    text = message(checks.assert_graph_attached, (x * 2).sum().detach(), name="loss")
    assert text.startswith("loss is not attached to the autograd graph (requires_grad=False, grad_fn=None).")
    assert "Likely cause [graph-cut]" in text


def test_no_graph() -> None:
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        checks.assert_no_graph(x * 2, name="prediction")
    text = message(checks.assert_no_graph, x * 2, name="prediction")
    assert text.startswith("prediction records a graph (requires_grad=True, grad_fn=MulBackward0).")
    assert "graph-recorded-in-inference" in text


def test_grad_close_against_the_worked_example() -> None:
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    x.square().mean().backward()
    checks.assert_grad_close(x, x.detach() / 2, name="x")
    x.square().mean().backward()  # accumulates: now twice the gradient
    text = message(checks.assert_grad_close, x, x.detach() / 2, name="x")
    assert text.startswith("x.grad (a tensor of shape (2, 2), dtype torch.float32, device cpu) does not match")
    assert "Mismatched elements: 4 / 4 (100.0%)" in text


def test_missing_grad_says_grad_is_none() -> None:
    x = torch.ones(2, requires_grad=True)
    text = message(checks.assert_grad_close, x, torch.ones(2), name="x")
    assert text.startswith("x.grad is None: no gradient reached x.")
    assert "[graph-cut]" in text


def test_grad_zeroed() -> None:
    x = torch.ones(3, requires_grad=True)
    checks.assert_grad_zeroed(x)
    (x * 2).sum().backward()
    text = message(checks.assert_grad_zeroed, x, name="w")
    assert text == "w.grad was not cleared: 3 / 3 elements are non-zero."
    x.grad.zero_()
    checks.assert_grad_zeroed(x)


def test_numeric_gradient_matches_the_analytic_one_in_float64() -> None:
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    grad = checks.numeric_gradient(lambda t: (t * t).mean(), x)
    assert grad.dtype == torch.float64
    torch.testing.assert_close(grad, x.double() / 2, rtol=1e-6, atol=1e-8)
    cubic = checks.numeric_gradient(lambda t: (t**3 + 2 * t).sum(), torch.tensor([2.0]))
    torch.testing.assert_close(cubic, torch.tensor([14.0], dtype=torch.float64), rtol=1e-6, atol=1e-6)
