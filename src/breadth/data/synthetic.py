"""Drawing synthetic problems, deterministic by seed, with a difficulty knob (1 easy .. 3 hard).

Each task (`breadth.data.generators`) draws one random problem of a level and names what it
asks by a canonical key (`Task.problem_key`: chain's "3+5+7" and "7+5+3" are one key); this
module turns those draws into a split's problems. Train and eval never share a key: every key
is assigned to a split by a hash of the key alone (the same side at every seed, size and
level mix), and each split is drawn with its own seed. Eval problems are distinct keys (one
wording each, so no problem is counted twice); training problems are distinct prompts, so
several wordings of one training key may train (as SFT's epochs repeat a prompt), none of them
evaluated. Small problem spaces are finite (difficulty-1 arithmetic has 55 keys, 6 of them on
the eval side); asking for more than a split holds raises an error that says so, with the
config keys to change.
"""

from __future__ import annotations

import hashlib
import random
from typing import Protocol

from breadth.data.records import SPLITS, Record

DIFFICULTIES = (1, 2, 3)
EVAL_SHARE_PER_MILLE = 200
"""Share of each synthetic problem space reserved for the eval split (20%)."""
MAX_MISSES_IN_A_ROW = 2000
"""Draws without a new problem before a split's problem space counts as exhausted."""


class ProblemSpace(Protocol):
    """What drawing a task's problems needs of it (`breadth.data.generators.base.Task`)."""

    name: str
    levels: tuple[int, ...]
    same_problem: str
    """What makes two problems one (its key), in words, for the errors that count keys."""

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None: ...

    def problem_key(self, record: Record) -> str: ...


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
    task: ProblemSpace,
    num: int,
    *,
    seed: int,
    difficulty: int | None,
    split: str,
    fill: bool = False,
) -> list[Record]:
    """`num` problems of `task` in `split`, each drawn by `task.draw(rng, level, split)` and
    kept when its key (`task.problem_key`) falls in the split: of one level, or (difficulty
    None) an equal share of each of `task.levels`, no problem at two levels. Eval problems are
    distinct keys, training problems distinct prompts (see the module's docstring). `fill`: a
    level short of its share passes what it lacks to the next (else that is an error).

    >>> from breadth.data.generators import get_task
    >>> generate_problems(get_task("arithmetic"), 600, seed=0, difficulty=None, split="train")
    Traceback (most recent call last):
    ValueError: mixed difficulty: level 1 of arithmetic holds only 90 distinct prompts in the \
'train' split, short of its equal share of 200 (of 600 over levels 1, 2, 3). Ask for at most \
270 (data.num_train / --num-train), or one level (data.difficulty / --difficulty), or let the \
next level make up the difference (data.mixed_fill=true; each row's difficulty column then \
says its level). Problems are counted by key (the expression up to the order of + and * \
operands (98+87 and 87+98 are one; 9-4 and 4-9 are not)); the train split holds 80% of each \
level's keys, each in any of its wordings, chosen by a hash of the key.
    """
    _check(num, difficulty, split, task.levels)
    if difficulty is not None:
        records = _draw_unique(task, num, _rng(task.name, seed, difficulty, split), difficulty,
                               split)
        if len(records) < num:
            raise ValueError(_short(task, difficulty, split, len(records), num))
        return records
    # Mixed: an equal share per level. A problem drawn at one level is not drawn again at
    # another (countdown's levels share problems), and a level that holds fewer problems than
    # its share is an error, unless `fill` asks the next level to make up the difference.
    records: list[Record] = []
    seen: set[str] = set()
    shortfall = 0
    levels = task.levels
    for index, level in enumerate(levels):
        share = num // len(levels) + (1 if index < num % len(levels) else 0)
        asked = share + (shortfall if fill else 0)
        drawn = _draw_unique(task, asked, _rng(task.name, seed, level, split), level, split,
                             seen)
        if len(drawn) < share and not fill:
            raise ValueError(_short_level(task, level, split, len(drawn), share, num))
        shortfall = asked - len(drawn)
        records += drawn
    if shortfall:
        raise ValueError(_short(task, None, split, len(records), num))
    _rng(task.name, seed, 0, split).shuffle(records)  # level 0: the mixing draw
    return records


def _unit(split: str) -> str:
    return "distinct problems" if split == "eval" else "distinct prompts"


def _how_counted(task: ProblemSpace, split: str) -> str:
    """How a split's problems are counted, for the errors that say a split is short."""
    side = (f"the eval split holds {EVAL_SHARE_PER_MILLE / 10:g}% of each level's keys"
            if split == "eval" else
            f"the train split holds {100 - EVAL_SHARE_PER_MILLE / 10:g}% of each level's keys, "
            "each in any of its wordings")
    return (f" Problems are counted by key ({task.same_problem}); {side}, chosen by a hash "
            "of the key.")


def _short(task: ProblemSpace, difficulty: int | None, split: str, holds: int, num: int) -> str:
    level = "mixed difficulty" if difficulty is None else f"difficulty {difficulty}"
    fix = ("a higher difficulty (data.difficulty / --difficulty), or mixed levels "
           "(data.difficulty=mixed / --difficulty mixed)" if difficulty is not None else
           "one level with more problems (data.difficulty / --difficulty)")
    return (f"{task.name} at {level} holds only {holds} {_unit(split)} in the {split!r} split, "
            f"and data.num_{split}={num} asks for more: lower data.num_{split} (--num-{split}) "
            f"to at most {holds}, or ask for {fix}.{_how_counted(task, split)}")


def _short_level(task: ProblemSpace, level: int, split: str, holds: int, share: int,
                 num: int) -> str:
    levels = task.levels
    return (f"mixed difficulty: level {level} of {task.name} holds only {holds} {_unit(split)} "
            f"in the {split!r} split, short of its equal share of {share} (of {num} over "
            f"levels {', '.join(map(str, levels))}). Ask for at most {holds * len(levels)} "
            f"(data.num_{split} / --num-{split}), or one level (data.difficulty / "
            "--difficulty), or let the next level make up the difference (data.mixed_fill=true; "
            f"each row's difficulty column then says its level).{_how_counted(task, split)}")


def draw_level(task: ProblemSpace, num: int, *, seed: int, level: int, split: str
               ) -> list[Record]:
    """Up to `num` problems of one level (fewer when the level holds fewer): the level's share
    as `generate_problems` draws it, for measuring what a level holds."""
    return _draw_unique(task, num, _rng(task.name, seed, level, split), level, split)


def _draw_unique(task: ProblemSpace, num: int, rng: random.Random, level: int, split: str,
                 seen: set[str] | None = None) -> list[Record]:
    """Up to `num` problems whose key is on `split`'s side and not in `seen` (which is
    updated): distinct keys for eval, distinct prompts (questions) for train. Stops when the
    level's problem space looks exhausted (MAX_MISSES_IN_A_ROW draws in a row without a new
    one)."""
    seen = set() if seen is None else seen
    records: list[Record] = []
    # A generated question states its whole problem, so its key is worked out once per
    # question: near exhaustion most draws repeat one (arithmetic's key parses the question).
    keys: dict[str, str] = {}
    misses = 0
    while len(records) < num and misses < MAX_MISSES_IN_A_ROW:
        record = task.draw(rng, level, split)
        if record is None or (split == "train" and record.question in seen):
            misses += 1
            continue
        key = keys.get(record.question)
        if key is None:
            key = keys[record.question] = task.problem_key(record)
        # Eval counts each key once; train may hold several wordings of a training key.
        identity = key if split == "eval" else record.question
        if identity in seen or split_of(key) != split:
            misses += 1
            continue
        seen.add(identity)
        records.append(record)
        misses = 0
    return records
