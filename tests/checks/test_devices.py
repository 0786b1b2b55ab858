"""grader.checks.devices: device and dtype preservation without a GPU."""

from __future__ import annotations

import pytest
import torch

from grader import checks
from grader.checks.devices import fake_cuda_available


def message(fn, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def linear_args(dtype: torch.dtype, device: str) -> tuple[torch.Tensor, ...]:
    return (
        torch.ones(5, 3, dtype=dtype, device=device),
        torch.ones(3, 4, dtype=dtype, device=device),
        torch.ones(4, dtype=dtype, device=device),
    )


def good_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x @ w + b + torch.zeros(4, dtype=x.dtype, device=x.device)


def cpu_bias_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x @ w + torch.zeros(4)  # a new tensor on the CPU, whatever x's device


def float64_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x.double() @ w.double() + b.double()


def test_fake_cuda_works_on_this_torch_build() -> None:
    assert fake_cuda_available()


def test_device_kept() -> None:
    assert checks.assert_preserves_device(good_linear, linear_args) is None


def test_tensor_created_on_cpu_is_detected_without_a_gpu() -> None:
    text = message(checks.assert_preserves_device, cpu_bias_linear, linear_args)
    assert "Calling cpu_bias_linear() raised FakeTensorDeviceMismatchError" in text
    assert "Likely cause [device-not-kept]" in text


def test_result_returned_on_cpu_is_detected() -> None:
    text = message(checks.assert_preserves_device, lambda x, w, b: (x @ w + b).cpu(), linear_args, name="linear")
    assert text.startswith("linear() was given CUDA inputs, but the result is on device cpu.")


def test_dtype_kept_for_float32_and_float64() -> None:
    assert checks.assert_preserves_dtype(good_linear, linear_args) is None


def test_dtype_change_is_detected() -> None:
    text = message(checks.assert_preserves_dtype, float64_linear, linear_args)
    assert text.startswith("float64_linear() was given torch.float32 inputs, but the result is torch.float64.")
    assert "Likely cause [dtype-changed]" in text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_device_is_checked_too() -> None:
    text = message(checks.assert_preserves_device, cpu_bias_linear, linear_args)
    assert "device-not-kept" in text


def test_simulated_cuda_refuses_numpy_like_a_gpu_tensor() -> None:
    import numpy as np

    t = checks.simulated_cuda(torch.randn(2, 3).requires_grad_())
    assert t.requires_grad
    text = message(checks.call, lambda x: x.detach().numpy(), t, name="to_numpy")
    assert text.startswith("Calling to_numpy() raised TypeError: can't convert cuda:0 device type tensor to numpy.")
    assert "Likely cause [numpy-needs-detach-cpu]" in text
    with pytest.raises(TypeError):
        np.asarray(t.detach())
    for ok in (
        lambda x: x.detach().cpu().numpy(),
        lambda x: x.detach().to("cpu").numpy(),
        lambda x: x.cpu().detach().numpy(),
        lambda x: x.numpy(force=True),
    ):
        array = ok(t)
        assert isinstance(array, np.ndarray) and array.shape == (2, 3)
    assert type(t.detach().cpu()) is torch.Tensor
    assert type(t * 2).__name__ == "_SimulatedCudaTensor"


def test_an_error_that_names_its_own_cause_keeps_it() -> None:
    """An integer tensor asked to require grad is integer-requires-grad, not the check's dtype/device guess."""

    def make(dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
        return (torch.ones(3, dtype=dtype, device=device),)

    def broken(x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(3, dtype=torch.int64).requires_grad_()

    for check in (checks.assert_preserves_dtype, checks.assert_preserves_device):
        with pytest.raises(AssertionError) as caught:
            check(broken, make, name="broken")
        assert "Likely cause [integer-requires-grad]" in str(caught.value)


@pytest.mark.skipif(not fake_cuda_available(), reason="this torch build cannot fake CUDA")
def test_a_function_that_reads_values_is_not_called_device_blind() -> None:
    """Fake CUDA tensors have no values: a correct function using .item() cannot be judged there."""

    def make(dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
        return (torch.ones(3, dtype=dtype, device=device),)

    def scaled(x: torch.Tensor) -> torch.Tensor:
        return x * float(x.sum().item())

    checks.assert_preserves_device(scaled, make, name="scaled")
