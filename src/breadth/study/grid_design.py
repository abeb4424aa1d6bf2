"""The grid definition: formats x objectives x seeds, each cell a pipeline config, and the
fairness rule that cells differ only in their objective (`check_fair`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from breadth.config.models import PipelineConfig, Section
from breadth.config.reader import ConfigError, load_config
from breadth.data.records import Format

# The objectives the study compares, by the names the claims' arms use
# (`breadth.study.claims`): a misspelt arm is then a NameError, not a row "not run".
CORRECTNESS = "correctness"
UCB = "correctness+ucb"
BATCH = "correctness+batch"
DARLING = "darling"
PASSK = "passk"
VECTOR = "vector"
ENTROPY_KNOBS = ["rl.epsilon_high=0.28", "rl.top_entropy_quantile=0.2", "rl.entropy_coef=0.01"]
# An objective is a reward spec, or SPEC@VARIANT: the variant's overrides apply after the
# grid's shared ones. `unscaled` is the control of the objectives that set
# rl.scale_rewards=none themselves (darling, passk): the same step size, another objective.
VARIANTS = {"entropy": ENTROPY_KNOBS, "unscaled": ["rl.scale_rewards=none"]}
CORRECTNESS_ENTROPY = f"{CORRECTNESS}@entropy"
UNSCALED_CONTROL = f"{CORRECTNESS}@unscaled"
# Every objective the study's claims compare (the 42-cell grid of 2026-11-23 ran them all).
STUDY_OBJECTIVES = [CORRECTNESS, UCB, BATCH, DARLING, PASSK, VECTOR, CORRECTNESS_ENTROPY]
# The nightly (a GridConfig's defaults), sized by its own table. The chain task, whose trace,
# transfer split and two formats carry sharpening, crossover, transfer, forking, format and
# historical exploration. The full grid (both formats, mcq at correctness, 4 seeds: grid-6abeba80,
# docs/results/grids/full-grid-6abeba80/claims.md) priced each inconclusive row at its spread
# and stage work on 2 workers: no mcq row and not the format claim fits 3 h (mcq Δ pass@1 74 seeds, 24.1 h; Δ
# pass@n 15, 4.9 h; forking 19, 6.2 h; format 11, 4.8 h), and the nightly that decides the most
# rows in 3 h is free form with correctness and correctness+ucb at 15 seeds (2.4 h). So mcq is
# left out (issue #26: "drop or thin cells rather than miss that"); the nightly's report lists
# its rows as not run, each citing that table (`GridConfig.reference`, set in prefect.yaml).
# The claims that need several right answers per problem (batch, darling, pass@k, vector,
# search) are the multi-answer grid's (MULTI_ANSWER_*, `breadth-grid/multi` in prefect.yaml).
# Every cell samples n = 128 per eval problem (the study preset's rollout.num_samples, raised
# from 32 by #52 item 4 so the crossover sees k in the tens to hundreds, as Yue et al.'s do).
NIGHTLY_PRESET = "reasoning"
NIGHTLY_FORMATS: list[Format] = ["free_form"]
NIGHTLY_REWARDS = [CORRECTNESS, UCB]
NIGHTLY_SEEDS = list(range(15))
# The multi-answer grid (pairs, free form; `breadth-grid/multi`): each objective beside the
# control at its own step size (darling and passk set rl.scale_rewards=none).
MULTI_ANSWER_PRESET = "multi"
MULTI_ANSWER_REWARDS = [CORRECTNESS, UNSCALED_CONTROL, BATCH, DARLING, PASSK, VECTOR]
# What an objective may change: the reward and the entropy knobs. Everything else (problems,
# pool, steps, SFT start, eval set, sampling) must be equal across a grid's cells.
OBJECTIVE_KEYS = ("rl.reward.", "rl.epsilon_high", "rl.top_entropy_quantile", "rl.entropy_coef",
                  "rl.adaptive_entropy", "rl.entropy_target",
                  "rl.scale_rewards")  # set by rewards whose formula needs it
# Grid keys that say how cells run, not what they compute.
RUNNER_KEYS = ("cell_runner", "cell_deployment")
# What the claims report cites beside the study, not what the study is.
REPORT_KEYS = ("pilot", "reference")
# Keys that differ between cells by design: the grid's own axes and the preset label.
GRID_AXIS_KEYS = ("data.format", "seed", "preset")
# The config key each cell sets from a grid axis (after the shared overrides, so an override
# of one of these keys would be silently replaced in every cell).
PER_CELL_KEYS = {"data.format": ("formats", "--format"), "rl.reward.spec": ("rewards", "--reward"),
                 "seed": ("seeds", "--seed")}


class GridConfig(Section):
    """The nightly study: formats x objectives x seeds, each cell a full pipeline run.

    Cells differ only in the objective (reward spec and entropy knobs), their format and their
    seed; `cells()` refuses anything else before any compute.
    """

    preset: str = Field(NIGHTLY_PRESET, description="Preset every cell starts from.")
    formats: list[Format] = Field(
        default_factory=lambda: list(NIGHTLY_FORMATS), description="Data formats to compare."
    )
    rewards: list[str] = Field(
        default_factory=lambda: list(NIGHTLY_REWARDS),
        description="Objectives to compare: reward specs; `SPEC@entropy` adds the entropy "
        "knobs (clip-higher, top-entropy tokens, entropy bonus); `SPEC@unscaled` sets "
        "rl.scale_rewards=none (correctness@unscaled: the control of darling and passk).",
    )
    seeds: list[int] = Field(default_factory=lambda: list(NIGHTLY_SEEDS),
                             description="Seeds per cell.")
    overrides: list[str] = Field(
        default_factory=list, description="`key=value` overrides applied to every cell."
    )
    format_rewards: dict[Format, list[str]] = Field(
        default_factory=dict,
        description="Thin the grid: a format listed here runs only these of `rewards`, e.g. "
        "`{\"mcq\": [\"correctness\"]}` (the format claim needs only correctness in both "
        "formats). A claim whose arm was left out is reported *not run*, naming the arm.",
    )
    objective_overrides: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Extra `key=value` overrides of one objective's cells, e.g. "
        "`{\"correctness+ucb\": [\"rl.reward.ucb_coef=0.5\"]}`; only reward and entropy keys.",
    )
    grid_id: str | None = Field(
        None, description="MLflow tag grouping the cells; empty = derived from the flow run."
    )
    cell_runner: Literal["in_process", "deployment"] = Field(
        "in_process",
        description="How cells run: in_process = one after another inside the grid's own "
        "process; deployment = each cell a run of `cell_deployment`, picked up by any worker "
        "of its work pool (the grid waits for all of them).",
    )
    cell_deployment: str = Field(
        "breadth-pipeline/adhoc",
        description="cell_runner=deployment: the pipeline deployment (`flow/deployment`, "
        "registered by `breadth deploy`) whose runs are the cells.",
    )
    pilot: str | None = Field(
        None,
        description="A power pilot's JSON (scripts/results/pilot.py, e.g. "
        "docs/results/pilot.json; relative paths from the working directory, a deployment's "
        "is the project folder): the claims it sized cite its seed sd and seeds needed beside "
        "the grid's own. Read before any cell starts. Empty = the table's own power only.",
    )
    reference: str | None = Field(
        None,
        description="A fuller grid's claims.json (`breadth compare --grid ID --claims-out "
        "DIR`, e.g. docs/results/grids/full-grid-6abeba80/claims.json; paths as for "
        "`pilot`): the rows of the formats this grid leaves out are listed as not run, each citing what that grid "
        "measured and what deciding it would cost. Read before any cell starts. Empty = "
        "left-out formats have no rows.",
    )

    @field_validator("formats", "rewards", "seeds")
    @classmethod
    def _each_once(cls, values: list[Any]) -> list[Any]:
        # A repeated seed runs the same cell again, and the study would count it as one more
        # sample: its n and its statistics would be inflated.
        repeated = [value for i, value in enumerate(values) if value in values[:i]]
        if repeated:
            named = ", ".join(repr(value) for value in dict.fromkeys(repeated))
            raise ValueError(f"{named} given more than once: list each value once (a repeat "
                             "would run the same cells again and count them as more samples)")
        return values

    @field_validator("overrides")
    @classmethod
    def _no_per_cell_keys(cls, overrides: list[str]) -> list[str]:
        for text in overrides:
            key = text.split("=", 1)[0].strip()
            if key in PER_CELL_KEYS:
                axis, option = PER_CELL_KEYS[key]
                raise ValueError(
                    f"{text.strip()!r} sets {key!r}, which the grid sets in each cell from its "
                    f"`{axis}` (the override would be lost): list them there instead "
                    f"(`breadth grid {option}`, repeated)"
                )
        return overrides

    @field_validator("overrides")
    @classmethod
    def _no_key_a_variant_sets_again(cls, overrides: list[str], info: Any) -> list[str]:
        # `SPEC@VARIANT` cells apply the variant's overrides after the shared ones: a shared
        # value of one of those keys would be silently replaced in them.
        for name, knobs in VARIANTS.items():
            variants = [r for r in info.data.get("rewards", []) if r.endswith(f"@{name}")]
            keys = {knob.split("=", 1)[0]: knob for knob in knobs}
            for text in overrides if variants else []:
                key = text.split("=", 1)[0].strip()
                if key in keys:
                    raise ValueError(
                        f"{text.strip()!r} sets {key!r}, which the {', '.join(variants)} cells "
                        f"set again ({keys[key]}): the override would be lost there. Set it for "
                        f"those cells in objective_overrides (e.g. {{{variants[0]!r}: "
                        f"[{text.strip()!r}]}}), or leave the @{name} objective out of this grid"
                    )
        return overrides

    @field_validator("objective_overrides")
    @classmethod
    def _only_objective_keys(cls, overrides: dict[str, list[str]]) -> dict[str, list[str]]:
        # They apply after the cell's own format, spec and seed, and check_fair lets seeds and
        # formats differ between cells: `seed=3` here made all of an objective's "seeds" one
        # run, counted as several samples. Anything else is not the objective, so not fair.
        for objective, texts in overrides.items():
            for text in texts:
                key = text.split("=", 1)[0].strip()
                if key in PER_CELL_KEYS or not key.startswith(OBJECTIVE_KEYS):
                    why = (f"the grid sets {key!r} in each cell from its `{PER_CELL_KEYS[key][0]}`"
                           if key in PER_CELL_KEYS else
                           "an objective may change only its reward (rl.reward.*) and entropy "
                           "knobs; the cells must share everything else")
                    raise ValueError(
                        f"objective_overrides[{objective!r}] sets {key!r} ({text.strip()!r}): "
                        f"{why}. Put shared keys in `overrides` or the preset; keys allowed "
                        f"here: {', '.join(k + '*' if k.endswith('.') else k for k in OBJECTIVE_KEYS)}"
                    )
        return overrides

    @model_validator(mode="before")
    @classmethod
    def _nightly_thinning_only_for_the_nightly(cls, data: Any) -> Any:
        # The default thinning (mcq: correctness only) belongs to the default objectives and
        # formats: a grid that names its own would lose cells it asked for (mcq darling), or
        # name a format it does not run.
        if isinstance(data, dict) and "format_rewards" not in data and (
                {"rewards", "formats"} & set(data)):
            return {**data, "format_rewards": {}}
        return data

    def rewards_of(self, fmt: str) -> list[str]:
        """The objectives run in format `fmt`: `format_rewards[fmt]` where given, in the order
        of `rewards`, else all of `rewards`."""
        kept = self.format_rewards.get(fmt)  # type: ignore[call-overload]
        return list(self.rewards) if kept is None else [r for r in self.rewards if r in kept]

    def cells(self) -> list[tuple[str, str, int, PipelineConfig]]:
        """(format, objective, seed, validated config) per cell, all checked before compute."""
        unknown = sorted(set(self.objective_overrides) - set(self.rewards))
        if unknown:
            raise ConfigError(f"grid objective_overrides name objectives {unknown} that are not "
                              f"in the grid's rewards {self.rewards}")
        for fmt, kept in self.format_rewards.items():
            if fmt not in self.formats:
                raise ConfigError(f"grid format_rewards names format {fmt!r}, which is not in "
                                  f"the grid's formats {self.formats}: add it there or drop "
                                  "the entry")
            strays = [r for r in kept if r not in self.rewards]
            if strays or not kept:
                raise ConfigError(f"grid format_rewards[{fmt!r}] = {kept}: each must be one of "
                                  f"the grid's rewards {self.rewards}, and at least one; "
                                  f"{strays or 'none given'}")
        cells = []
        for fmt in self.formats:
            for reward in self.rewards_of(fmt):
                spec, _, variant = reward.partition("@")
                if variant and variant not in VARIANTS:
                    raise ConfigError(
                        f"grid reward {reward!r}: unknown variant {variant!r}; use SPEC or "
                        + " or ".join(f"SPEC@{name}" for name in VARIANTS)
                    )
                extra = VARIANTS.get(variant, [])
                for seed in self.seeds:
                    overrides = [*self.overrides, f"data.format={fmt}", f"rl.reward.spec={spec}",
                                 f"seed={seed}", *extra,
                                 *self.objective_overrides.get(reward, [])]
                    cells.append((fmt, reward, seed, load_config(self.preset, overrides, {
                        key: option for key, (_, option) in PER_CELL_KEYS.items()})))
        check_fair(cells)
        return cells

    def content_hash(self) -> str:
        """Identifies 'the same study' across nights: the preset's content and the overrides
        count; seeds, the grid id and how cells run are excluded, so a night with other seeds is still compared with the previous one (and
        the pilot the report cites is not the study either)."""
        # How cells are run is not what the study is: a night on a pool compares with one
        # that ran in process.
        payload = self.model_dump(mode="json", exclude={"grid_id", "seeds", *RUNNER_KEYS,
                                                        *REPORT_KEYS})
        # What the preset holds, not only its name: a preset edited between nights (more
        # samples, another split) is another study, and its nights are not compared.
        payload["preset_content"] = load_config(self.preset, list(self.overrides)).model_dump(
            mode="json", exclude={"seed"})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def check_fair(cells: list[tuple[str, str, int, PipelineConfig]]) -> None:
    """Refuse cells that differ in anything but the objective (and their format and seed).

    >>> a, b = load_config("default"), load_config("default", ["rl.num_problems=64"])
    >>> try:
    ...     check_fair([("free_form", "x", 0, a), ("free_form", "y", 0, b)])
    ... except ConfigError as error:
    ...     print(str(error)[:62])
    grid cells differ beyond the objective in rl.num_problems (rl.
    """
    if not cells:
        return
    *_, reference = cells[0]
    ref = reference.flat()
    unfair: dict[str, list[str]] = {}
    for fmt, objective, seed, config in cells[1:]:
        for key, value in config.flat().items():
            if value != ref.get(key) and not key.startswith(OBJECTIVE_KEYS + GRID_AXIS_KEYS):
                unfair.setdefault(key, []).append(f"{fmt}/{objective}/seed{seed}={value!r}")
    if unfair:
        keys = ", ".join(sorted(unfair))
        first = cells[0]
        examples = "; ".join(f"{key}: {first[0]}/{first[1]}/seed{first[2]}={ref.get(key)!r} vs "
                             f"{cells_[0]}" for key, cells_ in sorted(unfair.items()))
        raise ConfigError(
            f"grid cells differ beyond the objective in {keys} ({examples}). A fair grid "
            "changes only the reward and entropy keys between cells: move these keys into the "
            "preset or `overrides`, so every cell shares them."
        )
