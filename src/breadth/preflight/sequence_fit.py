"""Whether a run's rendered rows fit its token limits, and the values that would.

A prompt longer than the model's context, or a target longer than the tokens a completion may
have, is not an error anywhere downstream: TRL cuts SFT sequences at `max_length`, GRPO and the
rollouts stop a completion at its token budget and score what is there, and a position past
the model's `max_position_embeddings` is computed all the same. A run on such data trains and
scores garbage without a word (a GSM8K eval file on the default model: 0 of 5,276 samples
correct, 99% stopped at the length limit). So the lengths are checked before anything starts
(`breadth.preflight.checks.check_fit`), and again where sequences are built (SFT, rollouts).

Pure: token counts in, shortfalls and the fitting values out (`split_lengths` counts them with
the tokenizer it is given).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EOS = 1
"""Tokens the end-of-sequence marker takes: a completion is only finished once it is written."""
MODEL_CONTEXT = "the model's context length"
"""Names the context limit of a hub or local model, which no config key sets."""


@dataclass(frozen=True)
class SplitLengths:
    """Token counts of one split's rendered rows, as the pipeline tokenizes them."""

    split: str
    """"train" or "eval"."""
    prompt: Sequence[int]
    """Tokens of each prompt."""
    target: Sequence[int]
    """Tokens of each target, its end-of-sequence token included: what the model must write
    to finish a completion like it."""
    sequence: Sequence[int]
    """Tokens of prompt and target together as SFT tokenizes them, eos included."""


@dataclass(frozen=True)
class TokenLimits:
    """The limits a run puts on its sequences."""

    max_length: int
    """The model's context: prompt plus completion must fit it."""
    max_length_key: str | None
    """The config key that sets `max_length` ("model.max_length" for the tiny model); None for a
    hub or local model, whose own config sets it."""
    max_new_tokens: int
    """rollout.max_new_tokens: completion budget of the rollouts and the search."""
    sft: bool = True
    """Whether SFT trains on the train rows."""
    max_completion_length: int | None = None
    """rl.max_completion_length, or None when RL is off."""
    rl_rows: int = 0
    """How many train rows GRPO draws prompts from (rl.num_problems; 0 = all)."""
    search_prompt_extra: Callable[[int], int] | None = None
    """Tokens a search child prompt adds to a problem's prompt at most (its header and the
    parents it shows), given rollout.max_new_tokens (the parents are completions); None when
    the search makes no child prompts."""


@dataclass(frozen=True)
class Shortfall:
    """One limit that some rows do not fit: the longest of them, and how many there are."""

    keys: tuple[str, ...]
    """The config keys whose values make the limit."""
    needs: str
    """What must fit, in words."""
    split: str
    row: int
    """Index (in its split) of the row that needs the most tokens."""
    needed: int
    """Tokens that row needs."""
    limit: int
    over: int
    """Rows of the split that do not fit."""
    total: int
    """Rows of the split checked."""


TokenCounter = Callable[[Sequence[str], bool], list[int]]
"""(texts, with the tokenizer's special tokens?) -> tokens of each text."""


def tokenizer_counter(tokenizer: Any) -> TokenCounter:
    """Count with a transformers tokenizer (called on a list of texts)."""

    def count(texts: Sequence[str], special: bool) -> list[int]:
        return count_tokens(texts, tokenizer, special=special)

    return count


def count_tokens(texts: Sequence[str], tokenizer: Any, *, special: bool = True) -> list[int]:
    """Tokens of each text (`special`: with the tokenizer's special tokens, as TRL counts)."""
    if not texts:
        return []
    return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=special)["input_ids"]]


def split_lengths(split: str, rows: Sequence[Mapping[str, Any]], count: TokenCounter
                  ) -> SplitLengths:
    """Token counts of rendered rows as the trainers take them: TRL tokenizes a prompt, and
    prompt + completion + eos, with the tokenizer's special tokens; a target is what the model
    must write, then its eos."""
    if not rows:
        return SplitLengths(split, [], [], [])
    prompts = [str(row["prompt"]) for row in rows]
    targets = [str(row["target"]) for row in rows]
    return SplitLengths(
        split, prompt=count(prompts, True),
        target=[n + EOS for n in count(targets, False)],
        sequence=[n + EOS for n in count([p + t for p, t in zip(prompts, targets)], True)],
    )


def _shortfall(keys: tuple[str, ...], needs: str, split: str, totals: Sequence[int],
               limit: int) -> Shortfall | None:
    if not totals or max(totals) <= limit:
        return None
    row = max(range(len(totals)), key=totals.__getitem__)  # the first of the longest
    over = sum(total > limit for total in totals)
    return Shortfall(keys, needs, split, row, totals[row], limit, over, len(totals))


def shortfalls(train: SplitLengths, evaluation: SplitLengths,
               limits: TokenLimits) -> list[Shortfall]:
    """Every limit some rows exceed, SFT's first, then GRPO's, the rollouts' and the search's.

    >>> train = SplitLengths("train", prompt=[5, 9], target=[3, 2], sequence=[8, 11])
    >>> evaluation = SplitLengths("eval", prompt=[6], target=[4], sequence=[10])
    >>> [(s.keys, s.needed, s.limit) for s in shortfalls(train, evaluation,
    ...     TokenLimits(max_length=10, max_length_key="model.max_length", max_new_tokens=3))]
    [(('model.max_length',), 11, 10), (('rollout.max_new_tokens',), 4, 3)]
    """
    length = (limits.max_length_key or MODEL_CONTEXT,)
    found = []
    rows = len(train.prompt) if not limits.rl_rows else min(limits.rl_rows, len(train.prompt))
    if limits.sft:
        found.append(_shortfall(length, "SFT: prompt + target + <eos>", "train",
                                train.sequence, limits.max_length))
    if limits.max_completion_length is not None:
        completion = limits.max_completion_length
        found.append(_shortfall(("rl.max_completion_length",), "GRPO: target + <eos>",
                                "train", train.target[:rows], completion))
        found.append(_shortfall((*length, "rl.max_completion_length"),
                                "GRPO: prompt + rl.max_completion_length", "train",
                                [p + completion for p in train.prompt[:rows]], limits.max_length))
    new = limits.max_new_tokens
    found.append(_shortfall(("rollout.max_new_tokens",), "rollouts: target + <eos>", "eval",
                            evaluation.target, new))
    found.append(_shortfall((*length, "rollout.max_new_tokens"),
                            "rollouts: prompt + rollout.max_new_tokens", "eval",
                            [p + new for p in evaluation.prompt], limits.max_length))
    if limits.search_prompt_extra is not None:
        extra = limits.search_prompt_extra(new)
        found.append(_shortfall(
            (*length, "rollout.max_new_tokens", "evaluation.search_max_attempt_chars"),
            "search: child prompt (prompt + attempts shown) + rollout.max_new_tokens", "eval",
            [p + extra + new for p in evaluation.prompt], limits.max_length))
    return [s for s in found if s is not None]


def fitting_values(train: SplitLengths, evaluation: SplitLengths,
                   limits: TokenLimits) -> dict[str, int]:
    """The smallest values of the keys at fault that make every row fit, the others as they
    are (a larger completion budget needs a larger context, so both are given together).

    >>> train = SplitLengths("train", prompt=[5, 9], target=[3, 2], sequence=[8, 11])
    >>> evaluation = SplitLengths("eval", prompt=[6], target=[4], sequence=[10])
    >>> fitting_values(train, evaluation,
    ...     TokenLimits(max_length=10, max_length_key="model.max_length", max_new_tokens=3))
    {'rollout.max_new_tokens': 4, 'model.max_length': 11}
    """
    values: dict[str, int] = {}
    rows = len(train.prompt) if not limits.rl_rows else min(limits.rl_rows, len(train.prompt))
    completion = limits.max_completion_length
    if completion is not None and rows:
        completion = max(completion, max(train.target[:rows]))
        if completion != limits.max_completion_length:
            values["rl.max_completion_length"] = completion
    new = max([limits.max_new_tokens, *evaluation.target])
    if new != limits.max_new_tokens:
        values["rollout.max_new_tokens"] = new
    needed = [limits.max_length]
    if limits.sft:
        needed += train.sequence
    if completion is not None and rows:
        needed.append(max(train.prompt[:rows]) + completion)
    if evaluation.prompt:
        extra = limits.search_prompt_extra(new) if limits.search_prompt_extra else 0
        needed.append(max(evaluation.prompt) + new + extra)
    if max(needed) != limits.max_length:
        values[limits.max_length_key or MODEL_CONTEXT] = max(needed)
    return values


def fit_message(found: Sequence[Shortfall], fitting: dict[str, int], limits: TokenLimits,
                describe: Callable[[str, int], str], current: Mapping[str, object]) -> str:
    """The refusal: one line per limit (its keys and their values, the longest row with its
    source row, how many rows do not fit), then the values that fit and how to set them.

    `describe(split, index)` names a row: where it is in the user's file, its prompt and target
    with their token counts. `current`: the run's config values by dotted key.
    """
    lines = ["the rendered data does not fit the run's token limits (nothing was started):"]
    for shortfall in found:
        values = ", ".join(f"{key}={current[key]}" if key in current else key
                           for key in shortfall.keys)
        lines.append(
            f"  - {shortfall.needs} needs {shortfall.needed} tokens, over the limit of "
            f"{shortfall.limit} ({values}), in {shortfall.over:,} of {shortfall.total:,} "
            f"{shortfall.split} rows; the longest is {describe(shortfall.split, shortfall.row)}"
        )
    settable = {key: value for key, value in fitting.items() if key in current}
    if settable:
        lines.append("Values that fit every row: "
                     + " ".join(f"--set {key}={value}" for key, value in settable.items()))
    if limits.max_length_key is None and MODEL_CONTEXT in fitting:
        lines.append(f"The model's context is {limits.max_length} tokens and these rows need "
                     f"{fitting[MODEL_CONTEXT]}: use a model with a longer context, or a source "
                     "with shorter problems.")
    lines.append("A longer model.max_length or completion budget makes every step slower; a "
                 "source with shorter problems, or data.reasoning=false where the targets "
                 "carry a trace, is the other fix. See docs/guide/data-fit.md.")
    return "\n".join(lines)


def check_rows_fit(totals: Sequence[int], limit: int, *, what: str, rows: Sequence[Any],
                   fix: str) -> None:
    """Raise ValueError if any row's `totals` (tokens) exceeds `limit`, naming how many, the
    longest row (its problem_id and prompt; `rows` may be bare prompts) and `fix`: where sequences are built (SFT, GRPO,
    rollouts), so that one the preflight did not see (a run started by hand, a model with
    another context) is refused, never cut.

    >>> check_rows_fit([5, 7], 6, what="prompt + completion", rows=[{"problem_id": "a",
    ...     "prompt": "1+1="}, {"problem_id": "b", "prompt": "12+7="}], fix="raise it")
    Traceback (most recent call last):
    ...
    ValueError: 1 of 2 rows do not fit: prompt + completion needs up to 7 tokens, over the limit of 6 (problem b, prompt '12+7='); raise it
    """
    over = [index for index, total in enumerate(totals) if total > limit]
    if not over:
        return
    longest = max(over, key=lambda index: totals[index])
    row = rows[longest]
    named = isinstance(row, Mapping) and row.get("problem_id") is not None
    prompt = str(row["prompt"] if isinstance(row, Mapping) else row)
    prompt = prompt if len(prompt) <= 60 else prompt[:60] + "..."
    where = (f"problem {row['problem_id']}, " if named else "") + f"prompt {prompt!r}"
    raise ValueError(f"{len(over)} of {len(totals)} rows do not fit: {what} needs up to "
                     f"{totals[longest]} tokens, over the limit of {limit} ({where}); {fix}")
