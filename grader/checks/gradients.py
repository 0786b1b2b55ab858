"""Assertions about autograd state: leaves, graphs and .grad."""

from __future__ import annotations

from typing import Any

import torch

from ._report import Hint, fail
from .misconceptions import GRAD_READ_BEFORE_BACKWARD, GRAPH_CUT, NO_GRAD_TRACKED, UPDATE_TRACKED
from .tensors import assert_close, assert_tensor


def assert_leaf(value: Any, name: str = "parameter", hint: Hint = UPDATE_TRACKED) -> None:
    """A trainable parameter: a leaf that requires grad and has no grad_fn."""
    assert_tensor(value, name, hint)
    if not value.requires_grad:
        fail(f"{name} does not require grad (requires_grad=False); a trainable parameter must.", hint)
    if not value.is_leaf or value.grad_fn is not None:
        fail(f"{name} is not a leaf tensor: it has grad_fn={type(value.grad_fn).__name__}.", hint)


def assert_graph_attached(value: Any, name: str = "result", hint: Hint = GRAPH_CUT) -> None:
    """A computed tensor that backward() can differentiate through."""
    assert_tensor(value, name, hint)
    if not value.requires_grad or value.grad_fn is None:
        fail(
            f"{name} is not attached to the autograd graph (requires_grad={value.requires_grad}, grad_fn=None).",
            hint,
        )


def assert_no_graph(value: Any, name: str = "result", hint: Hint = NO_GRAD_TRACKED) -> None:
    """A tensor produced without recording a graph."""
    assert_tensor(value, name, hint)
    if value.requires_grad or value.grad_fn is not None:
        recorded = type(value.grad_fn).__name__ if value.grad_fn is not None else "None"
        fail(f"{name} records a graph (requires_grad=True, grad_fn={recorded}).", hint)


def assert_has_grad(value: Any, name: str = "parameter", hint: Hint = GRAD_READ_BEFORE_BACKWARD) -> None:
    assert_tensor(value, name, hint)
    if value.grad is None:
        fail(f"{name}.grad is None: no gradient reached {name}.", hint)


def assert_grad_close(
    value: Any,
    expected: torch.Tensor,
    name: str = "parameter",
    *,
    rtol: float | None = None,
    atol: float | None = None,
    hint: Hint = None,
    missing_hint: Hint = GRAPH_CUT,
) -> None:
    """``value.grad`` exists and matches an independently computed reference."""
    assert_has_grad(value, name, missing_hint)
    assert_close(value.grad, expected, name=f"{name}.grad", rtol=rtol, atol=atol, hint=hint)


def assert_grad_zeroed(value: Any, name: str = "parameter", hint: Hint = None) -> None:
    """``value.grad`` is None or all zeros."""
    assert_tensor(value, name, hint)
    grad = value.grad
    if grad is None:
        return None
    with torch.no_grad():
        nonzero = int((grad != 0).sum())
    if nonzero:
        fail(f"{name}.grad was not cleared: {nonzero} / {grad.numel()} elements are non-zero.", hint)


def numeric_gradient(fn: Any, x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Central finite differences of a scalar function in float64.

    An independent reference for hidden tests: it never calls backward(), so a
    student's autograd mistake cannot hide in it.
    """
    x64 = x.detach().to(torch.float64).clone()
    grad = torch.zeros_like(x64)
    flat, out = x64.reshape(-1), grad.reshape(-1)
    with torch.no_grad():
        for i in range(flat.numel()):
            old = float(flat[i])
            flat[i] = old + eps
            up = float(fn(x64))
            flat[i] = old - eps
            down = float(fn(x64))
            flat[i] = old
            out[i] = (up - down) / (2 * eps)
    return grad
