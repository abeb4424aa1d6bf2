"""What a pipeline run is called in MLflow and Prefect: names and tags that tell runs apart.

A lone run is named by its preset, its data source when that is not the preset's, what else
differs from the preset, and its config hash: `default·gsm8k_test.jsonl·rl.max_steps=60·1a2b3c4d`,
so runs of one preset with other data or settings are told apart at a glance. A run whose every
stage came from the cache gets `·cached` at the end, so a re-run of the same config is not a
second identical row.
"""

from __future__ import annotations

import functools
from typing import Any

from breadth.config import PipelineConfig, available_presets, load_config

SEPARATOR = "·"
CACHED_MARK = "cached"
# Keys that say how a run is labelled or logged, not what it computes: never in its name.
UNNAMED_PREFIXES = ("preset", "tracking.")
SOURCE_KEYS = ("data.source", "data.eval_source")
MAX_NAMED_DIFFERENCES = 3
MAX_VALUE_CHARS = 24


@functools.cache
def preset_config(preset: str) -> PipelineConfig | None:
    """The config a shipped preset gives; None for a preset file (its label is the file's stem,
    which does not say where the file is)."""
    return load_config(preset) if preset in available_presets() else None


def differences(config: PipelineConfig, base: PipelineConfig) -> dict[str, Any]:
    """{dotted key: value} of `config` where it differs from `base`, in config order, leaving
    out the label and the tracking settings.

    >>> differences(load_config("default", ["rl.max_steps=60", "tracking.log_models=false"]),
    ...             load_config("default"))
    {'rl.max_steps': 60}
    """
    ours, theirs = config.flat(), base.flat()
    return {key: value for key, value in ours.items()
            if value != theirs.get(key) and not key.startswith(UNNAMED_PREFIXES)}


def short_source(spec: str) -> str:
    """A source spec as a run name shows it: a file by its name, a hub data set by its name.

    >>> short_source("jsonl:/data/gsm8k/test.jsonl"), short_source("hf:openai/gsm8k:main")
    ('test.jsonl', 'openai/gsm8k:main')
    >>> short_source("synthetic:countdown")
    'countdown'
    """
    kind, _, rest = spec.partition(":")
    if kind in ("jsonl", "parquet", "csv"):
        return rest.rstrip("/").rsplit("/", 1)[-1] or spec
    return rest or spec


def shown_value(key: str, value: Any, limit: int | None = None) -> str:
    """A config value as names and logs show it: a source by its short name, 2.0 as 2, cut to
    `limit` characters.

    >>> shown_value("sft.epochs", 2.0), shown_value("data.eval_source", "jsonl:/d/test.jsonl")
    ('2', 'test.jsonl')
    """
    if key in SOURCE_KEYS and isinstance(value, str):
        text = short_source(value)
    else:  # 2.0 as 2, as it was most likely written
        text = f"{value:g}" if isinstance(value, float) else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def lone_run_name(config: PipelineConfig) -> str:
    """A lone (not grid) run's name: preset, data source when not the preset's, up to three
    other differences from the preset (`+N` for more), and the config hash.

    >>> lone_run_name(load_config("default", ["rl.max_steps=60"]))[:-8]
    'default·rl.max_steps=60·'
    >>> lone_run_name(load_config("default", ["data.source=jsonl:/d/test.jsonl"]))[:-8]
    'default·test.jsonl·'
    """
    parts = [config.preset]
    base = preset_config(config.preset)
    if base is not None:
        changed = differences(config, base)
        if "data.source" in changed:
            parts.append(shown_value("data.source", changed.pop("data.source"), MAX_VALUE_CHARS))
        named = [f"{key}={shown_value(key, value, MAX_VALUE_CHARS)}" for key, value in changed.items()]
        parts += named[:MAX_NAMED_DIFFERENCES]
        if len(named) > MAX_NAMED_DIFFERENCES:
            parts.append(f"+{len(named) - MAX_NAMED_DIFFERENCES}")
    parts.append(config.content_hash()[:8])
    return SEPARATOR.join(parts)


def cached_name(name: str) -> str:
    """The name of a run whose every stage came from the cache (once marked, kept as is).

    >>> cached_name("default·1a2b3c4d")
    'default·1a2b3c4d·cached'
    """
    mark = f"{SEPARATOR}{CACHED_MARK}"
    return name if name.endswith(mark) else name + mark


def cached_label(cached: int, stages: int) -> str:
    """How much of a run came from the cache, as the `breadth.cached` tag and `breadth runs`
    say it: `all`, `none`, or `3/9` stages.

    >>> cached_label(9, 9), cached_label(0, 9), cached_label(3, 9)
    ('all', 'none', '3/9')
    """
    if stages and cached == stages:
        return "all"
    return "none" if cached == 0 else f"{cached}/{stages}"


def run_tags(config: PipelineConfig) -> list[str]:
    """Prefect tags (`key:value`) that tell runs apart, as the MLflow parent's tags do.

    >>> from breadth.config import load_config
    >>> run_tags(load_config("default", ["seed=1"]))
    ['preset:default', 'format:free_form', 'reward:correctness', 'seed:1', 'data:arithmetic']
    """
    return [f"preset:{config.preset}", f"format:{config.data.format}",
            f"reward:{config.rl.reward.spec}", f"seed:{config.seed}",
            f"data:{short_source(config.data.source)}"]
