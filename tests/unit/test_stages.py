"""Stages that can be checked without a model: search through the configured backend, and the
evaluation as pure analysis of rollout files."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd
import pytest

from breadth import stages
from breadth.config import load_config
from breadth.data.formats import render_free_form
from breadth.data.generators import generate_arithmetic


class ScriptedBackend:
    """Answers every prompt with the gold answer of the problem it was rendered from."""

    def __init__(self, answers: dict[str, str]):
        self.answers = answers
        self.sampler_args: list[tuple[Path, int, int]] = []
        self.calls: list[tuple[int, int]] = []

    def rollout(self, *args, **kwargs):
        raise AssertionError("search must not call rollout")

    @contextlib.contextmanager
    def sampler(self, policy_dir, config, *, seed, chunk, on_samples=None, chat=None):
        self.sampler_args.append((policy_dir, seed, chunk))

        def sample(prompts, n, call_seed):
            self.calls.append((len(prompts), n))
            if on_samples is not None:
                on_samples(len(prompts) * n)
            return [[self.answers.get(p.splitlines()[-1], "?")] * n for p in prompts]

        yield sample


@pytest.fixture
def eval_dir(tmp_path):
    rows = [render_free_form(r) for r in generate_arithmetic(6, seed=0, difficulty=1, split="eval")]
    pd.DataFrame(rows).to_parquet(tmp_path / "eval.parquet", index=False)
    return tmp_path, rows


def test_search_stage_uses_the_configured_backend_and_the_search_settings(
    eval_dir, monkeypatch
):
    folder, rows = eval_dir
    backend = ScriptedBackend({row["prompt"].splitlines()[-1]: row["answer"] for row in rows})
    monkeypatch.setattr("breadth.rollout.backends.rollout_backend", lambda config: backend)
    config = load_config("default", ["evaluation.search_budget=8", "evaluation.search_chunk=3",
                                     "evaluation.search_initial_share=0.25", "seed=5"])
    comparison = stages.search_stage(config, folder, Path("policy"))
    assert backend.sampler_args == [(Path("policy"), 5, 3)]
    # Generation 0 draws budget * initial_share = 2 samples per problem, all 6 problems at once.
    assert backend.calls[0] == (len(rows), 2)
    assert comparison.evolutionary.budget == 8
    assert comparison.metrics()["search/evolutionary_success"] == 1.0
    assert comparison.metrics()["search/independent_success"] == 1.0


def test_evaluate_stage_is_analysis_only_and_adds_search_to_the_report(eval_dir, monkeypatch):
    folder, rows = eval_dir
    backend = ScriptedBackend({})  # never right
    monkeypatch.setattr("breadth.rollout.backends.rollout_backend", lambda config: backend)
    config = load_config("default", ["evaluation.search_budget=2",
                                     "evaluation.bootstrap_samples=10"])
    search = stages.search_stage(config, folder, Path("policy"))
    rollout_rows = [
        {**row, "sample_index": i, "model": "m", "text": row["answer"], "token_ids": [1],
         "logprobs": [-0.1], "entropy": [], "finish_reason": "stop", "extracted": row["answer"],
         "outcome": row["answer"], "correct": i == 0, "score": float(i == 0), "seed": 0,
         "backend": "transformers"}
        for row in rows for i in range(2)
    ]
    pd.DataFrame(rollout_rows).to_parquet(folder / "m.parquet", index=False)
    results, written = stages.evaluate_stage(config, {"m": folder / "m.parquet"},
                                             folder / "report", base_model="m",
                                             searches={"m": search})
    assert search.metrics()["search/evolutionary_success"] == 0.0
    assert results["m"].metrics()["eval/pass_at_1"] == pytest.approx(0.5)
    assert {p.name for p in written} >= {"search.png", "report.md"}
    assert (folder / "report" / "search.json").exists()


@pytest.mark.parametrize("reasoning", [False, True])
def test_evaluate_stage_reads_reasoning_only_where_the_run_has_a_trace(eval_dir, reasoning):
    # The default preset trains no trace: its completions are the answer alone, which the
    # claims' reasoning columns must not read as reasoning (data.reasoning decides).
    folder, rows = eval_dir
    config = load_config("default", ["evaluation.bootstrap_samples=10",
                                     f"data.reasoning={str(reasoning).lower()}"])
    rollout_rows = [
        {**row, "sample_index": i, "model": "m", "text": row["answer"], "token_ids": [1],
         "logprobs": [-0.1], "entropy": [0.1 * (i + 1)] * len(row["answer"]),
         "finish_reason": "stop", "extracted": row["answer"], "outcome": row["answer"],
         "correct": True, "score": 1.0, "seed": 0, "backend": "transformers"}
        for row in rows for i in range(2)
    ]
    pd.DataFrame(rollout_rows).to_parquet(folder / "m.parquet", index=False)
    results, _ = stages.evaluate_stage(config, {"m": folder / "m.parquet"}, folder / "report",
                                       base_model="m")
    table = results["m"].per_problem
    assert table["reasoning_forking_share"].notna().all() == reasoning
    assert table["distinct_reasoning"].notna().all() == reasoning
    assert table["reasoning_forking_share"].isna().all() != reasoning
