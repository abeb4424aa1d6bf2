"""Selection metrics over n samples per problem: pass@k, best-of-k, maj@k, chance levels.

Every function is pure numpy, vectorised over problems, and seeded where it samples. Inputs
are per-problem arrays: counts of shape (P,), or (P, n) matrices with one row per problem
(a 1-D array of n samples is one problem and gives a 0-d result).

Outcomes may be given as objects (strings, with None for "nothing extracted") or as integer
codes (negative = nothing extracted); `outcome_codes` turns the first into the second.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

__all__ = [
    "best_of_k",
    "best_of_k_curve",
    "chance_corrected_pass_at_k",
    "chance_pass_at_k",
    "default_ks",
    "g_pass_at_k",
    "largest_k_above_chance",
    "maj_at_k",
    "maj_at_k_curve",
    "maj_at_k_estimates",
    "mg_pass_at_k",
    "outcome_codes",
    "pass_at_k",
    "pass_at_k_curve",
    "pass_hat_k",
    "run_starts",
]


def pass_at_k(num_samples, num_correct, k) -> np.ndarray:
    """Unbiased pass@k per problem (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    Computed as ``1 - prod_{i=n-c+1..n} (1 - k/i)`` (the Codex paper's numpy form), exactly 1.0
    when n - c < k. Vectorised: n, c and k broadcast against each other; problems sharing
    (n, k) share one cumulative product, so a (10,000 problems, one n) batch costs one table.

    Raises ValueError when k > n, k < 1, or c is outside [0, n], naming the first bad problem.

    >>> pass_at_k([4, 4, 4], [0, 1, 4], 2).tolist()
    [0.0, 0.5, 1.0]
    """
    n, c, kk = _counts(num_samples, num_correct, k)
    # Where n - c < k every k-subset holds a correct sample: the ratio is 0, pass@k exactly 1.
    return 1.0 - _binomial_ratio(n, n - c, kk)


def pass_hat_k(num_samples, num_correct, k) -> np.ndarray:
    """Unbiased pass^k per problem: the chance that all k samples drawn without replacement
    are correct, C(c, k) / C(n, k) (tau-bench's pass^k, prime-rl's reliability metric).

    The opposite end from pass@k (at least one of k correct): pass^1 = pass@1 = c/n, and pass^k
    falls with k unless every sample is correct. Exactly 0 when c < k, exactly 1 when c = n;
    computed as pass@k's product, ``prod_{i=c+1..n} (1 - k/i)``. Broadcasting and errors as
    `pass_at_k`.

    >>> pass_hat_k([4, 4, 4], [2, 3, 4], 2).round(12).tolist()  # C(2,2)/C(4,2), C(3,2)/C(4,2)
    [0.166666666667, 0.5, 1.0]
    """
    n, c, kk = _counts(num_samples, num_correct, k)
    return _binomial_ratio(n, c, kk)


# G-Pass@k's default threshold: at least half of the k samples correct (lighteval and the
# GPassK paper report tau = 0.25, 0.5, 0.75 and 1.0; 0.5 is the middle one, a majority).
DEFAULT_G_PASS_TAU = 0.5


def g_pass_at_k(num_samples, num_correct, k, tau: float = DEFAULT_G_PASS_TAU) -> np.ndarray:
    """G-Pass@k_tau per problem (Liu et al. 2024, arXiv 2412.13147): the chance that at least
    m = max(ceil(tau * k), 1) of k samples drawn without replacement are correct,

        sum_{j=m..min(c, k)} C(c, j) C(n - c, k - j) / C(n, k)

    (the hypergeometric upper tail). tau -> 0 (m = 1) is pass@k; tau = 1 (m = k) is pass^k.
    The ceiling is exact (tau read as the decimal it prints as: 0.3 * 10 is 3, where lighteval's
    float product 3.0000000000000004 rounds up to 4). tau must be in [0, 1]. Broadcasting and
    errors as `pass_at_k`.

    >>> [round(g_pass_at_k(10, 3, 4, tau=t).item(), 12) for t in (0.25, 0.5, 1.0)]  # 5/6, 1/3, 0
    [0.833333333333, 0.333333333333, 0.0]
    """
    n, c, kk = _counts(num_samples, num_correct, k)
    _at_least(tau, 1)  # tau checked even when there is no problem
    ks, inverse = np.unique(kk.ravel(), return_inverse=True)
    least = np.array([_at_least(tau, int(x)) for x in ks], dtype=np.int64)[inverse.ravel()]
    pmf, index = _hypergeometric_pmf(n, c, kk)
    j = np.arange(pmf.shape[1])
    return np.where(j >= least[:, None], pmf[index], 0.0).sum(axis=1).reshape(n.shape)


def mg_pass_at_k(num_samples, num_correct, k) -> np.ndarray:
    """mG-Pass@k per problem: G-Pass@k_tau averaged over tau in (0.5, 1], as the GPassK paper
    and lighteval compute it, ``(2/k) sum_{i=ceil(k/2)+1..k} G-Pass@k_{i/k}``. By that
    definition mG-Pass@1 is 0 (an empty sum), whatever the samples.

    >>> mg_pass_at_k(4, [2, 4], 2).round(12).tolist()  # (2/2) * pass^2: 1/6, 1
    [0.166666666667, 1.0]
    """
    n, c, kk = _counts(num_samples, num_correct, k)
    pmf, index = _hypergeometric_pmf(n, c, kk)
    j = np.arange(pmf.shape[1])
    first = (kk.ravel() + 1) // 2 + 1  # ceil(k/2) + 1
    # sum_{i=a..k} P(X >= i) = sum_j P(X = j) * max(0, j - a + 1)
    weight = np.maximum(j - first[:, None] + 1, 0)
    total = (pmf[index] * weight).sum(axis=1)
    return (2.0 * total / kk.ravel()).reshape(n.shape)


def _counts(num_samples, num_correct, k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, c, k) as broadcast int64 arrays, checked as `pass_at_k` checks them."""
    n, c, kk = np.broadcast_arrays(
        *(
            _as_int_array(x, name)
            for x, name in ((num_samples, "num_samples"), (num_correct, "num_correct"), (k, "k"))
        )
    )
    _check_counts(n, c, kk)
    return n, c, kk


def _binomial_ratio(n: np.ndarray, m: np.ndarray, k: np.ndarray) -> np.ndarray:
    """C(m, k) / C(n, k) per element, 0 where m < k, for checked counts (0 <= m <= n, k <= n).

    ``prod_{i=m+1..n} (1 - k/i)`` (C(i-1, k) / C(i, k) = 1 - k/i); problems sharing (n, k) share
    one cumulative product, so a (10,000 problems, one n) batch costs one table.
    """
    out = np.zeros(n.shape, dtype=np.float64)
    todo = m >= k
    if not todo.any():
        return out
    n_t, m_t, k_t = n[todo], m[todo], k[todo]
    ratio = np.empty(n_t.shape, dtype=np.float64)
    for (nn, k1), members in _group_indices(n_t, k_t):
        # terms[j] = 1 - k/(nn - j) for i = nn, nn-1, ..., k+1: multiplying from the top keeps
        # the rounding error of the (n-m)-term product below n-m ulps (no log/exp round trip).
        terms = 1.0 - k1 / np.arange(nn, k1, -1, dtype=np.float64)
        table = np.concatenate(([1.0], np.cumprod(terms)))
        ratio[members] = table[nn - m_t[members]]
    out[todo] = ratio
    return out


def _log_binomials(a: np.ndarray, k: int) -> np.ndarray:
    """log C(a, t) for t = 0..k, one row per a (a column of counts); -inf where t > a."""
    i = np.arange(1, k + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):  # log 0: the terms past t = a, -inf on purpose
        steps = np.log(np.maximum(a - i + 1.0, 0.0)) - np.log(i)
    return np.concatenate([np.zeros((len(a), 1)), np.cumsum(steps, axis=1)], axis=1)


def _at_least(tau: float, k: int) -> int:
    """G-Pass@k's m = max(ceil(tau * k), 1), the ceiling taken exactly."""
    if not 0.0 <= float(tau) <= 1.0:
        raise ValueError(f"tau must be in [0, 1] (the share of k samples that must be correct), "
                         f"got {tau}")
    return max(math.ceil(Fraction(str(float(tau))) * k), 1)


def _hypergeometric_pmf(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pmf, index): pmf[index[p], j] = P(j of k samples drawn without replacement from problem
    p's n are correct) for j = 0..max k, one row per distinct (n, c, k).

    Weights C(c, j) C(n - c, k - j) in logs (cumulative sums of log((a - i + 1) / i)), scaled
    by their largest and normalised to sum 1: no factorial is formed, nothing underflows
    where it matters, and the support's ends (c = 0, c = n) are exact 0s and 1s.
    """
    n_flat, c_flat, k_flat = n.ravel(), c.ravel(), k.ravel()
    index = np.zeros(len(n_flat), dtype=np.int64)
    blocks, width, rows = [], int(k_flat.max(initial=0)) + 1, 0
    for (nn, k1), members in _group_indices(n_flat, k_flat) if len(n_flat) else []:
        # Problems of one (n, k) differ in c only: each distinct c once.
        distinct, inverse = np.unique(c_flat[members], return_inverse=True)
        cc = distinct.astype(np.float64)[:, None]
        log_weight = _log_binomials(cc, k1) + _log_binomials(nn - cc, k1)[:, ::-1]
        weight = np.exp(log_weight - log_weight.max(axis=1, keepdims=True))
        block = np.zeros((len(distinct), width))
        block[:, : k1 + 1] = weight / weight.sum(axis=1, keepdims=True)
        blocks.append(block)
        index[members] = rows + inverse.ravel()
        rows += len(distinct)
    pmf = np.concatenate(blocks) if blocks else np.zeros((0, width))
    return pmf, index


def default_ks(num_samples: int) -> list[int]:
    """k = 1, 2, 4, ... up to n, with n itself appended when it is not a power of two.

    >>> default_ks(16), default_ks(10)
    ([1, 2, 4, 8, 16], [1, 2, 4, 8, 10])
    """
    n = int(num_samples)
    if n < 1:
        raise ValueError(f"num_samples must be >= 1 to build a pass@k curve, got {n}")
    ks = [1 << i for i in range(n.bit_length()) if (1 << i) <= n]
    if ks[-1] != n:
        ks.append(n)
    return ks


def pass_at_k_curve(
    num_samples, num_correct, ks: Iterable[int] | None = None
) -> dict[int, np.ndarray]:
    """Per-problem pass@k at each k (default 1, 2, 4, ..., n with n the smallest sample count).

    >>> curve = pass_at_k_curve([4, 4], [1, 0])
    >>> {k: float(v.mean()) for k, v in curve.items()}
    {1: 0.125, 2: 0.25, 4: 0.5}
    """
    n = np.asarray(num_samples)
    if ks is None:
        ks = default_ks(int(n.min()) if n.size else 0)
    return {int(k): pass_at_k(num_samples, num_correct, int(k)) for k in ks}


def best_of_k(scores, k: int) -> np.ndarray:
    """Expected maximum score of a uniformly random k-subset of the n samples, exactly.

    With scores sorted ascending s_(1..n): ``E = sum_i s_(i) * C(i-1, k-1) / C(n, k)``. The
    weights come from the ratio w_(i-1)/w_i = (i-k)/(i-1) with w_n = k/n, multiplied from the
    top, so no factorial is ever formed. `scores` is (P, n) or (n,); NaN is rejected.

    >>> float(best_of_k([0.0, 0.5, 1.0], 2))  # subsets {0,.5} {0,1} {.5,1}: (0.5 + 1 + 1) / 3
    0.8333333333333333
    """
    s = _check_scores(scores)
    n = s.shape[-1]
    k = _check_k(k, n)
    return np.sort(s, axis=-1) @ _best_of_k_weights(n, k)


def best_of_k_curve(scores, ks: Iterable[int] | None = None) -> dict[int, np.ndarray]:
    """best_of_k at several k with one sort (default k = 1, 2, 4, ..., n).

    >>> {k: v.tolist() for k, v in best_of_k_curve([[0.0, 1.0]]).items()}
    {1: [0.5], 2: [1.0]}
    """
    s = _check_scores(scores)
    n = s.shape[-1]
    ks = default_ks(n) if ks is None else [_check_k(k, n) for k in ks]
    ordered = np.sort(s, axis=-1)
    weights = np.stack([_best_of_k_weights(n, int(k)) for k in ks], axis=1)  # (n, K)
    values = ordered @ weights
    return {int(k): values[..., j] for j, k in enumerate(ks)}


def _check_scores(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"scores must have at least one sample on the last axis, got {s.shape}")
    if np.isnan(s).any():
        where = np.argwhere(np.isnan(s))[0].tolist()
        raise ValueError(f"scores contain NaN at index {where}; fill missing scores first")
    return s


def _best_of_k_weights(n: int, k: int) -> np.ndarray:
    # w_i = C(i-1, k-1) / C(n, k) for i = 1..n (0 for i < k); they sum to 1.
    w = np.zeros(n, dtype=np.float64)
    i = np.arange(n, k, -1, dtype=np.float64)  # i = n, n-1, ..., k+1
    ratios = (i - k) / (i - 1.0)  # w_(i-1) / w_i
    w[k - 1 :] = (k / n) * np.concatenate(([1.0], np.cumprod(ratios)))[::-1]
    return w


def outcome_codes(outcomes) -> np.ndarray:
    """Integer codes for outcomes: equal outcomes get equal codes, None/NaN gets -1.

    Integer input is returned as int64 unchanged (negative values already mean "none").
    Codes are global (not per problem); every metric only compares codes within a row.

    >>> outcome_codes([["a", None, "a"], ["b", "a", None]]).tolist()
    [[0, -1, 0], [1, 0, -1]]
    """
    arr = np.asarray(outcomes)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "b":
        raise ValueError(
            "outcomes must be strings or integer codes, not booleans (did you pass `correct`?)"
        )
    if arr.dtype.kind in "US" and not isinstance(outcomes, np.ndarray):
        # A list mixing strings and float NaN becomes a str array in which NaN is the text
        # 'nan', an outcome; as objects it stays NaN, "nothing extracted".
        arr = np.asarray(outcomes, dtype=object)
    import pandas as pd  # here, not at the top: a cached run reads search results without it

    flat = np.asarray(arr, dtype=object).ravel()
    codes, _ = pd.factorize(flat, use_na_sentinel=True)
    return codes.astype(np.int64).reshape(arr.shape)


# Above this much estimated work (`_exact_vote_work`), maj@k at one k is the mean of seeded
# draws instead of the exact expectation. Measured here: 5-22 ns per unit on 2 cores, so the
# limit is about 1-5 s of exact computation. The work grows with the outcomes per problem:
# 10,000 problems x 1,024 samples at k = 16 is ~7.6e8 with bench_metrics' spread of up to 63
# outcomes (~15 s exact; 32 draws take 0.2-0.3 s, plus 0.3-0.5 s for the outcome tables
# that estimate the work), but ~2.2e8 with 8 outcomes (exact, ~1.4 s); 500 x 256 at k = 64
# is ~2.5e8 (~2.6 s).
MAJ_EXACT_WORK_LIMIT = 2.5e8
DEFAULT_MAJ_RESAMPLES = 32


def maj_at_k(outcomes, correct, k: int, *, num_resamples: int = DEFAULT_MAJ_RESAMPLES,
             seed: int = 0, exact_work_limit: float | None = None) -> np.ndarray:
    """Majority-vote accuracy of k samples drawn without replacement, per problem.

    The expected value, over all C(n, k) equally likely k-subsets of a problem's n samples,
    of the vote's correctness: the plurality outcome among the k is the answer. A tie between
    t outcomes counts as the expected value of a uniform random tie-break: the fraction of
    the tied outcomes that are correct (never "first sample wins"). A sample whose outcome is
    None (or a negative code: nothing extracted) never wins a vote; a subset with only such
    samples scores 0. An outcome's correctness is the mean `correct` of its drawn samples
    (they agree when the verifier is deterministic). k == n is the one vote of all samples,
    k == 1 the share of samples that have an outcome and are correct, and 1 < k < n the exact
    expectation of `_expected_plurality_accuracy` (up to float rounding, ~1e-15) unless that
    would cost more than `exact_work_limit` (large n and k; see `maj_at_k_estimates`).

    `outcomes` and `correct` are (P, n) or (n,).

    >>> float(maj_at_k(["7", "7", "3", "3"], [True, True, False, False], k=4))  # 2-2 tie
    0.5
    >>> float(maj_at_k([None, None, None, "7"], [False, False, False, True], k=1))
    0.25
    """
    return maj_at_k_curve(outcomes, correct, [k], num_resamples=num_resamples, seed=seed,
                          exact_work_limit=exact_work_limit)[int(k)]


def maj_at_k_curve(outcomes, correct, ks: Iterable[int] | None = None, *,
                   num_resamples: int = DEFAULT_MAJ_RESAMPLES, seed: int = 0,
                   exact_work_limit: float | None = None) -> dict[int, np.ndarray]:
    """maj_at_k at several k (default 1, 2, 4, ..., n), reading each problem's outcomes once.

    k = 2 of a (right), a, b: the pair {a, a} scores 1, each of the two {a, b} ties, 1/2.

    >>> {k: v.tolist() for k, v in maj_at_k_curve([["a", "a", "b"]], [[1, 1, 0]]).items()}
    {1: [0.6666666666666666], 2: [0.6666666666666666], 3: [1.0]}
    """
    values, resampled = maj_at_k_estimates(outcomes, correct, ks, num_resamples=num_resamples,
                                           seed=seed, exact_work_limit=exact_work_limit)
    if resampled:  # the values alone do not say so: maj_at_k_estimates returns it
        warnings.warn(
            f"maj@k at k = {', '.join(map(str, resampled))} is the mean of {num_resamples} "
            "seeded draws per problem, not the exact expectation (too costly at this n and k); "
            "pass exact_work_limit=math.inf for exact values, or use maj_at_k_estimates",
            stacklevel=2,
        )
    return values


def maj_at_k_estimates(
    outcomes,
    correct,
    ks: Iterable[int] | None = None,
    *,
    num_resamples: int = DEFAULT_MAJ_RESAMPLES,
    seed: int = 0,
    exact_work_limit: float | None = None,
) -> tuple[dict[int, np.ndarray], list[int]]:
    """(maj@k per k, the ks that were resampled): `maj_at_k_curve` and which of its values are
    Monte Carlo estimates.

    The exact expectation's cost grows with the number of outcomes and about k^3 (see
    `_expected_plurality_accuracy`): 10,000 problems x 1,024 samples at k = 16 would take ~15 s
    here, and a whole curve at n = 512 over a minute per 1,000 problems. So at a k whose
    estimated work (`_exact_vote_work`) passes `exact_work_limit`, the value is the mean over
    `num_resamples` uniform k-subsets per problem instead, seeded by (seed, k): an unbiased
    estimate of the same expectation, whose Monte Carlo standard error on a mean over P
    problems is at most 0.5 / sqrt(num_resamples * P) (each draw scores in [0, 1]).
    k = 1 and k = n are always exact; `exact_work_limit=math.inf` makes every k exact, and
    None means `MAJ_EXACT_WORK_LIMIT`.
    """
    if num_resamples < 1:
        raise ValueError(f"num_resamples must be >= 1, got {num_resamples}")
    if exact_work_limit is None:  # read here, not bound at import: tests and users may set it
        exact_work_limit = MAJ_EXACT_WORK_LIMIT
    codes = outcome_codes(outcomes)
    corr = np.asarray(correct)
    if corr.shape != codes.shape:
        raise ValueError(
            f"correct has shape {corr.shape} but outcomes has {codes.shape}; pass one flag per sample"
        )
    corr = corr.astype(bool)
    one_problem = codes.ndim == 1
    if one_problem:
        codes, corr = codes[None, :], corr[None, :]
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise ValueError(
            f"outcomes must be (problems, samples) or (samples,), got shape {codes.shape}"
        )
    n = codes.shape[1]
    ks = default_ks(n) if ks is None else [_check_k(k, n) for k in ks]
    # One sortable key per sample: code in the high bits, correctness in the lowest bit.
    keys = codes * 2 + corr
    tables = None
    out, resampled = {}, []
    for k in ks:
        if k == n:
            result = _plurality_accuracy(keys)
        elif k == 1:
            # One sample is the vote: it wins when it has an outcome, and is right when correct.
            result = np.count_nonzero((codes >= 0) & corr, axis=1) / n
        else:
            if tables is None:  # the same for every k: built once
                tables = _distinct_vote_tables(keys)
            counts, right, inverse = tables
            if _exact_vote_work(counts, k) <= exact_work_limit:
                result = _expected_plurality_accuracy(counts, right, n, k)[inverse]
            else:
                rng = np.random.default_rng([seed, k])  # one stream per k: same whatever ks
                result = _resampled_plurality_accuracy(keys, k, num_resamples, rng)
                resampled.append(int(k))
        out[int(k)] = result[0] if one_problem else result
    return out, resampled


def _exact_vote_work(counts: np.ndarray, k: int) -> float:
    """Estimated steps of `_expected_plurality_accuracy` at k over outcome tables `counts`
    (distinct rows): every outcome with a samples takes part at each top count t <= min(a, k),
    with t polynomial terms of length k + 1 at min(D - 1, k // t - 1) // 2 + 1 quadrature
    nodes (D outcomes per row at most, as the code uses)."""
    if counts.size == 0:
        return 0.0
    t = np.arange(1, k + 1)
    nodes = np.clip(np.minimum(counts.shape[1] - 1, k // t - 1), 0, None) // 2 + 1
    per_outcome = np.concatenate(([0], np.cumsum(t * nodes)))  # indexed by min(a, k)
    return float((k + 1) * per_outcome[np.minimum(counts, k)].sum())


def _expected_plurality_accuracy(counts: np.ndarray, right: np.ndarray, n: int, k: int
                                 ) -> np.ndarray:
    """Exact expected `_plurality_accuracy` of a uniform k-subset of n samples, per row of an
    outcome table (`_distinct_vote_tables`: samples and correct samples of each outcome).

    Only each outcome's sample count a_o and correct count c_o matter: given how many of its
    samples are drawn, which ones is uniform, so its drawn samples are right with expected
    share q_o = c_o / a_o. With X_o the drawn count of outcome o (multivariate
    hypergeometric) and m the number of other outcomes tied with it at the top count t,

        maj@k = sum_o q_o * sum_t E[1(X_o = t, every other X_j <= t) / (1 + m)].

    For each t that is a z^k coefficient divided by C(n, k): of a product with one polynomial
    per outcome, sum_{x < t} C(a, x) z^x + u C(a, t) z^t (the ways to draw x of its a samples,
    capped at t), integrated over u in [0, 1], since the integral of u^m is 1 / (1 + m). The
    integrand is a polynomial of degree <= `ties` in u, so Gauss-Legendre quadrature with
    ties // 2 + 1 nodes integrates it exactly. The sum over the winner o is carried as a
    derivative beside the product (d(F_1 ... F_D) = sum_o dF_o prod_{j != o} F_j, with
    dF_o = q_o C(a_o, t) z^t), so one pass over the outcomes covers every winner. The None
    samples and the outcomes below t (they can neither win nor tie at t) form one uncapped
    factor (1 + z)^rest, applied last as a dot product for the z^k coefficient alone.
    Coefficients are scaled by p^x (1-p)^(a-x), p = k/n (binomial probabilities in place of
    counts): the ratio is unchanged and every number stays in [0, 1] at any n, where C(n, k)
    itself overflows a float past n ~ 1,030. All terms are positive: no cancellation.

    Cost: about sum_t (outcomes with >= t samples) * t * (ties // 2 + 1) steps over
    polynomials of length <= k+1 per row; t only where an outcome has t samples and k
    samples fit under the cap. Measured on 2 shared cores, every k of the curve: 10,000
    problems x 16 samples ~20 ms (32 random draws took ~40 ms); 10,000 x 64 (8 outcomes)
    ~2 s; 2,000 x 256 (20 outcomes) ~12 s; 20 x 2,048 (3 outcomes) ~13 s. Past n ~ 64 this
    is slower than seeded draws (0.4 s for 2,000 x 256), so `maj_at_k_estimates` draws
    instead where `_exact_vote_work` passes `MAJ_EXACT_WORK_LIMIT`.
    """
    value = np.zeros(counts.shape[0])
    if counts.shape[1] == 0 or counts.shape[0] == 0:  # no sample has an outcome
        return value
    share = np.divide(right, counts, out=np.zeros(counts.shape), where=counts > 0)
    pmf = _binomial_pmf_table(n, k, k / n)  # pmf[a, x] = C(a, x) p^x (1-p)^(a-x)
    # Rows in chunks: the polynomials of a chunk stay under ~32 MB however large n is.
    nodes_most = min(counts.shape[1], k) // 2 + 1
    chunk = max(1, 2**21 // (2 * nodes_most * (k + 1)))
    for first in range(0, counts.shape[0], chunk):
        rows = slice(first, first + chunk)
        value[rows] = _winning_share(counts[rows], share[rows], pmf, n, k)
    return value / pmf[n, k]


def _winning_share(counts: np.ndarray, share: np.ndarray, pmf: np.ndarray, n: int, k: int
                   ) -> np.ndarray:
    """`_expected_plurality_accuracy` times pmf[n, k], for rows of (counts, share)."""
    value = np.zeros(counts.shape[0])
    answered = counts.sum(axis=1)
    for t in range(1, min(k, int(counts[:, 0].max())) + 1):
        # Only rows where some outcome has t samples and k samples fit under the cap t; the
        # others have no k-subset whose top count is t (their term is 0 exactly).
        fits = n - answered + np.minimum(counts, t).sum(axis=1) >= k
        live = np.flatnonzero((counts[:, 0] >= t) & fits)
        if live.size == 0:
            continue
        c = counts[live]
        big = c >= t  # columns are sorted by count, descending: the big ones come first
        width = int(np.count_nonzero(big.any(axis=0)))
        # Each other outcome tied at t takes t of the k samples: at most k // t - 1 of them.
        ties = min(width - 1, k // t - 1)
        nodes, weights = np.polynomial.legendre.leggauss(ties // 2 + 1)
        u = ((nodes + 1.0) / 2.0)[None, :, None]  # mapped from [-1, 1] to [0, 1]
        # state[:, 0] is the product so far, state[:, 1] its derivative; one per node.
        state = np.zeros((live.size, 2, len(nodes), 1))
        state[:, 0, :, 0] = 1.0
        for j in range(width):
            a, at = c[:, j], big[:, j]
            low = np.where(at[:, None], pmf[a, :t], 0.0)  # x < t samples: neither wins nor ties
            low[~at, 0] = 1.0  # an outcome below t is in `rest`: factor 1 here
            top = np.where(at, pmf[a, t], 0.0)[:, None, None]  # x = t samples
            degree = min(k, state.shape[3] - 1 + t)
            new = _times_polynomial(state, low, degree)
            if degree >= t:
                shifted = state[..., : degree + 1 - t]
                new[..., t:] += (top * u)[:, None] * shifted  # it ties at t
                new[:, 1, :, t:] += (share[live, j, None, None] * top) * shifted[:, 0]  # it wins
            state = new
        rest = n - np.where(big, c, 0).sum(axis=1)  # None samples and outcomes below t
        drawn = k - np.arange(state.shape[3])  # samples left for `rest` after degree d
        rest_pmf = pmf[rest][:, np.maximum(drawn, 0)] * (drawn >= 0)
        value[live] += np.einsum("rgd,rd->rg", state[:, 1], rest_pmf) @ (weights / 2.0)
    return value


def _times_polynomial(state: np.ndarray, low: np.ndarray, degree: int) -> np.ndarray:
    """state (R, ..., m) times the per-row polynomial low (R, t), up to z^degree: t shifted
    adds (a matrix product of sliding windows measured slower, even at t ~ 1,000)."""
    out = np.zeros((*state.shape[:-1], degree + 1))
    m = state.shape[-1]
    coefficient = low.reshape(low.shape[0], *([1] * (state.ndim - 2)), low.shape[1])
    for x in range(min(low.shape[1], degree + 1)):
        length = min(m, degree + 1 - x)
        out[..., x : x + length] += coefficient[..., x : x + 1] * state[..., :length]
    return out


def _distinct_vote_tables(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct outcome tables of rows of keys = code * 2 + correct: (counts, right,
    inverse), counts and right (T, D) holding the samples and correct samples of every
    outcome with a code >= 0, sorted by samples then correct, descending, 0-padded; row p's
    table is row inverse[p]. Problems with equal tables get equal maj@k, so each is computed
    once (10,000 problems x 16 samples of 6 outcomes have a few hundred)."""
    num_rows, m = keys.shape
    # The narrowest integer type sorts ~3x faster (10,000 x 1,024 keys: 0.05 s as int16, 0.17 s
    # as int64); cumsum still counts in the platform integer.
    flat = np.sort(keys.astype(_small_int_type(keys)), axis=1).ravel()
    codes = flat >> 1  # arithmetic shift: code -1 (none) stays negative
    starts = run_starts(codes, m)
    ends = np.append(starts[1:], codes.size)
    correct_so_far = np.concatenate(([0], np.cumsum(flat & 1)))
    answered = codes[starts] >= 0
    starts, ends = starts[answered], ends[answered]
    rows, sizes = starts // m, ends - starts
    hits = correct_so_far[ends] - correct_so_far[starts]
    order = np.lexsort((-hits, -sizes, rows))
    rows, sizes, hits = rows[order], sizes[order], hits[order]
    per_row = np.bincount(rows, minlength=num_rows)
    slot = np.arange(rows.size) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    width = int(per_row.max()) if num_rows else 0
    table = np.zeros((num_rows, 2 * width), dtype=np.int64)
    table[rows, slot], table[rows, width + slot] = sizes, hits
    # Distinct rows by a lexicographic sort (np.unique(axis=0) took 20 ms on 10,000 rows).
    order = np.lexsort(table.T[::-1]) if width else np.arange(num_rows)
    ordered = table[order]
    new = np.ones(num_rows, dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(num_rows, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    distinct = ordered[new]
    return distinct[:, :width], distinct[:, width:], inverse


def _binomial_pmf_table(n: int, k: int, p: float) -> np.ndarray:
    """(n+1, k+1) table of C(a, x) p^x (1-p)^(a-x), built row by row (Pascal's rule with
    weights): sums of positive terms only, so every entry is accurate to a few ulps."""
    pmf = np.zeros((n + 1, k + 1))
    pmf[0, 0] = 1.0
    for a in range(1, n + 1):
        pmf[a] = (1.0 - p) * pmf[a - 1]
        pmf[a, 1:] += p * pmf[a - 1, :-1]
    return pmf


def _plurality_accuracy(keys: np.ndarray) -> np.ndarray:
    """Tie-aware plurality accuracy per row of (P, m) keys = code * 2 + correct."""
    num_rows, m = keys.shape
    if m <= 2:
        return _two_vote_accuracy(keys, axis=1)
    # int32 sorts faster than int64; keys are small unless there are billions of outcomes.
    if keys.size and -(2**31) < keys.min() and keys.max() < 2**31:
        keys = keys.astype(np.int32)
    flat = np.sort(keys, axis=1).ravel()
    codes = flat >> 1  # arithmetic shift: code -1 (none) stays negative
    starts = run_starts(codes, m)
    ends = np.append(starts[1:], codes.size)
    lengths = ends - starts
    run_rows = starts // m
    correct_so_far = np.concatenate(([0], np.cumsum(flat & 1)))
    run_correct = (correct_so_far[ends] - correct_so_far[starts]) / lengths
    lengths = np.where(codes[starts] < 0, 0, lengths)  # "nothing extracted" never wins
    first_run = np.flatnonzero(starts % m == 0)  # every row starts a run
    top = np.maximum.reduceat(lengths, first_run)
    winner = (lengths == top[run_rows]) & (lengths > 0)
    num = np.bincount(run_rows, weights=winner * run_correct, minlength=num_rows)
    den = np.bincount(run_rows, weights=winner, minlength=num_rows)
    return np.divide(num, den, out=np.zeros(num_rows), where=den > 0)


def _two_vote_accuracy(keys: np.ndarray, axis: int) -> np.ndarray:
    """Plurality accuracy of at most two votes (keys along `axis`). One sample wins if it has an
    outcome; of two with outcomes, equal or tied, the vote is right with probability
    (c1 + c2) / 2: the sorted-run result, without a sort."""
    answered = keys >= 0
    right = np.count_nonzero(answered & (keys & 1 == 1), axis=axis)
    voters = np.count_nonzero(answered, axis=axis)
    return np.divide(right, voters, out=np.zeros(right.shape), where=voters > 0)


def _resampled_plurality_accuracy(keys: np.ndarray, k: int, num_draws: int, rng) -> np.ndarray:
    """Mean `_plurality_accuracy` over `num_draws` uniform k-subsets of each row of (P, n) keys."""
    num_problems, n = keys.shape
    # Sample-major, like the draws, and in the smallest integer type that holds every key:
    # the draws shuffle the keys themselves, and 1-2 byte rows swap and compare several
    # times faster than 8-byte ones (equal keys stay equal, so the votes are the same).
    keys_by_sample = np.ascontiguousarray(keys.T).astype(_small_int_type(keys)).ravel()
    total = np.zeros(num_problems)
    # One draw at a time: batching all draws into one sort measured slower (cache misses).
    for drawn in _draws_without_replacement(keys_by_sample, num_problems, n, k, num_draws, rng):
        total += _plurality_accuracy_by_sample(drawn)
    return total / num_draws


def _small_int_type(values: np.ndarray) -> type:
    """The narrowest signed integer type that holds every value."""
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    for kind in (np.int8, np.int16, np.int32):
        info = np.iinfo(kind)
        if info.min <= low and high <= info.max:
            return kind
    return np.int64


def _draws_without_replacement(
    values: np.ndarray, num_problems: int, n: int, k: int, num_draws: int, rng
):
    """Yield `num_draws` (k, P) matrices; column p holds the values of a uniform k-subset of
    problem p's n samples, from `values`, a sample-major (n, P) array flattened (the values
    themselves are shuffled, so no gather is needed afterwards).

    A partial Fisher-Yates shuffle, vectorised across problems, costs O(P * min(k, n-k)) per
    draw instead of O(P * n) for a full permutation; the permutation is reused between draws
    (a partial shuffle of any permutation still yields a uniform subset). It is held sample-
    major so that each swap reads and writes one contiguous row: several times faster than
    swapping strided columns of a (P, n) array, with the same draws.
    """
    columns = np.arange(num_problems, dtype=np.int64)
    perm = values.copy().reshape(n, num_problems)
    flat = perm.reshape(-1)
    steps = min(k, n - k)  # shuffle the smaller side; its complement is uniform too
    # Step j picks uniformly among samples j..n-1: flat position (j + floor(u * (n - j))) * P
    # + p. One draw's uniforms at a time (the same stream as one call for all draws), so the
    # arithmetic on them stays in cache: half the cost of doing it on every draw at once.
    offsets = np.arange(steps)[:, None]
    scale = (n - offsets).astype(np.float64)
    base = offsets * num_problems + columns
    for _ in range(num_draws):
        picks = rng.random((steps, num_problems))
        picks *= scale
        picks = picks.astype(np.int64)
        picks *= num_problems
        picks += base  # the flat position of each picked sample
        for j in range(steps):
            at = picks[j]
            held = perm[j].copy()
            perm[j] = flat[at]
            flat[at] = held
        yield perm[:k] if steps == k else perm[steps:]


PAIRWISE_VOTE_MAX = 16  # up to here comparing every pair of votes beats sorting them (measured)


def _plurality_accuracy_by_sample(keys: np.ndarray) -> np.ndarray:
    """`_plurality_accuracy` of (m, P) sample-major keys (one row per drawn sample).

    For 2 < m <= PAIRWISE_VOTE_MAX each vote counts the votes equal to it by comparing the m rows
    pairwise: m(m-1)/2 comparisons of contiguous rows, no sort and no ragged runs. The winning
    outcomes' samples all have the top count t, so the tie-aware accuracy (mean over winning
    outcomes of their fraction correct) is (correct winning samples / t) / (winning samples /
    t): correct winning samples over winning samples.
    """
    m = keys.shape[0]
    if m <= 2:
        return _two_vote_accuracy(keys, axis=0)
    if m > PAIRWISE_VOTE_MAX:
        return _plurality_accuracy(np.ascontiguousarray(keys.T))
    codes = keys >> 1
    counts = np.ones(keys.shape, dtype=np.int8)  # every vote matches itself; m <= 16 < 127
    same = np.empty(keys.shape[1], dtype=bool)
    step = same.view(np.int8)  # the comparison as 0/1 counts, without a conversion
    for i in range(m):
        for j in range(i + 1, m):
            np.equal(codes[i], codes[j], out=same)
            np.add(counts[i], step, out=counts[i])
            np.add(counts[j], step, out=counts[j])
    counts[codes < 0] = 0  # "nothing extracted" never wins
    top = counts.max(axis=0)
    winners = (counts == top) & (top > 0)
    right = np.count_nonzero(winners & (keys & 1 == 1), axis=0)
    voters = np.count_nonzero(winners, axis=0)
    return np.divide(right, voters, out=np.zeros(keys.shape[1]), where=voters > 0)


def run_starts(sorted_flat: np.ndarray, row_length: int) -> np.ndarray:
    """Start index of every run of equal values in row-wise sorted data, runs split at rows.

    `row_length` values a row, rows laid end to end (`np.sort(codes, axis=1).ravel()`): the
    runs' lengths are the counts of each distinct value per row.

    >>> run_starts(np.array([1, 1, 2, 2, 2, 3]), 3).tolist()
    [0, 2, 3, 5]
    """
    new = np.empty(sorted_flat.size, dtype=bool)
    new[0] = True
    np.not_equal(sorted_flat[1:], sorted_flat[:-1], out=new[1:])
    new[::row_length] = True
    return np.flatnonzero(new)


def chance_pass_at_k(num_options, k) -> np.ndarray:
    """pass@k of uniform random guessing among m options: 1 - (1 - 1/m)^k.

    >>> chance_pass_at_k(4, [1, 2]).tolist()
    [0.25, 0.4375]
    """
    m = np.asarray(num_options, dtype=np.float64)
    if np.any(m < 1):
        raise ValueError(f"num_options must be >= 1, got {num_options}")
    return 1.0 - (1.0 - 1.0 / m) ** np.asarray(k, dtype=np.float64)


# Above this chance pass@k, a chance-corrected value divides by less than 0.01 of headroom:
# one problem with no correct sample then weighs -99 or more (-9,954 at k = 32 with 4 options)
# and a mean over problems measures that problem, not the policy. k is capped below it.
MAX_CHANCE = 0.99


def chance_corrected_pass_at_k(pass_at_k_value, num_options, k,
                               max_chance: float = MAX_CHANCE) -> np.ndarray:
    """(p - chance) / (1 - chance): 0 at random guessing, 1 at perfect; negative below chance.

    NaN where chance reaches `max_chance` (a single option, or k so large that guessing
    nearly always passes): the value is undefined or dominated by 1 / (1 - chance) there,
    not a measurement (`largest_k_above_chance` gives the largest usable k).

    >>> chance_corrected_pass_at_k(0.625, 4, 1).item()
    0.5
    >>> chance_corrected_pass_at_k(0.0, 4, [16, 17, 32]).round(1).tolist()
    [-98.8, nan, nan]
    """
    chance = chance_pass_at_k(num_options, k)
    p = np.asarray(pass_at_k_value, dtype=np.float64)
    headroom = 1.0 - chance
    return np.divide(
        p - chance,
        headroom,
        out=np.full(np.broadcast(p, headroom).shape, np.nan),
        where=chance < max_chance,
    )


def largest_k_above_chance(num_options, num_samples: int, max_chance: float = MAX_CHANCE) -> int:
    """The largest k <= num_samples whose chance pass@k is below `max_chance` for every
    problem's option count (0 when even k = 1 is not).

    >>> largest_k_above_chance([4, 4], 32), largest_k_above_chance([5, 6], 32)
    (16, 20)
    >>> largest_k_above_chance(4, 8)
    8
    """
    m = float(np.min(np.asarray(num_options, dtype=np.float64)))
    if m <= 1:
        return 0
    # 1 - (1 - 1/m)^k < max_chance  <=>  k < log(1 - max_chance) / log(1 - 1/m)
    bound = np.log1p(-max_chance) / np.log1p(-1.0 / m)
    k = int(np.ceil(bound)) - 1
    while k + 1 <= num_samples and chance_pass_at_k(m, k + 1) < max_chance:
        k += 1  # float rounding at the bound
    while k > 0 and chance_pass_at_k(m, k) >= max_chance:
        k -= 1
    return int(min(k, num_samples))


def _as_int_array(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers, got {x!r}")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _check_counts(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> None:
    for bad, what in (
        (k < 1, "k must be >= 1"),
        (k > n, "k must be <= num_samples (pass@k needs at least k samples)"),
        (c < 0, "num_correct must be >= 0"),
        (c > n, "num_correct must be <= num_samples"),
    ):
        if bad.any():
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise ValueError(
                f"{what}: problem {i if len(i) != 1 else i[0]} has n={n[i]}, c={c[i]}, k={k[i]}"
            )


def _check_k(k, n: int) -> int:
    if int(k) != k or not 1 <= k <= n:
        raise ValueError(f"k must be an integer in [1, n={n}], got {k}")
    return int(k)


def _group_indices(*keys: np.ndarray) -> Sequence[tuple[tuple[int, ...], np.ndarray]]:
    """[(key tuple, indices)] for every distinct combination of the 1-D key arrays."""
    if all(len(key) and (key == key[0]).all() for key in keys):
        # One combination (every problem has the same n and k): skip the row-wise np.unique,
        # which sorts structured rows and cost ~2 ms per call on 10,000 problems.
        return [(tuple(int(key[0]) for key in keys), np.arange(len(keys[0])))]
    stacked = np.stack(keys, axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    return [
        (tuple(int(v) for v in uniq[g]), order[bounds[g] : bounds[g + 1]]) for g in range(len(uniq))
    ]
