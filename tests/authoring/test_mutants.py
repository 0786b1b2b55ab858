"""The mutation operators, each on the kind of line a PyTorch student gets wrong; messages as text."""

from __future__ import annotations

import pytest

from grader.authoring.mutants import derive

STEP = """def train_step(w, x, y, lr=0.1):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
    w.grad.zero_()
    return loss.item()"""


def diffs(code: str, operator: str) -> list[tuple[str, ...]]:
    mutants, skipped = derive({"cell": code})
    assert skipped == []
    return [m.diff for m in mutants if m.operator == operator]


@pytest.mark.parametrize(
    ("operator", "diff"),
    [
        ("sign-flipped", ("- w -= lr * w.grad", "+ w += lr * w.grad")),
        ("grad-never-zeroed", ("- w.grad.zero_()", "+ pass")),
        ("grad-zeroed-early", ("+ w.grad.zero_()", "- w.grad.zero_()")),
        ("sum-for-mean", ("- loss = ((x @ w - y) ** 2).mean()", "+ loss = ((x @ w - y) ** 2).sum()")),
        ("detached", ("- loss = ((x @ w - y) ** 2).mean()", "+ loss = ((x @ w - y) ** 2).mean().detach()")),
        ("backward-forgotten", ("- loss.backward()", "+ pass")),
        ("argument-ignored", ("- w -= lr * w.grad", "+ w -= 0.1 * w.grad")),
        (
            "no-grad-removed",
            ("- with torch.no_grad():", "- w -= lr * w.grad", "+ w -= lr * w.grad"),
        ),
        (
            "no-grad-around",
            ("- loss = ((x @ w - y) ** 2).mean()", "+ with torch.no_grad():", "+ loss = ((x @ w - y) ** 2).mean()"),
        ),
    ],
)
def test_each_operator_changes_one_place_of_a_training_step(operator: str, diff: tuple[str, ...]) -> None:
    assert diff in diffs(STEP, operator)


def test_the_remaining_operators() -> None:
    code = """def f(x, w, b, n):
    out = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    for i in range(n):
        out = out + x.clone().add(1)
    y = (x @ w + b).to(x.device)
    return y.reshape(2, -1).sum(dim=0)"""
    assert ("- for i in range(n):", "+ for i in range(n - 1):") in diffs(code, "loop-off-by-one")
    assert ("- y = (x @ w + b).to(x.device)", "+ y = (x @ w).to(x.device)") in diffs(code, "term-dropped")
    assert ("- y = (x @ w + b).to(x.device)", "+ y = x @ w + b") in diffs(code, "cast-removed")
    assert any(d[-1] == "+ out = torch.zeros(3, requires_grad=True)" for d in diffs(code, "cast-removed"))
    assert ("- out = out + x.clone().add(1)", "+ out = out + x.add(1)") in diffs(code, "in-place")
    assert ("- out = out + x.clone().add(1)", "+ out = out + x.clone().add_(1)") in diffs(code, "in-place")
    assert ("- return y.reshape(2, -1).sum(dim=0)", "+ return y.view(2, -1).sum(dim=0)") in diffs(
        code, "view-for-reshape"
    )
    assert ("- return y.reshape(2, -1).sum(dim=0)", "+ return y.reshape(2, -1).sum(dim=1)") in diffs(code, "other-dim")
    assert ("- return y.reshape(2, -1).sum(dim=0)", "+ return y.reshape(2, -1).mean(dim=0)") in diffs(
        code, "mean-for-sum"
    )
    assert any(d[-1].endswith(".double()") for d in diffs(code, "cast-added"))
    dropped = diffs(code, "requires-grad-dropped")
    assert (
        "- out = torch.zeros(3, dtype=torch.float64, requires_grad=True)",
        "+ out = torch.zeros(3, dtype=torch.float64)",
    ) in dropped


def test_a_mutant_knows_its_cell_function_line_and_fitting_misconceptions() -> None:
    mutants, _ = derive({"train_step": STEP})
    (never,) = [m for m in mutants if m.operator == "grad-never-zeroed"]
    assert (never.cell, never.function, never.line, never.original) == ("train_step", "train_step", 6, "w.grad.zero_()")
    assert "grad-not-zeroed" in never.codes
    assert "w.grad.zero_()" not in never.code and "pass" in never.code
    ids = [m.id for m in mutants]
    assert ids == [f"m{i:03d}" for i in range(1, len(ids) + 1)]
    assert len({m.code for m in mutants}) == len(mutants), "no two mutants are the same code"


def test_scalars_are_not_detached_or_cast() -> None:
    mutants, _ = derive({"c": "def f(x):\n    return x.sum().item()"})
    assert [m for m in mutants if m.operator in ("detached", "cast-added")] == []


def test_an_unparsable_cell_is_reported_and_skipped_and_the_others_are_mutated() -> None:
    mutants, skipped = derive(
        {"magic": "%timeit f(1)\ndef f(x):\n    return x - 1", "plain": "def g(x):\n    return x - 1"}
    )
    assert [(s.cell, s.error) for s in skipped] == [("magic", "line 1: invalid syntax")]
    assert {m.cell for m in mutants} == {"plain"}


def test_at_most_the_limit_per_cell_and_every_operator_gets_a_turn() -> None:
    code = "\n".join(f"def f{i}(x, w):\n    return (x @ w - {i}).mean()" for i in range(30))
    mutants, _ = derive({"many": code}, limit_per_cell=12)
    assert len(mutants) == 12
    assert {"sign-flipped", "sum-for-mean", "detached", "cast-added"} <= {m.operator for m in mutants}
