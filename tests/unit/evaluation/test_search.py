"""Evolutionary search vs independent sampling, against a toy sampler that can hill-climb."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pytest

from breadth.evaluation.search import (
    CHILD_PROMPT_TEMPLATE,
    Attempt,
    EvolutionConfig,
    build_child_prompt,
    compare_search,
    evolutionary_search,
    independent_sampling,
    select_parents,
)


@dataclass(frozen=True)
class Verdict:
    score: float
    correct: bool
    outcome: str | None = None


def scorer(text: str, row) -> Verdict:
    """Closeness to the target number; correct only on the exact number."""
    try:
        value = int(text.strip())
    except ValueError:
        return Verdict(0.0, False, None)
    target = int(row["answer"])
    return Verdict(1.0 - abs(value - target) / 100.0, value == target, str(value))


class ToySampler:
    """Plain prompt: uniform guesses in 0..100. Child prompt: guesses near the best parent shown,
    so a search that feeds back scored parents can climb; independent sampling cannot."""

    def __init__(self):
        self.calls: list[tuple[list[str], int, int]] = []

    def __call__(self, prompts, n, seed):
        self.calls.append((list(prompts), n, seed))
        rng = np.random.default_rng(seed)
        out = []
        for prompt in prompts:
            shown = re.findall(r"^\[(\d\.\d\d)\] (\d+)$", prompt, flags=re.MULTILINE)
            if shown:
                best = int(max(shown, key=lambda s: float(s[0]))[1])
                out.append(
                    [str(int(np.clip(best + rng.integers(-3, 4), 0, 100))) for _ in range(n)]
                )
            else:
                out.append([str(int(v)) for v in rng.integers(0, 101, size=n)])
        return out


PROBLEMS = [
    {"problem_id": f"p{i}", "prompt": f"guess {i}:", "answer": str(7 * i + 3)} for i in range(12)
]


def test_evolutionary_search_beats_independent_sampling_at_equal_budget():
    cfg = EvolutionConfig(sample_budget=48, initial_samples=8, children_per_generation=4, seed=0)
    result = compare_search(PROBLEMS, ToySampler(), scorer, cfg)
    evo, ind = result.evolutionary, result.independent
    assert evo.budget == ind.budget == 48
    evo_final = evo.success_curve([48])[0][1]
    ind_final = ind.success_curve([48])[0][1]
    assert evo_final > ind_final
    assert evo_final >= 0.9
    metrics = result.metrics()
    assert set(metrics) == {"search/evolutionary_success", "search/independent_success"}
    json.dumps(result.to_dict())  # JSON-serialisable


def test_budget_is_respected_and_solved_problems_stop():
    sampler = ToySampler()
    cfg = EvolutionConfig(sample_budget=21, initial_samples=5, children_per_generation=4, seed=1)
    r = evolutionary_search(PROBLEMS, sampler, scorer, cfg)
    assert all(s <= 21 for s in r.samples_spent)
    for spent, first in zip(r.samples_spent, r.first_success):
        if first is None:
            assert spent == 21
        else:
            assert spent >= first and spent - first < 5  # stopped within the batch that solved it
    # The last generation asks only for what is left of the budget (21 = 5 + 4*4).
    assert all(n <= 5 for _, n, _ in sampler.calls)


def test_without_early_stop_every_problem_spends_the_whole_budget():
    cfg = EvolutionConfig(
        sample_budget=10, initial_samples=3, children_per_generation=3, stop_when_solved=False
    )
    r = evolutionary_search(PROBLEMS[:3], ToySampler(), scorer, cfg)
    assert r.samples_spent == [10, 10, 10]


def test_search_is_deterministic_for_a_seed_and_uses_distinct_seeds_per_generation():
    cfg = EvolutionConfig(sample_budget=16, initial_samples=4, children_per_generation=4, seed=5)
    s1, s2 = ToySampler(), ToySampler()
    a = evolutionary_search(PROBLEMS, s1, scorer, cfg)
    b = evolutionary_search(PROBLEMS, s2, scorer, cfg)
    assert a == b
    seeds = [seed for _, _, seed in s1.calls]
    assert len(set(seeds)) == len(seeds)


def test_child_prompts_show_parents_with_scores_and_end_with_the_problem_prompt():
    sampler = ToySampler()
    cfg = EvolutionConfig(
        sample_budget=8,
        initial_samples=4,
        children_per_generation=4,
        num_parents=2,
        stop_when_solved=False,
    )
    evolutionary_search(PROBLEMS[:1], sampler, scorer, cfg)
    child_prompt = sampler.calls[1][0][0]
    lines = child_prompt.splitlines()
    assert lines[0] == "Attempts (score, higher is better):"
    assert len([ln for ln in lines if re.match(r"^\[\d\.\d\d\] ", ln)]) == 2
    assert lines[-1] == PROBLEMS[0]["prompt"]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("42", "42"),
        ("a\nb\tc", "a b c"),
        ("\udcff\x00\ufffd", "???"),
        ("x" * 500, "x" * 20),
    ],
)
def test_build_child_prompt_sanitises_parent_text(text, shown):
    prompt = build_child_prompt("Q:", [Attempt(text, 0.5, False)], max_attempt_chars=20)
    assert prompt == CHILD_PROMPT_TEMPLATE.format(attempts=f"[0.50] {shown}", prompt="Q:")
    assert prompt.isascii()


def test_select_parents_top_m_and_tournament():
    pop = [Attempt(str(i), s, False) for i, s in enumerate([0.1, 0.9, 0.5, 0.7, 0.2])]
    assert [p.text for p in select_parents(pop, 3, np.random.default_rng(0), "top_m")] == [
        "1",
        "3",
        "2",
    ]
    # A tournament as large as the population always picks the best remaining.
    assert [p.text for p in select_parents(pop, 2, np.random.default_rng(0), "tournament", 5)] == [
        "1",
        "3",
    ]
    chosen = select_parents(pop, 3, np.random.default_rng(1), "tournament", 2)
    assert len({p.text for p in chosen}) == 3  # distinct parents
    assert len(select_parents(pop[:1], 3, np.random.default_rng(0))) == 1
    with pytest.raises(ValueError, match="selection"):
        select_parents(pop, 1, np.random.default_rng(0), "roulette")


def test_independent_sampling_curve_is_unbiased_pass_at_s():
    sampler = lambda prompts, n, seed: [["1", "2", "3", "4"] for _ in prompts]
    r = independent_sampling([{"prompt": "x", "answer": "4"}], sampler, scorer, budget=4)
    assert r.first_success == [4] and r.num_correct == [1]
    # pass@s with n=4, c=1: s/4 (order does not matter for independent samples).
    assert r.success_curve() == [(1, 0.25), (2, 0.5), (4, 1.0)]


@pytest.mark.parametrize(
    "kwargs",
    [{"sample_budget": 0}, {"selection": "best"}, {"template": "no fields"}, {"num_parents": 0}],
)
def test_evolution_config_validates(kwargs):
    with pytest.raises(ValueError, match="EvolutionConfig"):
        EvolutionConfig(**kwargs)


def test_sampler_returning_the_wrong_shape_is_named():
    bad = lambda prompts, n, seed: [["1"]]
    with pytest.raises(ValueError, match="sampler returned"):
        independent_sampling(PROBLEMS[:2], bad, scorer, budget=2)
