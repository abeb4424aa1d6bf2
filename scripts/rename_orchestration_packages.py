"""Install the Prefect layers under the project's name: the folders tasks/ and flows/ stay where
the project layout puts them, but are imported as `breadth_tasks` and `breadth_flows`, so that
installing breadth never shadows another package called `tasks` or `flows`.

Purely mechanical and idempotent, so it can be re-applied after merging branches that still
import the old names:

    .venv/bin/python scripts/rename_orchestration_packages.py  # rewrite, then ruff sorts imports
    python3 scripts/rename_orchestration_packages.py --check  # list what it would change; exit 1 if any

What it rewrites:
* pyproject.toml: the package list (every package under src/ plus the two mapped ones) and
  `package-dir`, which maps `breadth_tasks` -> tasks/ and `breadth_flows` -> flows/;
* every `.py` file of src/, tasks/, flows/, tests/, benchmarks/ and scripts/: imports of
  `tasks[.module]` / `flows[.module]`, and dotted references `tasks.<module>` /
  `flows.<module>` to a module that exists in that folder (a Prefect setting such as
  "flows.heartbeat_frequency" names no module there and is left alone); file paths
  (`flows/pipeline.py:pipeline`, prefect.yaml's entrypoints) are not imports and stay;
* the worker Dockerfiles: tasks/ and flows/ are copied before the editable install, which
  now needs them to map the packages;
* two passages of prose that say how the layers are imported (`PROSE`).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RENAMED = {"tasks": "breadth_tasks", "flows": "breadth_flows"}
PYTHON_FOLDERS = ("src", "tasks", "flows", "tests", "benchmarks", "scripts")
DOCKERFILES = ("docker/cpu-worker.Dockerfile", "docker/gpu-worker.Dockerfile")
# This script and its tests name the old imports on purpose.
KEPT = {Path(__file__).resolve(), ROOT / "tests" / "unit" / "test_rename_orchestration_packages.py"}


def modules_of(folder: str) -> list[str]:
    """The importable names directly under a renamed folder: its modules and subpackages."""
    path = ROOT / folder
    names = [p.stem for p in path.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in path.iterdir() if (p / "__init__.py").is_file()]
    return sorted(names)


def rewrite_python(text: str) -> str:
    for old, new in RENAMED.items():
        # `from tasks import x`, `from tasks.common import x`, `import flows.pipeline`.
        text = re.sub(rf"^(\s*)from {old}(?=[.\s])", rf"\1from {new}", text, flags=re.MULTILINE)
        text = re.sub(rf"^(\s*)import {old}(?=[.\s])", rf"\1import {new}", text,
                      flags=re.MULTILINE)
        # `tasks.prepare.prepare`, `"flows.pipeline:pipeline"`: a reference to one of the
        # folder's modules, not part of a longer dotted name or a path.
        modules = "|".join(map(re.escape, modules_of(old)))
        text = re.sub(rf"(?<![\w./-]){old}\.(?=(?:{modules})\b)", f"{new}.", text)
    return text


def breadth_packages() -> list[str]:
    src = ROOT / "src"
    return sorted(".".join(init.parent.relative_to(src).parts)
                  for init in src.rglob("__init__.py"))


def rewrite_pyproject(text: str) -> str:
    packages = [*breadth_packages(), *RENAMED.values()]
    listed = ",\n".join(f'    "{name}"' for name in packages)
    block = (
        "# The library lives under src/; the Prefect layers (tasks/, flows/) install beside it under\n"
        "# the project's name, as breadth_tasks and breadth_flows, so a worker process imports them\n"
        "# by name and they never shadow another `tasks` or `flows` package. Written by\n"
        "# scripts/rename_orchestration_packages.py: re-run it after adding a package under src/.\n"
        "[tool.setuptools]\n"
        f"packages = [\n{listed},\n]\n\n"
        "[tool.setuptools.package-dir]\n"
        '"" = "src"\n'
        + "".join(f'{new} = "{old}"\n' for old, new in RENAMED.items())
    )
    pattern = re.compile(
        r"# The library lives under src/;.*?\n\[tool\.setuptools(?:\.packages\.find)?\]\n.*?"
        r"(?=\n\[tool\.setuptools\.package-data\])",
        flags=re.DOTALL,
    )
    assert pattern.search(text), "pyproject.toml: no package block to rewrite"
    return pattern.sub(block, text, count=1)


def rewrite_dockerfile(text: str) -> str:
    """Copy tasks/ and flows/ right after src/, before the install that maps them."""
    copies = ["COPY flows ./flows", "COPY tasks ./tasks"]
    lines = [line for line in text.splitlines() if line.strip() not in copies]
    at = next(n for n, line in enumerate(lines) if line.strip() == "COPY src ./src")
    lines[at + 1:at + 1] = copies
    return "\n".join(lines) + "\n"


# Prose that states how the layers are imported, replaced word for word (a no-op once done).
_DOCKER_TEST_OLD = (
    "flows/ imports tasks/ as top-level packages and prefect.yaml's entrypoints are relative\n"
    "    paths, so both must sit in the working directory, which must be on PYTHONPATH."
)
_DOCKER_TEST_NEW = (
    "prefect.yaml's entrypoints are paths relative to the working directory\n"
    "    (flows/pipeline.py), so flows/ and tasks/ must sit there, and it on PYTHONPATH."
)
_LAYOUT_OLD = (
    "tasks/         Prefect tasks: a few lines each over breadth.stages (cache keys, child runs, S3)\n"
    "flows/         Prefect flows: pipeline, grid\n"
)
_LAYOUT_NEW = (
    "tasks/         Prefect tasks (import breadth_tasks): a few lines each over breadth.stages\n"
    "               (cache keys, child runs, S3)\n"
    "flows/         Prefect flows (import breadth_flows): pipeline, grid\n"
)
PROSE = {
    "tests/unit/test_infra_files.py": [(_DOCKER_TEST_OLD, _DOCKER_TEST_NEW)],
    "README.md": [(_LAYOUT_OLD, _LAYOUT_NEW)],
}


def rewrite_prose(name: str, text: str) -> str:
    for old, new in PROSE.get(name, []):
        text = text.replace(old, new)
    return text


def planned() -> dict[Path, str]:
    changes: dict[Path, str] = {}
    for name in PROSE:
        path = ROOT / name
        if (new := rewrite_prose(name, path.read_text())) != path.read_text():
            changes[path] = new
    for folder in PYTHON_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.resolve() in KEPT:
                continue
            text = changes.get(path) or path.read_text()
            if (new := rewrite_python(text)) != text:
                changes[path] = new
    pyproject = ROOT / "pyproject.toml"
    if (new := rewrite_pyproject(pyproject.read_text())) != pyproject.read_text():
        changes[pyproject] = new
    for name in DOCKERFILES:
        path = ROOT / name
        if (new := rewrite_dockerfile(path.read_text())) != path.read_text():
            changes[path] = new
    return changes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    args = parser.parse_args()
    changes = planned()
    for path in changes:
        print(path.relative_to(ROOT))
    if args.check:
        return 1 if changes else 0
    for path, text in changes.items():
        path.write_text(text)
    print(f"{len(changes)} files rewritten")
    # `breadth_tasks` sorts elsewhere than `tasks` did: let ruff re-sort the import blocks.
    python_files = [str(path) for path in changes if path.suffix == ".py"]
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if python_files and ruff:
        subprocess.run([ruff, "check", "--fix", "--select", "I001", *python_files], check=False)
    elif python_files:
        print("ruff not found: run `ruff check --fix --select I001` on the files above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
