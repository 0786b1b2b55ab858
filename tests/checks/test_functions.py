"""grader.checks.functions: custom autograd Functions, their backward, saved tensors and devices."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.autograd import Function

from grader import checks


def message(fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


class Cube(Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2


class CubeSetupContext(Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return x * x * x

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad_output


class CubeGradOutputIgnored(Cube):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x**2


class CubeWrongDerivative(Cube):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x


class CubeOnAttribute(Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.x = x
        return x**3

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        return grad_output * 3 * ctx.x**2


class CubeOnPrivateCopy(CubeOnAttribute):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.x = x.clone()
        return x**3


class CubeUnderNoGrad(Cube):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        with torch.no_grad():
            return grad_output * 3 * x**2


class CubeGradientFloat64(Cube):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (grad_output * 3 * x**2).double()


class CubeMaskOnCpu(Cube):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2 * torch.ones(x.shape)


class Leaky(Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, slope: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return torch.where(x > 0, x, slope * x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad_output * torch.where(x > 0, 1.0, ctx.slope), None


class LeakyOneGradient(Leaky):
    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        return grad_output * torch.where(x > 0, 1.0, ctx.slope)


class LeakySavesSlope(Leaky):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, slope: float) -> torch.Tensor:
        ctx.save_for_backward(x, slope)
        return torch.where(x > 0, x, slope * x)


class LeakyBooleanMask(Leaky):
    """Correct, but boolean-mask indexing cannot run on fake tensors (data-dependent shape)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        grad = grad_output.clone()
        grad[x < 0] *= ctx.slope
        return grad, None


def x64(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64).requires_grad_()


def cuda_args(dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
    return (torch.ones(2, 3, dtype=dtype, device=device, requires_grad=True),)


def test_a_function_class_is_recognised() -> None:
    assert checks.assert_function_class(Cube, "Cube") is None
    text = message(checks.assert_function_class, lambda x: x**3, "Cube")
    assert text == "Cube must be a class derived from torch.autograd.Function, but it is a function."
    text = message(checks.assert_function_class, torch.nn.Linear, "Cube")
    assert text == "Cube must be a class derived from torch.autograd.Function, but it is the class Linear."


@pytest.mark.parametrize("function", [Cube, CubeSetupContext, CubeOnPrivateCopy])
def test_correct_cubes_pass_every_check(function: type[Function]) -> None:
    x = x64(2, 3)
    checks.assert_gradcheck(function.apply, (x,))
    checks.assert_uses_grad_output(function.apply, (x,))
    checks.assert_saved_for_backward(function.apply, x.detach())
    checks.assert_function_keeps_device(function.apply, cuda_args)
    assert x.grad is None  # the checks use torch.autograd.grad: nothing is left in .grad


def test_gradcheck_failure_says_which_jacobian_and_never_the_values() -> None:
    text = message(checks.assert_gradcheck, CubeWrongDerivative.apply, (x64(2, 3),))
    assert text.startswith(
        "torch.autograd.gradcheck(CubeWrongDerivative.apply, ...) failed on float64 input(s) of shape (2, 3): "
        "backward() disagrees with finite differences of forward().\n"
        "gradcheck: Jacobian mismatch for output 0 with respect to input 0.\n\n"
    )
    assert "Likely cause [backward-wrong-derivative]" in text
    assert "numerical" not in text and "analytical" not in text and "tensor(" not in text


def test_gradcheck_names_an_ignored_grad_output() -> None:
    text = message(checks.assert_gradcheck, CubeGradOutputIgnored.apply, (x64(4),), name="Cube.apply")
    assert text.startswith("torch.autograd.gradcheck(Cube.apply, ...) failed on float64 input(s) of shape (4,)")
    assert "Likely cause [grad-output-ignored]" in text


def test_gradgradcheck_names_a_backward_autograd_cannot_see() -> None:
    assert checks.assert_gradgradcheck(Cube.apply, (x64(4),)) is None
    assert checks.assert_gradgradcheck(CubeSetupContext.apply, (x64(4),)) is None
    text = message(checks.assert_gradgradcheck, CubeUnderNoGrad.apply, (x64(4),), name="Cube.apply")
    assert text.startswith(
        "torch.autograd.gradgradcheck(Cube.apply, ...) failed on float64 input(s) of shape (4,): the gradient "
        "backward() returns cannot be differentiated again correctly.\ngradgradcheck: "
    )
    assert "Likely cause [backward-not-differentiable]" in text
    text = message(checks.assert_gradgradcheck, CubeOnPrivateCopy.apply, (x64(4),), name="Cube.apply")
    assert "Likely cause [backward-not-differentiable]" in text  # the copy made in forward is detached


def test_ignored_grad_output_is_named() -> None:
    text = message(checks.assert_uses_grad_output, CubeGradOutputIgnored.apply, (x64(3),), name="Cube.apply")
    assert text.startswith(
        "backward() of Cube.apply returned the same gradient for x whether grad_output was all ones or other "
        "values: it does not use grad_output.\n\nLikely cause [grad-output-ignored]: "
    )
    assert checks.assert_uses_grad_output(CubeWrongDerivative.apply, (x64(3),)) is None  # wrong, but uses it


def test_too_few_gradients_and_a_gradient_for_a_float_are_named() -> None:
    text = message(checks.assert_gradcheck, LeakyOneGradient.apply, (x64(5), 0.2), name="LeakyReLU.apply")
    assert text.startswith(
        "torch.autograd.gradcheck(LeakyReLU.apply, ...) on float64 input(s) of shape (5,) raised RuntimeError: "
        "function LeakyOneGradientBackward returned an incorrect number of gradients (expected 2, got 1)\n\n"
    )
    assert "Likely cause [backward-gradient-count]" in text
    y = Leaky.apply(x := x64(3), 0.2)
    grads = checks.backward_grads(y, [x], name="backward() of LeakyReLU")
    assert len(grads) == 1 and grads[0] is not None


def test_a_float_given_to_save_for_backward_is_named() -> None:
    x = torch.ones(3, requires_grad=True)  # with no input requiring grad, nothing is saved at all
    text = message(checks.call_function, LeakySavesSlope.apply, x, 0.1, name="LeakyReLU.apply")
    assert text.startswith(
        "Calling LeakyReLU.apply() raised TypeError: save_for_backward can only save variables, but argument 1 "
        "is of type float\n\nLikely cause [save-non-tensor]: "
    )


def test_tensor_kept_on_ctx_is_caught_when_changed_in_place() -> None:
    text = message(checks.assert_saved_for_backward, CubeOnAttribute.apply, torch.tensor([1.0, -2.0, 0.5]))
    assert text.startswith(
        "x was changed in place after CubeOnAttribute.apply() and before backward(): autograd did not notice, "
        "and backward() silently used the changed values"
    )
    assert "Likely cause [not-saved-for-backward]" in text


def test_saved_check_works_for_a_function_with_a_float_argument() -> None:
    assert checks.assert_saved_for_backward(Leaky.apply, torch.randn(2, 3), 0.2) is None


def test_backward_without_graph_is_reported() -> None:
    text = message(checks.backward_grads, torch.ones(3), [x64(3)], name="backward() of Cube")
    assert text.startswith("backward() of Cube: the forward result is not attached to the autograd graph")
    assert "Likely cause [graph-cut]" in text


def test_backward_creating_a_cpu_tensor_is_caught_without_a_gpu() -> None:
    text = message(checks.assert_function_keeps_device, CubeMaskOnCpu.apply, cuda_args, name="Cube.apply")
    assert text.startswith("backward() of Cube.apply on CUDA inputs raised FakeTensorDeviceMismatchError")
    assert "Likely cause [device-not-kept]" in text


def test_gradient_of_another_dtype_is_caught_before_autograd_casts_it() -> None:
    text = message(checks.assert_function_keeps_device, CubeGradientFloat64.apply, cuda_args, name="Cube.apply")
    assert text.startswith(
        "backward() of Cube.apply returned a torch.float64 gradient for the torch.float32 x; a gradient has the "
        "dtype of its input.\n\nLikely cause [dtype-changed]: "
    )


def test_forward_only_device_check_and_unjudgeable_code() -> None:
    def to_cpu(x: torch.Tensor) -> torch.Tensor:
        return Cube.apply(x).cpu()  # type: ignore[no-any-return]

    text = message(checks.assert_function_keeps_device, to_cpu, cuda_args, name="Cube.apply", backward=False)
    assert text.startswith("Cube.apply() was given CUDA inputs, but the result is on device cpu.")
    # boolean-mask indexing has no fake-tensor shape: not judged on the fake GPU, not failed either
    args = lambda dtype, device: (torch.ones(2, 3, dtype=dtype, device=device, requires_grad=True), 0.2)  # noqa: E731
    assert checks.assert_function_keeps_device(LeakyBooleanMask.apply, args) is None


def test_function_hint_prefers_the_specific_table() -> None:
    wrong_device = RuntimeError("Function XBackward returned an invalid gradient at index 0 - expected device cuda:0")
    assert checks.function_hint(wrong_device) is checks.misconceptions.DEVICE_NOT_KEPT
    wrong_shape = RuntimeError("Function XBackward returned an invalid gradient at index 0 - got [] but expected")
    assert checks.function_hint(wrong_shape) is checks.misconceptions.GRADIENT_SHAPE
    assert checks.function_hint(ValueError("something else")) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_backward_is_checked_too() -> None:
    text = message(checks.assert_function_keeps_device, CubeMaskOnCpu.apply, cuda_args)
    assert "device-not-kept" in text
