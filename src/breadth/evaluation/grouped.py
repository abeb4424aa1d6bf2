"""Per-problem diversity over ragged groups of samples, vectorised across problems.

The functions in `breadth.evaluation.diversity` take the samples of one problem; these compute
the same values for every problem at once from flat per-sample arrays and a `group` array
(the problem position of each sample, non-decreasing: samples of one problem are contiguous
and in generation order). No Python loop runs per problem; text is split once per sample.

Distinct counts use hash factorisation (`pandas.factorize` numbers values in order of first
appearance), so a value is new exactly when its code exceeds every earlier code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np
import pandas as pd

from breadth.evaluation.diversity import (
    DEFAULT_VENDI_NS,
    _vendi_of_eigenvalues,
    embedding_diversity,
)

__all__ = [
    "distinct_k_by_group",
    "distinct_n_by_group",
    "distinct_per_group",
    "embedding_diversity_by_group",
    "flat_vectors",
    "text_tokens",
    "token_entropy_by_group",
    "utility_k_by_group",
    "vendi_text_by_group",
]


def distinct_per_group(values: np.ndarray, group: np.ndarray, num_groups: int) -> np.ndarray:
    """Number of distinct values in each group (every value counts, negative ones included).

    >>> distinct_per_group(np.array([3, 3, -1, 5, 5]), np.array([0, 0, 0, 1, 1]), 2).tolist()
    [2, 1]
    """
    if not len(values):
        return np.zeros(num_groups, dtype=np.int64)
    ids, uniques = pd.factorize(values)
    first = _first_appearance(group.astype(np.int64) * len(uniques) + ids)
    return np.bincount(group, weights=first, minlength=num_groups).astype(np.int64)


def distinct_k_by_group(
    classes: np.ndarray, group: np.ndarray, position: np.ndarray, k: np.ndarray
) -> np.ndarray:
    """NoveltyBench distinct_k per group: distinct classes among its first k[g] samples.

    >>> g, pos = np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1])
    >>> distinct_k_by_group(np.array([0, 1, 2, 7, 7]), g, pos, np.array([2, 2])).tolist()
    [2, 1]
    """
    head = position < k[group]
    return distinct_per_group(classes[head], group[head], len(k))


def utility_k_by_group(
    classes: np.ndarray,
    utilities: np.ndarray,
    group: np.ndarray,
    position: np.ndarray,
    k: np.ndarray,
    patience: float,
) -> np.ndarray:
    """NoveltyBench utility_k per group: patience-weighted utility of the novel generations
    among the first k[g] (see `diversity.utility_k`).

    >>> g, pos = np.array([0, 0, 0]), np.array([0, 1, 2])
    >>> utility_k_by_group(np.array([0, 0, 1]), np.ones(3), g, pos, np.array([3]), 0.5).tolist()
    [0.7142857142857143]
    """
    if not 0.0 < patience <= 1.0:
        raise ValueError(f"patience must be in (0, 1], got {patience}")
    head = position < k[group]
    cls, grp, pos = classes[head], group[head], position[head]
    ids, uniques = pd.factorize(cls)
    novel = _first_appearance(grp.astype(np.int64) * max(len(uniques), 1) + ids)
    weights = patience ** pos.astype(np.float64)
    num = np.bincount(grp, weights=weights * utilities[head] * novel, minlength=len(k))
    den = np.bincount(grp, weights=weights, minlength=len(k))
    return num / den


def distinct_n_by_group(
    texts: Sequence,
    group: np.ndarray,
    num_groups: int,
    ns: Sequence[int] = (1, 2, 3, 4),
    *,
    tokenize: Callable[[str], Sequence] = str.split,
    max_tokens_per_text: int = 20_000,
    tokens: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[int, np.ndarray]:
    """Distinct-n for each n in `ns`: unique n-grams / total n-grams over each group's texts
    (0.0 for a group without n-grams); equal to `diversity.distinct_n` applied per group.

    Each text is tokenised once for all n. With the default whitespace split the texts are
    split by Arrow's string kernels (no Python string per token); empty tokens, which Arrow
    yields at leading or trailing whitespace and `str.split` never does, are dropped.

    `tokens`: the texts' `text_tokens`, when the caller has them (then `tokenize` and the cap
    are theirs).

    >>> d = distinct_n_by_group(["a b a b", "a b", "x"], np.array([0, 0, 1]), 2, ns=(1, 2))
    >>> d[1].tolist(), d[2].tolist()
    ([0.3333333333333333, 1.0], [0.5, 0.0])
    """
    for n in ns:
        if n < 1:
            raise ValueError(f"n must be >= 1 for distinct-n, got {n}")
    token_ids, lengths = tokens or text_tokens(texts, tokenize, max_tokens_per_text)
    # n-grams per group: each text of L tokens holds max(L - n + 1, 0).
    totals = {
        n: np.bincount(group, weights=np.maximum(lengths - n + 1, 0), minlength=num_groups)
        for n in ns
    }
    per_group = np.bincount(group, weights=lengths, minlength=num_groups).astype(np.int64)
    width = int(per_group.max(initial=0))
    fits_rows = num_groups * width <= 4 * len(token_ids) + 2**20
    bits = _id_bits(token_ids)
    if max(ns) * bits > _KEY_BITS:  # a large vocabulary: number tokens within each group
        token_ids = _ids_within_groups(token_ids, np.repeat(group, lengths), bits)
        bits = _id_bits(token_ids)
    if max(ns) * bits <= _KEY_BITS and fits_rows:
        seen = _distinct_ngrams_in_rows(token_ids, lengths, group, per_group, totals, ns, bits)
    else:  # very uneven groups, or over 2**(62 // n) distinct tokens in one: hash n-grams
        # Tokens from each one to the end of its text: an n-gram starts where n are left.
        left = np.repeat(np.cumsum(lengths), lengths) - np.arange(len(token_ids))
        token_group = np.repeat(group, lengths)
        seen = _distinct_ngrams_hashed(token_ids, left, token_group, num_groups, ns)
    return {
        n: np.divide(seen[n], totals[n], out=np.zeros(num_groups), where=totals[n] > 0)
        for n in ns
    }


def text_tokens(texts: Sequence, tokenize: Callable[[str], Sequence] = str.split,
                max_tokens_per_text: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """(token id per token, tokens per text), equal tokens sharing an id, each text cut to
    `max_tokens_per_text` tokens (as `diversity.distinct_n` cuts it): what the text metrics
    read, computed once for all of them.

    >>> ids, lengths = text_tokens(["a b a", "", "b"])
    >>> ids.tolist(), lengths.tolist()
    ([0, 1, 0, 1], [3, 0, 1])
    """
    token_ids, lengths = _token_ids(texts, tokenize)
    if lengths.max(initial=0) > max_tokens_per_text:
        # Tokens past the cap are dropped, as `diversity.distinct_n` does per text.
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        keep = np.arange(len(token_ids)) - starts < max_tokens_per_text
        token_ids, lengths = token_ids[keep], np.minimum(lengths, max_tokens_per_text)
    return token_ids, lengths


_KEY_BITS = 62  # packed n-gram keys stay below the int64 maximum used for padding


def _distinct_ngrams_in_rows(token_ids, lengths, group, per_group, totals, ns, bits):
    """{n: distinct n-grams per group}: each group's tokens are one row of a padded matrix;
    n-grams are n token ids packed side by side into one int64 (equal keys are exactly equal
    n-grams), and rows are sorted one by one: many small sorts that stay in cache, several
    times faster than hashing millions of keys. The matrices are allocated once and reused
    for every n: fresh arrays of this size cost more in page faults than the sorts do.
    Per-token work is one index and one scatter; the rest is per text or per cell."""
    num_groups, width, most = len(per_group), int(per_group.max(initial=0)), max(ns)
    # A token's cell is its flat index shifted by its text's offset from flat to its row.
    group_start = np.cumsum(per_group) - per_group
    shift = group.astype(np.int64) * width - group_start[group]
    cell = np.repeat(shift, lengths) + np.arange(len(token_ids))
    ids = np.zeros(num_groups * width, dtype=np.int64)
    ids[cell] = token_ids
    ids = ids.reshape(num_groups, width)
    # Tokens left from each cell to the end of its text, capped at the largest n (0 in a row's
    # padding): an n-gram starts where n are left. Set per text from its end backwards.
    left = np.full((num_groups, width), most, dtype=np.int8 if most <= 127 else np.int64)
    left[np.arange(width) >= per_group[:, None]] = 0
    text_end = (shift + np.cumsum(lengths))[lengths > 0]
    text_length = lengths[lengths > 0]
    flat_left = left.reshape(-1)
    for r in range(1, most):
        flat_left[text_end[text_length >= r] - r] = r
    packed = ids.copy()
    # Keys of up to 30 bits sort and compare as int32, several times faster than int64; the
    # padding (the type's maximum) stays above every key.
    buffers = {kind: np.empty(ids.shape, dtype=kind) for kind in {_key_type(n * bits) for n in ns}}
    invalid = np.empty(ids.shape, dtype=bool)
    changes = np.empty((num_groups, max(width - 1, 0)), dtype=bool)
    seen = {}
    for n in range(1, most + 1):
        starts = max(width - n + 1, 0)  # columns where an n-gram can start
        if n > 1:  # the (n-1)-gram at each column followed by the token n - 1 columns on
            packed[:, :starts] <<= bits
            packed[:, :starts] |= ids[:, n - 1 :]
        if n not in ns:
            continue
        np.less(left, n, out=invalid)
        keys = buffers[_key_type(n * bits)]
        np.copyto(keys, packed, casting="unsafe")  # every key fits in its type's bits
        np.copyto(keys, np.iinfo(keys.dtype).max, where=invalid)
        keys.sort(axis=1)
        count = totals[n]  # the n-grams of each row: its valid cells
        np.not_equal(keys[:, 1:], keys[:, :-1], out=changes)
        # A row with padding also changes once from its largest key to the padding.
        seen[n] = np.where(count > 0, np.count_nonzero(changes, axis=1) + 1 - (count < width), 0)
    return seen


def _key_type(key_bits: int) -> type:
    return np.int32 if key_bits <= 30 else np.int64


def _distinct_ngrams_hashed(token_ids, left, token_group, num_groups, ns):
    seen = {}
    for n in ns:
        idx = np.flatnonzero(left >= n)
        gram = token_ids[idx]
        for j in range(1, n):
            gram = pd.factorize(gram * (int(token_ids.max()) + 1) + token_ids[idx + j])[0]
        seen[n] = distinct_per_group(gram, token_group[idx], num_groups)
    return seen


def _id_bits(ids: np.ndarray) -> int:
    return max(int(ids.max(initial=0)).bit_length(), 1)


def _ids_within_groups(ids: np.ndarray, groups: np.ndarray, bits: int) -> np.ndarray:
    """Renumber ids 0, 1, ... within each group (equal ids in a group stay equal)."""
    keys = (groups << bits) | ids
    uniques, dense = np.unique(keys, return_inverse=True)
    first_of_group = np.searchsorted(uniques >> bits, np.arange(int(groups.max(initial=0)) + 1))
    return dense.ravel() - first_of_group[groups]


def vendi_text_by_group(
    texts: Sequence,
    group: np.ndarray,
    num_groups: int,
    ns: Sequence[int] = DEFAULT_VENDI_NS,
    *,
    tokenize: Callable[[str], Sequence] = str.split,
    max_tokens_per_text: int = 20_000,
    tokens: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """`diversity.vendi_text` of each group's texts (the n-gram kernel's Vendi score), for every
    group at once; 1.0 exactly for a group whose texts are all the same.

    Equal texts of a group are one row of its kernel, weighted by how many samples wrote it
    (the Vendi score with probability weights: the same eigenvalues as the repeated rows), so
    a collapsed policy's problems cost least. Each distinct text is tokenised once, and the
    kernel's blocks are built from sorted (group, n-gram, row) keys (`_ngram_kernel_blocks`);
    groups with the same number of rows share one batched eigenvalue call. `tokens`: every
    text's `text_tokens`, when the caller has them.

    >>> vendi_text_by_group(["a b", "a b", "x", "y"], np.array([0, 0, 1, 1]), 2).round(9).tolist()
    [1.0, 2.0]
    """
    for n in ns:
        if n < 1:
            raise ValueError(f"n must be >= 1 for the n-gram kernel, got {n}")
    group = np.asarray(group, dtype=np.int64)
    out = np.ones(num_groups)
    if not len(group):
        return out
    # One row per distinct (group, text); rows of a group are contiguous (groups are sorted).
    text_ids = pd.factorize(_factorizable(texts), use_na_sentinel=False)[0].astype(np.int64)
    row_of_sample = pd.factorize(group * (int(text_ids.max()) + 1) + text_ids)[0]
    num_rows = int(row_of_sample.max()) + 1
    first_sample = np.empty(num_rows, dtype=np.int64)
    first_sample[row_of_sample[::-1]] = np.arange(len(group))[::-1]
    row_group = group[first_sample]
    samples = np.bincount(group, minlength=num_groups)
    weight = np.bincount(row_of_sample, minlength=num_rows) / samples[row_group]
    rows = np.bincount(row_group, minlength=num_groups)
    if rows.max() < 2:
        return out
    if tokens is None:
        token_ids, lengths = text_tokens(_take(texts, first_sample), tokenize, max_tokens_per_text)
    else:  # every sample's tokens given: keep each row's first sample's
        all_ids, all_lengths = tokens
        lengths = all_lengths[first_sample]
        starts = (np.cumsum(all_lengths) - all_lengths)[first_sample]
        within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        token_ids = all_ids[np.repeat(starts, lengths) + within]
    offset = np.cumsum(rows * rows) - rows * rows
    kernel = _ngram_kernel_blocks(token_ids, lengths, row_group, rows, offset, np.sqrt(weight),
                                  ns)
    for size in np.unique(rows[rows > 1]):
        members = np.flatnonzero(rows == size)
        cells = offset[members][:, None] + np.arange(size * size)
        # Only the lower triangle is filled: the one eigvalsh reads (UPLO="L").
        matrices = kernel[cells].reshape(len(members), size, size)
        out[members] = _vendi_of_eigenvalues(np.linalg.eigvalsh(matrices, UPLO="L"))
    return out


# Sorted keys per batch: a few hundred thousand stay in cache-friendly sizes and bound the
# memory of the pair lists built from them.
_KERNEL_BATCH = 1 << 19


def _ngram_kernel_blocks(token_ids: np.ndarray, lengths: np.ndarray, row_group: np.ndarray,
                         rows: np.ndarray, offset: np.ndarray, scale: np.ndarray,
                         ns: Sequence[int]) -> np.ndarray:
    """The weighted n-gram kernel of `vendi_text_by_group`, diag(scale) K diag(scale), as each
    group's (rows x rows) block laid end to end (block g at offset[g], row-major), lower
    triangle only. K is the mean over n in `ns` of the cosine similarity of the rows' n-gram
    counts; a row shorter than n tokens is one n-gram: its tokens padded.

    n-grams are token ids (plus 1; 0 pads past a row's end) packed side by side into one int64,
    numbered by hashing only when they do not fit."""
    num_rows, most = len(lengths), max(ns)
    extended = np.maximum(lengths, 1)  # an empty text is one padding token
    row_start = np.cumsum(extended) - extended
    stream = np.zeros(int(extended.sum()), dtype=np.int64)
    offset_in_text = np.arange(len(token_ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ids = token_ids
    if most * _id_bits(ids + 1) > _KEY_BITS:  # a large vocabulary: number tokens per group
        ids = _ids_within_groups(ids, np.repeat(row_group, lengths), _id_bits(ids))
    stream[np.repeat(row_start, lengths) + offset_in_text] = ids + 1
    bits = _id_bits(stream)
    first_row = np.cumsum(rows) - rows
    local_of_row = np.arange(num_rows) - first_row[row_group]
    # The slots still read (candidates), with what each level needs of them.
    slot = np.arange(len(stream))
    row = np.repeat(np.arange(num_rows), extended)
    left = np.repeat(row_start + extended, extended) - slot  # slots to the row's end
    # A row shorter than n is one n-gram, at its first slot.
    short = np.where(slot == row_start[row], extended[row], np.iinfo(np.int64).max)
    padded = np.concatenate([stream, np.zeros(most, dtype=np.int64)])
    key = np.zeros(len(stream), dtype=np.int64)
    out = np.zeros(int(offset[-1] + rows[-1] * rows[-1]))
    # A slot whose n-gram occurs once in its problem only adds 1 to its row's squared norm at
    # every longer n it is read at (each longer n-gram from it has that unique prefix, padded
    # or not): it leaves the candidates, and alone[n, row] counts it. Most 3- and 4-grams go so.
    alone = np.zeros((most + 1, num_rows))
    for n in range(1, most + 1):
        # The n-window from each slot, 0 past its row's end.
        nxt = np.where(left >= n, padded[slot + n - 1], 0)
        if n * bits <= _KEY_BITS:
            key = (key << bits) | nxt
        else:  # beyond 62 bits: number the windows instead (hashing: slower, any size)
            key = pd.factorize(key * (int(stream.max()) + 1) + nxt)[0].astype(np.int64)
        if n not in ns:
            continue
        used = np.flatnonzero((left >= n) | (short < n))  # the rest is never read again
        groups = row_group[row[used]]
        repeated = _add_cosines(out, groups, local_of_row[row[used]], key[used], rows, offset,
                                scale, alone[n])
        gone = used[~repeated]
        for later in (m for m in ns if m > n):
            read = (left[gone] >= later) | (short[gone] < later)
            alone[later] += np.bincount(row[gone[read]], minlength=num_rows)
        kept = used[repeated]
        slot, row, left, short, key = (x[kept] for x in (slot, row, left, short, key))
    out /= len(ns)
    # Every row's cosine with itself is 1: its diagonal cell is scale^2.
    out[offset[row_group] + local_of_row * (rows[row_group] + 1)] = scale * scale
    return out


def _add_cosines(out: np.ndarray, groups: np.ndarray, local: np.ndarray, grams: np.ndarray,
                 rows: np.ndarray, offset: np.ndarray, scale: np.ndarray,
                 alone: np.ndarray) -> np.ndarray:
    """Add scale_a scale_b cos(a, b) to cell (a, b), a > b, of each group's block, for the
    rows' n-gram count vectors, from one entry (group, local row, n-gram id) per occurrence in
    group order; `scale` is per global row, `alone` the n-grams of each global row left out of
    the entries (each once in its problem: 1 to the row's squared norm). Returns, per entry,
    whether its n-gram occurs more than once in its problem.

    In batches of whole groups, keys (group, n-gram, row) are sorted: runs of equal keys count
    an n-gram in a row (each count divided by its row's norm), runs of equal (group, n-gram)
    are the rows sharing it, and each pair of those adds the product of their counts to its
    cell. No hash table and no sparse matrix product: the small sorts are the cost."""
    repeated = np.zeros(len(groups), dtype=bool)
    first_row = np.cumsum(rows) - rows
    row_bits = _id_bits(np.asarray([int(rows.max()) - 1]))
    gram_bits = _id_bits(grams)
    if gram_bits + row_bits + 1 > _KEY_BITS:
        grams = pd.factorize(grams)[0].astype(np.int64)
        gram_bits = _id_bits(grams)
    group_bits = max(_KEY_BITS + 1 - gram_bits - row_bits, 0)
    row_mask = (1 << row_bits) - 1
    bounds = np.searchsorted(groups, np.arange(len(rows) + 1))
    begin = 0
    while begin < len(rows):
        # As many whole groups as fit the key's bits and the batch size (one at least).
        end = min(begin + (1 << group_bits), len(rows),
                  int(np.searchsorted(bounds, bounds[begin] + _KERNEL_BATCH, side="right")) - 1)
        end = max(end, begin + 1)
        lo, hi = bounds[begin], bounds[end]
        base_group, begin = begin, end
        if hi == lo:
            continue
        keys = (((groups[lo:hi] - base_group) << (gram_bits + row_bits))
                | (grams[lo:hi] << row_bits) | local[lo:hi])
        order = np.argsort(keys)
        keys = keys[order]
        in_problem = _run_starts(keys >> row_bits)  # runs of one n-gram of one problem
        occurrences = np.diff(np.append(in_problem, len(keys)))
        repeated[lo + order] = np.repeat(occurrences > 1, occurrences)
        starts = _run_starts(keys)
        count = np.diff(np.append(starts, len(keys))).astype(np.float64)
        unique = keys[starts]
        group_of = (unique >> (gram_bits + row_bits)) + base_group
        row_of = unique & row_mask
        # Each row's count vector to unit length (cosine), then times the row's scale.
        row = first_row[group_of] + row_of
        first, last = first_row[base_group], first_row[end - 1] + rows[end - 1]
        squared = np.bincount(row - first, weights=count * count, minlength=int(last - first))
        squared += alone[first:last]
        count *= scale[row] / np.sqrt(squared[row - first])
        # Rows sharing an n-gram: runs of equal (group, n-gram) of two entries or more (most
        # n-grams are in one row only, and a row's cosine with itself is 1: set, not summed).
        run_start = _run_starts(unique >> row_bits)
        run_length = np.diff(np.append(run_start, len(unique)))
        shared = np.repeat(run_length > 1, run_length)
        if not shared.any():
            continue
        unique, count, group_of, row_of = (x[shared] for x in (unique, count, group_of, row_of))
        run_start = _run_starts(unique >> row_bits)
        run_length = np.diff(np.append(run_start, len(unique)))
        # Each entry pairs with the run's entries before it (rows ascend in a run: the lower
        # triangle, which is all eigvalsh reads).
        run_first = np.repeat(run_start, run_length)
        length = np.arange(len(unique)) - run_first
        entry = np.repeat(np.arange(len(unique)), length)
        partner = (np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length)
                   + np.repeat(run_first, length))
        g = group_of[entry]
        # The batch's blocks are one stretch of `out`: scatter into it alone.
        first_cell, last_cell = offset[base_group], offset[end - 1] + rows[end - 1] ** 2
        cell = offset[g] - first_cell + row_of[entry] * rows[g] + row_of[partner]
        out[first_cell:last_cell] += np.bincount(cell, weights=count[entry] * count[partner],
                                                 minlength=int(last_cell - first_cell))
    return repeated


def _run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    new = np.empty(len(sorted_keys), dtype=bool)
    new[:1] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    return np.flatnonzero(new)


def _factorizable(texts: Sequence):
    """Texts as `pd.factorize` takes them: Arrow and numpy arrays as they are, else objects
    (a token sequence as a tuple)."""
    if isinstance(texts, (np.ndarray, pd.api.extensions.ExtensionArray)):
        return texts
    values = np.empty(len(texts), dtype=object)
    values[:] = [tuple(t) if isinstance(t, (list, np.ndarray)) else t for t in texts]
    return values


def _take(texts: Sequence, index: np.ndarray):
    if isinstance(texts, (np.ndarray, pd.api.extensions.ExtensionArray)):
        return texts.take(index)
    return [texts[i] for i in index]


def token_entropy_by_group(
    entropies: Sequence, group: np.ndarray, num_groups: int, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """(mean token entropy, forking-token share) per group, pooled over all tokens of its
    samples; NaN for a group without tokens. A missing or empty sample adds no tokens."""
    flat, counts = flat_vectors(entropies)
    token_group = np.repeat(group, counts)
    num = np.bincount(token_group, minlength=num_groups).astype(np.float64)
    total = np.bincount(token_group, weights=flat, minlength=num_groups)
    above = np.bincount(token_group, weights=flat > threshold, minlength=num_groups)
    mean = np.divide(total, num, out=np.full(num_groups, np.nan), where=num > 0)
    share = np.divide(above, num, out=np.full(num_groups, np.nan), where=num > 0)
    return mean, share


def embedding_diversity_by_group(embeddings: Sequence, bounds: np.ndarray) -> np.ndarray:
    """1 - mean pairwise cosine similarity per group (`diversity.embedding_diversity`); NaN for
    a group where a sample lacks an embedding (the mean would be biased), 0.0 below 2 samples.

    The sum over distinct pairs is |sum of unit vectors|^2 - sum of |unit vector|^2, so no
    n x n similarity matrix is formed.
    """
    vectors = _as_vectors(embeddings)
    counts = np.diff(bounds)
    present = np.fromiter((v.size > 0 for v in vectors), dtype=np.int64, count=len(vectors))
    complete = _group_sums(present, bounds) == counts
    out = np.full(len(counts), np.nan)
    rows = np.flatnonzero(complete)
    if not len(rows):
        return out
    index = np.concatenate([np.arange(bounds[g], bounds[g + 1]) for g in rows])
    if len({vectors[i].size for i in index}) > 1:
        # Problems embedded at different sizes: rare, so each problem on its own.
        out[rows] = [
            embedding_diversity(np.stack(vectors[bounds[g] : bounds[g + 1]])) for g in rows
        ]
        return out
    x = np.stack([vectors[i] for i in index])
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    sub_bounds = np.concatenate(([0], np.cumsum(counts[rows])))
    sums = np.stack([_group_sums(unit[:, j], sub_bounds) for j in range(unit.shape[1])], axis=1)
    self_similarity = _group_sums((unit * unit).sum(axis=1), sub_bounds)
    sizes = counts[rows]
    pairs = np.maximum(sizes * (sizes - 1), 1)
    value = 1.0 - ((sums * sums).sum(axis=1) - self_similarity) / pairs
    out[rows] = np.where(sizes < 2, 0.0, value)
    return out


def _group_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of values[bounds[g]:bounds[g+1]] per group (0 for an empty group)."""
    cumulative = np.concatenate(([0], np.cumsum(values)))
    return cumulative[bounds[1:]] - cumulative[bounds[:-1]]


def flat_vectors(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """(every value's numbers concatenated as float64, how many each value gave); a missing or
    non-list value gives none, a nested one is flattened.

    >>> flat, counts = flat_vectors([[1, 2], None, np.array([3.0])])
    >>> flat.tolist(), counts.tolist()
    ([1.0, 2.0, 3.0], [2, 0, 1])
    """
    values = list(values)
    try:  # flat numeric lists or arrays, as a parquet list column holds: no Python per value
        counts = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        flat = np.concatenate(values) if values else np.empty(0)
        if flat.ndim == 1 and flat.dtype.kind in "biuf":
            return flat.astype(np.float64, copy=False), counts
    except (TypeError, ValueError):
        pass  # None, numbers, nested or mixed values: one at a time below
    arrays = [_as_vector(v) for v in values]
    counts = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
    return (np.concatenate(arrays) if arrays else np.empty(0)), counts


def _as_vectors(values: Sequence) -> list[np.ndarray]:
    """Each value as a flat float vector; a missing or non-list value is empty."""
    values = list(values)
    if all(type(v) is np.ndarray and v.ndim == 1 and v.dtype == np.float64 for v in values):
        return values  # what a parquet list column holds: no conversion per sample
    return [_as_vector(v) for v in values]


def _first_appearance(keys: np.ndarray) -> np.ndarray:
    """True where a key is seen for the first time."""
    return _is_new(pd.factorize(keys)[0] if len(keys) else keys)


def _is_new(ids: np.ndarray) -> np.ndarray:
    """True where an id (numbered in order of first appearance) is seen for the first time."""
    new = np.empty(len(ids), dtype=bool)
    if len(ids):
        new[0] = True
        np.greater(ids[1:], np.maximum.accumulate(ids)[:-1], out=new[1:])
    return new


def _token_ids(
    texts: Sequence, tokenize: Callable[[str], Sequence]
) -> tuple[np.ndarray, np.ndarray]:
    """(token id per token, tokens per text); equal tokens share an id."""
    if tokenize is str.split:
        try:
            return _arrow_whitespace_ids(texts)
        except (UnicodeEncodeError, TypeError, ValueError):
            pass  # e.g. lone surrogates Arrow cannot hold: split in Python below
    tokens = [tokenize(t) if isinstance(t, str) else _as_tokens(t, tokenize) for t in texts]
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    flat = np.empty(int(lengths.sum()), dtype=object)
    flat[:] = list(chain.from_iterable(tokens))
    ids = pd.factorize(flat, use_na_sentinel=False)[0] if len(flat) else np.empty(0, np.int64)
    return ids.astype(np.int64), lengths


def _arrow_whitespace_ids(texts: Sequence) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    # A missing text (None, or NaN with from_pandas) becomes "": no tokens, and no null lists
    # whose hidden contents the offsets below would count.
    strings = pc.fill_null(pa.array(texts, type=pa.large_string(), from_pandas=True), "")
    split = pc.ascii_split_whitespace if _ascii_split_agrees(strings) else pc.utf8_split_whitespace
    pieces = split(strings)
    words = pieces.flatten()
    offsets = pieces.offsets.to_numpy().astype(np.int64)
    empty = pc.equal(pc.binary_length(words), 0)
    if pc.any(empty).as_py():
        nonempty = pc.invert(empty)
        per_text = _group_sums(nonempty.to_numpy(zero_copy_only=False).astype(np.int64), offsets)
        words = words.filter(nonempty)
    else:  # the usual case (no leading or trailing whitespace): nothing to filter
        per_text = np.diff(offsets)
    encoded = pc.dictionary_encode(words)
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return ids, per_text


def _ascii_split_agrees(strings) -> bool:
    """True when Arrow's ASCII whitespace split gives `str.split`'s tokens: all text is ASCII
    and holds none of the separators 0x1c-0x1f, which Python counts as whitespace and Arrow's
    ASCII kernel does not. The ASCII kernel is ~1.6x faster than the Unicode one."""
    data = strings.buffers()[2]
    if data is None:
        return True
    raw = np.frombuffer(data, dtype=np.uint8)
    return not len(raw) or (int(raw.max()) < 0x80 and not np.any((raw ^ 0x1C) < 4))


def _as_tokens(value, tokenize: Callable[[str], Sequence]) -> Sequence:
    """A missing text (None, NaN, NA) has no tokens; a sequence is its own tokens."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else tokenize(str(value))


def _as_vector(value) -> np.ndarray:
    if value is None or not isinstance(value, (list, tuple, np.ndarray)) or not len(value):
        return np.empty(0)
    return np.asarray(value, dtype=np.float64).ravel()
