"""breadth's configuration: the typed models of every stage (`breadth.config.models`) and the
reader of presets and `--set` overrides into them (`breadth.config.reader`).

`from breadth.config import X` is the one import for both.
"""

from __future__ import annotations

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
]

