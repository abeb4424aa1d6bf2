""""Did you mean ...?" for a misspelt name: config keys, presets, reward names, services.

One helper, so every error that names an unknown thing suggests the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str], limit: int = 3) -> str:
    """A sentence naming the choices closest to `name` (with a leading space), or "".

    A dotted name whose last part is a choice's last part suggests those choices only: a
    config key given without its section, or in the wrong one.

    >>> did_you_mean("corectness", ["correctness", "darling", "batch"])
    " Did you mean 'correctness'?"
    >>> did_you_mean("max_steps", ["rl.max_steps", "sft.epochs"])
    " Did you mean 'rl.max_steps'?"
    >>> did_you_mean("zzz", ["correctness"])
    ''
    """
    options = list(choices)
    leaf = name.rsplit(".", 1)[-1]
    same_leaf = [option for option in options if option.rsplit(".", 1)[-1] == leaf]
    found = same_leaf[:limit] or _closest(name, options, limit)
    if not found:
        return ""
    return f" Did you mean {' or '.join(repr(option) for option in found)}?"


def _closest(name: str, options: list[str], limit: int) -> list[str]:
    """The options nearly as similar as the most similar one: `rl.max_step` suggests
    `rl.max_steps`, not every key that shares the `rl.` prefix."""
    scored = sorted(((difflib.SequenceMatcher(None, name, option).ratio(), option)
                     for option in options), key=lambda pair: (-pair[0], pair[1]))
    if not scored or scored[0][0] < 0.6:
        return []
    return [option for score, option in scored[:limit] if score >= scored[0][0] - 0.1]
