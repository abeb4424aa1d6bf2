"""Checks a config against this machine before any service starts or compute happens.

The config's own validation is pure (a config may be written on one machine and run on
another), so it cannot see that `jsonl:/data/train.jsonl` or `model.name_or_path=./ckpt` is
missing here. Without this check such a run started the stack, opened an MLflow run, retried
the failing task, and ended in a page of tracebacks from the data loader or from Hugging Face
("Repo id must be in the form 'repo_name'...").

Settings this machine cannot run are refused the same way: TRL's vLLM modes for GRPO
(`rl.vllm_mode`) need a CUDA GPU and vLLM in the training process (`unrunnable_here`).

It also renders the run's rows and checks that they fit its token limits (`check_fit`): a run
whose prompts or targets the model cannot hold trained and scored garbage for 45 minutes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pickle
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadth.config import ConfigError, PipelineConfig
from breadth.data.records import row_numbering
from breadth.data.sources import load_records, parse_source_spec
from breadth.evaluation.search import Attempt, EvolutionConfig, build_child_prompt
from breadth.models.chat import (
    chat_record,
    check_chat_template,
    render_conversation,
    render_prompts,
    uses_chat,
)
from breadth.models.gguf import (
    GgufSourceError,
    ModelTooLargeError,
    check_fits_memory,
    estimate_memory_bytes,
    hf_folder_of,
    is_gguf_source,
    resolve_gguf_source,
)
from breadth.models.tiny import build_char_backend, model_context
from breadth.preflight.sequence_fit import (
    EOS,
    Shortfall,
    SplitLengths,
    TokenCounter,
    TokenLimits,
    fit_message,
    fitting_values,
    shortfalls,
    split_lengths,
    tokenizer_counter,
)
from breadth.stages import prepare_stage
from breadth.training.trl_vllm import trl_vllm_refusal_here


def looks_like_a_path(name: str) -> bool:
    """A local path rather than a hub id ("org/name"): absolute, or starting with ., .. or ~
    (which neither the data loaders nor transformers expand: such a path is reported missing).

    >>> [looks_like_a_path(n) for n in ("/ckpt", "./ckpt", "~/m", "Qwen/Qwen3-0.6B", "gpt2")]
    [True, True, True, False, False]
    """
    return name.startswith(("/", "./", "../", "~")) or name in (".", "..")


def missing_local_paths(config: PipelineConfig) -> list[str]:
    """One sentence per config key that names a local file or folder that is not there."""
    problems = []
    for key in ("source", "eval_source"):
        spec = getattr(config.data, key)
        if spec is None:
            continue
        source = parse_source_spec(spec)
        wanted_file = source.kind in ("jsonl", "parquet")
        if not (wanted_file or (source.kind == "hf" and looks_like_a_path(source.name))):
            continue
        path = Path(source.name)  # as the loaders read it: no ~ expansion
        if wanted_file and not path.is_file():
            state = "is a folder" if path.is_dir() else "does not exist"
            problems.append(f"data.{key}={spec}: {path.resolve()} {state}; give a "
                            f"{source.kind} file (paths are relative to {Path.cwd()})")
        elif not wanted_file and not path.exists():
            problems.append(f"data.{key}={spec}: {path.resolve()} does not exist")
    name = config.model.name_or_path
    if name and is_gguf_source(name):
        try:  # cheap: the file, its magic bytes and its hash (the header is read by the fit check)
            resolve_gguf_source(name)
        except GgufSourceError as error:
            problems.append(str(error))
    elif name and looks_like_a_path(name):
        folder = Path(name)
        if not (folder / "config.json").is_file():
            state = "has no config.json" if folder.is_dir() else "does not exist"
            problems.append(
                f"model.name_or_path={name}: the folder {folder.resolve()} {state}; give a "
                "folder saved with save_pretrained (config.json, weights, tokenizer), a hub "
                "name already in the Hugging Face cache, or leave it empty for the tiny model"
            )
    return problems


def unrunnable_here(config: PipelineConfig) -> list[str]:
    """One sentence per setting the training process on this machine cannot run, with its
    key and the fix: TRL's vLLM modes (`rl.vllm_mode`) without CUDA or vLLM here
    (`breadth.training.trl_vllm.trl_vllm_refusal`). Without it GRPO failed after prepare and
    SFT had run."""
    refusal = trl_vllm_refusal_here(config.rl) if config.rl.enabled else None
    return [refusal] if refusal else []


def check_local_paths(config: PipelineConfig) -> None:
    """Raise ConfigError naming every missing local path (see `missing_local_paths`) and every
    setting this machine cannot run (`unrunnable_here`): both are about the machine the run
    starts on, and both callers (`breadth run`, the pipeline flow) ask before anything starts."""
    problems = missing_local_paths(config) + unrunnable_here(config)
    if problems:
        raise ConfigError("; ".join(problems))


@dataclass(frozen=True)
class CharacterReport:
    """Characters of the rendered rows the model's tokenizer does not keep as they are."""

    mapped: dict[str, tuple[str, int]]
    """Character -> (the ASCII spelling the tokenizer reads it as, occurrences)."""
    unknown: dict[str, int]
    """Character -> occurrences, for characters that become the unknown token."""
    rows: dict[str, int]
    """"mapped" / "unknown" -> rows holding at least one such character."""

    def summary(self) -> dict[str, str]:
        """One line each for mapped and unknown characters (empty ones left out), as MLflow
        tags and the CLI print them: `'\\u2019' -> "'" x12`."""
        lines = {}
        if self.mapped:
            lines["data.chars_mapped"] = "; ".join(
                f"{char!r} -> {spelling!r} x{count}"
                for char, (spelling, count) in self.mapped.items()) + (
                f" (in {self.rows['mapped']} rows)")
        if self.unknown:
            lines["data.chars_unknown"] = "; ".join(
                f"{char!r} ({unicodedata.name(char, 'unnamed')}) x{count}"
                for char, count in self.unknown.items()) + f" (in {self.rows['unknown']} rows)"
        return lines


@dataclass(frozen=True)
class FitReport:
    """What the fit check found: the limits, the shortfalls, the characters, or why it was
    skipped."""

    limits: TokenLimits | None = None
    found: list[Shortfall] = field(default_factory=list)
    message: str = ""
    """The refusal when `found` is not empty."""
    longest: dict[str, int] = field(default_factory=dict)
    """Longest prompt and target (eos included) in tokens, per split."""
    characters: CharacterReport | None = None
    skipped: str = ""
    """Why the lengths were not checked (the model's tokenizer is not on this machine)."""
    chat: dict[str, str] = field(default_factory=dict)
    """How prompts reach the model (`breadth.models.chat.chat_record`): the chat template
    applied or raw, its sha256, and the first evaluation prompt as the model sees it."""

    def tags(self) -> dict[str, str]:
        """MLflow tags for the run: the longest rendered sequences, the characters the
        tokenizer mapped or does not know, and the chat template with one rendered prompt."""
        if self.skipped:
            return {"data.fit": f"not checked: {self.skipped}"[:5000]}
        tags = {f"data.{name}_tokens": str(value) for name, value in self.longest.items()}
        tags.update(self.chat)
        tags["data.fit"] = "ok" if not self.found else "does not fit"
        if self.characters:
            tags.update({key: value[:5000] for key, value in self.characters.summary().items()})
        return tags


def check_fit(config: PipelineConfig, *, offline: bool = False) -> FitReport:
    """Render the run's rows as the prepare stage will, count their tokens with the model's
    tokenizer, and raise ConfigError naming every limit they exceed (`sequence_fit`) with the
    values that would fit. Returns the report (with the characters the tokenizer maps or does
    not know) when they fit.

    Seconds: about 1 s of CPU for the default preset, 2 s for GSM8K-sized train and test
    files, plus 0.5 s of imports (`scripts/tools/measure_fit_check.py`, 2-core machine). `offline`: a hub model's tokenizer is read from the Hugging Face cache only; if
    it is not there the check is skipped (the report says so) and the flow checks it again.
    """
    cache = _fit_cache_file(config)
    report = _cached_report(cache)
    if report is None:
        report = fit_report(config, offline=offline)
        if cache is not None and not report.skipped:
            cache.parent.mkdir(parents=True, exist_ok=True)
            staging = cache.with_suffix(f".{os.getpid()}.tmp")
            # The limits hold the search prompt's length function, and no caller reads them.
            staging.write_bytes(pickle.dumps(dataclasses.replace(report, limits=None)))
            staging.replace(cache)
    if report.found:
        raise ConfigError(report.message)
    return report


# What the rendered rows and their token counts depend on besides the config: the renderers,
# the tasks and the tokenizer. A change to any of them checks again.
_FIT_CODE = ("data", "models", "preflight/checks.py", "preflight/sequence_fit.py")


def _fit_cache_file(config: PipelineConfig) -> Path | None:
    """Where the verdict of a synthetic source's check is kept, under BREADTH_HOME/fit/:
    a cached re-run (and the flow's own check after the CLI's) then renders nothing and skips
    the prepare stage's imports (pandas alone is ~0.4 s). Files and hub data are checked each
    time: their content can change under the same name."""
    if not config.data.source.startswith("synthetic:") or config.data.eval_source:
        return None
    package = Path(__file__).parents[1]  # src/breadth: _FIT_CODE is relative to it
    digest = hashlib.sha256(_fit_key(config).encode())
    for name in _FIT_CODE:
        for path in sorted((package / name).rglob("*.py")) if (package / name).is_dir() \
                else [package / name]:
            digest.update(path.read_bytes())
    home = Path(os.environ.get("BREADTH_HOME", ".breadth"))
    return home / "fit" / f"{digest.hexdigest()[:32]}.pickle"


def _cached_report(cache: Path | None) -> FitReport | None:
    if cache is None or not cache.exists():
        return None
    try:
        report = pickle.loads(cache.read_bytes())  # written by this module only, under the home
    except Exception:  # noqa: BLE001 - a damaged or foreign file: check again
        return None
    return report if isinstance(report, FitReport) else None


FIT_KEYS = ("data", "model", "seed", "sft.enabled", "rl.enabled", "rl.max_completion_length",
            "rl.num_problems", "rollout.max_new_tokens", "evaluation.search_budget",
            "evaluation.search_initial_share", "evaluation.search_max_attempt_chars")
"""The config keys (or sections) the fit check reads: configs equal in these fit alike."""


def unique_fit_configs(configs: list[PipelineConfig]) -> list[PipelineConfig]:
    """One config per distinct `FIT_KEYS` slice, in order (a grid's cells of one format and
    seed differ only in their reward, and are checked once)."""
    seen: dict[str, PipelineConfig] = {}
    for config in configs:
        seen.setdefault(_fit_key(config), config)
    return list(seen.values())


def _fit_key(config: PipelineConfig) -> str:
    dumped = config.model_dump(mode="json")
    flat = config.flat()
    return repr([dumped[name] if name in dumped else flat[name] for name in FIT_KEYS])


def fit_report(config: PipelineConfig, *, offline: bool = False) -> FitReport:
    """As `check_fit`, without raising."""
    import pyarrow.parquet as pq

    try:
        tokens = _model_tokens(config, offline)
    except OSError as error:
        return FitReport(skipped=f"the tokenizer of model.name_or_path={config.model.name_or_path}"
                                 f" could not be read here ({str(error).splitlines()[0][:200]})")
    with tempfile.TemporaryDirectory(prefix="breadth-fit-") as folder:
        with _quiet_datasets(config):
            prepare_stage(config, Path(folder))
        rows = {split: pq.read_table(Path(folder) / f"{split}.parquet", columns=_COLUMNS)
                .to_pylist() for split in ("train", "eval")}
    lengths = {split: _split_lengths(split, split_rows, tokens, config)
               for split, split_rows in rows.items()}
    limits = _limits(config, tokens)
    found = shortfalls(lengths["train"], lengths["eval"], limits)
    longest = {f"{split}_{part}": max(getattr(lengths[split], part), default=0)
               for split in ("train", "eval") for part in ("prompt", "target")}
    characters = _characters(rows, tokens)
    message = ""
    if found:
        fitting = fitting_values(lengths["train"], lengths["eval"], limits)
        describe = _RowNames(config, rows, lengths)
        message = fit_message(found, fitting, limits, describe, config.flat())
        if unknown := characters.summary().get("data.chars_unknown"):
            message += f"\nAlso, characters the model's tokenizer does not know: {unknown}"
    first = next((split_rows[0]["prompt"] for split_rows in (rows["eval"], rows["train"])
                  if split_rows), "")
    return FitReport(limits, found, message, longest, characters,
                     chat=chat_record(tokens.tokenizer, config.model, first))


def _split_lengths(split: str, rows: list[dict[str, Any]], tokens: _ModelTokens,
                   config: PipelineConfig) -> SplitLengths:
    """The split's token counts as the stages tokenize them: through the chat template where
    it applies (`breadth.models.chat`; the template carries its special tokens, and the
    target is the assistant's turn, its end of turn included), else `split_lengths`."""
    tokenizer = tokens.tokenizer
    if not rows or not uses_chat(tokenizer, config.model):
        return split_lengths(split, rows, tokens.count)
    prompts = tokens.count(render_prompts(tokenizer, [row["prompt"] for row in rows],
                                          config.model), False)
    sequences = tokens.count([render_conversation(tokenizer, row["prompt"], row["target"],
                                                  config.model) for row in rows], False)
    return SplitLengths(split, prompt=prompts,
                        target=[whole - prompt for whole, prompt in zip(sequences, prompts)],
                        sequence=sequences)


_COLUMNS = ["id", "source", "split", "question", "prompt", "target"]
"""The rendered columns the check reads."""


@dataclass(frozen=True)
class _ModelTokens:
    """What the check asks of the model's tokenizer."""

    count: TokenCounter
    spelling: Callable[[str], str]
    """How the tokenizer spells a character before it looks it up (its normalizer)."""
    unknown: Callable[[str], bool]
    """Whether a character becomes the unknown token."""
    context: int
    """The model's context in tokens."""
    tiny: bool
    tokenizer: Any = None
    """The model's tokenizer, for its chat template (None: the tiny model, which has none)."""


def _model_tokens(config: PipelineConfig, offline: bool) -> _ModelTokens:
    """The tiny model's character tokenizer, or the tokenizer of a hub or local model with
    its context: its own config's `max_position_embeddings`, or its tokenizer's
    `model_max_length` if that is smaller."""
    name = config.model.name_or_path
    if not name:
        # Its tokens, counted without importing transformers (seconds on a busy machine):
        # its BPE has no merges, so a text is one token per character of its normalized form
        # (the same counts as encoding, tests/unit/preflight/test_checks.py), 3x faster on long rows.
        backend = build_char_backend()
        normalize = backend.normalizer.normalize_str
        return _ModelTokens(
            count=lambda texts, special: [len(normalize(text)) for text in texts],
            spelling=normalize,
            unknown=lambda char: any(backend.token_to_id(c) is None for c in normalize(char)),
            context=config.model.max_length, tiny=True,
        )
    from transformers import AutoConfig, AutoTokenizer

    try:
        # A GGUF source is read from its converted folder, written here once (about a minute
        # for SmolLM2-135M) after its header passed: a wrong or corrupt file fails in seconds.
        name = hf_folder_of(name)
    except (GgufSourceError, ModelTooLargeError) as error:
        raise ConfigError(str(error)) from error
    only_cached = offline and not looks_like_a_path(name)
    tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=only_cached)
    # model.chat_template=on (or a system prompt) with a tokenizer that has no template,
    # refused here, in seconds, and not when the first stage renders a prompt.
    check_chat_template(tokenizer, config.model,
                        model=f"model.name_or_path={config.model.name_or_path}")
    model_config = AutoConfig.from_pretrained(name, local_files_only=only_cached)
    try:
        check_fits_memory(estimate_memory_bytes(model_config),
                          name_or_path=config.model.name_or_path)
    except ModelTooLargeError as error:
        raise ConfigError(str(error)) from error
    context = model_context(model_config)
    told = tokenizer.model_max_length  # transformers says 1e30 when the tokenizer knows none
    candidates = [n for n in (context, told if told < 10**7 else None) if n]
    # No warning about texts longer than model_max_length: counting them is the point.
    tokenizer.model_max_length = 10**30
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    unk = tokenizer.unk_token_id
    return _ModelTokens(
        count=tokenizer_counter(tokenizer),
        spelling=normalizer.normalize_str if normalizer is not None else (lambda char: char),
        unknown=lambda char: unk is not None and unk in tokenizer(
            char, add_special_tokens=False)["input_ids"],
        context=min(candidates, default=10**7), tiny=False, tokenizer=tokenizer,
    )


def _limits(config: PipelineConfig, tokens: _ModelTokens) -> TokenLimits:
    evaluation = config.evaluation
    budget = evaluation.search_budget
    extra = None
    # Child prompts exist once the first generation leaves budget over (stages.search_stage).
    if budget > max(1, int(budget * evaluation.search_initial_share)):
        extra = _search_prompt_extra(config, tokens)
    return TokenLimits(
        max_length=tokens.context,
        max_length_key="model.max_length" if tokens.tiny else None,
        max_new_tokens=config.rollout.max_new_tokens, sft=config.sft.enabled,
        max_completion_length=config.rl.max_completion_length if config.rl.enabled else None,
        rl_rows=config.rl.num_problems, search_prompt_extra=extra,
    )


def _search_prompt_extra(config: PipelineConfig, tokens: _ModelTokens) -> Callable[[int], int]:
    """Tokens a search child prompt adds to the problem's prompt at most, given
    rollout.max_new_tokens: the header and the parents shown, each cut to
    evaluation.search_max_attempt_chars (for the tiny model a completion has no more
    characters than tokens, so no more than max_new_tokens either)."""
    most = config.evaluation.search_max_attempt_chars

    def extra(max_new_tokens: int) -> int:
        chars = min(most, max_new_tokens) if tokens.tiny else most
        parents = [Attempt("9" * chars, 1.0, False)] * EvolutionConfig().num_parents
        child = build_child_prompt("", parents, max_attempt_chars=chars)
        return tokens.count([child], False)[0]

    return extra


def _characters(rows: dict[str, list[dict[str, Any]]], tokens: _ModelTokens) -> CharacterReport:
    """Each character of the prompts and targets that the tokenizer reads as another spelling
    (its normalizer) or as its unknown token, with how often it occurs."""
    texts = [str(row[part]) for split_rows in rows.values() for row in split_rows
             for part in ("prompt", "target")]
    joined = "\n".join(texts)
    mapped: dict[str, tuple[str, int]] = {}
    unknown: dict[str, int] = {}
    for char in sorted(set(joined) - {"\n"}):
        if char.isascii() and char.isprintable():
            continue
        if tokens.unknown(char):
            unknown[char] = joined.count(char)
        elif (spelling := tokens.spelling(char)) != char:
            mapped[char] = (spelling, joined.count(char))
    in_rows = {name: sum(any(char in text for char in chars) for text in texts)
               for name, chars in (("mapped", mapped), ("unknown", unknown)) if chars}
    return CharacterReport(mapped, unknown, in_rows)


class _RowNames:
    """Names a rendered row for the refusal: where it is in the user's file (jsonl line,
    csv/parquet/hub row, its id column) or, for a generated problem, its question; then its
    prompt and target with their token counts. Origins are read only when a row is named."""

    def __init__(self, config: PipelineConfig, rows: dict[str, list[dict[str, Any]]],
                 lengths: dict[str, SplitLengths]) -> None:
        self.config, self.rows, self.lengths = config, rows, lengths
        self.origins: dict[str, dict[str, Any]] = {}

    def __call__(self, split: str, index: int) -> str:
        row, lengths = self.rows[split][index], self.lengths[split]
        where = self._where(row)
        return (f"{where}: prompt {_excerpt(row['prompt'])} ({lengths.prompt[index]} tokens), "
                f"target {_excerpt(row['target'])} ({lengths.target[index] - EOS} tokens "
                "+ <eos>)")

    def _where(self, row: dict[str, Any]) -> str:
        spec = str(row["source"])
        if parse_source_spec(spec).kind == "synthetic":
            return f"{spec} problem {row['question']!r} ({row['split']})"
        if spec not in self.origins:
            with _quiet_datasets(self.config):
                loaded = load_records(spec, schema=self.config.data.schema_name,
                                      on_bad_rows="skip")
            self.origins[spec] = {record.id: record.origin for record in loaded.records}
        origin = self.origins[spec].get(row["id"])
        if origin is None:
            return f"{spec} problem {_excerpt(row['question'])}"
        note = f" ({row_numbering(spec)})" if origin.unit.endswith("row") else ""
        return f"{spec} {origin}{note}"


def _excerpt(text: Any, limit: int = 60) -> str:
    text = str(text)
    return repr(text if len(text) <= limit else text[:limit] + "...")


@contextlib.contextmanager
def _quiet_datasets(config: PipelineConfig) -> Iterator[None]:
    """No `datasets` progress bars in the check's output (it reads a hub source a second
    time); `datasets` is imported only for a source that needs it."""
    specs = [config.data.source, config.data.eval_source]
    if not any(spec and parse_source_spec(spec).kind == "hf" for spec in specs):
        yield
        return
    from datasets.utils import logging as datasets_logging

    enabled = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets_logging.enable_progress_bar()
