"""grader.plugins.kernel_logging in the kernels stock ``nbgrader autograde`` starts (isolation.PrivateExecute)."""

from __future__ import annotations

import nbformat

from grader.plugins.isolation import PrivateExecute
from tests.engine.test_guard import LOGGING_CELL


def test_logging_goes_to_stdout_in_stock_nbgraders_kernels() -> None:
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(LOGGING_CELL), nbformat.v4.new_code_cell("print(sorted(dir()))")]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    executed, _ = PrivateExecute(timeout=60).preprocess(nb, {})
    outputs = executed.cells[0].outputs
    assert [o for o in outputs if o.get("name") == "stderr"] == []
    assert "".join(o.text for o in outputs if o.get("name") == "stdout") == (
        "WARNING:root:no bias given: using zeros\nERROR:student.helpers:named logger\n"
    )
    assert "_grader_logging" not in executed.cells[1].outputs[0].text
