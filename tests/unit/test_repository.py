"""The repository stands on its own: the README's layout matches the code, and no comment or
test points at design notes outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tasks", "flows", "tests", "benchmarks", "scripts", "docker", "infra")
# Names of design notes that live outside the repository, and project-history references.
OUTSIDE = re.compile(r"ARCHITECTURE\.md|ALGORITHMS\.md|VERSIONS\.md|shared/design|"
                     r"\bissue \d|the brief\b|the lead\b")  # fmt: skip


def _files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".md", ".sh", ".yaml", ".js", ".toml"}:
                yield path
    yield from (ROOT / name for name in ("README.md", "Makefile", "pyproject.toml"))
    yield from (ROOT / "docker").glob("*Dockerfile")


def test_nothing_refers_to_files_outside_the_repository():
    this = Path(__file__).resolve()
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _files() if path.resolve() != this
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]  # fmt: skip
    assert not hits, "references outside the repository:\n" + "\n".join(hits)


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Layout", 1)[1].split("```")[1]


@pytest.mark.parametrize("folder", ["data", "models", "rewards", "training", "rollout",
                                    "evaluation", "tracking"])  # fmt: skip
def test_readme_layout_names_every_library_package(folder):
    assert f"  {folder}/" in _layout_block()


def test_readme_layout_names_only_modules_that_exist():
    block = _layout_block()
    for name in re.findall(r"\b([a-z_]+\.py)\b", block):
        assert list((ROOT / "src" / "breadth").rglob(name)), f"README layout names {name}"
    for folder in re.findall(r"^([a-z]+/)", block, flags=re.MULTILINE):
        assert (ROOT / folder).is_dir(), f"README layout names {folder}"
    packages = {p.name for p in (ROOT / "src" / "breadth").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}  # fmt: skip
    assert packages <= {f.strip("/") for f in re.findall(r"  ([a-z]+/)", block)}


def test_design_docs_name_only_modules_that_exist():
    for doc in sorted((ROOT / "docs" / "design").glob("*.md")):
        for dotted in re.findall(r"`(breadth(?:\.[a-z_]+)+)", doc.read_text()):
            parts = dotted.split(".")
            # breadth.a.b[.Name]: the longest prefix that is a module or package must exist.
            found = any(
                (ROOT / "src" / Path(*parts[:n])).with_suffix(".py").exists()
                or (ROOT / "src" / Path(*parts[:n]) / "__init__.py").exists()
                for n in range(len(parts), 1, -1)
            )
            assert found, f"{doc.name} names {dotted}, which is not a module"
