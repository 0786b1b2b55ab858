"""grader.checks._report: calling student code, quietly, and the import boundary."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import pytest
import torch

from grader import checks
from grader.checks import misconceptions


def message(fn, *args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_call_returns_the_result() -> None:
    assert checks.call(lambda a, b: a + b, 1, b=2) == 3


def test_call_turns_a_torch_error_into_a_named_misconception() -> None:
    def make() -> torch.Tensor:
        return torch.tensor([1, 2, 3], requires_grad=True)

    text = message(checks.call, make)
    assert text.startswith("Calling make() raised RuntimeError: Only Tensors of floating point")
    assert text.endswith(str(misconceptions.INTEGER_REQUIRES_GRAD))


def test_call_recognises_view_on_a_non_contiguous_tensor() -> None:
    images = torch.rand(8, 32, 32, 3).permute(0, 3, 1, 2)
    text = message(checks.call, lambda t: t.view(8, -1), images, name="flatten_images")
    assert text.startswith("Calling flatten_images() raised RuntimeError: view size is not compatible")
    assert "[view-non-contiguous]" in text


def test_call_with_an_explicit_hint_and_an_unknown_error() -> None:
    def broken() -> None:
        raise KeyError("w")

    assert message(checks.call, broken, hint="check the dictionary keys") == (
        "Calling broken() raised KeyError: 'w'\n\ncheck the dictionary keys"
    )
    assert message(checks.call, broken) == "Calling broken() raised KeyError: 'w'"


def test_call_lets_assertion_errors_through_unchanged() -> None:
    def asserting() -> None:
        raise AssertionError("student's own assert")

    assert message(checks.call, asserting) == "student's own assert"


def test_call_silences_warnings_raised_by_student_code() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert checks.call(lambda: float((x * x).sum())) == 5.0
    assert caught == []


def test_every_misconception_has_a_unique_code_and_reads_as_a_cause() -> None:
    codes = [m.code for m in misconceptions.ALL]
    assert len(codes) == len(set(codes)) >= 17
    assert str(misconceptions.GRAD_ACCUMULATED).startswith("Likely cause [grad-not-zeroed]: gradients accumulate")


def test_importing_checks_loads_only_stdlib_and_torch_and_writes_no_stderr() -> None:
    # Whatever torch itself loads is torch's business; grader.checks may add only itself and stdlib modules.
    code = (
        "import sys, torch; before = set(sys.modules); import grader.checks; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(sorted(new - set(sys.stdlib_module_names)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "['grader']"
    assert proc.stderr == ""


def test_checks_source_imports_nothing_but_stdlib_torch_and_itself() -> None:
    import ast
    from pathlib import Path

    folder = Path(checks.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top == "torch" or top in sys.stdlib_module_names, f"{path.name} imports {name}"


@pytest.mark.parametrize(
    ("raise_it", "code"),
    [
        (lambda: torch.zeros(2, dtype=torch.float64) @ torch.zeros(2, 3), "dtype-changed"),
        (lambda: torch.zeros(2, requires_grad=True).grad.zero_(), "grad-before-backward"),  # type: ignore[union-attr]
        (lambda: float(torch.zeros(2, requires_grad=True).grad), "grad-before-backward"),  # type: ignore[arg-type]
        (lambda: torch.zeros(3) + torch.zeros(4), "shape-mismatch"),
        (lambda: torch.zeros(2, 3) @ torch.zeros(4, 5), "shape-mismatch"),
    ],
)
def test_raw_pytorch_errors_are_named(raise_it: Any, code: str) -> None:
    with pytest.raises(AssertionError) as caught:
        checks.call(raise_it, name="f")
    assert f"Likely cause [{code}]" in str(caught.value)
