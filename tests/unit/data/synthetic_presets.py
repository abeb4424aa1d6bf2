"""Each synthetic task at the sizes of the presets that generate it (the study's grid, the demo):
name -> (preset, overrides) for `load_config`. The problem-key and leakage tests (#52) run each.
"""

from __future__ import annotations

SYNTHETIC_PRESETS: dict[str, tuple[str, list[str]]] = {
    "arithmetic-study": ("study", []),
    "arithmetic-default": ("default", []),
    "chain-reasoning": ("reasoning", []),
    "pairs-multi": ("multi", []),
    "countdown-preset": ("countdown", []),
    "countdown-study": ("study", ["data.source=synthetic:countdown"]),
}
