"""Render a record as a multiple-choice or free-form example: prompt, SFT target, options.

Prompts for synthetic tasks are short ASCII, because the default model is a tiny
character-level model that has to learn them in minutes on a CPU:

    free_form arithmetic  "12+7*3="                                   target "33"
    mcq arithmetic        "12+7*3=? A)31 B)33 C)36 D)30 Answer:"      target "B"
    free_form countdown   "Reach 22 with 3 5 7:"                      target "3*5+7"

With `reasoning=True` the target carries a short trace: free_form one chain
("7*3=21, 12+21=33. Answer: 33"), mcq a trace that weighs every option
("7*3=21, 12+21=33. A)31 no; B)33 yes; C)36 no; D)30 no. Answer: B"). Prompts that end in the
"Answer:" cue drop it when a trace follows, so the trace never sits after "Answer:".
Option order is shuffled with a seed derived from the record id (hashlib, never hash()).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from breadth.data.distractors import expression_distractors, numeric_distractors
from breadth.data.expressions import (
    ExpressionError,
    Node,
    evaluate,
    format_fraction,
    parse_expression,
    steps,
)
from breadth.data.extraction import LETTERS, canonical_number
from breadth.data.records import Record

FORMATS = ("mcq", "free_form")
DEFAULT_NUM_OPTIONS = 4
_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")  # GSM8K's "<<48/2=24>>" annotations


class RenderError(ValueError):
    """A record that cannot be shown in the asked format (the message names it and why)."""


def render(record: Record, fmt: str, *, reasoning: bool = False) -> dict[str, Any]:
    """One rendered row (all record fields plus problem_id, format, prompt, target, options,
    letter) in format "mcq" or "free_form".

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="3+4",
    ...                   answer="7", solution="3+4=7", difficulty=1, task="arithmetic")
    >>> row = render(r, "free_form")
    >>> row["prompt"], row["target"], row["problem_id"] == r.id
    ('3+4=', '7', True)
    """
    if fmt == "mcq":
        return render_mcq(record, reasoning=reasoning)
    if fmt == "free_form":
        return render_free_form(record, reasoning=reasoning)
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def _base_row(record: Record, fmt: str) -> dict[str, Any]:
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
        "meta": json.dumps(record.meta, sort_keys=True),
        "problem_id": record.id,
        "format": fmt,
    }


def render_free_form(record: Record, *, reasoning: bool = False) -> dict[str, Any]:
    """The free-form row: the model writes the answer (countdown: an expression) itself.

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="12+7*3",
    ...                   answer="33", solution="7*3=21, 12+21=33", task="arithmetic")
    >>> render_free_form(r, reasoning=True)["target"]
    '7*3=21, 12+21=33. Answer: 33'
    """
    row = _base_row(record, "free_form")
    if record.task == "arithmetic":
        prompt = f"{record.question}="
        target = (f"{_arithmetic_solution(record)}. Answer: {record.answer}" if reasoning
                  else record.answer)
    elif record.task == "countdown":
        solution = _countdown_solution(record)
        prompt = f"{record.question}:"
        target = solution
        if reasoning:
            target = f"{', '.join(steps(parse_expression(solution)))}. Answer: {solution}"
    else:
        prompt = f"{record.question}\n" if reasoning else f"{record.question}\nAnswer:"
        target = _generic_trace(record, record.answer) if reasoning else record.answer
    row.update(prompt=prompt, target=target, options=[], letter="")
    return row


def render_mcq(
    record: Record, *, reasoning: bool = False, num_options: int = DEFAULT_NUM_OPTIONS
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
    gold, options = _options(record, num_options, rng)
    rng.shuffle(options)
    letter = LETTERS[options.index(gold)]
    listed = " ".join(f"{LETTERS[i]}){option}" for i, option in enumerate(options))
    if record.task == "arithmetic":
        stem, sep = f"{record.question}=?", " "
    elif record.task == "countdown":
        stem, sep = f"{record.question}?", " "
    else:
        stem, sep = record.question, "\n"
        listed = "\n".join(f"{LETTERS[i]}) {option}" for i, option in enumerate(options))
    prompt = f"{stem}{sep}{listed}" + ("\n" if reasoning else f"{sep}Answer:")
    target = _mcq_trace(record, options, letter) if reasoning else letter
    row = _base_row(record, "mcq")
    row.update(prompt=prompt, target=target, options=options, letter=letter)
    return row


def _seed_from_id(record_id: str, purpose: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{purpose}:{record_id}".encode()).digest()[:8], "big")


def _options(record: Record, num_options: int, rng: random.Random) -> tuple[str, list[str]]:
    try:
        return _options_or_raise(record, num_options, rng)
    except RenderError:
        raise
    except (ValueError, KeyError, ExpressionError) as error:
        raise RenderError(f"record {record.id}: cannot build {num_options} options: {error}"
                          ) from None


def _options_or_raise(record: Record, num_options: int, rng: random.Random
                      ) -> tuple[str, list[str]]:
    if record.choices:
        if record.answer not in record.choices:
            raise RenderError(f"record {record.id}: answer {record.answer!r} is not one of its "
                              f"choices {list(record.choices)!r}")
        return record.answer, list(record.choices)
    if record.task == "countdown":
        solution = _countdown_solution(record)
        numbers = [int(n) for n in record.meta["numbers"]]
        wrong = expression_distractors(parse_expression(solution), numbers,
                                       int(record.meta["target"]), num_options - 1, rng)
        return solution, [solution, *wrong]
    gold = canonical_number(record.answer)
    if gold is None:
        raise RenderError(
            f"record {record.id}: the answer {record.answer[:40]!r} is not a number and the "
            "source gives no choices, so mcq distractors cannot be generated; use "
            "--format free_form or a source with choices"
        )
    expression = _arithmetic_tree(record) if record.task == "arithmetic" else None
    wrong = numeric_distractors(gold, num_options - 1, rng, expression=expression)
    return gold, [gold, *wrong]


def _arithmetic_tree(record: Record) -> Node | None:
    try:
        return parse_expression(record.question)
    except ExpressionError:
        return None


def _arithmetic_solution(record: Record) -> str:
    if record.solution:
        return record.solution
    tree = _arithmetic_tree(record)
    return ", ".join(steps(tree)) if tree is not None else record.question


def _countdown_solution(record: Record) -> str:
    if not record.solution:
        raise RenderError(f"record {record.id}: countdown needs a solution expression")
    return record.solution


def _mcq_trace(record: Record, options: list[str], letter: str) -> str:
    if record.task == "countdown":
        weighed = []
        for index, option in enumerate(options):
            value = format_fraction(evaluate(parse_expression(option)))
            verdict = "yes" if LETTERS[index] == letter else "no"
            weighed.append(f"{LETTERS[index]}){option}={value} {verdict}")
        return f"{'; '.join(weighed)}. Answer: {letter}"
    weighed = [f"{LETTERS[i]}){option} {'yes' if LETTERS[i] == letter else 'no'}"
               for i, option in enumerate(options)]
    if record.task == "arithmetic":
        return f"{_arithmetic_solution(record)}. {'; '.join(weighed)}. Answer: {letter}"
    # Long source options are weighed by letter only, to keep the trace short.
    if any(len(option) > 20 for option in options):
        weighed = [f"{LETTERS[i]} {'yes' if LETTERS[i] == letter else 'no'}"
                   for i in range(len(options))]
    reasoning = _clean_solution(record.solution)
    head = f"{reasoning}\n" if reasoning else ""
    return f"{head}{'; '.join(weighed)}. Answer: {letter}"


def _generic_trace(record: Record, answer: str) -> str:
    reasoning = _clean_solution(record.solution)
    return f"{reasoning}\nAnswer: {answer}" if reasoning else f"Answer: {answer}"


def _clean_solution(solution: str | None) -> str:
    return _CALCULATOR_NOTE.sub("", solution or "").strip()
