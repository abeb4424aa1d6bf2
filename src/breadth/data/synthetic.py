"""Drawing synthetic problems, deterministic by seed, with a difficulty knob (1 easy .. 3 hard).

Each task (`breadth.data.generators`) draws one random problem of a level; this module turns those
draws into a split's distinct problems. Train and eval never share a problem: every problem is
assigned to a split by a hash of its canonical key (so "3 5 7 -> 22" and "7 3 5 -> 22" land
together), and each split is drawn with its own seed. Small problem spaces are finite
(difficulty-1 arithmetic has 100 problems); asking for more distinct problems than a split
holds raises an error that says so.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from breadth.data.records import SPLITS, Record

DIFFICULTIES = (1, 2, 3)
EVAL_SHARE_PER_MILLE = 200
"""Share of each synthetic problem space reserved for the eval split (20%)."""
MAX_MISSES_IN_A_ROW = 2000
"""Draws without a new problem before a split's problem space counts as exhausted."""

Problem = tuple[str, Record]  # (canonical key, record)
Draw = Callable[[random.Random, int], "Problem | None"]


def split_of(key: str) -> str:
    """The split a problem belongs to, from a hash of its canonical key.

    >>> split_of("3+4") in ("train", "eval")
    True
    """
    bucket = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % 1000
    return "eval" if bucket < EVAL_SHARE_PER_MILLE else "train"


def _rng(task: str, seed: int, difficulty: int, split: str) -> random.Random:
    digest = hashlib.sha256(f"{task}|{seed}|{difficulty}|{split}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _check(num: int, difficulty: int | None, split: str, levels: tuple[int, ...]) -> None:
    if num < 0:
        raise ValueError(f"num must be >= 0, got {num}")
    if difficulty is not None and difficulty not in levels:
        raise ValueError(f"difficulty must be one of {levels} or None (mixed), got {difficulty!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def int_apply(op: str, a: int, b: int) -> int:
    """`a op b` on plain ints (`/` floors: callers only build exact divisions)."""
    # Plain ints, not Fractions: generation only builds exact whole-number steps, and this
    # runs a few hundred thousand times per prepared data set.
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a // b


def generate_problems(
    task: str,
    draw: Callable[[random.Random, int, str], Problem | None],
    num: int,
    *,
    seed: int,
    difficulty: int | None,
    split: str,
    levels: tuple[int, ...] = DIFFICULTIES,
    fill: bool = False,
) -> list[Record]:
    """`num` distinct problems of `task` from `draw(rng, level, split)`: of one level, or
    (difficulty None) an equal share of each of `levels`, no problem at two levels. `fill`: a
    level short of its share passes what it lacks to the next (else that is an error).

    >>> from breadth.data.generators import get_task
    >>> arithmetic = get_task("arithmetic")
    >>> generate_problems("arithmetic", arithmetic.draw, 600, seed=0, difficulty=None,
    ...                   split="train")
    Traceback (most recent call last):
    ValueError: mixed difficulty: level 1 of arithmetic holds only 85 distinct problems in the \
'train' split, short of its equal share of 200 (of 600 over levels 1, 2, 3). Ask for at most \
255 (data.num_train / --num-train), or one level (data.difficulty / --difficulty), or let the \
next level make up the difference (data.mixed_fill=true; each row's difficulty column then \
says its level)
    """
    _check(num, difficulty, split, levels)

    def draw_in_split(rng: random.Random, level: int) -> Problem | None:
        return draw(rng, level, split)

    if difficulty is not None:
        records = _draw_unique(draw_in_split, num, _rng(task, seed, difficulty, split),
                               difficulty, split)
        if len(records) < num:
            raise ValueError(
                f"only {len(records)} distinct difficulty-{difficulty} {task} problems exist in "
                f"the {split!r} split, asked for {num}: ask for fewer (data.num_{split} / "
                f"--num-{split}), a higher difficulty (data.difficulty / --difficulty), or "
                "mixed levels (data.difficulty=mixed / --difficulty mixed)"
            )
        return records
    # Mixed: an equal share per level. A problem drawn at one level is not drawn again at
    # another (countdown's levels share problems), and a level that holds fewer problems than
    # its share is an error, unless `fill` asks the next level to make up the difference.
    records: list[Record] = []
    seen: set[str] = set()
    shortfall = 0
    for index, level in enumerate(levels):
        share = num // len(levels) + (1 if index < num % len(levels) else 0)
        asked = share + (shortfall if fill else 0)
        drawn = _draw_unique(draw_in_split, asked, _rng(task, seed, level, split), level, split,
                             seen)
        if len(drawn) < share and not fill:
            raise ValueError(_short_level(task, level, split, len(drawn), share, num, levels))
        shortfall = asked - len(drawn)
        records += drawn
    if shortfall:
        raise ValueError(f"only {len(records)} distinct {task} problems exist in the {split!r} "
                         f"split, asked for {num}")
    _rng(task, seed, 0, split).shuffle(records)  # level 0: the mixing draw
    return records


def _short_level(task: str, level: int, split: str, holds: int, share: int, num: int,
                 levels: tuple[int, ...]) -> str:
    return (f"mixed difficulty: level {level} of {task} holds only {holds} distinct problems in "
            f"the {split!r} split, short of its equal share of {share} (of {num} over levels "
            f"{', '.join(map(str, levels))}). Ask for at most {holds * len(levels)} "
            f"(data.num_{split} / --num-{split}), or one level (data.difficulty / "
            "--difficulty), or let the next level make up the difference "
            "(data.mixed_fill=true; each row's difficulty column then says its level)")


def draw_level(task: str, draw: Callable[[random.Random, int, str], Problem | None], num: int,
               *, seed: int, level: int, split: str) -> list[Record]:
    """Up to `num` distinct problems of one level (fewer when the level holds fewer): the
    level's share as `generate_problems` draws it, for measuring what a level holds."""
    return _draw_unique(lambda rng, lvl: draw(rng, lvl, split), num,
                        _rng(task, seed, level, split), level, split)


def _draw_unique(draw: Draw, num: int, rng: random.Random, level: int, split: str,
                 seen: set[str] | None = None) -> list[Record]:
    """Up to `num` problems not in `seen` (which is updated), stopping when the level's problem
    space looks exhausted (MAX_MISSES_IN_A_ROW draws in a row without a new one)."""
    seen = set() if seen is None else seen
    records: list[Record] = []
    misses = 0
    while len(records) < num and misses < MAX_MISSES_IN_A_ROW:
        problem = draw(rng, level)
        if problem is None or problem[0] in seen or split_of(problem[0]) != split:
            misses += 1
            continue
        seen.add(problem[0])
        records.append(problem[1])
        misses = 0
    return records
