"""Leaves stay leaves (issue 16): the engine imports nothing from the service, the web app not torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

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
    "marking": {"records", "rules", "grading"},
    "web": {"records", "rules", "grading", "dashboard", "queue", "lti", "marking"},
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


# The engine's parts (grader/engine/__init__.py has the map) and which others each may import: the trust boundary.
# Code in `inside` runs beside the student's code in a forked kernel, so it reaches nothing of the grader's side;
# the zygote (`forking`) never the parent's bookkeeping; no part imports a door, and no door another.
ENGINE_MAY_IMPORT = {
    "inside": set(),
    "forking": {"inside", "protocol", "limits"},
    "kernels": {"inside", "forking", "protocol", "limits"},
    "bookkeeping": {"inside", "kernels", "protocol", "limits"},
    "protocol": set(),
    "limits": set(),
    "engine": {"inside", "kernels", "bookkeeping", "protocol", "limits"},
    "loans": {"bookkeeping", "protocol", "limits"},
    "doors": {"engine", "loans", "kernels", "bookkeeping", "protocol", "limits"},
}
DOORS = {"batch", "lend"}


def _engine_part(module: str) -> str:
    return module.split(".")[2]


def engine_wrong_imports() -> dict[str, list[str]]:
    """Each engine module's imports of another engine part that ``ENGINE_MAY_IMPORT`` does not allow, and each
    door's import of another door."""
    engine = PACKAGE / "engine"
    wrong = {}
    for path in engine.rglob("*.py"):
        if path.parent == engine and path.name == "__init__.py":
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        part = _engine_part(module)
        used = {m for m in _imports(path) if m.startswith("grader.engine.")}
        bad = {m for m in used if _engine_part(m) not in ENGINE_MAY_IMPORT[part] | {part}}
        if part == "doors":
            bad |= {m for m in used if m.startswith("grader.engine.doors.") and m.split(".")[3] != path.stem}
        if bad:
            wrong[str(path.relative_to(PACKAGE))] = sorted(bad)
    return wrong


def test_the_engine_tree_is_its_map_and_its_parts_import_only_across_the_allowed_lines() -> None:
    engine = PACKAGE / "engine"
    parts = {p.stem for p in engine.iterdir() if p.suffix == ".py" and p.stem != "__init__"}
    parts |= {p.name for p in engine.iterdir() if (p / "__init__.py").exists()}
    assert parts == set(ENGINE_MAY_IMPORT)
    assert {p.stem for p in (engine / "doors").glob("*.py")} - {"__init__"} == DOORS
    assert engine_wrong_imports() == {}


def test_the_engine_rules_catch_a_kernel_module_reaching_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _imports

    def with_a_leak(path: Path) -> set[str]:
        found = real(path)
        if path.name == "shell.py":
            found.add("grader.engine.bookkeeping.autograde")
        if path.name == "batch.py":
            found.add("grader.engine.doors.lend.Lender")
        return found

    monkeypatch.setattr(sys.modules[__name__], "_imports", with_a_leak)
    assert engine_wrong_imports() == {
        "engine/inside/shell.py": ["grader.engine.bookkeeping.autograde"],
        "engine/doors/batch.py": ["grader.engine.doors.lend.Lender"],
    }


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def import_circles() -> list[list[str]]:
    """Every group of grader's modules that import each other in a circle, lazily or not (a module's import of its
    own package apart): strongly connected components of the import graph, by Tarjan's algorithm."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)
        graph[name] = targets
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_module_of_grader_imports_itself_through_a_circle() -> None:
    """Issue 53: engine.py and lend.py, inprocess.py and jobsession.py, authoring's validate.py and verdicts.py,
    the service's config.py and hooks.py imported each other."""
    assert import_circles() == []


def test_the_circle_finder_finds_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "grader"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import x\n")
    (package / "c.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert import_circles() == [["grader.a", "grader.b"]]
