"""The study: the grid of formats x objectives x seeds and its fairness rule (`grid`), the
per-problem study frame read back from a grid's runs (`frame`), the claims measured on it
(`claims`, decided and shown by `claim_table`, pre-registered in `claim_registry`), the
collapse over training steps (`curves`, shown by `curves_report`) and their report
(`report`)."""

from breadth.study.grid_design import (
    ENTROPY_KNOBS,
    GRID_AXIS_KEYS,
    OBJECTIVE_KEYS,
    PER_CELL_KEYS,
    RUNNER_KEYS,
    STUDY_OBJECTIVES,
    GridConfig,
    check_fair,
)

__all__ = [
    "ENTROPY_KNOBS",
    "GRID_AXIS_KEYS",
    "OBJECTIVE_KEYS",
    "PER_CELL_KEYS",
    "RUNNER_KEYS",
    "STUDY_OBJECTIVES",
    "GridConfig",
    "check_fair",
]
