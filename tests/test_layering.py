"""Leaves stay leaves (issue 16): the engine imports nothing from the service, the web app not torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grader

PACKAGE = Path(grader.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute, relative imports resolved against its package."""
    package = ".".join(("grader", *path.relative_to(PACKAGE).parent.parts))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_engine_imports_nothing_from_the_service() -> None:
    offending = {
        str(path.relative_to(PACKAGE)): sorted(m for m in _imports(path) if m.startswith("grader.service"))
        for path in (PACKAGE / "engine").rglob("*.py")
    }
    assert {path: modules for path, modules in offending.items() if modules} == {}


def test_importing_the_web_app_does_not_import_torch_or_the_checks() -> None:
    heavy = "('torch', 'grader.checks')"
    code = f"import sys; import grader.service.web.app; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


# Which stage packages of grader.service each may import: the data flow, and nothing backwards.
# (config and hooks are the composition at the top: any package may read the configuration.)
ALLOWED = {
    "records": set(),
    "rules": {"records"},
    "grading": {"records", "rules"},
    "dashboard": {"records", "rules", "grading"},
    "queue": {"records", "rules", "grading", "hooks"},
    "lti": {"records", "rules", "grading"},
    "web": {"records", "rules", "grading", "dashboard", "queue", "lti"},
}


def test_the_stage_packages_import_only_along_the_data_flow() -> None:
    service = PACKAGE / "service"
    assert {p.name for p in service.iterdir() if (p / "__init__.py").exists()} == set(ALLOWED)
    wrong = {}
    for name, allowed in ALLOWED.items():
        for path in (service / name).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            used = {m.split(".")[2] for m in _imports(path) if m.startswith("grader.service.") and m.count(".") >= 2}
            backwards = used - allowed - {name, "config"}
            if backwards:
                wrong[str(path.relative_to(PACKAGE))] = sorted(backwards)
    assert wrong == {}
