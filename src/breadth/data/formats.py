"""Render a record as a multiple-choice or free-form example: prompt, SFT target, options.

Each task (`breadth.data.generators`) says how its problems look; this module holds what every task
shares (the row's columns, option shuffling, the gold letter). Prompts for synthetic tasks are
short ASCII, because the default model is a tiny character-level model that has to learn them
in minutes on a CPU:

    free_form arithmetic  "12+7*3="                                   target "33"
    mcq arithmetic        "12+7*3=? A)31 B)33 C)36 D)30 Answer:"      target "B"
    free_form countdown   "Reach 22 with 3 5 7:"                      target "3*5+7"

With `reasoning=True` the target carries a short trace: free_form one chain
("7*3=21, 12+21=33. Answer: 33"), mcq a trace that weighs every option
("7*3=21, 12+21=33. A)31 no; B)33 yes; C)36 no; D)30 no. Answer: B"). Prompts that end in the
"Answer:" cue drop it when a trace follows, so the trace never sits after "Answer:".
Option order is shuffled with a seed derived from the record id (hashlib, never hash()).

`rendering="natural"` shows the same problems in words for a pretrained instruct model, each
prompt ending by asking for the line "The answer is ..." (`breadth.data.generators.natural`);
the options, their order and the gold letter are the compact rendering's.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from breadth.data.expressions import ExpressionError
from breadth.data.extraction import LETTERS
from breadth.data.generators import Task, get_task
from breadth.data.generators.base import remap_letters
from breadth.data.generators.natural import NATURAL_META_KEY, answer_line
from breadth.data.records import FORMATS, RENDERINGS, Record, RenderError

DEFAULT_NUM_OPTIONS = 4
__all__ = ["DEFAULT_NUM_OPTIONS", "FORMATS", "RENDERINGS", "RenderError", "remap_letters", "render",
           "render_free_form", "render_mcq"]


def render(
    record: Record, fmt: str, *, reasoning: bool = False, num_options: int = DEFAULT_NUM_OPTIONS,
    rendering: str = "compact",
) -> dict[str, Any]:
    """One rendered row (all record fields plus problem_id, format, prompt, target, options,
    letter) in format "mcq" or "free_form", rendered "compact" or "natural". `num_options`
    applies to generated distractors; a source's own choices are kept as they are.

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="3+4",
    ...                   answer="7", solution="3+4=7", difficulty=1, task="arithmetic")
    >>> row = render(r, "free_form")
    >>> row["prompt"], row["target"], row["problem_id"] == r.id
    ('3+4=', '7', True)
    """
    if rendering not in RENDERINGS:
        raise ValueError(f"rendering must be one of {RENDERINGS}, got {rendering!r}")
    if fmt == "mcq":
        return render_mcq(record, reasoning=reasoning, num_options=num_options,
                          rendering=rendering)
    if fmt == "free_form":
        return render_free_form(record, reasoning=reasoning, rendering=rendering)
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def _base_row(record: Record, fmt: str, rendering: str) -> dict[str, Any]:
    # A natural row says so in its meta (a verifier may read it); a compact row's meta is the
    # record's, byte for byte as before.
    meta = {**record.meta, NATURAL_META_KEY: rendering} if rendering == "natural" else record.meta
    return {
        "id": record.id,
        "source": record.source,
        "split": record.split,
        "question": record.question,
        "answer": record.answer,
        "choices": list(record.choices),
        "solution": record.solution,
        "difficulty": record.difficulty,
        "task": record.task,
        "meta": json.dumps(meta, sort_keys=True),
        "problem_id": record.id,
        "format": fmt,
    }


def render_free_form(record: Record, *, reasoning: bool = False,
                     rendering: str = "compact") -> dict[str, Any]:
    """The free-form row: the model writes the answer (countdown: an expression) itself.

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="12+7*3",
    ...                   answer="33", solution="7*3=21, 12+21=33", task="arithmetic")
    >>> render_free_form(r, reasoning=True)["target"]
    '7*3=21, 12+21=33. Answer: 33'
    """
    row = _base_row(record, "free_form", rendering)
    task = _task(record)
    render_task = task.natural_free_form if rendering == "natural" else task.free_form
    prompt, target = render_task(record, reasoning)
    row.update(prompt=prompt, target=target, options=[], letter="")
    return row


def render_mcq(
    record: Record, *, reasoning: bool = False, num_options: int = DEFAULT_NUM_OPTIONS,
    rendering: str = "compact",
) -> dict[str, Any]:
    """The multiple-choice row: shuffled options (seeded by the record id) and the gold letter.

    Options come from the record's `choices` when the source has them; otherwise
    `num_options - 1` plausible distractors are generated (near-miss numbers, or countdown
    expressions that miss the target).

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="12+7*3",
    ...                   answer="33", solution="7*3=21, 12+21=33", task="arithmetic")
    >>> row = render_mcq(r)
    >>> row["options"][LETTERS.index(row["letter"])], row["target"] == row["letter"]
    ('33', True)
    """
    if not 2 <= num_options <= len(LETTERS):
        raise ValueError(f"num_options must be 2..{len(LETTERS)}, got {num_options}")
    rng = random.Random(_seed_from_id(record.id, "mcq"))
    gold, listed_options = _options(record, num_options, rng)
    order = list(range(len(listed_options)))
    rng.shuffle(order)  # the same permutation as shuffling the options themselves
    options = [listed_options[i] for i in order]
    letter = LETTERS[order.index(_gold_index(record, listed_options, gold))]
    # Where the source's rationale names an option ("Answer: C"), it must name the new letter.
    moved = {LETTERS[old]: LETTERS[new] for new, old in enumerate(order)}
    task = _task(record)
    if rendering == "natural":
        prompt = task.natural_mcq_prompt(record, options)
        target = (task.natural_mcq_trace(record, options, letter, moved) if reasoning
                  else answer_line(letter))
    else:
        prompt = task.mcq_prompt(record, options, reasoning)
        target = task.mcq_trace(record, options, letter, moved) if reasoning else letter
    row = _base_row(record, "mcq", rendering)
    row.update(prompt=prompt, target=target, options=options, letter=letter)
    return row


def _seed_from_id(record_id: str, purpose: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{purpose}:{record_id}".encode()).digest()[:8], "big")


def _gold_index(record: Record, options: list[str], gold: str) -> int:
    """Where the gold sits among the unshuffled options: the source's own letter when it lists
    the gold text twice (so its rationale's letter follows it), else the text's position."""
    index = record.meta.get("answer_index") if record.choices else None
    return index if isinstance(index, int) and options[index] == gold else options.index(gold)


def _options(record: Record, num_options: int, rng: random.Random) -> tuple[str, list[str]]:
    try:
        return _task(record).mcq_options(record, num_options, rng)
    except RenderError:
        raise
    except (ValueError, KeyError, ExpressionError) as error:
        raise RenderError(record, f"cannot build {num_options} options: {error}") from None


def _task(record: Record) -> Task:
    try:
        return get_task(record.task)
    except ValueError as error:
        raise RenderError(record, f"field 'task': {error}") from None
