"""DARLING: reward quality times diversity within a group.

Li et al. 2025, "Jointly Reinforcing Diversity and Quality in Language Model Generations"
(facebookresearch/darling). The group is partitioned into equivalence classes (union-find
over pairs a judge calls equivalent); `div_i = (G - |C(i)|) / (G - 1)` is the fraction of the
other completions outside i's class, and the shaped reward is `r_i * div_i`, with advantages
mean-centred but not divided by the group std (TRL `scale_rewards="none"`).

Judges: outcome equality for verifiable tasks (the default: `judge=None`; two `None`
outcomes, i.e. two unanswered completions, are one "no answer" class), and for free text
`short_text_equivalent` (texts of at most 5 words) inside `NgramOverlapJudge` (longer texts:
Jaccard overlap of word n-grams above a threshold). The paper's embedding judge is not
implemented here: it needs a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

Judge = Callable[[Any, Any], bool]


def equivalence_classes(items: Sequence[Any], judge: Judge | None = None) -> list[int]:
    """Class id of each item (numbered by first appearance) under the judge's equivalence.

    `judge=None` means equality (`a == b`), computed in one pass. A custom judge is called on
    every pair and closed transitively with union-find, as DARLING does: if a~b and b~c then
    a, b, c share a class even when the judge says a !~ c.

    >>> equivalence_classes(["4", "5", "4", None, None])
    [0, 1, 0, 2, 2]
    >>> equivalence_classes([1, 2, 3, 10], judge=lambda a, b: abs(a - b) <= 1)
    [0, 0, 0, 1]
    """
    if judge is None:
        ids: dict[Hashable, int] = {}
        return [ids.setdefault(item, len(ids)) for item in items]
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if root(i) != root(j) and judge(items[i], items[j]):
                parent[max(root(i), root(j))] = min(root(i), root(j))
    numbering: dict[int, int] = {}
    return [numbering.setdefault(root(i), len(numbering)) for i in range(len(items))]


def darling_diversity(class_ids: Sequence[int]) -> np.ndarray:
    """div_i = (G - |C(i)|) / (G - 1): the fraction of the other completions outside i's class.

    G = 1 has no other completion; its diversity is defined as 1.0, so that `r * div`
    reduces to the plain reward instead of dividing by zero.

    >>> darling_diversity([0, 0, 1, 2]).round(4).tolist()
    [0.6667, 0.6667, 1.0, 1.0]
    >>> darling_diversity([0]).tolist()
    [1.0]
    """
    group_size = len(class_ids)
    if group_size == 0:
        return np.zeros(0)
    if group_size == 1:
        return np.ones(1)
    sizes = Counter(class_ids)
    class_size = np.array([sizes[c] for c in class_ids], dtype=float)
    return (group_size - class_size) / (group_size - 1)


def _words(text: str) -> list[str]:
    return text.lower().split()


def short_text_equivalent(a: str, b: str) -> bool:
    """DARLING's rule for short texts: equivalent iff 2 * |shared unigrams| >= the longer length.

    Words are lower-cased, whitespace-separated tokens; shared unigrams are counted as a
    multiset intersection (a repeated word is shared as often as both texts have it).

    >>> short_text_equivalent("the answer is 4", "answer is 4")
    True
    >>> short_text_equivalent("red apple", "green pear")
    False
    """
    words_a, words_b = _words(a), _words(b)
    shared = sum((Counter(words_a) & Counter(words_b)).values())
    return 2 * shared >= max(len(words_a), len(words_b))


def ngram_overlap(a: str, b: str, n: int = 2) -> float:
    """Jaccard overlap of the sets of word n-grams of two texts, in [0, 1].

    A text shorter than n words contributes its whole word sequence as one n-gram; two empty
    texts overlap fully (1.0).

    >>> ngram_overlap("a b c d", "a b c e", n=2)
    0.5
    """
    if n < 1:
        raise ValueError(f"ngram_overlap needs n >= 1, got {n}")

    def grams(text: str) -> set[tuple[str, ...]]:
        words = _words(text)
        if len(words) < n:
            return {tuple(words)} if words else set()
        return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}

    grams_a, grams_b = grams(a), grams(b)
    union = grams_a | grams_b
    return len(grams_a & grams_b) / len(union) if union else 1.0


class NgramOverlapJudge:
    """Free-text judge: the short-text unigram rule when both texts have at most `short_words`
    words, else word n-gram Jaccard overlap >= `threshold`. A picklable callable.

    >>> judge = NgramOverlapJudge(n=2, threshold=0.5)
    >>> judge("the sum is 12", "sum is 12"), judge("a b c d e f g", "a b c d e f h")
    (True, True)
    """

    def __init__(self, n: int = 2, threshold: float = 0.5, short_words: int = 5) -> None:
        if n < 1:
            raise ValueError(f"NgramOverlapJudge n must be >= 1, got {n}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"NgramOverlapJudge threshold must be in [0, 1], got {threshold}")
        self.n = n
        self.threshold = threshold
        self.short_words = short_words

    def __call__(self, a: str, b: str) -> bool:
        if max(len(_words(a)), len(_words(b))) <= self.short_words:
            return short_text_equivalent(a, b)
        return ngram_overlap(a, b, self.n) >= self.threshold

    def __repr__(self) -> str:
        return (
            f"NgramOverlapJudge(n={self.n}, threshold={self.threshold}, "
            f"short_words={self.short_words})"
        )
