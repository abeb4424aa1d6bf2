"""scripts/rename_orchestration_packages.py: imports of the Prefect layers move to the project's
names (breadth_tasks, breadth_flows), paths and Prefect settings stay, a second run changes
nothing, and the package list it writes holds every package under src/."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "rename_orchestration_packages", ROOT / "scripts" / "rename_orchestration_packages.py")
rename = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rename)

BEFORE = '''\
import flows.pipeline
import tasks.grid
from tasks import common
from tasks.train import sft
    from flows.in_process import in_process_run  # lazily


def test(monkeypatch):
    monkeypatch.setattr(tasks.grid, "x", 1)
    flows.pipeline.run_pipeline(config)
    entry = "flows/pipeline.py:pipeline"
    flow = "flows.grid:grid"
    settings = {"flows.heartbeat_frequency": None}
    parts = args.tasks.split(",")
    module = my_tasks.grid
'''
AFTER = '''\
import breadth_flows.pipeline
import breadth_tasks.grid
from breadth_tasks import common
from breadth_tasks.train import sft
    from breadth_flows.in_process import in_process_run  # lazily


def test(monkeypatch):
    monkeypatch.setattr(breadth_tasks.grid, "x", 1)
    breadth_flows.pipeline.run_pipeline(config)
    entry = "flows/pipeline.py:pipeline"
    flow = "breadth_flows.grid:grid"
    settings = {"flows.heartbeat_frequency": None}
    parts = args.tasks.split(",")
    module = my_tasks.grid
'''


def test_imports_and_module_references_move_and_nothing_else():
    assert rename.rewrite_python(BEFORE) == AFTER


def test_a_second_run_changes_nothing():
    assert rename.rewrite_python(AFTER) == AFTER
    pyproject = rename.rewrite_pyproject((ROOT / "pyproject.toml").read_text())
    assert rename.rewrite_pyproject(pyproject) == pyproject
    for name in rename.DOCKERFILES:
        once = rename.rewrite_dockerfile((ROOT / name).read_text())
        assert rename.rewrite_dockerfile(once) == once


def test_the_package_list_holds_every_package_under_src_and_no_tasks_or_flows():
    config = tomllib.loads(rename.rewrite_pyproject((ROOT / "pyproject.toml").read_text()))
    setuptools = config["tool"]["setuptools"]
    src = ROOT / "src"
    on_disk = {".".join(init.parent.relative_to(src).parts) for init in src.rglob("__init__.py")}
    assert on_disk <= set(setuptools["packages"])
    assert not {"tasks", "flows"} & set(setuptools["packages"])
    mapped = {"": "src", "breadth_tasks": "tasks", "breadth_flows": "flows"}
    assert setuptools["package-dir"] == mapped
    assert config["tool"]["setuptools"]["package-data"] == {"breadth": ["presets/*.yaml"]}


def test_dockerfiles_copy_the_orchestration_folders_before_the_editable_install():
    for name in rename.DOCKERFILES:
        lines = rename.rewrite_dockerfile((ROOT / name).read_text()).splitlines()
        install = next(n for n, line in enumerate(lines) if "pip install --no-deps -e ." in line)
        for folder in ("flows", "tasks"):
            assert lines.index(f"COPY {folder} ./{folder}") < install, name
