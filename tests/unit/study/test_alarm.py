"""collapse_alarm: the per-metric rule (table-driven), whole grids through grid_summary (a
degraded grid fires, two normal grids with different seeds stay quiet), the false-alarm and
detection rates the docstring claims, and cells present in one grid only."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest

from breadth.study import alarm
from breadth.study.alarm import AlarmResult, collapse_alarm
from breadth.study.grid_settings import ClaimSettings
from breadth.study.grid_statistics import grid_summary

FORMATS = ("free_form", "mcq")
REWARDS = ("correctness", "correctness+ucb", "darling")
# Cell means: (pass@1, pass@16, distinct outcomes on base-unsolved problems).
MEANS = {
    (f, r): (0.30 + 0.05 * i + 0.02 * j, 0.60 + 0.05 * i - 0.03 * j, 2.0 + i + 0.5 * j)
    for j, f in enumerate(FORMATS)
    for i, r in enumerate(REWARDS)
}
NAN3 = (math.nan, math.nan, math.nan)
N, PROBLEMS = 16, 128  # samples per problem, problems per seed (the study preset's num_eval)
SETTINGS = ClaimSettings(num_resamples=200)


def _grid(seeds, *, rng_seed, noise=0.05, collapse=(), factor=0.5, nights=1):
    """A grid as the summary reads it: parent-run rows and the per-problem study frame.

    Per seed, each cell's means wobble by a relative sd of `noise` (seed noise); per problem,
    the trained model solves a problem with probability pass@16 (then each sample with
    probability pass@1 / pass@16) and gives 1 + Poisson(distinct - 1) outcomes (problem
    noise). Cells in `collapse` have pass@16 and the distinct outcomes multiplied by
    `factor`. `nights` > 1 stacks independent grids (reward `r#night`)."""
    rng = np.random.default_rng(rng_seed)
    runs, problems = [], []
    for night in range(nights):
        for (fmt, reward), (p1, pk, du) in MEANS.items():
            scale = factor if (fmt, reward) in collapse else 1.0
            objective = reward if nights == 1 else f"{reward}#{night}"
            for seed in seeds:
                wobble = lambda mu: float(mu * (1 + noise * rng.standard_normal()))
                share, per_sample = min(wobble(pk * scale), 1.0), wobble(p1) / pk
                solvable = rng.random(PROBLEMS) < share
                correct = np.where(solvable, rng.binomial(N, min(per_sample, 1.0), PROBLEMS), 0)
                distinct = 1 + rng.poisson(max(wobble(du * scale) - 1, 0.0), PROBLEMS)
                base_correct = rng.binomial(N, 0.3, PROBLEMS) * (rng.random(PROBLEMS) < 0.7)
                for model, c, d in (("rl", correct, distinct), ("sft", base_correct, 8.0)):
                    problems.append(pd.DataFrame({
                        "format": fmt, "objective": objective, "seed": seed, "model": model,
                        "problem_id": [f"{night}-{seed}-{i}" for i in range(PROBLEMS)],
                        "num_samples": N, "num_correct": c, "distinct_outcomes": d}))
                runs.append({"format": fmt, "reward": objective, "seed": seed,
                             "rl/eval/pass_at_16": float(np.mean(correct > 0))})
    return pd.DataFrame(runs), pd.concat(problems, ignore_index=True)


def _summary(**kwargs) -> pd.DataFrame:
    seeds = kwargs.pop("seeds", (0, 1))
    return grid_summary(*_grid(seeds, **kwargs), settings=SETTINGS)


def _one(metric="m", est=math.nan, low=math.nan, high=math.nan, fmt="mcq", reward="passk"):
    return pd.DataFrame([{"format": fmt, "reward": reward, metric: est,
                          f"{metric}_ci_low": low, f"{metric}_ci_high": high}])


@pytest.mark.parametrize(
    ("previous", "current", "dropped", "verdict"),
    [
        # both ways beyond the CIs, -50%: fires
        ((0.8, 0.7, 0.9), (0.4, 0.3, 0.5), True, "fell 0.800 [0.700, 0.900] -> 0.400"),
        # below the previous low, but the current CI still reaches the previous estimate
        ((0.8, 0.7, 0.9), (0.6, 0.3, 0.85), False, "within the CIs"),
        # above the previous low end
        ((0.8, 0.5, 0.9), (0.55, 0.5, 0.6), False, "within the CIs"),
        # beyond narrow CIs, but only -10%: under the 20% floor
        ((0.80, 0.79, 0.81), (0.72, 0.71, 0.73), False, "under the 20% floor"),
        # exactly at the floor with separated CIs: fires
        ((1.0, 0.9, 1.1), (0.8, 0.75, 0.85), True, "(-20%)"),
        # a rise never fires
        ((0.4, 0.3, 0.5), (0.8, 0.7, 0.9), False, "no drop"),
        # no CI on either side: the 40% floor alone
        ((3.0, *NAN3[:2]), (1.5, *NAN3[:2]), True, "no CI: judged by the 40% floor alone"),
        ((3.0, *NAN3[:2]), (2.0, *NAN3[:2]), False, "under the 40% floor"),
        # a previous value of 0 cannot fall
        ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), False, "no drop"),
    ],
)
def test_the_rule_on_one_metric(previous, current, dropped, verdict):
    result = collapse_alarm(_one("m", *previous), _one("m", *current), metrics=["m"])
    (comparison,) = result.compared
    assert comparison.dropped is dropped and result.fired is dropped
    assert verdict in comparison.verdict
    assert result.reasons == ((comparison.verdict,) if dropped else ())
    assert (comparison.previous, comparison.current) == (previous[0], current[0])


def test_a_degraded_grid_fires_on_the_collapsed_cells_only():
    normal = _summary(rng_seed=0)
    collapsed = [("free_form", "correctness"), ("mcq", "correctness")]
    degraded = _summary(seeds=(2, 3), rng_seed=1, collapse=collapsed)
    result = collapse_alarm(normal, degraded)
    assert result.fired
    dropped = {(c.format, c.reward, c.metric) for c in result.compared if c.dropped}
    assert dropped == {(f, r, m) for f, r in collapsed
                       for m in ("pass_at_kmax", "distinct_unsolved")}
    assert len(result.reasons) == 4
    assert any(r.startswith("mcq / correctness: distinct_unsolved fell") for r in result.reasons)
    assert len(result.compared) == 6 * 2 and result.notes == ()
    md = result.markdown()
    assert "**Collapse alarm FIRED**" in md
    # One narrow table per metric, every compared cell in it, drops marked.
    rows = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 2 * (1 + 6) and md.count("| DROPPED |") == 4
    assert max(len(r) for r in rows) <= 100


def test_two_normal_grids_with_different_seeds_stay_quiet():
    result = collapse_alarm(_summary(rng_seed=0), _summary(seeds=(2, 3), rng_seed=1))
    assert not result.fired and result.reasons == ()
    assert len(result.compared) == 12
    assert {c.verdict for c in result.compared} <= {"no drop", "within the CIs"}
    assert result.markdown().startswith("## Collapse alarm quiet")


def _fired_nights(previous: pd.DataFrame, current: pd.DataFrame) -> int:
    result = collapse_alarm(previous, current)
    return len({c.reward.split("#")[1] for c in result.compared if c.dropped})


NIGHTS = 20


# The two Monte Carlo checks below (20 nights of whole grid summaries each) are a third of the
# unit tests' time: `make check` leaves them to `make test`.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("seeds", "noise", "max_false_alarms"),
    [((0, 1), 0.05, 1), ((0, 1, 2), 0.05, 1), ((0, 1, 2), 0.10, 4)],
)
def test_false_alarm_rate_over_many_nights_of_pure_seed_and_problem_noise(
    seeds, noise, max_false_alarms
):
    shifted = tuple(s + 10 for s in seeds)
    previous = _summary(seeds=seeds, rng_seed=2, noise=noise, nights=NIGHTS)
    current = _summary(seeds=shifted, rng_seed=3, noise=noise, nights=NIGHTS)
    assert _fired_nights(previous, current) <= max_false_alarms


@pytest.mark.slow
@pytest.mark.parametrize(("seeds", "min_detected"), [((0, 1), 18), ((0, 1, 2), 19)])
def test_a_halving_in_two_cells_is_caught_on_most_nights(seeds, min_detected):
    collapsed = [("free_form", "correctness"), ("mcq", "correctness")]
    previous = _summary(seeds=seeds, rng_seed=5, noise=0.10, nights=NIGHTS)
    current = _summary(seeds=tuple(s + 10 for s in seeds), rng_seed=6, noise=0.10,
                       nights=NIGHTS, collapse=collapsed)
    assert _fired_nights(previous, current) >= min_detected


def test_cells_in_one_grid_only_are_reported_not_alarmed():
    previous = _summary(rng_seed=0)
    current = _summary(seeds=(2, 3), rng_seed=1)
    current = current[current["reward"] != "darling"]  # the darling cells did not run tonight
    extra = current.iloc[[0]].assign(reward="vector", pass_at_kmax=0.01, distinct_unsolved=0.0)
    result = collapse_alarm(previous, pd.concat([current, extra], ignore_index=True))
    assert not result.fired
    assert result.notes == (
        "free_form / darling: only in the previous grid (not compared)",
        "mcq / darling: only in the previous grid (not compared)",
        "free_form / vector: only in the current grid (not compared)",
    )
    assert len(result.compared) == 4 * 2
    assert "only in the previous grid" in result.markdown()


def test_metrics_missing_in_one_grid_and_a_k_change_are_notes():
    previous = _summary(rng_seed=0)
    current = _summary(seeds=(2, 3), rng_seed=1).assign(distinct_unsolved=math.nan)
    current.attrs["k"] = 32
    result = collapse_alarm(previous, current)
    assert not result.fired
    assert "largest k differs: previous 16, current 32 (pass@k read at each)" in result.notes
    assert "mcq / darling: distinct_unsolved not measured in both grids" in result.notes
    assert {c.metric for c in result.compared} == {"pass_at_kmax"}


@pytest.mark.parametrize(
    ("frame", "pattern"),
    [
        (pd.DataFrame({"format": ["mcq"], "m": [1.0]}), r"previous grid summary lacks .*'reward'"),
        (pd.concat([_one(est=1.0), _one(est=2.0)]), r"more than one row for .*\['mcq / passk'\]"),
    ],
)
def test_malformed_summaries_are_refused_with_the_fix(frame, pattern):
    with pytest.raises(ValueError, match=pattern):
        collapse_alarm(frame, _one(est=1.0), metrics=["m"])


def test_result_is_frozen():
    result = collapse_alarm(_one(est=1.0), _one(est=1.0), metrics=["m"])
    assert isinstance(result, AlarmResult)
    with pytest.raises(AttributeError):
        result.fired = True  # type: ignore[misc]


def test_docstring_examples():
    assert doctest.testmod(alarm, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


def test_an_inconclusive_split_is_named_as_such_not_as_unmeasured():
    """A split below min_split has no number in the summary: the alarm said it was "not
    measured", as if the grid had no transfer analysis."""
    previous = _summary(rng_seed=0)
    current = _summary(seeds=(2, 3), rng_seed=1).assign(
        distinct_unsolved=math.nan, distinct_unsolved_inconclusive="inconclusive (n=12 < 20)")
    result = collapse_alarm(previous, current)
    assert ("mcq / darling: distinct_unsolved not compared: inconclusive (n=12 < 20) in the "
            "current grid") in result.notes
