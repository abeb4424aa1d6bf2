"""The import structure: no cycles, no import up the layers of docs/design/architecture.md.

Every `import` and `from ... import` of every module under src/breadth, tasks/ and flows/ is
read from its source (module level, inside functions and under TYPE_CHECKING alike), so a
function-level import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The Prefect layers live in the folders tasks/ and flows/ and install as breadth_tasks and
# breadth_flows (pyproject.toml's package-dir).
PACKAGES = {"breadth": ROOT / "src" / "breadth", "breadth_tasks": ROOT / "tasks",
            "breadth_flows": ROOT / "flows"}

# Lowest first, as docs/design/architecture.md lists them ("Layers"). A module may import its
# own layer and the ones below; a name matches a module and the modules under it.
LAYERS = [
    ["breadth", "breadth.display", "breadth.stats", "breadth.stack.processes",
     "breadth.stack.auth"],
    ["breadth.data"],
    ["breadth.rewards", "breadth.evaluation"],
    ["breadth.config", "breadth.preflight.costs"],
    ["breadth.models", "breadth.tracking", "breadth.preflight.sequence_fit"],
    ["breadth.stack", "breadth.rollout", "breadth.training"],
    ["breadth.stages", "breadth.study", "breadth.preflight"],
    ["breadth_tasks"],
    ["breadth_flows"],
    ["breadth.cli"],
]
# Everything below tasks/ is the library: it never imports Prefect nor the orchestration.
LIBRARY_TOP = LAYERS.index(["breadth.stages", "breadth.study", "breadth.preflight"])
NOT_IN_LIBRARY = ("prefect", "breadth_tasks", "breadth_flows")
# Imports allowed up the layers, each with why.
ALLOWED_UP: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports, by absolute name. Importing a module also runs its
    packages' `__init__`; that is not counted as an import of them."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # `from pkg import mod` imports the module mod; `from mod import name`, mod.
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found


def _own(imported: str) -> str | None:
    """The project module an import names (a name in a module: that module), else None."""
    while imported and imported not in MODULES:
        imported = imported.rpartition(".")[0]
    return imported or None


# Read when a test first asks, not at import: parsing every module cost about 1 CPU s in each
# xdist worker's collection of the suite, the worker that runs none of these tests included.
@functools.cache
def _all_imports() -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in MODULES.items()}


@functools.cache
def _graph() -> dict[str, set[str]]:
    return {name: {own for i in imported if (own := _own(i)) and own != name}
            for name, imported in _all_imports().items()}


def _layer(module: str) -> int:
    matches = [(len(prefix), index) for index, names in enumerate(LAYERS) for prefix in names
               if module == prefix or module.startswith(f"{prefix}.")]
    if not matches:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS here and to the layer "
                             "list of docs/design/architecture.md")
    return max(matches)[1]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_modules_are_found():
    assert {"breadth.config.models", "breadth.stages", "breadth_tasks.train",
            "breadth_flows.pipeline"} <= set(MODULES)
    assert "breadth.config" in _graph()["breadth.stages"]


def test_no_import_cycles():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (each a set of modules that import each other): " + "; ".join(
        " <-> ".join(cycle) for cycle in cycles
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_up_the_layers(module):
    up = [f"{module} (layer {_layer(module)}) imports {other} (layer {_layer(other)})"
          for other in sorted(_graph()[module])
          if _layer(other) > _layer(module) and (module, other) not in ALLOWED_UP]
    assert not up, "; ".join(up) + ". Move the code imported down, or the importer up."


@pytest.mark.parametrize("module", [m for m in sorted(MODULES) if _layer(m) <= LIBRARY_TOP])
def test_the_library_never_imports_prefect_or_the_orchestration(module):
    bad = sorted(i for i in _all_imports()[module] if i.split(".")[0] in NOT_IN_LIBRARY)
    assert not bad, f"{module} imports {bad}: the library stays usable without Prefect"


def test_a_function_level_import_and_a_cycle_are_seen(tmp_path):
    # The checks themselves, on what the old grpo_worker did: import breadth.stages (a layer
    # above) inside its main().
    worker = tmp_path / "worker.py"
    worker.write_text("def main():\n    from breadth.stages import grpo_rows\n")
    imported = {_own(i) for i in _imports("breadth.training.worker", worker)}
    assert imported == {"breadth.stages"}
    assert _layer("breadth.stages") > _layer("breadth.training.worker")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _unexplained_function_imports(path: Path) -> list[int]:
    """Lines of imports of the project's own modules inside functions with no comment on the
    line or above its block of imports: such an import stays only where it saves start-up
    time (or breaks an unavoidable load order), and says so."""
    lines = path.read_text().splitlines()
    found = []
    for function in ast.walk(ast.parse("\n".join(lines), str(path))):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom) or getattr(node, "level", 0):
                continue
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if (module or "").split(".")[0] not in PACKAGES:
                continue
            line = node.lineno - 1
            # Up through the import block (imports, their continuation lines, blank lines).
            while line >= 0 and "#" not in lines[line] and (
                    lines[line].strip().startswith(("from ", "import ", ")"))
                    or lines[line].strip().endswith((",", "("))
                    or not lines[line].strip()
                    or lines[line].strip().replace(",", "").replace(" ", "").isidentifier()):
                line -= 1
            if line < 0 or "#" not in lines[line]:
                found.append(node.lineno)
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_function_level_import_of_the_project_says_why(module):
    lines = _unexplained_function_imports(MODULES[module])
    assert not lines, (f"{MODULES[module]}: lines {lines} import the project's own modules "
                       "inside a function without a comment: move them to the top, or say "
                       "why they wait (start-up time, a load order)")


def test_an_unexplained_function_level_import_is_seen(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import json\n\n    from breadth.stages import x\n\n"
                      "def g():\n    # Imported on use: start-up time.\n"
                      "    from breadth.stages import y\n")
    assert _unexplained_function_imports(module) == [4]
