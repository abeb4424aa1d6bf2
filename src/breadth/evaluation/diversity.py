"""Diversity of the n samples of each problem: outcomes, solution classes, text, tokens.

Outcome metrics take a (P, n) matrix (or one problem as (n,)) of outcomes or integer codes
(see `breadth.evaluation.metrics.outcome_codes`) and are vectorised over problems: one row
sort serves distinct count and entropy. Text, class and token metrics take the samples of one
problem and return a float; `breadth.evaluation.summary` applies them per problem.

Samples with no outcome (None / negative code: nothing extracted) are not an answer: they
add nothing to the distinct count or the entropy, but still count in n for the fraction.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from breadth.evaluation.metrics import outcome_codes, run_starts

__all__ = [
    "OutcomeDiversity",
    "distinct_classes",
    "distinct_correct_outcomes",
    "distinct_k",
    "distinct_n",
    "distinct_outcome_fraction",
    "distinct_outcomes",
    "embedding_diversity",
    "entropy_threshold",
    "forking_token_share",
    "mean_token_entropy",
    "outcome_diversity",
    "outcome_entropy",
    "reasoning_end",
    "reasoning_entropies",
    "utility_k",
    "vendi_outcomes",
    "vendi_score",
    "vendi_text",
]

DEFAULT_PATIENCE = 0.8  # NoveltyBench's user patience: weight p^(i-1) on the i-th generation


@dataclass(frozen=True)
class OutcomeDiversity:
    """Outcome diversity per problem; arrays of shape (P,) (0-d for one problem)."""

    distinct: np.ndarray
    """Number of distinct extracted outcomes among the n samples."""
    fraction: np.ndarray
    """distinct / n (n counts every sample, extracted or not)."""
    entropy: np.ndarray
    """Shannon entropy (nats) of the empirical distribution of extracted outcomes; 0 if none."""


def outcome_diversity(outcomes) -> OutcomeDiversity:
    """Distinct outcome count, fraction and entropy per problem from one row-wise sort.

    >>> d = outcome_diversity([["a", "a", "b", None]])
    >>> d.distinct.tolist(), d.fraction.tolist(), round(float(d.entropy[0]), 4)
    ([2], [0.5], 0.6365)
    """
    codes = outcome_codes(outcomes)
    one_problem = codes.ndim == 1
    if one_problem:
        codes = codes[None, :]
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise ValueError(
            f"outcomes must be (problems, samples) or (samples,), got shape {codes.shape}"
        )
    num_rows, n = codes.shape
    # int32 sorts about twice as fast as int64; codes are < number of distinct outcomes.
    small = codes.astype(np.int32) if codes.size and codes.max() < 2**31 else codes
    flat = np.sort(small, axis=1).ravel()
    starts = run_starts(flat, n)
    lengths = np.diff(np.append(starts, flat.size)).astype(np.float64)
    rows = starts // n
    answered = flat[starts] >= 0
    lengths[~answered] = 0.0
    distinct = np.bincount(rows, weights=answered, minlength=num_rows)
    total = np.bincount(rows, weights=lengths, minlength=num_rows)
    p = lengths / np.maximum(total[rows], 1.0)
    plogp = np.where(lengths > 0, p * np.log(np.where(lengths > 0, p, 1.0)), 0.0)
    entropy = np.maximum(-np.bincount(rows, weights=plogp, minlength=num_rows), 0.0)
    result = OutcomeDiversity(distinct.astype(np.int64), distinct / n, entropy)
    if one_problem:
        return OutcomeDiversity(result.distinct[0], result.fraction[0], result.entropy[0])
    return result


def distinct_outcomes(outcomes) -> np.ndarray:
    """Number of distinct extracted outcomes per problem (None does not count).

    >>> distinct_outcomes([["4", "4", "5"], [None, None, "1"]]).tolist()
    [2, 1]
    """
    return outcome_diversity(outcomes).distinct


def distinct_correct_outcomes(outcomes, correct) -> np.ndarray:
    """Number of distinct extracted outcomes among the *correct* samples, per problem.

    On a task with several right answers, the count of different right answers a model
    finds: diversity that costs no accuracy (distinct outcomes counts wrong answers too).

    >>> distinct_correct_outcomes([["4", "6", "6", "5"]], [[True, True, True, False]]).tolist()
    [2]
    >>> distinct_correct_outcomes(["1", None], [False, True]).tolist()  # None is no answer
    0
    """
    values = np.asarray(outcomes, dtype=object)
    right = np.asarray(correct, dtype=bool)
    if values.shape != right.shape:
        raise ValueError(f"outcomes {values.shape} and correct {right.shape} must align")
    kept = np.where(right, values, None)
    return outcome_diversity(kept).distinct


def vendi_score(similarity, weights=None) -> float:
    """Vendi score (Friedman & Dieng 2023): the effective number of distinct samples under a
    similarity kernel, exp of the Shannon entropy of the eigenvalues of K / n.

    `similarity` is one problem's (m, m) kernel matrix K: symmetric, positive semi-definite,
    K_ii = 1. `weights` (optional, m probabilities) weigh the rows as the reference package's
    `score_K(K, p=...)` does, diag(sqrt(p)) K diag(sqrt(p)): m distinct items with p_i = (count
    of item i) / n give the score of n samples with repeats, so repeated samples need not be
    expanded. Eigenvalues below 0 (rounding) count as 0. 1 for identical samples, n for n
    samples no two of which are similar at all.

    >>> round(vendi_score(np.eye(3)), 9), round(vendi_score(np.ones((3, 3))), 9)
    (3.0, 1.0)
    >>> round(vendi_score([[1.0, 0.5], [0.5, 1.0]]), 6)  # eigenvalues 0.75, 0.25
    1.754765
    """
    k = np.asarray(similarity, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] == 0:
        raise ValueError(f"similarity must be a non-empty square matrix, got shape {k.shape}")
    if not np.allclose(k, k.T) or not np.allclose(np.diag(k), 1.0):
        raise ValueError("similarity must be symmetric with ones on its diagonal (K_ii = 1)")
    m = k.shape[0]
    p = np.full(m, 1.0 / m) if weights is None else np.asarray(weights, dtype=np.float64)
    if p.shape != (m,) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"weights must be {m} non-negative numbers summing to 1")
    root = np.sqrt(p)
    return float(_vendi_of_eigenvalues(np.linalg.eigvalsh(k * np.outer(root, root))))


def _vendi_of_eigenvalues(eigenvalues: np.ndarray) -> np.ndarray:
    """exp(-sum lambda log lambda) over the last axis, eigenvalues <= 0 left out."""
    lam = np.clip(eigenvalues, 0.0, None)
    plogp = np.where(lam > 0, lam * np.log(np.where(lam > 0, lam, 1.0)), 0.0)
    return np.exp(-plogp.sum(axis=-1))


def vendi_outcomes(outcomes) -> np.ndarray:
    """Vendi score per problem with the exact-match kernel on extracted outcomes (K_ij = 1 when
    samples i and j extracted the same outcome, else 0); 0.0 where no sample has one.

    K is then block-diagonal with one all-ones block per outcome, so the eigenvalues of K / n
    are the outcomes' shares and the score is exp(outcome entropy): the effective number of
    outcomes (the Hill number of order 1), between 1 and `distinct_outcomes`. Like the entropy
    it reads the samples with an outcome only (None is no answer, not a shared one).

    >>> vendi_outcomes([["a", "a", "a", "a"], ["a", "b", "c", "d"]]).tolist()
    [1.0, 4.0]
    >>> round(float(vendi_outcomes(["a", "a", "b", "c"])), 6)  # shares 1/2, 1/4, 1/4: 2^1.5
    2.828427
    """
    d = outcome_diversity(outcomes)
    return np.where(d.distinct > 0, np.exp(d.entropy), 0.0)


DEFAULT_VENDI_NS = (1, 2, 3, 4)  # the reference package's `ngram_vendi_score` default


def vendi_text(
    texts: Sequence[str] | Sequence[Sequence],
    ns: Sequence[int] = DEFAULT_VENDI_NS,
    *,
    tokenize: Callable[[str], Sequence] = str.split,
    max_tokens_per_text: int = 20_000,
) -> float:
    """Vendi score of one problem's texts under the n-gram kernel: K = the mean over n in `ns`
    of the cosine similarity of the texts' n-gram count vectors (the reference package's
    `ngram_vendi_score`).

    A text with fewer than n tokens counts as one n-gram of its own (its tokens, padded), so
    identical texts always have similarity 1 and K_ii = 1; the reference gives such a text a
    zero row for that n instead, which makes two identical one-word answers only 1/4 alike.
    Strings are split by `tokenize` (sequences are their own tokens), each cut to
    `max_tokens_per_text` tokens, as `distinct_n` does.

    >>> round(vendi_text(["a b", "a b", "a b"]), 9), round(vendi_text(["a", "b", "c"]), 9)
    (1.0, 3.0)
    >>> round(vendi_text(["a b", "a c"], ns=(1,)), 6)  # cosine 1/2: eigenvalues 0.75, 0.25
    1.754765
    """
    if not len(texts):
        raise ValueError("vendi_text needs at least one text")
    for n in ns:
        if n < 1:
            raise ValueError(f"n must be >= 1 for the n-gram kernel, got {n}")
    tokens = [tuple((tokenize(t) if isinstance(t, str) else list(t))[:max_tokens_per_text])
              for t in texts]
    kernel = np.zeros((len(tokens), len(tokens)))
    for n in ns:
        counts = [Counter(t[i : i + n] for i in range(len(t) - n + 1)) if len(t) >= n
                  else Counter([t]) for t in tokens]
        norms = np.sqrt([sum(v * v for v in c.values()) for c in counts])
        for i, a in enumerate(counts):
            for j, b in enumerate(counts):
                kernel[i, j] += sum(v * b[g] for g, v in a.items()) / (norms[i] * norms[j])
    return vendi_score(kernel / len(ns))


def distinct_outcome_fraction(outcomes) -> np.ndarray:
    """Distinct extracted outcomes / n per problem.

    >>> distinct_outcome_fraction([["4", "4", "5", "6"]]).tolist()
    [0.75]
    """
    return outcome_diversity(outcomes).fraction


def outcome_entropy(outcomes) -> np.ndarray:
    """Shannon entropy (nats) of the extracted outcomes per problem (None samples left out).

    >>> round(float(outcome_entropy(["a", "b"])), 6)  # log 2
    0.693147
    """
    return outcome_diversity(outcomes).entropy


def distinct_classes(class_ids) -> np.ndarray:
    """Number of distinct solution classes per problem from an equivalence partition.

    `class_ids` is (P, n) or (n,) integer labels, e.g. from
    `breadth.rewards.equivalence_classes(items, judge)` (the DARLING partition). Labels are
    compared within a row only; negative labels are invalid here (every sample is in a class).

    >>> distinct_classes([[0, 0, 1, 2], [5, 5, 5, 5]]).tolist()
    [3, 1]
    """
    ids = np.asarray(class_ids)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"class_ids must be integer labels, got dtype {ids.dtype}")
    if ids.size and ids.min() < 0:
        raise ValueError("class_ids must be >= 0: every sample belongs to a class")
    return outcome_diversity(ids).distinct


def distinct_n(
    texts: Sequence[str] | Sequence[Sequence],
    n: int,
    *,
    tokenize: Callable[[str], Sequence] = str.split,
    max_tokens_per_text: int = 20_000,
) -> float:
    """Distinct-n: unique n-grams / total n-grams over one problem's samples (0.0 if none).

    Strings are split by `tokenize` (whitespace words by default; pass `list` for
    characters); sequences such as token-id lists are used as they are. Each text is cut to
    `max_tokens_per_text` tokens so one runaway sample cannot stall the report.

    >>> distinct_n(["a b a b", "a b"], 1), distinct_n(["a b a b", "a b"], 2)
    (0.3333333333333333, 0.5)
    """
    if n < 1:
        raise ValueError(f"n must be >= 1 for distinct-n, got {n}")
    seen: set[tuple] = set()
    total = 0
    for text in texts:
        tokens = tokenize(text) if isinstance(text, str) else list(text)
        tokens = tuple(tokens[:max_tokens_per_text])
        grams = [tokens[i : i + n] for i in range(len(tokens) - n + 1)]
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


def distinct_k(class_ids: Sequence[int], k: int) -> int:
    """NoveltyBench distinct_k: number of distinct classes among the first k generations.

    >>> distinct_k([0, 0, 1, 0, 2], k=3)
    2
    """
    ids = _first_k(class_ids, k)
    return len(set(ids.tolist()))


def utility_k(
    class_ids: Sequence[int], utilities: Sequence[float], k: int, patience: float = DEFAULT_PATIENCE
) -> float:
    """NoveltyBench utility_k: patience-weighted utility of the novel generations.

    ``sum_i p^(i-1) u_i 1[i is the first of its class] / sum_i p^(i-1)`` over i = 1..k, in
    generation order (a user reads them in turn and gains only from something new).

    >>> utility_k([0, 0, 1], [1.0, 1.0, 1.0], k=3, patience=0.5)  # (1 + 0 + 0.25) / 1.75
    0.7142857142857143
    """
    if not 0.0 < patience <= 1.0:
        raise ValueError(f"patience must be in (0, 1], got {patience}")
    ids = _first_k(class_ids, k)
    u = np.asarray(utilities, dtype=np.float64)[: len(ids)]
    if len(u) != len(ids):
        raise ValueError(
            f"utilities has {len(u)} values for {len(ids)} generations; pass one per generation"
        )
    _, first = np.unique(ids, return_index=True)
    novel = np.zeros(len(ids), dtype=bool)
    novel[first] = True
    weights = patience ** np.arange(len(ids), dtype=np.float64)
    return float(np.sum(weights * u * novel) / np.sum(weights))


def _first_k(class_ids: Sequence[int], k: int) -> np.ndarray:
    ids = np.asarray(class_ids)
    if k < 1 or k > len(ids):
        raise ValueError(f"k must be in [1, {len(ids)}] (the number of generations), got {k}")
    return ids[:k]


def mean_token_entropy(entropies: Sequence[Sequence[float]]) -> float:
    """Mean per-token entropy pooled over all tokens of the given completions (NaN if none).

    >>> mean_token_entropy([[0.0, 1.0], [2.0]])
    1.0
    """
    flat = _flatten(entropies)
    return float(flat.mean()) if flat.size else float("nan")


def entropy_threshold(entropies: Sequence[Sequence[float]], quantile: float = 0.8) -> float:
    """The `quantile` of pooled token entropies: the "forking token" cut-off (Wang et al. 2025).

    Compute it on the base model and reuse it for every model, so shares are comparable.

    >>> entropy_threshold([[0.0, 1.0, 2.0, 3.0, 4.0]], 0.5)
    2.0
    """
    flat = _flatten(entropies)
    if not flat.size:
        raise ValueError("no token entropies given: the rollouts have an empty `entropy` column")
    return float(np.quantile(flat, quantile))


def forking_token_share(entropies: Sequence[Sequence[float]], threshold: float) -> float:
    """Share of tokens whose entropy is above `threshold` (NaN if there are no tokens).

    >>> forking_token_share([[0.1, 0.9], [0.5, 2.0]], threshold=0.8)
    0.5
    """
    flat = _flatten(entropies)
    return float(np.mean(flat > threshold)) if flat.size else float("nan")


def _flatten(entropies: Sequence[Sequence[float]]) -> np.ndarray:
    parts = [np.asarray(e, dtype=np.float64).ravel() for e in entropies if e is not None and len(e)]
    return np.concatenate(parts) if parts else np.empty(0)


def embedding_diversity(embeddings) -> float:
    """1 - mean pairwise cosine similarity over distinct pairs of one problem's samples.

    `embeddings` is (n, d); zero vectors are treated as orthogonal to everything. 0.0 for n < 2.

    >>> embedding_diversity([[1.0, 0.0], [0.0, 1.0]]), embedding_diversity([[1.0, 0.0], [2.0, 0.0]])
    (1.0, 0.0)
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be (samples, dims), got shape {x.shape}")
    n = x.shape[0]
    if n < 2:
        return 0.0
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    sims = unit @ unit.T
    mean_offdiag = (sims.sum() - np.trace(sims)) / (n * (n - 1))
    return float(1.0 - mean_offdiag)


# Where the answer line starts: the last "Answer:" / "answer is" / "####" or \boxed{, the
# markers `breadth.data.extraction.answer_segment` reads the answer after.
_ANSWER_LINE = re.compile(r"answer\s*(?:is\s*:?|:)|####|\\boxed\{", re.IGNORECASE)


def reasoning_end(text: str) -> int:
    """Index in `text` where the reasoning ends: the start of the last answer marker, else
    the text's length (no answer line: all of it is reasoning).

    >>> text = "7*3=21, 12+21=33. Answer: 33"
    >>> text[:reasoning_end(text)]
    '7*3=21, 12+21=33. '
    >>> reasoning_end("33")
    2
    """
    last = None
    for last in _ANSWER_LINE.finditer(text):
        pass
    return len(text) if last is None else last.start()


def reasoning_entropies(entropy: Sequence[float], text: str) -> np.ndarray | None:
    """The token entropies of the reasoning (the answer line excluded), or None where tokens
    cannot be aligned with characters.

    Alignment needs one token per character, as breadth's character tokenizer gives (a final
    end-of-sequence token may follow): then token i is character i. Another tokenizer's
    tokens span several characters and the answer line's tokens cannot be told from the
    text alone: None, so the metric is NaN (not measured) rather than guessed.

    >>> reasoning_entropies([0.5, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], "xyAnswer:1").tolist()
    [0.5, 0.6]
    >>> reasoning_entropies([0.5, 0.6], "a much longer text") is None
    True
    """
    values = np.asarray(entropy if entropy is not None else [], dtype=np.float64)
    if not isinstance(text, str) or values.size not in (len(text), len(text) + 1):
        return None
    return values[: reasoning_end(text)]

