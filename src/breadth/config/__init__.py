"""breadth's configuration: the typed models of every stage (`breadth.config.models`) and the
reader of presets and `--set` overrides into them (`breadth.config.reader`).

`from breadth.config import X` is the one import for both.
"""

from __future__ import annotations

from typing import Any

from breadth.config.models import (
    DataConfig,
    EvaluationConfig,
    ModelConfig,
    PipelineConfig,
    RewardConfig,
    RLConfig,
    RolloutConfig,
    SFTConfig,
    TrackingConfig,
)
from breadth.config.reader import (
    MAX_PRESET_CHAIN,
    PRESET_OR_SET,
    ConfigError,
    available_presets,
    describe_keys,
    describe_options,
    load_config,
    parse_override,
    validated,
)

__all__ = [
    "MAX_PRESET_CHAIN", "PRESET_OR_SET", "ConfigError", "DataConfig", "EvaluationConfig",
    "ModelConfig", "PipelineConfig", "RLConfig", "RewardConfig", "RolloutConfig", "SFTConfig",
    "TrackingConfig", "available_presets", "describe_keys", "describe_options", "load_config",
    "parse_override", "validated",
]  # fmt: skip

# The grid definition moved to `breadth.study.grid`; these names stay importable from here
# while code written against the old place is moved over.
_MOVED_TO_STUDY = frozenset({
    "DEFAULT_GRID_REWARDS", "ENTROPY_KNOBS", "GRID_AXIS_KEYS", "OBJECTIVE_KEYS", "PER_CELL_KEYS",
    "RUNNER_KEYS", "GridConfig", "check_fair",
})  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_STUDY:
        # Imported on first use, not at the top: breadth.study.grid imports this package.
        import breadth.study.grid

        return getattr(breadth.study.grid, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
