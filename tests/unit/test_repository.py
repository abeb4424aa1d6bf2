"""The repository stands on its own: the README's layout matches the code, every markdown file
that code, docs or tests name is one a clone has, and every relative link of the user docs
(README.md and docs/guide/) resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tasks", "flows", "tests", "benchmarks", "scripts", "docker", "infra",
           "docs/guide")
# The user docs: the README is the front door, docs/guide/ holds a page per task.
USER_DOCS = (ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md")))
# A document named in code, docs or tests (an upper-case note such as README.md, or a path
# under docs/): it must be one a clone of the repository has. Lower-case names such as
# report.md are files the code writes.
MARKDOWN_NAME = re.compile(r"\b[A-Z][A-Z_]*\.md\b|\bdocs/[\w./-]+\.md\b")


def _files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in {".py", ".md", ".sh", ".yaml", ".js", ".toml"}:
                yield path
    yield from (ROOT / name for name in ("README.md", "Makefile", "pyproject.toml"))
    yield from (ROOT / "docker").glob("*Dockerfile")


def test_every_markdown_file_named_is_in_the_repository():
    in_repo = {path.name for path in ROOT.rglob("*.md") if ".venv" not in path.parts}
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {name}"
        for path in _files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        for name in MARKDOWN_NAME.findall(line)
        if Path(name).name not in in_repo
    ]
    assert not hits, "markdown files named but not in the repository:\n" + "\n".join(hits)


# A markdown link or image: [text](target) or ![alt](target).
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_guide_has_an_index_that_links_every_page():
    guide = ROOT / "docs" / "guide"
    index = (guide / "index.md").read_text()
    pages = {p.name for p in guide.glob("*.md")} - {"index.md"}
    assert len(pages) >= 5, f"docs/guide/ holds only {sorted(pages)}"
    linked = {target.split("#")[0] for target in LINK.findall(index)}
    assert pages <= linked, f"docs/guide/index.md does not link {sorted(pages - linked)}"
    assert "docs/guide/index.md" in (ROOT / "README.md").read_text()


def test_relative_links_of_the_user_docs_resolve():
    broken = []
    for doc in USER_DOCS:
        for target in LINK.findall(doc.read_text()):
            path = target.split("#")[0]
            if not path or re.match(r"[a-z]+:", path):  # an anchor of the page, or a URL
                continue
            if not (doc.parent / path).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


RESULTS = ROOT / "docs" / "results"


def test_the_results_index_names_every_file_under_docs_results():
    """docs/results/README.md names every file under docs/results/ by a link to it, or to a
    folder above it ("demo_threads/"), and every relative link of it resolves: a page added,
    moved or superseded there gets its line in the index."""
    index = RESULTS / "README.md"
    targets = [target.split("#")[0] for target in LINK.findall(index.read_text())]
    targets = [target for target in targets if target and not re.match(r"[a-z]+:", target)]
    assert len(targets) >= 20, f"docs/results/README.md links only {targets}"
    broken = [target for target in targets if not (RESULTS / target).exists()]
    assert not broken, f"docs/results/README.md links to what does not exist: {broken}"
    named = {(RESULTS / target).resolve() for target in targets}
    missing = [str(path.relative_to(RESULTS)) for path in sorted(RESULTS.rglob("*"))
               if path.is_file() and path != index
               and not named & {path.resolve(), *path.resolve().parents}]
    assert not missing, ("files under docs/results/ that docs/results/README.md does not name "
                         f"(link each, or its folder, with a line on what it is): {missing}")


def test_the_readme_stays_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, (
        f"README.md has {len(lines)} lines: move detail to a page of docs/guide/ and link it"
    )


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Layout", 1)[1].split("```")[1]


@pytest.mark.parametrize("folder", ["data", "models", "rewards", "training", "rollout",
                                    "evaluation", "tracking"])
def test_readme_layout_names_every_library_package(folder):
    assert f"  {folder}/" in _layout_block()


def test_readme_layout_names_only_modules_that_exist():
    block = _layout_block()
    for name in re.findall(r"\b([a-z_]+\.py)\b", block):
        assert list((ROOT / "src" / "breadth").rglob(name)), f"README layout names {name}"
    for folder in re.findall(r"^([a-z]+/)", block, flags=re.MULTILINE):
        assert (ROOT / folder).is_dir(), f"README layout names {folder}"
    packages = {p.name for p in (ROOT / "src" / "breadth").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
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


# A line of a shell snippet that runs the Prefect CLI (`prefect ...`, `.venv/bin/prefect ...`),
# possibly after variable assignments or `CUDA_VISIBLE_DEVICES=0`.
PREFECT_COMMAND = re.compile(r"^\s*(?:\w+=\S*\s+)*(?:\.venv/bin/)?prefect\s")


def test_doc_snippets_set_the_prefect_server_before_the_prefect_cli():
    """Run in a fresh shell without PREFECT_API_URL, `prefect deploy` registered on a temporary
    server of its own, and `breadth grid --cell-deployment` then found no such deployment: a
    snippet of the README or docs/guide/ that runs the Prefect CLI first gets the stack's
    client environment."""
    missing = []
    bash_block = re.compile(r"```bash\n(.*?)```", flags=re.DOTALL)
    blocks = [block for doc in USER_DOCS for block in bash_block.findall(doc.read_text())]
    assert any(PREFECT_COMMAND.match(line) for block in blocks for line in block.splitlines())
    for block in blocks:
        lines = block.splitlines()
        first = next((n for n, line in enumerate(lines) if PREFECT_COMMAND.match(line)), None)
        if first is None or "PREFECT_API_URL=" in lines[first]:  # names its server itself
            continue
        if not any(re.search(r'eval "\$\((?:\.venv/bin/)?breadth env\)"', line)
                   for line in lines[:first]):
            missing.append(lines[first].strip())
    assert not missing, f"doc snippets run the Prefect CLI with no server set: {missing}"


def test_pyproject_lists_every_package_under_src():
    """setuptools installs only the packages pyproject.toml names: one left out imports in the
    editable checkout and fails in a wheel or a worker image."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT / "src").parts)
               for init in (ROOT / "src").rglob("__init__.py")}
    assert on_disk | {"breadth_tasks", "breadth_flows"} == listed


# A script named by its path (scripts/tools/..., scripts/results/...). docs/results/ is left
# out: a page written by a script since removed names it, and says that it was removed.
SCRIPT_PATH = re.compile(r"(?<![\w/.])scripts/[\w./-]+\.(?:py|sh|js)\b")


def test_every_script_named_is_in_the_repository():
    design = sorted((ROOT / "docs" / "design").glob("*.md"))
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {name}"
        for path in [*_files(), *design]
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        for name in SCRIPT_PATH.findall(line)
        if not (ROOT / name).is_file()
    ]
    assert not hits, "scripts named but not in the repository:\n" + "\n".join(hits)


def test_the_scripts_index_names_every_script():
    """scripts/README.md has a row for each script of tools/ and results/ (a script is added
    with its row: the README says how)."""
    index = (ROOT / "scripts" / "README.md").read_text()
    scripts = sorted(p for kind in ("tools", "results") for p in (ROOT / "scripts" / kind).iterdir()
                     if p.suffix in {".py", ".sh", ".js"})
    assert len(scripts) >= 10, f"scripts/tools and scripts/results hold only {scripts}"
    missing = [p.name for p in scripts if f"`{p.name}`" not in index]
    assert not missing, f"scripts/README.md has no row for {missing}: add one"
    top = {p.name for p in (ROOT / "scripts").iterdir()} - {"__pycache__"}
    assert top == {"README.md", "results", "tools"}, (
        f"scripts/ holds {sorted(top)}: a script goes in tools/ or results/ (scripts/README.md)")
