"""Checks a config against this machine before any service starts or compute happens.

The config's own validation is pure (a config may be written on one machine and run on
another), so it cannot see that `jsonl:/data/train.jsonl` or `model.name_or_path=./ckpt` is
missing here. Without this check such a run started the stack, opened an MLflow run, retried
the failing task, and ended in a page of tracebacks from the data loader or from Hugging Face
("Repo id must be in the form 'repo_name'...").
"""

from __future__ import annotations

from pathlib import Path

from breadth.config import ConfigError, PipelineConfig
from breadth.data.sources import parse_source_spec


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
                            f"{source.kind} file (paths are relative to {Path.cwd()})")  # fmt: skip
        elif not wanted_file and not path.exists():
            problems.append(f"data.{key}={spec}: {path.resolve()} does not exist")
    name = config.model.name_or_path
    if name and looks_like_a_path(name):
        folder = Path(name)
        if not (folder / "config.json").is_file():
            state = "has no config.json" if folder.is_dir() else "does not exist"
            problems.append(
                f"model.name_or_path={name}: the folder {folder.resolve()} {state}; give a "
                "folder saved with save_pretrained (config.json, weights, tokenizer), a hub "
                "name already in the Hugging Face cache, or leave it empty for the tiny model"
            )
    return problems


def check_local_paths(config: PipelineConfig) -> None:
    """Raise ConfigError naming every missing local path (see `missing_local_paths`)."""
    problems = missing_local_paths(config)
    if problems:
        raise ConfigError("; ".join(problems))
