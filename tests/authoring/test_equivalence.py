"""Equivalent mutants: the source notebook run with a mutant records the same calls, or says what changed."""

from __future__ import annotations

from grader.authoring.equivalence import Cell, compare

ANSWER = """def scaled(x, k=2.0):
    out = x * k
    return out.reshape(-1)"""

CELLS = [
    Cell("other", "setup", "import torch"),
    Cell("answer", "scaled", ANSWER),
    Cell("test", "test_scaled", "r = scaled(torch.ones(2, 2))\nassert r.shape == (4,)"),
]


def test_a_change_the_tests_cannot_observe_is_equivalent_and_a_real_one_is_described() -> None:
    verdicts = compare(
        CELLS,
        {
            "cpu": ("scaled", ANSWER.replace("return out.reshape(-1)", "return out.reshape(-1).cpu()")),
            "view": ("scaled", ANSWER.replace("reshape", "view")),
            "constant": ("scaled", ANSWER.replace("x * k", "x * 3.0")),
            "graph": ("scaled", ANSWER.replace("x * k", "(x * k).requires_grad_()")),
            "raises": ("scaled", ANSWER.replace("x * k", "x @ k")),
        },
    )
    assert verdicts["cpu"].equivalent and verdicts["view"].equivalent
    assert not verdicts["constant"].equivalent
    assert (
        verdicts["constant"].difference
        == "call 1 of scaled() from cell test_scaled: what it returned differs from the original's"
    )
    assert not verdicts["graph"].equivalent  # requires_grad is part of what a test can observe
    assert verdicts["raises"].difference.startswith("call 1 of scaled() from cell test_scaled raised TypeError: ")


def test_a_mutant_that_never_ends_is_stopped_and_not_equivalent() -> None:
    looping = ANSWER.replace("    out = x * k", "    while True:\n        pass")
    (verdict,) = compare(CELLS, {"loop": ("scaled", looping)}, timeout=3).values()
    assert not verdict.equivalent
    assert verdict.difference == "the notebook ran past 3 s"
