"""Local files a config names, and the fit of its rendered rows to its token limits, are
checked before anything starts (breadth.preflight.checks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from breadth.config import ConfigError, available_presets, load_config
from breadth.preflight.checks import (
    check_fit,
    check_local_paths,
    missing_local_paths,
    unique_fit_configs,
    unrunnable_here,
)


def _config(*overrides: str):
    return load_config("default", list(overrides))


def test_files_and_folders_that_are_there_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text("{}\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "hub-copy").mkdir()
    config = _config("data.source=jsonl:train.jsonl", "data.eval_source=hf:./hub-copy",
                     "model.name_or_path=./model", "sft.enabled=false", "rl.enabled=false")
    assert missing_local_paths(config) == []
    # Hub ids are not paths: whether the cache holds them is the loader's to say.
    assert missing_local_paths(_config("data.source=hf:openai/gsm8k:main",
                                       "model.name_or_path=Qwen/Qwen3-0.6B")) == []


def test_every_missing_path_is_named_with_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty-model").mkdir()
    config = _config("data.source=parquet:gone.parquet", "data.eval_source=hf:/no/such/dir",
                     "model.name_or_path=./empty-model", "sft.enabled=false",
                     "rl.enabled=false")
    problems = missing_local_paths(config)
    assert len(problems) == 3
    assert problems[0].startswith("data.source=parquet:gone.parquet:") and "does not exist" in problems[0]
    assert problems[1].startswith("data.eval_source=hf:/no/such/dir:")
    assert "model.name_or_path=./empty-model" in problems[2] and "has no config.json" in problems[2]
    with pytest.raises(ConfigError, match="gone.parquet.*no/such/dir.*empty-model"):
        check_local_paths(config)


def test_a_tilde_path_is_checked_as_the_loaders_read_it(tmp_path, monkeypatch):
    """The loaders do not expand ~: the check must not either, or it passes a path that then
    fails inside the prepare task, after the stack started."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.jsonl").write_text("{}\n")
    problems = missing_local_paths(_config("data.source=jsonl:~/train.jsonl"))
    assert len(problems) == 1 and "does not exist" in problems[0]


# The data's fit to the run's token limits (check_fit): rendered as the prepare stage renders it,
# counted with the model's own tokenizer, refused before anything starts.
GSM8K_STYLE = Path(__file__).parents[1] / "data" / "fixtures" / "gsm8k_long.jsonl"


def test_trl_vllm_colocate_without_a_gpu_is_refused_before_anything_starts():
    """rl.vllm_mode=colocate needs CUDA in the training process: on a machine without it the
    run is refused by the checks `breadth run` and the flow make first, with the key and the
    fix, not by GRPO after prepare and SFT ran."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for machines without it")
    config = _config("rl.vllm_mode=colocate")
    with pytest.raises(ConfigError) as caught:
        check_local_paths(config)
    message = str(caught.value)
    assert message.startswith("rl.vllm_mode=colocate needs a CUDA GPU in the training process; "
                              "this machine has none")
    assert "Fix: unset rl.vllm_mode to generate with transformers" in message
    # No GRPO, nothing to refuse; and no mode asks nothing of the machine.
    assert unrunnable_here(_config("rl.vllm_mode=colocate", "rl.enabled=false")) == []
    assert unrunnable_here(_config()) == []


def test_a_reasoning_trace_longer_than_the_completion_budget_is_refused_with_values_that_fit():
    """The study accepted data.reasoning=true with 8-token completions: every trace was cut."""
    config = _config("data.reasoning=true", "data.num_train=50", "data.num_eval=20")
    with pytest.raises(ConfigError) as refused:
        check_fit(config)
    message = str(refused.value)
    assert "(rl.max_completion_length=8)" in message and "(rollout.max_new_tokens=8)" in message
    assert "synthetic:arithmetic problem" in message and "Answer:" in message  # the longest row
    fitting = re.search(r"Values that fit every row: (.*)", message).group(1)
    overrides = [part for part in fitting.split() if part != "--set"]
    assert {o.split("=")[0] for o in overrides} >= {"rl.max_completion_length",
                                                    "rollout.max_new_tokens"}
    # The values it names do fit: the same data with them passes.
    report = check_fit(_config("data.reasoning=true", "data.num_train=50", "data.num_eval=20",
                               *overrides))
    assert report.found == [] and report.tags()["data.fit"] == "ok"


def test_the_default_run_fits_and_its_tags_say_so():
    report = check_fit(_config("data.num_train=50", "data.num_eval=20"))
    tags = report.tags()
    assert tags["data.fit"] == "ok" and int(tags["data.eval_prompt_tokens"]) <= 96
    assert "data.chars_unknown" not in tags


def test_a_gsm8k_style_eval_file_is_refused_naming_its_longest_row():
    config = _config(f"data.eval_source=jsonl:{GSM8K_STYLE}", "data.num_train=50")
    with pytest.raises(ConfigError) as refused:
        check_fit(config)
    message = str(refused.value)
    # The rollouts: prompt + max_new_tokens past the model's 96, in the two long rows of five.
    assert "rollouts: prompt + rollout.max_new_tokens needs" in message
    assert "(model.max_length=96, rollout.max_new_tokens=8), in 2 of 5 eval rows" in message
    assert f"jsonl:{GSM8K_STYLE} line 2 (id 'long-2'): prompt 'Janet" in message
    assert "does not know: '\u00b0' (DEGREE SIGN) x1; '\u221a' (SQUARE ROOT) x1" in message
    needed = int(re.search(r"--set model\.max_length=(\d+)", message).group(1))
    assert check_fit(_config(f"data.eval_source=jsonl:{GSM8K_STYLE}", "data.num_train=50",
                             f"model.max_length={needed}")).found == []


def test_characters_are_mapped_where_an_ascii_spelling_exists_and_counted_otherwise():
    config = _config(f"data.eval_source=jsonl:{GSM8K_STYLE}", "data.num_train=50",
                     "model.max_length=512")
    report = check_fit(config)
    characters = report.characters
    # Counted in the fixture by hand: 4 right single quotes, one each of the others.
    assert characters.mapped == {"\u2019": ("'", 4), "\u2026": ("...", 1), "\u00d7": ("*", 1),
                                 "\u2013": ("-", 1)}
    assert characters.unknown == {"\u00b0": 1, "\u221a": 1}
    assert characters.rows == {"mapped": 3, "unknown": 1}
    tags = report.tags()
    assert "'\u00b0' (DEGREE SIGN) x1" in tags["data.chars_unknown"]
    assert "'\u2019' -> \"'\" x4" in tags["data.chars_mapped"]


def test_the_search_child_prompts_count():
    """mcq prompts (40 characters) with the search's two attempts above them need 116
    positions: with search on, 96 is refused; without it, 96 fits."""
    base = ("data.format=mcq", "data.num_train=50", "data.num_eval=20")
    with pytest.raises(ConfigError, match="search: child prompt.*evaluation.search_max_attempt"):
        check_fit(_config(*base))
    assert check_fit(_config(*base, "evaluation.search_budget=0")).found == []


def test_a_grid_checks_each_distinct_data_and_limits_once():
    from breadth.study.grid_design import GridConfig

    cells = GridConfig(preset="default", formats=["mcq", "free_form"],
                       rewards=["correctness", "ucb"], seeds=[0, 1]).cells()
    unique = unique_fit_configs([cell[3] for cell in cells])
    assert len(cells) == 8
    assert sorted((c.data.format, c.seed) for c in unique) == [
        ("free_form", 0), ("free_form", 1), ("mcq", 0), ("mcq", 1)]


def test_every_shipped_tiny_preset_fits():
    """A preset refused by its own check would be a preset that cannot run."""
    for name in available_presets():
        config = load_config(name, ["data.num_train=200"])
        if config.model.name_or_path:  # a hub model: not on this machine
            continue
        assert check_fit(config).found == [], name


def test_breadth_prepare_alone_keeps_every_row_as_written(tmp_path):
    """prepare knows no model: the long rows and their characters stay, for any model."""
    from typer.testing import CliRunner

    from breadth.cli import app
    from breadth.stages import read_rows

    result = CliRunner().invoke(app, ["prepare", "--out", str(tmp_path), "--eval-only",
                                      "--source", f"jsonl:{GSM8K_STYLE}"])
    assert result.exit_code == 0, result.output
    rows = read_rows(tmp_path / "eval.parquet")
    assert len(rows) == 5
    assert sum("\u2019" in row["prompt"] for row in rows) == 2  # not mapped: no model here
    assert max(len(row["prompt"]) for row in rows) > 280
    assert "characters outside printable ASCII, kept as written" in result.output
    assert "'\u2019' x4" in result.output


def test_the_tiny_models_counts_are_its_tokenizers():
    """The check counts the tiny model's tokens from its normalized characters (no transformers
    import): the same numbers as encoding with the model's tokenizer."""
    from breadth.models.tiny import build_char_tokenizer
    from breadth.preflight.checks import _model_tokens

    texts = [json.loads(line)["question"] for line in GSM8K_STYLE.read_text().splitlines()]
    texts += ["12+7*3=? A)31 B)33\nAnswer:", "tab\there\r\nCRLF \u2014 \u00bd", ""]
    tokenizer = build_char_tokenizer()
    expected = [len(ids) for ids in tokenizer(texts)["input_ids"]]
    tokens = _model_tokens(_config(), offline=True)
    assert tokens.count(texts, True) == expected
    assert [tokens.unknown(c) for c in "\u00b0\u2019a\u00bd"] == [True, False, False, True]


def test_a_local_models_own_context_and_tokenizer_are_used(tmp_path):
    """A hub or local model: its tokenizer counts, its config's positions are the limit (no key
    sets them, so the message says so instead of naming model.max_length)."""
    from breadth.config import ModelConfig
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model

    tokenizer = build_char_tokenizer(64)
    build_tiny_model(ModelConfig(max_length=64), tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    local = (f"model.name_or_path={tmp_path}", "sft.enabled=false", "rl.enabled=false",
             "data.num_train=20", "data.num_eval=20", "evaluation.search_budget=0")
    assert check_fit(_config(*local, "rollout.max_new_tokens=50")).found == []
    with pytest.raises(ConfigError) as refused:
        check_fit(_config(*local, "rollout.max_new_tokens=60"))  # 6-token prompts + 60 > 64
    message = str(refused.value)
    assert "(the model's context length, rollout.max_new_tokens=60)" in message
    assert "The model's context is 64 tokens and these rows need 66" in message
    assert "--set model.max_length" not in message


def test_a_hub_model_missing_from_the_cache_is_said_not_checked_offline():
    """`breadth run` reads a hub tokenizer from the cache only (no download before the stack
    starts): one that is not there is reported unchecked, for the flow to check."""
    report = check_fit(_config("model.name_or_path=no-such-org/no-such-model",
                               "sft.enabled=false", "rl.enabled=false"), offline=True)
    assert report.found == [] and "could not be read here" in report.skipped
    assert report.tags() == {"data.fit": f"not checked: {report.skipped}"}


def test_the_manifest_counts_the_characters_outside_ascii(tmp_path):
    from breadth.data.prepare import Manifest, prepare_dataset

    manifest = prepare_dataset(f"jsonl:{GSM8K_STYLE}", fmt="free_form", out_dir=tmp_path,
                               eval_only=True)
    assert manifest.characters == {"\u2019": 4, "\u2026": 1, "\u00d7": 1, "\u00b0": 1,
                                   "\u221a": 1, "\u2013": 1}
    assert Manifest.read(tmp_path).characters == manifest.characters


def test_a_synthetic_sources_verdict_is_kept_so_a_re_run_renders_nothing(tmp_path, monkeypatch):
    """A cached re-run must not prepare the data again (pandas alone is ~0.4 s of it); a
    refusal is kept as well, and a file source is checked every time."""
    from breadth.config import load_config
    from breadth.preflight import checks as preflight

    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    calls = []
    real = preflight.fit_report
    monkeypatch.setattr(preflight, "fit_report", lambda *a, **k: calls.append(1) or real(*a, **k))
    fits = load_config("default", ["data.num_train=16", "data.num_eval=4"])
    assert preflight.check_fit(fits).tags() == preflight.check_fit(fits).tags()
    too_long = load_config("default", ["data.num_train=16", "data.num_eval=4",
                                       "model.max_length=16", "rl.max_completion_length=8"])
    for _ in range(2):
        with pytest.raises(ConfigError, match="model.max_length"):
            preflight.check_fit(too_long)
    assert len(calls) == 2  # once per config
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(f'{{"question": "{i}+1=", "answer": "{i + 1}"}}\n' for i in range(40)))
    from_file = load_config("default", [f"data.source=jsonl:{jsonl}", "sft.enabled=false",
                                        "rl.enabled=false"])
    for _ in range(2):
        preflight.check_fit(from_file)
    assert len(calls) == 4
