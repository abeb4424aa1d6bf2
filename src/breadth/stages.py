"""The pipeline's stages as plain functions: files in, files out, no Prefect, no tracking.

tasks/ wraps each one with caching, retries, MLflow child runs and S3 uploads; a notebook or a
benchmark can call them directly. Every stage is deterministic for a given config and seed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from breadth.config import PipelineConfig
from breadth.data.prepare import read_rows

MetricSink = Callable[[str, float, int], None]


def prepare_stage(config: PipelineConfig, out_dir: Path) -> Any:
    """Problems from the configured source, rendered in the configured format -> parquet."""
    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.data.prepare import prepare_dataset

    data = config.data
    return prepare_dataset(
        data.source, fmt=data.format, out_dir=Path(out_dir), seed=config.seed,
        num_train=data.num_train, num_eval=data.num_eval,
        difficulty=None if data.difficulty == "mixed" else data.difficulty,
        schema=data.schema_name, on_bad_rows=data.on_bad_rows, reasoning=data.reasoning,
        eval_fraction=data.eval_fraction, eval_source=data.eval_source,
        eval_only=data.eval_only, num_options=data.num_options, mixed_fill=data.mixed_fill,
        rendering=data.rendering,
    )


def init_model_stage(config: PipelineConfig, out_dir: Path) -> Path:
    """The base policy: the configured hub/local model, a GGUF source's converted folder (its
    files linked, provenance.json included), or the tiny model built from scratch."""
    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.models.gguf import (
        PROVENANCE_FILE,
        hf_folder_of,
        is_gguf_source,
        link_converted_folder,
    )
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model, load_policy

    out_dir = Path(out_dir)
    if config.model.name_or_path and is_gguf_source(config.model.name_or_path):
        # The converted folder was written by save_pretrained from the same classes, and every
        # stage reads it through load_policy: loading and saving it again wrote the same bytes
        # (SmolLM2: all seven files) for seconds of CPU and 540 MB of disk.
        return link_converted_folder(hf_folder_of(config.model.name_or_path), out_dir)
    if config.model.name_or_path:
        folder = hf_folder_of(config.model.name_or_path)
        model, tokenizer = load_policy(folder)
    else:
        tokenizer = build_char_tokenizer(config.model.max_length)
        model = build_tiny_model(config.model, tokenizer, seed=config.seed)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    if config.model.name_or_path and (Path(folder) / PROVENANCE_FILE).is_file():
        shutil.copy2(Path(folder) / PROVENANCE_FILE, out_dir / PROVENANCE_FILE)
    return out_dir


def sft_stage(
    config: PipelineConfig, dataset_dir: Path, base_dir: Path, out_dir: Path,
    log_metric: MetricSink | None = None,
) -> Path:
    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.models.tiny import load_policy
    from breadth.training.sft import train_sft

    model, tokenizer = load_policy(base_dir)
    rows = read_rows(Path(dataset_dir) / "train.parquet")
    train_sft(model, tokenizer, rows, config.sft, output_dir=Path(out_dir), seed=config.seed,
              log_metric=log_metric, chat=config.model)
    return Path(out_dir) / "final"


def rl_stage(
    config: PipelineConfig, dataset_dir: Path, policy_dir: Path, out_dir: Path,
    log_metric: MetricSink | None = None,
    on_checkpoint: Callable[[Path, int], None] | None = None,
    resume_from: Path | None = None,
) -> Path:
    """GRPO from `policy_dir` -> `out_dir/final`. With rl.num_processes > 1 or an
    rl.accelerate_config it launches the training processes itself (`breadth.training.launch`)
    and forwards their metrics and checkpoints to `log_metric` and `on_checkpoint` here."""
    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.models.tiny import load_policy
    from breadth.training.grpo import grpo_rows, newest_checkpoint, train_grpo

    # out_dir is keyed by content: checkpoints found there come from an earlier, interrupted
    # run of this same config and data, so training continues from the newest one.
    resume_from = resume_from or newest_checkpoint(Path(out_dir))
    if config.rl.num_processes > 1 or config.rl.accelerate_config:
        # Imported on use: a stage loads only what it runs (torch, pandas, ...).
        from breadth.training.launch import run_grpo_processes

        run_grpo_processes(config, Path(dataset_dir), Path(policy_dir), Path(out_dir),
                           log_metric=log_metric, on_checkpoint=on_checkpoint,
                           resume_from=resume_from)
        return Path(out_dir) / "final"
    model, tokenizer = load_policy(policy_dir)
    train_grpo(model, tokenizer, grpo_rows(config.rl, Path(dataset_dir)), config.rl,
               output_dir=Path(out_dir), seed=config.seed, log_metric=log_metric,
               on_checkpoint=on_checkpoint, resume_from=resume_from, chat=config.model)
    return Path(out_dir) / "final"


def rollout_stage(
    config: PipelineConfig, dataset_dir: Path, policy_dir: Path, model_name: str, out_path: Path,
    progress: bool = True,
) -> Path:
    """n samples per evaluation problem -> rollouts parquet (schema in docs/design)."""
    import pandas as pd

    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.rollout.backend_choice import resolve_backend
    from breadth.rollout.backends import rollout_backend

    problems = read_rows(Path(dataset_dir) / "eval.parquet")
    rollout = resolve_backend(config.rollout, Path(policy_dir))
    rows = rollout_backend(rollout).rollout(
        Path(policy_dir), problems, rollout, model_name=model_name, seed=config.seed,
        progress=progress, chat=config.model,
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(out_path, index=False)
    return out_path


def search_stage(
    config: PipelineConfig, dataset_dir: Path, policy_dir: Path, model_name: str = "policy"
) -> Any:
    """Evolutionary search vs independent sampling at `evaluation.search_budget` samples per
    evaluation problem, through the configured rollout backend -> a SearchComparison, with a
    progress bar (and log lines) of the samples drawn."""
    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.data.generators import verify
    from breadth.display.progress import StageBar
    from breadth.evaluation.search import EvolutionConfig, compare_search
    from breadth.rollout.backend_choice import resolve_backend
    from breadth.rollout.backends import rollout_backend

    settings = config.evaluation
    budget = settings.search_budget
    evolution = EvolutionConfig(
        sample_budget=budget,
        initial_samples=max(1, int(budget * settings.search_initial_share)),
        children_per_generation=max(1, int(budget * settings.search_children_share)),
        max_attempt_chars=settings.search_max_attempt_chars,
        seed=config.seed,
    )
    problems = read_rows(Path(dataset_dir) / "eval.parquet")
    rollout = resolve_backend(config.rollout, Path(policy_dir))
    backend = rollout_backend(rollout)
    # At most the budget per problem for each method: evolution stops a problem once solved,
    # so its bar may end short of the total (and the ETA is an upper bound).
    with StageBar(f"search {model_name}", 2 * budget * len(problems), "sample") as bar, \
            backend.sampler(Path(policy_dir), rollout, seed=config.seed,
                            chunk=settings.search_chunk, on_samples=bar.update,
                            chat=config.model) as sampler:
        return compare_search(problems, sampler, verify, evolution)


def evaluate_stage(
    config: PipelineConfig, rollouts: dict[str, Path], out_dir: Path, *, base_model: str,
    searches: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """Rollouts of every model -> EvaluationResults (trained models vs `base_model`) + report.

    Pure analysis of files: `searches` (model -> SearchComparison from `search_stage`) only
    adds their plot and JSON to the report.
    """
    import pandas as pd

    # Imported on use: a stage loads only what it runs (torch, pandas, ...).
    from breadth.evaluation.report import write_report, write_search_report
    from breadth.evaluation.summary import evaluate_models

    # The names given here (e.g. "base"/"trained" from the CLI) name the models in the report.
    loaded = {name: pd.read_parquet(path) for name, path in rollouts.items()}
    for name, frame in loaded.items():
        if frame.empty:
            raise ValueError(f"rollouts are empty: {rollouts[name]} ({name}) holds no rows")
    frames = pd.concat([frame.assign(model=name) for name, frame in loaded.items()],
                       ignore_index=True)
    evaluation = config.evaluation
    results = evaluate_models(frames, base_model=base_model,
                              num_bootstrap=evaluation.bootstrap_samples,
                              maj_resamples=evaluation.maj_resamples,
                              seed=config.seed,
                              split_k=evaluation.transfer_split_k,
                              split_threshold=evaluation.transfer_split_threshold,
                              min_split=evaluation.transfer_min_split,
                              trace=config.data.reasoning)
    written = write_report(results, Path(out_dir))
    if searches:
        written.append(write_search_report(searches, Path(out_dir)))
    return results, written
