"""The vectorised per-problem table and vote against the per-problem loop they replaced.

Random frames cover what real rollouts throw at evaluation: uneven sample counts, shuffled
rows, unicode and repeated whitespace, empty and missing texts, missing entropies and
embeddings, NaN scores, explicit class ids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from breadth.evaluation import grouped
from breadth.evaluation.diversity import distinct_n, vendi_text
from breadth.evaluation.metrics import _plurality_accuracy
from breadth.evaluation.summary import per_problem_table
from tests.unit.evaluation.loop_reference import (
    LOOP_METRICS,
    per_problem_loop,
    plurality_accuracy_sorted_runs,
)

WORDS = ["a", "b", "c", "7", "x y", "é", "\u3000", "\t", "  ", "\n", "\u2028", "\x1c", "", "ab"]


def random_frame(seed: int, num_problems: int = 40, *, class_ids: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, num_problems)
    rows = []
    for p, size in enumerate(sizes):
        for i in range(size):
            text = "".join(rng.choice(WORDS, rng.integers(0, 14)))
            entropy = rng.random(rng.integers(0, 6)) * 3
            embedding = rng.normal(size=3) if rng.random() > 0.05 else None
            rows.append({
                "problem_id": f"p{p:03d}",
                "sample_index": int(i),
                "outcome": None if rng.random() < 0.2 else str(rng.integers(0, 4)),
                "correct": bool(rng.random() < 0.4),
                "score": np.nan if rng.random() < 0.1 else float(rng.random()),
                "text": None if rng.random() < 0.05 else text,
                "entropy": None if rng.random() < 0.05 else entropy,
                "embedding": np.zeros(3) if rng.random() < 0.03 else embedding,
                "class_id": int(rng.integers(0, 3)),
            })
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=seed)  # order must not matter
    return frame if class_ids else frame.drop(columns="class_id")


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("class_ids", [False, True])
def test_table_matches_the_per_problem_loop(seed, class_ids):
    frame = random_frame(seed, class_ids=class_ids)
    kwargs = {"entropy_threshold": 1.2, "novelty_k": int(3 + seed % 4), "patience": 0.7}
    new = per_problem_table(frame, **kwargs)
    old = per_problem_loop(frame, **kwargs)
    assert list(new.index) == list(old.index)
    for metric in LOOP_METRICS:
        np.testing.assert_allclose(
            new[metric].to_numpy(float), old[metric].to_numpy(float),
            rtol=0, atol=1e-9, equal_nan=True, err_msg=metric,
        )
    # The frame exercises the edge cases it is meant to: some NaN and some whole values.
    assert new["embedding_diversity"].isna().any() and new["embedding_diversity"].notna().any()


def test_table_matches_the_loop_with_a_custom_tokenizer():
    frame = random_frame(11)
    new = per_problem_table(frame, tokenize=list)
    old = per_problem_loop(frame, entropy_threshold=None, tokenize=list)
    for n in range(1, 5):
        np.testing.assert_allclose(new[f"distinct_{n}"], old[f"distinct_{n}"], rtol=0, atol=1e-9)


def test_texts_arrow_cannot_hold_fall_back_to_python_split():
    texts = ["a \ud800 b a", "b b", "", "  c  "]  # a lone surrogate is not valid UTF-8
    group = np.array([0, 0, 1, 1])
    got = grouped.distinct_n_by_group(texts, group, 2, ns=(1, 2))
    for n in (1, 2):
        want = [distinct_n(texts[:2], n), distinct_n(texts[2:], n)]
        np.testing.assert_allclose(got[n], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x1f", "\x0b", "\x0c", "\r"])
def test_ascii_texts_split_like_str_split(separator):
    # ASCII-only texts take Arrow's ASCII split, which must still treat every character
    # Python calls whitespace (0x1c-0x1f included) as a separator.
    rng = np.random.default_rng(len(separator) + ord(separator))
    pieces = ["a", "b", "ab", " ", "\t", separator, "7"]
    texts = ["".join(rng.choice(pieces, rng.integers(0, 12))) for _ in range(60)]
    group = np.repeat(np.arange(12), 5)
    got = grouped.distinct_n_by_group(texts, group, 12)
    for n in range(1, 5):
        want = [distinct_n(texts[g * 5 : g * 5 + 5], n) for g in range(12)]
        np.testing.assert_allclose(got[n], want, rtol=0, atol=1e-12, err_msg=f"n={n}")


@pytest.mark.parametrize(
    "texts", [[], ["", "  "], ["a"], ["", "a b", None], ["x y z"] * 3, ["a b", "c"]]
)
def test_problems_with_fewer_tokens_than_n(texts):
    got = grouped.distinct_n_by_group(texts, np.zeros(len(texts), dtype=np.int64), 1)
    for n in range(1, 5):
        assert got[n][0] == distinct_n([t or "" for t in texts], n)


def test_texts_are_cut_at_the_token_cap_like_the_loop():
    texts = ["a b c d e f", "a b x"]
    got = grouped.distinct_n_by_group(texts, np.array([0, 0]), 1, max_tokens_per_text=3)
    for n in range(1, 5):
        assert got[n][0] == pytest.approx(distinct_n(texts, n, max_tokens_per_text=3))


@pytest.mark.parametrize("width", [1, 2, 5, 16])
def test_plurality_vote_matches_the_sorted_run_version(width):
    rng = np.random.default_rng(width)
    codes = rng.integers(-1, 4, (2000, width))
    keys = codes * 2 + (rng.random((2000, width)) < 0.5)
    np.testing.assert_allclose(
        _plurality_accuracy(keys), plurality_accuracy_sorted_runs(keys), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("key_bits", [12, 4])
def test_large_vocabularies_take_the_within_problem_and_hashed_paths(monkeypatch, key_bits):
    # Fewer key bits stand in for a vocabulary too large to pack four token ids in 62 bits:
    # 12 bits renumbers tokens within each problem; 4 bits also hashes the longer n-grams.
    monkeypatch.setattr(grouped, "_KEY_BITS", key_bits)
    frame = random_frame(21)
    new = per_problem_table(frame)
    old = per_problem_loop(frame, entropy_threshold=None)
    for metric in ("distinct_1", "distinct_2", "distinct_3", "distinct_4", "vendi_text"):
        np.testing.assert_allclose(new[metric], old[metric], rtol=0, atol=1e-9, err_msg=metric)


@pytest.mark.parametrize("batch", [1, 7, 1 << 19])
def test_vendi_text_is_the_same_whatever_the_batches_of_problems(monkeypatch, batch):
    # A batch of one entry still takes one whole problem; any batching sums the same pairs.
    monkeypatch.setattr(grouped, "_KERNEL_BATCH", batch)
    frame = random_frame(4, 60)
    new = per_problem_table(frame)
    old = per_problem_loop(frame, entropy_threshold=None)
    np.testing.assert_allclose(new["vendi_text"], old["vendi_text"], rtol=0, atol=1e-9)


def test_vendi_text_reads_each_distinct_text_once_weighted_by_its_samples():
    # 30 samples of one text and 2 of another: a 2-row kernel, the same score as all 32 rows.
    texts = ["the answer is 4"] * 30 + ["so it is 5", "so it is 5"]
    got = grouped.vendi_text_by_group(texts, np.zeros(32, dtype=np.int64), 1)
    assert got[0] == pytest.approx(vendi_text(texts), abs=1e-9)
    assert 1.0 < got[0] < 2.0
    tokens = grouped.text_tokens(texts)
    assert grouped.vendi_text_by_group(texts, np.zeros(32, dtype=np.int64), 1, tokens=tokens) \
        == pytest.approx(got)


def test_distinct_n_with_int32_and_int64_keys():
    # ~1,800 distinct tokens (11 bits): 1- and 2-grams sort as int32 keys, 3- and 4-grams as int64.
    rng = np.random.default_rng(5)
    vocabulary = np.array([f"t{i}" for i in range(3000)])
    texts = [" ".join(vocabulary[rng.integers(0, 3000 if p % 2 else 40, 9)]) for p in range(600)]
    group = np.repeat(np.arange(100), 6)
    bits = grouped._id_bits(grouped._token_ids(texts, str.split)[0])
    assert 2 * bits <= 30 < 3 * bits
    got = grouped.distinct_n_by_group(texts, group, 100)
    for n in range(1, 5):
        expected = [distinct_n(texts[6 * g : 6 * g + 6], n) for g in range(100)]
        np.testing.assert_allclose(got[n], expected, rtol=0, atol=1e-12, err_msg=str(n))


def test_distinct_n_in_very_uneven_problems():
    rng = np.random.default_rng(3)
    # One long text and 3000 one-word texts: padding to the widest would be ~9M cells.
    texts = [" ".join(rng.choice(list("abcdefgh"), 3000))] + list(rng.choice(list("ab"), 3000))
    group = np.arange(len(texts))
    got = grouped.distinct_n_by_group(texts, group, len(texts))
    for n in range(1, 5):
        assert got[n][0] == pytest.approx(distinct_n(texts[:1], n))
        assert got[n][1:].tolist() == [1.0 if n == 1 else 0.0] * 3000


def test_table_columns_keep_their_types():
    frame = random_frame(4)
    new, old = per_problem_table(frame), per_problem_loop(frame, entropy_threshold=None)
    for metric in LOOP_METRICS:
        assert new[metric].dtype == old[metric].dtype == np.float64, metric


@pytest.mark.parametrize(
    "values",
    [
        [np.array([0.5, 1.5]), np.array([]), np.array([2.0])],  # a parquet list column
        [[1, 2], (3,), np.array([True, False])],  # ints, tuples, bools
        [np.array([0.5]), None, [1.0, None], "ab", 3.0, np.ones((2, 2))],  # one at a time
    ],
)
def test_flat_vectors_match_one_vector_per_value(values):
    flat, counts = grouped.flat_vectors(values)
    each = [grouped._as_vector(v) for v in values]
    assert flat.dtype == np.float64 and counts.tolist() == [v.size for v in each]
    np.testing.assert_array_equal(flat, np.concatenate(each), strict=True)
