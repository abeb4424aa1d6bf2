"""Selection metrics over n samples per problem: pass@k, best-of-k, maj@k, chance levels.

Every function is pure numpy, vectorised over problems, and seeded where it samples. Inputs
are per-problem arrays: counts of shape (P,), or (P, n) matrices with one row per problem
(a 1-D array of n samples is one problem and gives a 0-d result).

Outcomes may be given as objects (strings, with None for "nothing extracted") or as integer
codes (negative = nothing extracted); `outcome_codes` turns the first into the second.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "best_of_k",
    "best_of_k_curve",
    "chance_corrected_pass_at_k",
    "chance_pass_at_k",
    "default_ks",
    "maj_at_k",
    "outcome_codes",
    "pass_at_k",
    "pass_at_k_curve",
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
    n, c, kk = np.broadcast_arrays(
        *(
            _as_int_array(x, name)
            for x, name in ((num_samples, "num_samples"), (num_correct, "num_correct"), (k, "k"))
        )
    )
    _check_counts(n, c, kk)
    out = np.ones(n.shape, dtype=np.float64)
    # Where n - c < k every k-subset holds a correct sample: pass@k is exactly 1.
    todo = (n - c) >= kk
    if not todo.any():
        return out
    n_t, c_t, k_t = n[todo], c[todo], kk[todo]
    fail = np.empty(n_t.shape, dtype=np.float64)
    for (nn, k1), members in _group_indices(n_t, k_t):
        # terms[j] = 1 - k/(nn - j) for i = nn, nn-1, ..., k+1: multiplying from the top keeps
        # the rounding error of the c-term product below c ulps (no log/exp round trip).
        terms = 1.0 - k1 / np.arange(nn, k1, -1, dtype=np.float64)
        table = np.concatenate(([1.0], np.cumprod(terms)))
        fail[members] = table[c_t[members]]
    out[todo] = 1.0 - fail
    return out


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
    import pandas as pd  # here, not at the top: a cached run reads search results without it

    flat = np.asarray(arr, dtype=object).ravel()
    codes, _ = pd.factorize(flat, use_na_sentinel=True)
    return codes.astype(np.int64).reshape(arr.shape)


def maj_at_k(outcomes, correct, k: int, num_resamples: int = 32, seed: int = 0) -> np.ndarray:
    """Majority-vote accuracy over k samples drawn without replacement, per problem.

    Each of `num_resamples` seeded draws picks k of the n samples of every problem; the
    plurality outcome among them is the answer. A tie between t outcomes counts as the
    expected value of a uniform random tie-break: the fraction of the tied outcomes that are
    correct (never "first sample wins"). A sample whose outcome is None (or a negative code:
    nothing extracted) never wins a vote; a draw with only such samples scores 0. An outcome's
    correctness is the mean `correct` of its drawn samples (they agree when the verifier is
    deterministic). With k == n the vote is deterministic and computed once.

    `outcomes` and `correct` are (P, n) or (n,).

    >>> float(maj_at_k(["7", "7", "3", "3"], [True, True, False, False], k=4))  # 2-2 tie
    0.5
    """
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
    num_problems, n = codes.shape
    k = _check_k(k, n)
    if num_resamples < 1:
        raise ValueError(f"num_resamples must be >= 1, got {num_resamples}")
    # One sortable key per sample: code in the high bits, correctness in the lowest bit.
    keys = codes * 2 + corr
    if k == n:
        result = _plurality_accuracy(keys)
    else:
        rng = np.random.default_rng(seed)
        # Sample-major, like the draws, and in the smallest integer type that holds every key:
        # the draws shuffle the keys themselves, and 1-2 byte rows swap and compare several
        # times faster than 8-byte ones (equal keys stay equal, so the votes are the same).
        keys_by_sample = np.ascontiguousarray(keys.T).astype(_small_int_type(keys)).ravel()
        result = np.zeros(num_problems, dtype=np.float64)
        # One draw at a time: batching all draws into one sort measured slower (cache misses).
        draws = _draws_without_replacement(keys_by_sample, num_problems, n, k, num_resamples, rng)
        for drawn in draws:
            result += _plurality_accuracy_by_sample(drawn)
        result /= num_resamples
    return result[0] if one_problem else result


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
    starts = _run_starts(codes, m)
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


def _run_starts(sorted_flat: np.ndarray, row_length: int) -> np.ndarray:
    """Start index of every run of equal values in row-wise sorted data, runs split at rows."""
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


def chance_corrected_pass_at_k(pass_at_k_value, num_options, k) -> np.ndarray:
    """(p - chance) / (1 - chance): 0 at random guessing, 1 at perfect; negative below chance.

    NaN where chance is 1 (a single option, or k large enough that guessing always passes
    in floating point): the value is undefined there, not 0.

    >>> chance_corrected_pass_at_k(0.625, 4, 1).item()
    0.5
    """
    chance = chance_pass_at_k(num_options, k)
    p = np.asarray(pass_at_k_value, dtype=np.float64)
    headroom = 1.0 - chance
    return np.divide(
        p - chance,
        headroom,
        out=np.full(np.broadcast(p, headroom).shape, np.nan),
        where=headroom > 0,
    )


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
