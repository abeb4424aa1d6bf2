"""One set of typed configs for every stage, YAML presets validated by them, and `--set` overrides.

Every field carries a description: the Prefect UI shows it as help text in the run form, and
`breadth run --help-config` prints it. Validation happens here, before any compute, and errors
name the config key, what was wrong and the allowed values.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from breadth.data.prepare import DEFAULT_EVAL_FRACTION, SYNTHETIC_NUM_EVAL, SYNTHETIC_NUM_TRAIN
from breadth.data.records import Format
from breadth.data.sources import parse_source_spec
from breadth.data.tasks import synthetic_task_names
from breadth.rewards.registry import REWARDS, resolve_params, reward_names
from breadth.rewards.spec import parse_reward_spec
from breadth.suggestions import did_you_mean


class _Section(BaseModel):
    # extra="forbid": a misspelt key in a preset or `--set` must fail loudly, not be ignored.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DataConfig(_Section):
    source: str = Field(
        "synthetic:arithmetic",
        description="Problem source: "
        + " | ".join(f"`synthetic:{task}`" for task in synthetic_task_names())
        + " | `jsonl:PATH` | `parquet:PATH` | `hf:NAME[:CONFIG]` (NAME may be a local folder of split "
        "files).",
    )
    eval_source: str | None = Field(
        None,
        description="Separate source of evaluation problems (`jsonl:PATH` | `parquet:PATH` | "
        "`hf:NAME[:CONFIG]`): all its rows (its test split, if it has one) evaluate, and "
        "`source` gives training problems only. Empty = split `source` itself.",
    )
    eval_only: bool = Field(
        False,
        description="Every problem of `source` (its test split, if it has one) is an "
        "evaluation problem and none trains: to evaluate a model on a test set. Needs "
        "sft.enabled=false and rl.enabled=false.",
    )
    eval_fraction: float = Field(
        DEFAULT_EVAL_FRACTION, gt=0, lt=1,
        description="Share of a file or hub source without its own train/test splits held "
        "out for evaluation (chosen by a hash of each problem, so stable under reordering).",
    )
    format: Format = Field(
        "free_form", description="How problems are shown to the model: free_form or mcq."
    )
    schema_name: Literal["auto", "gsm8k", "aqua", "generic"] = Field(
        "auto", description="Column layout of file and hub sources (auto-detected by default)."
    )
    num_train: int | None = Field(
        None, ge=1,
        description=f"Training problems. Synthetic sources generate this many (empty = "
        f"{SYNTHETIC_NUM_TRAIN}); file and hub sources keep every row unless it is set, then a "
        "seeded sample of this many.",
    )
    num_eval: int | None = Field(
        None, ge=1,
        description=f"Evaluation problems. Synthetic sources generate this many (empty = "
        f"{SYNTHETIC_NUM_EVAL}); file and hub sources keep every row unless it is set, then a "
        "seeded sample of this many.",
    )
    difficulty: Literal[1, 2, 3, "mixed"] = Field(
        2, description="Synthetic difficulty, 1 (easy) to 3, or `mixed` (equal shares of 1-3, "
        "no problem at two levels; a level short of its share is an error)."
    )
    mixed_fill: bool = Field(
        False, description="Mixed difficulty: a level that holds fewer problems than its equal "
        "share passes what it lacks to the next level instead of failing (each row's "
        "difficulty column says its level)."
    )
    num_options: int = Field(
        4, ge=2, le=10, description="mcq: options per question, the gold one and generated "
        "distractors (chance pass@1 = 1/num_options); a source's own choices are kept as given.",
    )
    reasoning: bool = Field(
        False, description="Include a reasoning trace in SFT targets (longer sequences)."
    )
    on_bad_rows: Literal["fail", "skip"] = Field(
        "fail", description="fail: stop with a report of bad rows; skip: drop and record them."
    )

    @field_validator("source", "eval_source")
    @classmethod
    def _source_spec_is_known(cls, spec: str | None) -> str | None:
        if spec is not None:
            parse_source_spec(spec)  # raises ValueError listing the accepted forms
        return spec

    @model_validator(mode="after")
    def _one_way_to_choose_eval_problems(self) -> DataConfig:
        if self.eval_only and self.eval_source:
            raise ValueError(
                "data.eval_only and data.eval_source exclude each other: eval_only makes "
                "data.source the evaluation set; set only one"
            )
        if self.eval_source and self.eval_source.startswith("synthetic:"):
            raise ValueError(
                "data.eval_source cannot be synthetic; a synthetic data.source already "
                "generates its own evaluation problems"
            )
        return self


class ModelConfig(_Section):
    name_or_path: str | None = Field(
        None,
        description="Hub name or local path of a causal LM; empty = create the tiny "
        "character-level Qwen3-style model from scratch.",
    )
    hidden_size: int = Field(128, ge=32, description="Tiny model: hidden size.")
    num_layers: int = Field(2, ge=1, description="Tiny model: transformer layers.")
    num_heads: int = Field(
        4, ge=1, description="Tiny model: attention heads (head dim = hidden/heads, >= 32)."
    )
    intermediate_size: int = Field(256, ge=8, description="Tiny model: MLP width.")
    max_length: int = Field(96, ge=16, description="Tiny model: maximum sequence length.")

    @model_validator(mode="after")
    def _head_dim_at_least_32(self) -> ModelConfig:
        # vLLM's attention backends refuse head dimensions below 32 (docs/design/versions.md).
        if self.name_or_path is None:
            if self.hidden_size % self.num_heads:
                raise ValueError(
                    f"model.hidden_size={self.hidden_size} must be divisible by "
                    f"model.num_heads={self.num_heads}"
                )
            if self.hidden_size // self.num_heads < 32:
                raise ValueError(
                    f"head dim model.hidden_size/model.num_heads = "
                    f"{self.hidden_size // self.num_heads} is below 32, which vLLM refuses; "
                    "raise hidden_size or lower num_heads"
                )
        return self


class SFTConfig(_Section):
    enabled: bool = Field(True, description="Warm-start the policy by SFT on the rendered targets.")
    epochs: float = Field(8.0, gt=0, description="SFT passes over the training set.")
    learning_rate: float = Field(3e-3, gt=0, description="SFT learning rate.")
    batch_size: int = Field(64, ge=1, description="SFT batch size per device.")


class _RewardSpecSection(_Section):
    spec: str = Field(
        "correctness",
        description="Reward terms joined by `+`, each `NAME[:key=val][*weight]`: "
        f"{', '.join(f'`{name}`' for name in reward_names())}. E.g. `correctness+ucb*0.5`; "
        "`breadth config --rewards` describes each term and its parameters.",
    )

    @field_validator("spec")
    @classmethod
    def _spec_parses(cls, spec: str) -> str:
        parse_reward_spec(spec)  # its ValueError names the term at fault and the fix
        return spec


def _reward_param_fields() -> dict[str, Any]:
    # One field `<reward>_<param>` per registered parameter: its type, default, range and help
    # are the registry's, so a new reward's parameters appear here (and in the UI form) as is.
    fields: dict[str, Any] = {}
    for entry in REWARDS.values():
        for param in entry.params:
            annotation = Literal[param.choices] if param.choices else param.kind  # type: ignore[valid-type]
            description = f"{entry.name}: {param.help}."
            fields[entry.config_key(param)] = (annotation, Field(
                param.default, description=description, ge=param.ge, gt=param.gt, le=param.le
            ))  # fmt: skip
    return fields


RewardConfig = create_model(
    "RewardConfig",
    __base__=_RewardSpecSection,
    __module__=__name__,
    __doc__="The reward spec and every registered reward parameter "
    "(`breadth.rewards.registry`); inline spec parameters override these fields.",
    **_reward_param_fields(),
)


class RLConfig(_Section):
    enabled: bool = Field(True, description="Run GRPO after SFT.")
    max_steps: int = Field(100, ge=1, description="GRPO optimisation steps.")
    learning_rate: float = Field(1e-4, gt=0, description="GRPO learning rate.")
    num_generations: int = Field(8, ge=2, description="Completions per prompt (the group size G).")
    prompts_per_step: int = Field(
        8, ge=1, description="Distinct prompts per optimisation step, over all processes "
        "(each of the rl.num_processes processes generates for an equal share of whole groups).",
    )
    num_processes: int = Field(
        1, ge=1, description="Data-parallel training processes. Above 1 the stage launches them "
        "itself (torch.distributed on CPU with gloo, or `accelerate launch` with "
        "rl.accelerate_config); must divide rl.prompts_per_step.",
    )
    accelerate_config: str | None = Field(
        None, description="An accelerate config file (e.g. infra/accelerate/deepspeed-zero2.yaml"
        ") to launch the training processes with, even one (DeepSpeed on one GPU); empty = "
        "torch.distributed when rl.num_processes > 1. Its num_processes is replaced by "
        "rl.num_processes.",
    )
    num_problems: int = Field(
        0, ge=0, description="Train GRPO on the first N training problems only (0 = all). "
        "Historical exploration (ucb) needs problems that recur across steps.",
    )
    max_completion_length: int = Field(8, ge=1, description="Max new tokens per completion.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature during training.")
    beta: float = Field(0.0, ge=0, description="KL coefficient against the reference policy.")
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo", "cispo", "sapo"] = Field(
        "dapo", description="TRL loss aggregation."
    )
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group", description="Advantage scaling; rewards whose formula needs 'none' (darling, "
        "passk) set it, and refuse another value given here."
    )
    epsilon: float = Field(0.2, gt=0, description="Lower PPO clip range.")
    epsilon_high: float | None = Field(
        None, description="Upper clip range (clip-higher; DAPO suggests 0.28). Empty = epsilon."
    )
    top_entropy_quantile: float = Field(
        1.0, gt=0, le=1, description="Update only the top rho highest-entropy tokens (0.2 = 80/20)."
    )
    entropy_coef: float = Field(
        0.0, ge=0, description="Entropy bonus coefficient added to the loss (0 = off)."
    )
    adaptive_entropy: bool = Field(
        False, description="Adapt entropy_coef towards entropy_target (Skywork-OR1 style)."
    )
    entropy_target: float = Field(
        0.2, ge=0, description="Target mean token entropy (nats) for adaptive entropy control."
    )
    save_steps: int = Field(25, ge=1, description="Checkpoint every N steps (to S3 under the run).")
    vllm_server_url: str | None = Field(
        None, description="TRL's vLLM server mode: base URL of a `trl vllm-serve` server that "
        "generates GRPO's completions (needs CUDA; untested on CPU). Empty = the trainer "
        "generates with transformers.",
    )
    vllm_server_timeout_s: float = Field(
        240.0, gt=0, description="Seconds the trainer waits for the `trl vllm-serve` server "
        "to answer at start-up (rl.vllm_server_url).",
    )
    reward: RewardConfig = Field(default_factory=RewardConfig)

    @model_validator(mode="after")
    def _whole_groups_per_process(self) -> RLConfig:
        # Each process scores whole groups: its share of the prompts must be a whole number.
        if self.prompts_per_step % self.num_processes:
            raise ValueError(
                f"rl.prompts_per_step={self.prompts_per_step} is not divisible by "
                f"rl.num_processes={self.num_processes}: each process must generate the same "
                "number of whole prompt groups. Set rl.prompts_per_step to a multiple of "
                f"{self.num_processes} or change rl.num_processes"
            )
        return self

    @model_validator(mode="after")
    def _reward_terms_fit_training(self) -> RLConfig:
        # Checked here, not at the first GRPO step: prepare and SFT must not run for a spec
        # that training would refuse.
        for term in parse_reward_spec(self.reward.spec).terms:
            entry = REWARDS[term.name]
            if entry.not_in_training:
                usable = ", ".join(e.name for e in REWARDS.values() if not e.not_in_training)
                raise ValueError(
                    f"rl.reward.spec={self.reward.spec!r}: the reward {term.name!r} cannot be "
                    f"trained here: {entry.not_in_training} Use one of: {usable}"
                )
            params = resolve_params(term.name, term.params, self.reward)
            entry.term.check_group_sizes(params, {"rl.num_generations": self.num_generations})
            for key, needed in entry.term.grpo_overrides.items():
                if getattr(self, key) == needed:
                    continue
                # A value given (a preset, --set, a filled form field, a whole config's JSON)
                # is a choice, the default's included: refused, not silently replaced.
                if key in self.model_fields_set:
                    raise ValueError(
                        f"rl.{key}={getattr(self, key)!r} conflicts with the reward "
                        f"{term.name!r}, whose formula needs {needed!r}: leave rl.{key} unset "
                        "(the reward sets it), or train another reward"
                    )
                # The config says what training uses, so the run's logged params are true
                # (they said 'group' while TRL ran with 'none'). Set without re-validating.
                self.__dict__[key] = needed
        return self


class RolloutConfig(_Section):
    backend: Literal["transformers", "vllm", "auto"] = Field(
        "transformers",
        description="Generation backend (vllm = OpenAI-compatible server; auto = vllm on a CUDA "
        "device for models of >= 100M parameters when vLLM is installed, else transformers).",
    )
    vllm_url: str | list[str] | None = Field(
        None,
        description="Existing vLLM server URL, or several (a list, or one string of "
        "comma-separated URLs) serving the same model: requests are spread across them and a "
        "failed server's requests go to the others. Empty = start one server per model.",
    )
    vllm_tensor_parallel: int = Field(
        1, ge=1, description="GPUs per vLLM server that breadth starts itself "
        "(--tensor-parallel-size); ignored for servers given by vllm_url.",
    )
    vllm_gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="Share of GPU memory a vLLM server that breadth starts may "
        "use (--gpu-memory-utilization). Empty = 0.5 on a GPU, 0.3 of host RAM on the CPU build.",
    )
    num_samples: int = Field(16, ge=1, description="Samples per evaluation problem (n).")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling top-p.")
    max_new_tokens: int = Field(8, ge=1, description="Max new tokens per sample.")
    batch_size: int = Field(256, ge=1, description="Sequences per generate() call.")


class EvaluationConfig(_Section):
    bootstrap_samples: int = Field(500, ge=10, description="Bootstrap resamples for CIs.")
    maj_resamples: int = Field(
        32, ge=1, description="maj@k is exact (the expected vote over every k-subset) unless "
        "that costs too much (large n and k): there it is the mean of this many seeded k-subsets "
        "per problem, and the report says at which k.",
    )
    search_budget: int = Field(
        16, ge=0, description="Samples per problem for evolutionary search (0 = skip search)."
    )
    transfer_split_k: int = Field(
        4, ge=1, description="Transfer split: a problem is base-solved when the base model's "
        "pass@k at this k reaches `transfer_split_threshold` (a fixed budget, not n).",
    )
    transfer_split_threshold: float = Field(
        0.5, gt=0, le=1, description="Transfer split: base pass@`transfer_split_k` at or above "
        "this is base-solved.",
    )
    transfer_min_split: int = Field(
        20, ge=1, description="A transfer split with fewer problems is reported as inconclusive.",
    )
    search_initial_share: float = Field(
        0.5, gt=0, le=1, description="Share of the search budget drawn from the plain prompt "
        "(generation 0); at least one sample.",
    )
    search_children_share: float = Field(
        0.25, gt=0, le=1, description="Share of the search budget drawn from each child prompt "
        "per generation; at least one sample.",
    )
    search_max_attempt_chars: int = Field(
        32, ge=1, description="Each earlier attempt shown in a child prompt is cut to this many "
        "characters (prompts stay short for small models).",
    )
    search_chunk: int = Field(
        64, ge=1, description="Prompts per generation call during search (bounds memory).",
    )


class TrackingConfig(_Section):
    experiment: str | None = Field(
        None, description="MLflow experiment; empty = the preset name."
    )
    log_models: bool = Field(
        True, description="Log SFT and RL policies as MLflow models (mlflow.transformers)."
    )
    upload_retry_s: float = Field(
        600.0, ge=0, le=86400,
        description="How long an S3 upload (checkpoints, models) or a background MLflow write "
        "retries, with backoff, before the stage fails. Training goes on meanwhile.",
    )


class PipelineConfig(_Section):
    """The whole pipeline. The Prefect flow's `config` parameter is its form twin,
    `breadth.run_form.PipelineConfigForm`: the UI renders it as a form."""

    preset: str = Field(
        "default", description="Label: the preset these values started from (names the MLflow "
        "experiment and run). It does not load the preset: in the run form, choose one in the "
        "flow's `preset` field, above `config`.",
    )
    seed: int = Field(0, description="Seed for data, model init, training and sampling.")
    data: DataConfig = Field(default_factory=DataConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    rl: RLConfig = Field(default_factory=RLConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)

    @model_validator(mode="after")
    def _split_budget_within_samples(self) -> PipelineConfig:
        if self.evaluation.transfer_split_k > self.rollout.num_samples:
            raise ValueError(
                f"evaluation.transfer_split_k={self.evaluation.transfer_split_k} exceeds "
                f"rollout.num_samples={self.rollout.num_samples}: the transfer split needs the "
                "base model's pass@k at that k; lower it or raise rollout.num_samples"
            )
        return self

    @model_validator(mode="after")
    def _eval_only_trains_nothing(self) -> PipelineConfig:
        if self.data.eval_only and (self.sft.enabled or self.rl.enabled):
            raise ValueError(
                "data.eval_only=true leaves no training problems, but training is on: also "
                "set sft.enabled=false and rl.enabled=false (and model.name_or_path to the "
                "model to evaluate)"
            )
        return self

    def content_hash(self, *sections: str) -> str:
        """sha256 of the config (or of the named sections): a cache key and an MLflow tag."""
        dumped = self.model_dump(mode="json")
        payload = {name: dumped[name] for name in sections} if sections else dumped
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def flat(self) -> dict[str, Any]:
        """Dotted key -> value, for MLflow params."""
        return _flatten(self.model_dump(mode="json"))


class ConfigError(ValueError):
    """A config that cannot be used; the message names the key and the fix."""


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def available_presets() -> list[str]:
    folder = resources.files("breadth") / "presets"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


MAX_PRESET_CHAIN = 16  # presets extending presets: deeper than this is a cycle in disguise


def _preset_values(name: str, _chain: tuple[str, ...] = ()) -> dict[str, Any]:
    path = Path(name)
    if path.suffix in {".yaml", ".yml"}:
        text = _preset_file_text(path)
    else:
        if name not in available_presets() and ("/" in name or path.exists()):
            raise ConfigError(f"preset {name!r} is a path but not a .yaml or .yml file; give a "
                              f"preset file, or a preset name: {', '.join(available_presets())}.")  # fmt: skip
        if name not in available_presets():
            raise ConfigError(
                f"unknown preset {name!r}.{did_you_mean(name, available_presets())} Available "
                f"presets: {', '.join(available_presets())}. "
                "Pass one of these with --preset, or a path to a YAML file."
            )
        text = (resources.files("breadth") / "presets" / f"{name}.yaml").read_text()
    try:
        values = _read_preset_yaml(text, name) or {}
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or "malformed"
        raise ConfigError(f"preset file {name} is not valid YAML{at}: {problem}. Fix the "
                          "file, or start from `breadth config` output.") from None
    if not isinstance(values, dict):
        raise ConfigError(f"preset {name!r} must be a YAML mapping, got {type(values).__name__}")
    parent = values.pop("extends", None)
    if parent is not None:
        # `extends: study` starts from another preset, so a variant states only what differs.
        if not isinstance(parent, str):
            raise ConfigError(f"preset {name!r}: `extends` must name another preset or YAML "
                              f"file, got {parent!r}")  # fmt: skip
        if Path(parent).suffix in {".yaml", ".yml"} and path.suffix in {".yaml", ".yml"}:
            # A file names its parent file as it sits beside it, wherever the command runs;
            # resolved, so a cycle is seen however its paths are spelled (../a/x.yaml).
            parent = str((path.parent / Path(parent).expanduser()).resolve())
        chain = (*_chain, name)
        if parent in chain or len(chain) > MAX_PRESET_CHAIN:
            raise ConfigError(f"presets extend each other in a cycle: "
                              f"{' -> '.join([*chain, parent])}; remove one `extends`")  # fmt: skip
        return _merge(_preset_values(parent, chain), values)
    return values


def _read_preset_yaml(text: str, name: str) -> Any:
    """A preset's YAML, each value read as a `--set` value is (see `_as_written`)."""
    return _read_yaml(text, lambda loader, node: _values_as_written(loader, node, "", name))


def _read_yaml(text: str, retag: Any) -> Any:
    """YAML text with `retag(loader, node)` run on its node tree before the values are made."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        retag(loader, node)
        try:
            return loader.construct_document(node)
        except _CONSTRUCT_ERRORS as error:
            # A value `retag` does not reach (a tagged mapping key, a whole document): a
            # YAML error, not a traceback.
            raise yaml.constructor.ConstructorError(
                None, None, f"a value YAML cannot read ({error}); quote it to keep it as text"
            ) from None
    finally:
        loader.dispose()


# What PyYAML's scalar constructors raise on a value its tag cannot make: `2024-13-45` (a
# date by its look) or `!!int x`, `!!bool x`, `!!timestamp x`, `!!int ""`.
_CONSTRUCT_ERRORS = (ValueError, TypeError, LookupError, AttributeError)
_STR_TAG = "tag:yaml.org,2002:str"
# The tags YAML gives a plain scalar that a text key reads as the characters written.
_NOT_TEXT_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "timestamp")}


def _values_as_written(loader: yaml.SafeLoader, node: yaml.Node, prefix: str, name: str) -> None:
    """Walk a preset's sections and read the value of each key as written."""
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        key = f"{prefix}{key_node.value}"
        if isinstance(value_node, yaml.MappingNode):
            _values_as_written(loader, value_node, f"{key}.", name)
        else:  # a misspelt key is only checked to be readable; validation suggests the right one
            _value_as_written(loader, value_node, key, name)


def _value_as_written(loader: yaml.SafeLoader, node: yaml.Node, key: str,
                      preset: str | None = None) -> None:
    """Retag the scalars of a key's value (or of its list's items) as `_as_written` reads them,
    a text key's without making them; a refusal names the preset file and line (`preset`
    None: a --set value)."""
    known = key in _known_keys()
    takes_text = known and _takes_text(key)
    for item in node.value if isinstance(node, yaml.SequenceNode) else [node]:
        # Quoted and block scalars are text already, unless tagged (`!!int "7"`).
        if not isinstance(item, yaml.ScalarNode) or item.tag == _STR_TAG:
            continue
        if takes_text:
            # The characters written, never made into a value: 3.10 stays "3.10", and
            # 2024-13-45 is no date to fail on.
            if item.tag in _NOT_TEXT_TAGS:
                item.tag = _STR_TAG
            continue
        try:
            value = _constructed(loader, item, key, known)
            if known and item.style is None:
                value = _as_written(key, item.value, value)
        except ConfigError as error:
            if preset is None:
                raise
            raise ConfigError(f"preset file {preset}, line {item.start_mark.line + 1}: "
                              f"{error}") from None  # fmt: skip
        if isinstance(value, str):
            item.tag = _STR_TAG


def _constructed(loader: yaml.SafeLoader, item: yaml.ScalarNode, key: str, known: bool) -> Any:
    """What YAML reads the scalar `item` as, by the tag it resolved or was given (the
    cache-free scalar constructors); a value the tag cannot make is a ConfigError saying
    what to write, not a traceback."""
    construct = loader.yaml_constructors.get(item.tag)
    if construct is None:
        return item.value
    try:
        return construct(loader, item)
    except _CONSTRUCT_ERRORS as error:
        why = f" ({error})" if isinstance(error, ValueError) else ""
        tag = item.tag.replace("tag:yaml.org,2002:", "!!")
        kind = _TAG_KINDS.get(tag, f"a {tag} value")
        if loader.resolve(yaml.ScalarNode, item.value, (True, False)) == item.tag:
            problem = f"{item.value} looks like {kind} to YAML but is not one{why}"
        else:  # tagged by hand: `!!int x`
            problem = f"{tag} {item.value} is not {kind}{why}"
        if not known:
            raise ConfigError(f"key {key}: {problem}; quote it to keep it as text") from None
        kinds = _kinds(key)
        text = ", or quote it to keep it as text" if str in kinds else ""
        raise ConfigError(f"config key {key}: {problem}; write {_wanted(kinds)}{text}") from None


_TAG_KINDS = {"!!timestamp": "a date", "!!int": "a whole number", "!!float": "a number",
              "!!bool": "a yes/no word"}  # fmt: skip


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        both_sections = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both_sections else value
    return merged


def _preset_file_text(path: Path) -> str:
    if not path.exists():
        raise ConfigError(f"preset file {path} does not exist. Check the path (relative to the "
                          f"current directory), or use a preset name: "
                          f"{', '.join(available_presets())}.")
    if not path.is_file():
        raise ConfigError(f"preset file {path} is a folder, not a YAML file.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"preset file {path} is not UTF-8 text (a binary file?); a preset is "
                          "a YAML mapping such as `rl: {max_steps: 4}`.") from None
    except OSError as error:
        raise ConfigError(f"preset file {path} cannot be read: {error.strerror}.") from None


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"config key {dotted!r}: {part!r} is a value, not a section")
        node = child
    node[leaf] = value


def _known_keys() -> list[str]:
    return [key for key, _ in describe_keys()]


def describe_keys(model: type[BaseModel] = PipelineConfig, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, description) for every leaf field: the help behind `breadth config --keys`."""
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(describe_keys(annotation, f"{prefix}{name}."))
        else:
            rows.append((f"{prefix}{name}", field.description or ""))
    return rows


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` -> (key, the value as YAML reads it, by the rules a preset's values follow:
    see `_value_as_written`): `rl.max_steps=4` gives ("rl.max_steps", 4); a text key keeps the
    characters written.

    >>> parse_override("tracking.experiment=3.10")
    ('tracking.experiment', '3.10')
    """
    if "=" not in text:
        raise ConfigError(f"--set {text!r} is not key=value (e.g. --set rl.max_steps=4)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if key == "preset":
        # The field only labels the run (MLflow experiment and run name): setting it would
        # name the run after a preset whose values it does not use.
        raise ConfigError(f"--set {text!r}: `preset` is only a label, it loads nothing; use "
                          f"--preset {raw.strip()} to start from that preset.")  # fmt: skip
    if key not in _known_keys():
        raise ConfigError(
            f"unknown config key {key!r} in --set.{did_you_mean(key, _known_keys())} Run "
            "`breadth config --keys` for the list."
        )
    try:
        return key, _read_yaml(raw, lambda loader, node: _value_as_written(loader, node, key))
    except yaml.YAMLError:
        return key, raw
    except ConfigError as error:
        raise ConfigError(f"--set {text!r}: {error}") from None


# Numbers only YAML 1.1 (PyYAML) reads so: 010 is octal 8 (YAML 1.2 and most readers: 10) and
# 1:30 is base 60, 90.
_YAML_1_1_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_YAML_1_1_BASE_60 = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


def _as_written(key: str, written: str, value: Any) -> Any:
    """The value of a known key that is not text (a text key keeps the characters written:
    see `_value_as_written`) written as the plain YAML scalar `written`, which YAML read as
    `value`: the rule for a preset's values and a `--set` value alike.

    Such a key refuses what YAML or pydantic would silently change: a yes/no word (pydantic
    makes `on` 1) and a number in a form only YAML 1.1 reads (010 is 8, 1:30 is 90). A
    zero-padded number that reads the same either way (07, 00) is taken.

    >>> _as_written("seed", "07", 7)
    7
    >>> _as_written("seed", "010", 8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    breadth.config.ConfigError: config key seed: 010 is an octal number in YAML, read as 8; ...
    """
    kinds = _kinds(key)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"config key {key}: {written} is a yes/no word in YAML, read as "
                          f"{str(value).lower()}; write {_wanted(kinds)}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Octal only where the digits say otherwise in decimal: 010 is 8 or 10, 07 is 7.
        if _YAML_1_1_OCTAL.fullmatch(written) and value != int(written.replace("_", "")):
            raise ConfigError(f"config key {key}: {written} is an octal number in YAML, read "
                              f"as {value}; write {value}, or {int(written.replace('_', ''))} "
                              "without the zero")  # fmt: skip
        if _YAML_1_1_BASE_60.fullmatch(written):
            raise ConfigError(f"config key {key}: {written} is a base-60 number in YAML, read "
                              f"as {value}; write the number meant (e.g. {value})")
    return value


def _wanted(kinds: set[Any]) -> str:
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}
    return " or ".join(name for kind, name in names.items() if kind in kinds) or "a value"


def _kinds(key: str) -> set[Any]:
    """The types a known dotted config key takes: a Literal's values count as their types."""
    model: Any = PipelineConfig
    *sections, leaf = key.split(".")
    for section in sections:
        model = model.model_fields[section].annotation
    annotation = model.model_fields[leaf].annotation
    if get_origin(annotation) is Literal:
        return {type(choice) for choice in get_args(annotation)}
    return set(get_args(annotation)) or {annotation}


def _takes_text(key: str) -> bool:
    """Whether a known dotted config key holds text (maybe also None or a list), not a number."""
    kinds = _kinds(key)
    return str in kinds and not kinds & {bool, int, float}


PRESET_OR_SET = "the preset or the --set value"


def _describe(error: ValidationError, options: Mapping[str, str] | None = None,
              fallback: str = PRESET_OR_SET) -> str:
    """One line per invalid key, then what to fix. `options` (config key -> what set it, e.g.
    a grid's rl.reward.spec -> --reward, or an override's text) names that rather than
    `fallback` (the preset): a typo in `breadth grid --reward` was blamed on the preset."""
    options = options or {}
    lines, fixes = [], []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(top level)"
        got = item.get("input")
        got_text = "" if isinstance(got, dict) else f" (got {got!r})"
        # A misspelt key in a preset file: suggest the key it was meant to be.
        hint = did_you_mean(key, _known_keys()) if item["type"] == "extra_forbidden" else ""
        source = f" (from {options[key]})" if key in options else ""
        lines.append(f"config key {key}{source}: {item['msg']}{got_text}{hint}")
        # A check across keys fails at their section (`rl`: passk's k against
        # rl.num_generations): an option that sets a key in that section may be the cause too.
        within = [option for k, option in options.items() if k.startswith(f"{key}.")]
        fixes.append(options[key] if key in options else " or ".join([*within, fallback]))
    # The key list helps with a misspelt or misplaced key, not with a value an option gave.
    keys_hint = ("; `breadth config --keys` lists every key"
                 if any(fallback in fix or "the override" in fix for fix in fixes) else "")  # fmt: skip
    return "invalid configuration:\n  " + "\n  ".join(lines) + (
        f"\nFix {' and '.join(dict.fromkeys(fixes))}{keys_hint}."
    )


def describe_options(error: ValidationError, options: dict[str, str]) -> str:
    """A validation error of a model built from command-line options, each line naming the
    option (`options`: field -> `--option`) instead of the field and its list index.

    >>> try:
    ...     GridConfig(formats=["xml"])
    ... except ValidationError as error:
    ...     print(describe_options(error, {"formats": "--format"}))
    invalid options:
      --format: Input should be 'free_form' or 'mcq' (got 'xml')
    """
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        name = options.get(field) or ".".join(str(p) for p in item["loc"]) or "(options)"
        # A validator's own message already says what is wrong; pydantic prefixes its kind.
        message = item["msg"].removeprefix("Value error, ")
        got = item.get("input")
        got_text = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
        lines.append(f"{name}: {message}{got_text}")
    return "invalid options:\n  " + "\n  ".join(lines)


def load_config(
    preset: str = "default", overrides: list[str] | None = None,
    options: Mapping[str, str] | None = None,
) -> PipelineConfig:  # fmt: skip
    """Preset YAML + `key=value` overrides -> a validated PipelineConfig; an invalid key that
    `options` maps to a command-line option is blamed on that option (see `_describe`).

    >>> load_config("default", ["rl.max_steps=2"]).rl.max_steps
    2
    """
    values = _preset_values(preset)
    values.setdefault("preset", Path(preset).stem)
    # An invalid key is blamed on what set it: an option, else its override, else the preset.
    blame: dict[str, str] = {}
    for text in overrides or []:
        key, value = parse_override(text)
        _set_dotted(values, key, value)
        blame[key] = f"the override {text}"
    return validated(values, {**blame, **(options or {})}, fallback=f"the preset {preset}")


def validated(
    values: dict[str, Any], options: Mapping[str, str] | None = None,
    fallback: str = PRESET_OR_SET,
) -> PipelineConfig:  # fmt: skip
    """A nested dict of config values -> a PipelineConfig, or a ConfigError naming each key
    and what to fix (`_describe`)."""
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as error:
        raise ConfigError(_describe(error, options, fallback)) from None


DEFAULT_GRID_REWARDS = [
    "correctness", "correctness+ucb", "correctness+batch", "darling", "passk", "vector",
    "correctness@entropy",
]  # fmt: skip
ENTROPY_KNOBS = ["rl.epsilon_high=0.28", "rl.top_entropy_quantile=0.2", "rl.entropy_coef=0.01"]
# What an objective may change: the reward and the entropy knobs. Everything else (problems,
# pool, steps, SFT start, eval set, sampling) must be equal across a grid's cells.
OBJECTIVE_KEYS = ("rl.reward.", "rl.epsilon_high", "rl.top_entropy_quantile", "rl.entropy_coef",
                  "rl.adaptive_entropy", "rl.entropy_target",
                  "rl.scale_rewards")  # set by rewards whose formula needs it  # fmt: skip
# Grid keys that say how cells run, not what they compute.
RUNNER_KEYS = ("cell_runner", "cell_deployment")
# Keys that differ between cells by design: the grid's own axes and the preset label.
GRID_AXIS_KEYS = ("data.format", "seed", "preset")
# The config key each cell sets from a grid axis (after the shared overrides, so an override
# of one of these keys would be silently replaced in every cell).
PER_CELL_KEYS = {"data.format": ("formats", "--format"), "rl.reward.spec": ("rewards", "--reward"),
                 "seed": ("seeds", "--seed")}  # fmt: skip


class GridConfig(_Section):
    """The nightly study: formats x objectives x seeds, each cell a full pipeline run.

    Cells differ only in the objective (reward spec and entropy knobs), their format and their
    seed; `cells()` refuses anything else before any compute.
    """

    preset: str = Field("study", description="Preset every cell starts from.")
    formats: list[Format] = Field(
        default_factory=lambda: ["mcq", "free_form"], description="Data formats to compare."
    )
    rewards: list[str] = Field(
        default_factory=lambda: list(DEFAULT_GRID_REWARDS),
        description="Objectives to compare: reward specs; `SPEC@entropy` adds the entropy "
        "knobs (clip-higher, top-entropy tokens, entropy bonus).",
    )
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], description="Seeds per cell.")
    overrides: list[str] = Field(
        default_factory=list, description="`key=value` overrides applied to every cell."
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
    def _no_entropy_knob_the_variant_sets_again(cls, overrides: list[str], info: Any) -> list[str]:
        # `SPEC@entropy` cells apply ENTROPY_KNOBS after the shared overrides: a shared value
        # of one of those keys would be silently replaced in them.
        variants = [r for r in info.data.get("rewards", []) if r.endswith("@entropy")]
        knobs = {knob.split("=", 1)[0]: knob for knob in ENTROPY_KNOBS}
        for text in overrides if variants else []:
            key = text.split("=", 1)[0].strip()
            if key in knobs:
                raise ValueError(
                    f"{text.strip()!r} sets {key!r}, which the {', '.join(variants)} cells set "
                    f"again ({knobs[key]}): the override would be lost there. Set it for those "
                    f"cells in objective_overrides (e.g. {{{variants[0]!r}: [{text.strip()!r}]}}), "
                    "or leave the @entropy objective out of this grid"
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
                           "knobs; the cells must share everything else")  # fmt: skip
                    raise ValueError(
                        f"objective_overrides[{objective!r}] sets {key!r} ({text.strip()!r}): "
                        f"{why}. Put shared keys in `overrides` or the preset; keys allowed "
                        f"here: {', '.join(k + '*' if k.endswith('.') else k for k in OBJECTIVE_KEYS)}"
                    )
        return overrides

    def cells(self) -> list[tuple[str, str, int, PipelineConfig]]:
        """(format, objective, seed, validated config) per cell, all checked before compute."""
        unknown = sorted(set(self.objective_overrides) - set(self.rewards))
        if unknown:
            raise ConfigError(f"grid objective_overrides name objectives {unknown} that are not "
                              f"in the grid's rewards {self.rewards}")  # fmt: skip
        cells = []
        for fmt in self.formats:
            for reward in self.rewards:
                spec, _, variant = reward.partition("@")
                extra = ENTROPY_KNOBS if variant == "entropy" else []
                if variant not in ("", "entropy"):
                    raise ConfigError(
                        f"grid reward {reward!r}: unknown variant {variant!r}; use SPEC or "
                        "SPEC@entropy"
                    )
                for seed in self.seeds:
                    overrides = [*self.overrides, f"data.format={fmt}", f"rl.reward.spec={spec}",
                                 f"seed={seed}", *extra,
                                 *self.objective_overrides.get(reward, [])]  # fmt: skip
                    cells.append((fmt, reward, seed, load_config(self.preset, overrides, {
                        key: option for key, (_, option) in PER_CELL_KEYS.items()})))
        check_fair(cells)
        return cells

    def content_hash(self) -> str:
        """Identifies 'the same study' across nights: seeds, the grid id and how cells run are
        excluded, so a night with other seeds is still compared with the previous one."""
        # How cells are run is not what the study is: a night on a pool compares with one
        # that ran in process.
        payload = self.model_dump(mode="json", exclude={"grid_id", "seeds", *RUNNER_KEYS})
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
                             f"{cells_[0]}" for key, cells_ in sorted(unfair.items()))  # fmt: skip
        raise ConfigError(
            f"grid cells differ beyond the objective in {keys} ({examples}). A fair grid "
            "changes only the reward and entropy keys between cells: move these keys into the "
            "preset or `overrides`, so every cell shares them."
        )
