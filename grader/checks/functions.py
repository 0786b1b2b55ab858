"""Does a custom ``torch.autograd.Function`` differentiate correctly?

``assert_gradcheck`` compares its backward with finite differences (float64);
``assert_uses_grad_output`` and ``assert_saved_for_backward`` name the two
classic mistakes a gradcheck only reports as a Jacobian mismatch; and
``assert_function_keeps_device`` runs forward and backward on fake CUDA
tensors (and on real CUDA when present).  Errors autograd raises about a
Function (a wrong number of gradients, a float given to save_for_backward)
are named too: ``function_hint``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ._report import Hint, describe, diagnose, error_line, fail, quiet
from .devices import fake_cuda_available
from .misconceptions import (
    BACKWARD_GRADIENT_COUNT,
    BACKWARD_NOT_DIFFERENTIABLE,
    BACKWARD_WRONG_DERIVATIVE,
    DEVICE_NOT_KEPT,
    DTYPE_CHANGED,
    GRAD_OUTPUT_IGNORED,
    GRADIENT_SHAPE,
    GRAPH_CUT,
    NOT_SAVED_FOR_BACKWARD,
    SAVED_NON_TENSOR,
    Misconception,
)
from .tensors import tensors_in

# Substrings of autograd's errors about a Function and the misconception each reveals (checked before
# the general table in _report; the first match wins).
_FUNCTION_ERRORS: tuple[tuple[str, Misconception], ...] = (
    ("returned an incorrect number of gradients", BACKWARD_GRADIENT_COUNT),
    ("but the corresponding forward input was not a variable", BACKWARD_GRADIENT_COUNT),
    ("save_for_backward can only save variables", SAVED_NON_TENSOR),
    ("expected device", DEVICE_NOT_KEPT),
    ("expected type", DTYPE_CHANGED),
    ("returned an invalid gradient at index", GRADIENT_SHAPE),
)

INPLACE_ERROR = "modified by an inplace operation"
"""Autograd's error when a tensor saved with save_for_backward changed before backward: the right outcome."""


def function_hint(error: BaseException) -> Misconception | None:
    """The misconception an exception raised by forward, backward or autograd reveals, if any."""
    return diagnose(error, _FUNCTION_ERRORS)


def _label(fn: Any, name: str | None) -> str:
    if name:
        return name
    owner = getattr(fn, "__self__", None)  # Cube.apply: a classmethod bound to the class
    if isinstance(owner, type):
        return f"{owner.__name__}.{getattr(fn, '__name__', 'apply')}"
    return str(getattr(fn, "__name__", "the function"))


def _grad_fn(output: torch.Tensor, name: str) -> Any:
    """``output.grad_fn``; autograd refuses to give it for some outputs (an input returned as-is, then changed)."""
    try:
        return output.grad_fn
    except Exception as error:
        fail(
            f"{name}: reading the result's grad_fn raised {type(error).__name__}: {error_line(error)}",
            function_hint(error),
        )


def call_function(fn: Callable[..., Any], *args: Any, name: str | None = None, hint: Hint = None) -> Any:
    """``fn(*args)`` quietly; an exception becomes an AssertionError naming the misconception it reveals."""
    label = _label(fn, name)
    try:
        with quiet():
            return fn(*args)
    except AssertionError:
        raise
    except Exception as error:
        fail(
            f"Calling {label}() raised {type(error).__name__}: {error_line(error)}",
            hint if hint is not None else function_hint(error),
        )


def assert_function_class(value: Any, name: str) -> None:
    """``value`` is a class derived from ``torch.autograd.Function``."""
    if not (isinstance(value, type) and issubclass(value, torch.autograd.Function)):
        what = f"a {type(value).__name__}" if not isinstance(value, type) else f"the class {value.__name__}"
        fail(f"{name} must be a class derived from torch.autograd.Function, but it is {what}.")


def backward_grads(
    output: Any,
    inputs: Sequence[torch.Tensor],
    grad_output: torch.Tensor | None = None,
    name: str = "backward()",
    hint: Hint = None,
) -> tuple[torch.Tensor | None, ...]:
    """The gradients of ``output`` (weighted by ``grad_output``, ones by default) with respect to ``inputs``.

    Runs autograd's engine (``torch.autograd.grad``, so nothing is left in ``.grad``); an error raised
    by the student's backward, or by autograd about what it returned, fails with its misconception.
    """
    if not isinstance(output, torch.Tensor):
        fail(f"{name}: expected the forward result to be a torch.Tensor, got {describe(output)}.", hint)
    if _grad_fn(output, name) is None:
        fail(
            f"{name}: the forward result is not attached to the autograd graph (grad_fn=None), "
            "although an input requires grad.",
            hint if hint is not None else GRAPH_CUT,
        )
    weights = torch.ones_like(output) if grad_output is None else grad_output
    try:
        with quiet():
            grads = torch.autograd.grad(output, list(inputs), weights, allow_unused=True)
    except Exception as error:
        fail(
            f"{name} raised {type(error).__name__}: {error_line(error)}",
            hint if hint is not None else function_hint(error),
        )
    return tuple(grads)


def _gradcheck(
    check: Callable[..., bool],
    fn: Callable[..., Any],
    inputs: tuple[Any, ...],
    label: str,
    what: str,
    hint: Hint,
    ignored_hint: bool,
) -> None:
    from torch.autograd.gradcheck import GradcheckError

    shapes = ", ".join(f"{tuple(t.shape)}" for t in tensors_in(list(inputs)))
    call = f"torch.autograd.{check.__name__}({label}, ...)"
    try:
        with quiet():
            check(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True)
    except GradcheckError as error:
        # Its first line says which Jacobian disagrees; the Jacobians themselves (values) follow and stay out.
        first = error_line(error).split("numerical:")[0].rstrip(" ,")
        if ignored_hint and _ignores_grad_output(fn, inputs, label):
            hint = GRAD_OUTPUT_IGNORED
        fail([f"{call} failed on float64 input(s) of shape {shapes}: {what}.", f"{check.__name__}: {first}."], hint)
    except Exception as error:
        fail(
            f"{call} on float64 input(s) of shape {shapes} raised {type(error).__name__}: {error_line(error)}",
            function_hint(error),
        )


def assert_gradcheck(
    fn: Callable[..., Any],
    inputs: tuple[Any, ...],
    name: str | None = None,
    hint: Hint = BACKWARD_WRONG_DERIVATIVE,
) -> None:
    """``torch.autograd.gradcheck(fn, inputs)`` passes: backward agrees with finite differences.

    ``inputs`` are float64 tensors that require grad (other arguments, a float, pass through). The
    message names the inputs by shape and says which Jacobian disagrees, never their values; a
    backward that ignores ``grad_output`` is named as such.
    """
    what = "backward() disagrees with finite differences of forward()"
    _gradcheck(torch.autograd.gradcheck, fn, inputs, _label(fn, name), what, hint, True)


def assert_gradgradcheck(
    fn: Callable[..., Any],
    inputs: tuple[Any, ...],
    name: str | None = None,
    hint: Hint = BACKWARD_NOT_DIFFERENTIABLE,
) -> None:
    """``torch.autograd.gradgradcheck(fn, inputs)`` passes: autograd can differentiate backward itself.

    Run it after ``assert_gradcheck``: with a correct backward, what is left to fail is a backward
    computed outside autograd (``torch.no_grad()``, detached tensors, a copy made in forward).
    """
    what = "the gradient backward() returns cannot be differentiated again correctly"
    _gradcheck(torch.autograd.gradgradcheck, fn, inputs, _label(fn, name), what, hint, False)


def _ignores_grad_output(fn: Callable[..., Any], args: tuple[Any, ...], label: str) -> bool:
    """Whether a gradcheck failure is the classic one: backward returns dy/dx, never multiplied by grad_output."""
    try:
        assert_uses_grad_output(fn, args, name=label)
    except AssertionError as error:
        return _IGNORED in str(error)
    return False


_IGNORED = "it does not use grad_output"


def assert_uses_grad_output(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    name: str | None = None,
    hint: Hint = GRAD_OUTPUT_IGNORED,
) -> None:
    """Backward multiplies by ``grad_output``: two different upstream gradients give different results.

    ``args`` hold at least one tensor that requires grad; the upstream gradients are all ones and
    random values in [0.5, 2), so an implementation returning only the local derivative dy/dx is caught.
    """
    label = _label(fn, name)
    inputs = [t for t in tensors_in(list(args)) if t.requires_grad]
    out = call_function(fn, *args, name=label)
    ones = backward_grads(out, inputs, None, name=f"backward() of {label}")
    out = call_function(fn, *args, name=label)
    if not isinstance(out, torch.Tensor):
        fail(f"{label}() returned {describe(out)}, expected a tensor.")
    generator = torch.Generator().manual_seed(1234)
    upstream = (torch.rand(out.shape, generator=generator, dtype=torch.float64) * 1.5 + 0.5).to(out)
    weighted = backward_grads(out, inputs, upstream, name=f"backward() of {label}")
    for i, (a, b) in enumerate(zip(ones, weighted, strict=True)):
        if a is None or b is None or a.shape != b.shape:
            continue
        with torch.no_grad():
            if not bool(a.any()):
                continue  # a zero local derivative: nothing to tell apart
            same = bool(torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-9))
        if same:
            which = "x" if len(inputs) == 1 else f"input {i}"
            fail(
                f"backward() of {label} returned the same gradient for {which} whether grad_output was all "
                f"ones or other values: {_IGNORED}.",
                hint,
            )


def assert_saved_for_backward(
    fn: Callable[..., Any],
    x: torch.Tensor,
    *rest: Any,
    name: str | None = None,
    change: Callable[[torch.Tensor], Any] = lambda t: t.mul_(-2.0),
    hint: Hint = NOT_SAVED_FOR_BACKWARD,
) -> None:
    """A tensor changed in place after forward never silently changes the gradient.

    ``fn(x, *rest)`` runs on a computed tensor (a copy of ``x``, as a caller's activation would be),
    which ``change`` then modifies in place before backward. Autograd must notice and raise (what
    ``ctx.save_for_backward`` gives), or backward must return the gradient the unchanged input gets
    from the same ``fn`` (what a private copy gives); a gradient computed from the changed values fails.
    """
    label = _label(fn, name)
    leaf = x.detach().clone().requires_grad_(True)
    reference = call_function(fn, leaf * 1.0, *rest, name=label)
    (expected,) = backward_grads(reference, [leaf], name=f"backward() of {label}")
    computed = leaf * 1.0
    out = call_function(fn, computed, *rest, name=label)
    with torch.no_grad():
        change(computed)
    if not isinstance(out, torch.Tensor) or _grad_fn(out, f"{label}()") is None:
        fail(f"{label}() returned {describe(out)} without a grad_fn: there is no backward to check.", GRAPH_CUT)
    try:
        with quiet():
            (got,) = torch.autograd.grad(out, [leaf], torch.ones_like(out), allow_unused=True)
    except RuntimeError as error:
        if INPLACE_ERROR in str(error):
            return None  # autograd saw the saved tensor change: what save_for_backward is for
        fail(f"backward() of {label} raised {type(error).__name__}: {error_line(error)}", function_hint(error))
    if expected is None or got is None:
        fail(f"backward() of {label} gave no gradient for x.", GRAPH_CUT)
    with torch.no_grad():
        same = bool(torch.allclose(got.double(), expected.double(), rtol=1e-6, atol=1e-9, equal_nan=True))
    if not same:
        fail(
            f"x was changed in place after {label}() and before backward(): autograd did not notice, and "
            "backward() silently used the changed values (its gradient differs from the one for the "
            "unchanged x).",
            hint,
        )


def _unjudgeable() -> tuple[type[BaseException], ...]:
    """Fake tensors carry no data: code that reads values (.item()) or makes data-dependent shapes (x[x < 0])
    cannot run on them, and where its results would live cannot be judged that way; other tests judge it."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

    return (DataDependentOutputException, DynamicOutputShapeException)


def _on_device(
    fn: Callable[..., Any],
    make_args: Callable[[torch.dtype, str], tuple[Any, ...]],
    label: str,
    device: str,
    what: str,
    engine: bool,
    backward: bool,
    hint: Hint,
) -> None:
    args = make_args(torch.float32, device)
    try:
        with quiet():
            out = fn(*args)
    except _unjudgeable():
        return None
    except Exception as error:
        fail(
            f"Calling {label}() on {what} inputs raised {type(error).__name__}: {error_line(error)}",
            function_hint(error) or hint,
        )
    if not isinstance(out, torch.Tensor):
        fail(f"{label}() returned {describe(out)} for {what} inputs, expected a tensor.")
    if out.device.type != device:
        fail(f"{label}() was given {what} inputs, but the result is on device {out.device}.", hint)
    if not backward:
        return None
    grad_fn = _grad_fn(out, f"{label}() on {what} inputs")
    if grad_fn is None:
        fail(f"{label}() on {what} inputs that require grad returned a tensor without grad_fn.", GRAPH_CUT)
    try:
        with quiet():
            # the Function's own backward, its gradients as it returns them (autograd's engine would quietly
            # cast a gradient to its input's dtype, and needs a real GPU)
            raw = grad_fn.apply(torch.ones_like(out))
            if engine:
                inputs = [t for t in tensors_in(list(args)) if t.requires_grad]
                again = fn(*args)
                torch.autograd.grad(again, inputs, torch.ones_like(again), allow_unused=True)
    except _unjudgeable():
        return None
    except Exception as error:
        fail(
            f"backward() of {label} on {what} inputs raised {type(error).__name__}: {error_line(error)}",
            function_hint(error) or hint,
        )
    grads = list(raw) if isinstance(raw, tuple | list) else [raw]
    for i, (arg, grad) in enumerate(zip(args, grads, strict=False)):
        if not (isinstance(arg, torch.Tensor) and isinstance(grad, torch.Tensor)):
            continue
        which = "x" if i == 0 else f"argument {i}"
        if grad.device.type != device:
            fail(
                f"backward() of {label} was given {what} tensors, but its gradient for {which} is on device "
                f"{grad.device}.",
                hint,
            )
        if grad.dtype != arg.dtype:
            fail(
                f"backward() of {label} returned a {grad.dtype} gradient for the {arg.dtype} {which}; a gradient "
                "has the dtype of its input.",
                DTYPE_CHANGED,
            )


def assert_function_keeps_device(
    fn: Callable[..., Any],
    make_args: Callable[[torch.dtype, str], tuple[Any, ...]],
    name: str | None = None,
    backward: bool = True,
    hint: Hint = DEVICE_NOT_KEPT,
) -> None:
    """Forward (and, with ``backward``, backward) of a custom Function keep tensors on the input's device.

    ``make_args(dtype, device)`` builds the arguments (with ``backward``, inputs that require grad); ``fn``
    returns a tensor straight from a Function's ``apply``. Runs on fake CUDA tensors everywhere (meta
    tensors where this torch build cannot fake CUDA) and on real CUDA when a GPU is present. Code that
    needs the data (``.item()``, boolean-mask indexing) cannot run on fake tensors and is not judged there.
    """
    label = _label(fn, name)
    if torch.cuda.is_available():
        _on_device(fn, make_args, label, "cuda", "CUDA", True, backward, hint)
    if not fake_cuda_available():
        _on_device(fn, make_args, label, "meta", "meta-device", False, backward, hint)
        return None
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        _on_device(fn, make_args, label, "cuda", "CUDA", False, backward, hint)
