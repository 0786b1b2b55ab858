"""grader.checks.manual: shortcuts are caught at run time, not by grepping text."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from grader import checks


def message(block) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(AssertionError) as info, checks.assert_manual("fit()"):
        block()
    return str(info.value)


x, y = torch.rand(20, 1), torch.rand(20, 1)


def test_hand_written_loop_passes() -> None:
    with checks.assert_manual("fit()"):
        w = torch.zeros(1, requires_grad=True)
        # torch.optim.SGD and nn.MSELoss in a comment trip nothing
        loss = ((x * w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad  # type: ignore[operator]


def test_optimizer_step_is_caught() -> None:
    def block() -> None:
        w = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        ((x * w - y) ** 2).mean().backward()
        opt.step()

    text = message(block)
    assert text.startswith("fit() called torch.optim.SGD.step.")
    assert "Likely cause [not-manual]" in text


def test_mse_loss_is_caught_even_when_imported_under_another_name() -> None:
    loss_fn = torch.nn.MSELoss()
    mse = F.mse_loss
    assert message(lambda: loss_fn(x, y)).startswith("fit() called torch.nn.functional.mse_loss.")
    assert message(lambda: mse(x, y)).startswith("fit() called torch.nn.functional.mse_loss.")


def test_linear_layer_and_lstsq_are_caught() -> None:
    layer = torch.nn.Linear(1, 1)
    assert message(lambda: layer(x)).startswith("fit() called torch.nn.functional.linear.")
    assert message(lambda: torch.linalg.lstsq(x, y)).startswith("fit() called torch.linalg.lstsq.")


def test_hook_is_removed_after_the_block() -> None:
    with checks.assert_manual("fit()"):
        pass
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    opt.step()  # outside the block: allowed
