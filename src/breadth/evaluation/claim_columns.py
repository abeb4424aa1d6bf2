"""Per-problem columns the study's claims read, beside `summary.per_problem_table`'s own.

- `distinct_correct_outcomes`: distinct outcomes among the correct samples (a task with
  several right answers: how many of them the model finds).
- `split_num_samples`, `split_num_correct`: the first half of each problem's samples (in
  sample_index order), which the split rows (diversity on unsolved, coverage) split on;
  `heldout_distinct_outcomes`: distinct outcomes of the other half, which they measure. A split
  and a measurement on the same samples select problems where the draw went badly and then
  read that draw's extra wrong answers (regression to the mean).
  `heldout_distinct_correct_outcomes` and `heldout_distinct_wrong_outcomes` split it: outcomes
  some held-out sample got right, and the rest (they sum to `heldout_distinct_outcomes`).
  The coverage claim reads the held-out half's right samples as `num_correct -
  split_num_correct` (solved in that half: at least one).
- `distinct_reasoning`: distinct reasoning texts (the text before the answer line, stripped):
  a diversity measure mcq's options do not cap.
- `reasoning_forking_share`: share of reasoning tokens (answer line excluded) whose entropy
  is above a threshold (the SFT model's 80th percentile of reasoning-token entropies).
- `graded_score`: 1 where some sample's score lies strictly between 0 and 1 (a graded score
  that search can climb), else 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from breadth.evaluation import diversity as div
from breadth.evaluation.samples import SamplesByProblem, as_text

__all__ = ["claim_columns", "reasoning_entropy_threshold"]


def _distinct_codes(codes: np.ndarray, group: np.ndarray, keep: np.ndarray, num_groups: int):
    """Distinct non-negative codes per group among the samples in `keep`."""
    chosen = keep & (codes >= 0)
    if not chosen.any():
        return np.zeros(num_groups)
    # One int64 key per (group, code): a 1-D unique, ~10x faster than unique rows (axis=0).
    width = int(codes[chosen].max()) + 1
    pairs = np.unique(group[chosen].astype(np.int64) * width + codes[chosen])
    return np.bincount(pairs // width, minlength=num_groups).astype(np.float64)


def _reasoning(rows: pd.DataFrame) -> list[np.ndarray | None]:
    if "entropy" not in rows or "text" not in rows:
        return []
    return [div.reasoning_entropies(e, as_text(t))
            for e, t in zip(rows["entropy"].to_numpy(object), rows["text"].to_numpy(object))]


def reasoning_entropy_threshold(rollouts: pd.DataFrame, quantile: float = 0.8) -> float | None:
    """The `quantile` of the pooled reasoning-token entropies; None where none align.

    >>> rows = pd.DataFrame({"text": ["abAnswer:1"], "entropy": [[0.0, 1.0] + [0.0] * 8]})
    >>> reasoning_entropy_threshold(rows, 0.5)
    0.5
    """
    pieces = [r for r in _reasoning(rollouts) if r is not None and r.size]
    return div.entropy_threshold(pieces, quantile) if pieces else None


def claim_columns(s: SamplesByProblem, reasoning_threshold: float | None, *,
                  trace: bool = True) -> dict[str, np.ndarray]:
    """{column: (P,) values} in problem order of `s`; NaN where an input column is absent,
    and the reasoning columns NaN without a `trace` (completions that are only the answer).

    >>> rows = pd.DataFrame({"problem_id": ["a", "a"], "correct": [True, False],
    ...                      "outcome": ["33", "34"], "text": ["33", "34"],
    ...                      "entropy": [[0.1, 0.9], [0.2, 0.8]]})
    >>> s = SamplesByProblem.from_rollouts(rows)
    >>> claim_columns(s, 0.5)["reasoning_forking_share"].tolist()  # the digits as "reasoning"
    [0.5]
    >>> [claim_columns(s, 0.5, trace=False)[c].tolist()
    ...  for c in ("reasoning_forking_share", "distinct_reasoning")]
    [[nan], [nan]]
    """
    counts = np.diff(s.bounds)
    num = len(counts)
    group = s.group
    nan = np.full(num, np.nan)
    first_half = s.first_half
    split_correct = np.bincount(group, weights=s.correct & first_half, minlength=num)
    graded = np.bincount(group, weights=(s.scores > 0) & (s.scores < 1), minlength=num) > 0
    out = {
        "distinct_correct_outcomes": _distinct_codes(s.codes, group, s.correct, num),
        "split_num_samples": counts // 2,
        "split_num_correct": split_correct.astype(np.int64),
        "heldout_distinct_outcomes": _distinct_codes(s.codes, group, ~first_half, num),
        "heldout_distinct_correct_outcomes": _distinct_codes(s.codes, group,
                                                             ~first_half & s.correct, num),
        "graded_score": graded.astype(np.float64),
        "distinct_reasoning": nan,
        "reasoning_forking_share": nan,
    }
    out["heldout_distinct_wrong_outcomes"] = (out["heldout_distinct_outcomes"]
                                              - out["heldout_distinct_correct_outcomes"])
    rows = s.rows
    if not trace:
        return out
    if "text" in rows:
        texts = [as_text(t) for t in rows["text"].to_numpy(object)]
        # An object array, not a Series: a Series of text may become Arrow strings, which
        # refuse the lone surrogates an adversarial completion can hold.
        reasoning = np.array([t[: div.reasoning_end(t)].strip() for t in texts], dtype=object)
        codes = pd.factorize(reasoning)[0]
        out["distinct_reasoning"] = _distinct_codes(codes, group, np.ones(len(codes), bool), num)
    if reasoning_threshold is not None:
        above, total = np.zeros(num), np.zeros(num)
        for g, values in zip(group, _reasoning(rows)):
            if values is not None:
                above[g] += float((values > reasoning_threshold).sum())
                total[g] += values.size
        out["reasoning_forking_share"] = np.divide(above, total, out=np.full(num, np.nan),
                                                   where=total > 0)
    return out
