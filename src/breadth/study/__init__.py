"""The study: the grid of formats x objectives x seeds and its fairness rule (`grid`)."""

from breadth.study.grid import (
    DEFAULT_GRID_REWARDS,
    ENTROPY_KNOBS,
    GRID_AXIS_KEYS,
    OBJECTIVE_KEYS,
    PER_CELL_KEYS,
    RUNNER_KEYS,
    GridConfig,
    check_fair,
)

__all__ = [
    "DEFAULT_GRID_REWARDS", "ENTROPY_KNOBS", "GRID_AXIS_KEYS", "OBJECTIVE_KEYS", "PER_CELL_KEYS",
    "RUNNER_KEYS", "GridConfig", "check_fair",
]  # fmt: skip
