"""A dependency's start-up import made on first use (``grader.deferred_imports``): every command starts
3 s sooner, and what jsonschema validates does not change."""

from __future__ import annotations

import json
import subprocess
import sys

DEFER = "from grader import deferred_imports; assert deferred_imports.defer()"


def _python(code: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert proc.stderr == "", proc.stderr
    return proc.stdout.splitlines()


def test_nbgrader_and_nbformat_import_without_building_rfc3987s_parsers() -> None:
    code = f"import sys; {DEFER}; import nbgrader.api, nbformat, jsonschema; print('lark' in sys.modules)"
    assert _python(code) == ["False"]


IRI_FORMATS = """
import json, sys
{setup}
import jsonschema
checker = jsonschema.FormatChecker()
values = ["http://\u4f8b\u3048.jp/a?b#c", "not an iri", "//host/path", ":::", "https://x/%zz", 3]
print(json.dumps([[checker.conforms(v, f) for f in ("iri", "iri-reference")] for v in values]))
print(type(sys.modules["rfc3987_syntax"]).__name__, "lark" in sys.modules)
"""


def test_the_iri_formats_validate_as_they_do_without_the_stand_in() -> None:
    deferred = _python(IRI_FORMATS.format(setup=DEFER))
    plain = _python(IRI_FORMATS.format(setup=""))
    verdicts = json.loads(plain[0])
    assert {v for pair in verdicts for v in pair} == {True, False}  # the values tell the formats apart
    assert json.loads(deferred[0]) == verdicts
    # the first check imported the real module, which replaced the stand-in
    assert deferred[1] == plain[1] == "module True"


def test_other_names_reach_the_real_module_and_its_spec_is_the_real_ones() -> None:
    code = (
        f"import importlib.util, sys; {DEFER}; import rfc3987_syntax; "
        "print(importlib.util.find_spec('rfc3987_syntax').origin.endswith('rfc3987_syntax/__init__.py')); "
        "print('lark' in sys.modules); "
        "print(rfc3987_syntax.is_valid_syntax_iri('http://x/y'), rfc3987_syntax.is_valid_syntax_iri('::')); "
        "print('lark' in sys.modules)"
    )
    assert _python(code) == ["True", "False", "True False", "True"]


def test_it_changes_nothing_once_jsonschema_is_imported() -> None:
    code = "import jsonschema; from grader import deferred_imports; print(deferred_imports.defer())"
    assert _python(code) == ["False"]


def test_the_command_line_builds_every_verbs_arguments_without_their_heavy_imports() -> None:
    """Each verb imports what it needs when it runs: ``grader check`` does not wait for matplotlib (copydetect),
    nor ``grader autograde``'s zygote for SQLAlchemy and nbformat."""
    heavy = ("sqlalchemy", "nbformat", "jsonschema", "nbgrader", "matplotlib", "copydetect", "torch")
    code = f"import sys; from grader import cli; cli.build_parser(); print([m for m in {heavy!r} if m in sys.modules])"
    assert _python(code) == ["[]"]
