"""Parent runs are named by what tells them apart in MLflow's legends and tables."""

from breadth.config import load_config
from tasks.tracking import run_name


def test_grid_cells_are_named_by_format_objective_and_seed():
    config = load_config("default", ["data.format=mcq", "seed=2"])
    assert run_name(config, {"grid.objective": "correctness@entropy"}) == "mcq·correctness@entropy·s2"


def test_lone_runs_differ_by_config_hash():
    a, b = load_config("default"), load_config("default", ["rl.max_steps=7"])
    assert run_name(a, {}).startswith("default·") and run_name(a, {}) != run_name(b, {})
