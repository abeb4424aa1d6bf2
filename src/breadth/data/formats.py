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
# How AQuA rationales name an option: "Answer: C", "ANSWER IS C", "Ans - (B)", "option D",
# "(E)", or a closing line that is just the letter.
_OPTION_REFERENCE = re.compile(
    r"(?P<head>(?i:\b(?:correct\s+)?(?:answer|ans|option|choice)\b)\s*(?:(?i:is)\s*)?"
    r"[:=.\-]?\s*(?:(?i:option|choice)\s*)?\(?|(?<![A-Za-z])\(|"
    r"\n\s*\(?(?=[A-J]\)?\.?[ \t]*(?:\n|$)))"
    r"(?P<letter>[A-J])(?P<tail>(?<=\(.)\)|(?![A-Za-z]))"
)


class RenderError(ValueError):
    """A record that cannot be shown in the asked format: the message names where its row is
    (its line or row in the user's file; the record id for generated records) and why."""

    def __init__(self, record: Record, reason: str) -> None:
        super().__init__(record, reason)  # the arguments, so that a pickled error unpickles
        self.record = record
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.record.origin or f'record {self.record.id}'}: {self.reason}"


def render(
    record: Record, fmt: str, *, reasoning: bool = False, num_options: int = DEFAULT_NUM_OPTIONS
) -> dict[str, Any]:
    """One rendered row (all record fields plus problem_id, format, prompt, target, options,
    letter) in format "mcq" or "free_form". `num_options` applies to generated distractors;
    a source's own choices are kept as they are.

    >>> from breadth.data.records import Record
    >>> r = Record.create(source="synthetic:arithmetic", split="train", question="3+4",
    ...                   answer="7", solution="3+4=7", difficulty=1, task="arithmetic")
    >>> row = render(r, "free_form")
    >>> row["prompt"], row["target"], row["problem_id"] == r.id
    ('3+4=', '7', True)
    """
    if fmt == "mcq":
        return render_mcq(record, reasoning=reasoning, num_options=num_options)
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
    gold, listed_options = _options(record, num_options, rng)
    order = list(range(len(listed_options)))
    rng.shuffle(order)  # the same permutation as shuffling the options themselves
    options = [listed_options[i] for i in order]
    letter = LETTERS[order.index(_gold_index(record, listed_options, gold))]
    # Where the source's rationale names an option ("Answer: C"), it must name the new letter.
    moved = {LETTERS[old]: LETTERS[new] for new, old in enumerate(order)}
    listed = " ".join(f"{LETTERS[i]}){option}" for i, option in enumerate(options))
    if record.task == "arithmetic":
        stem, sep = f"{record.question}=?", " "
    elif record.task == "countdown":
        stem, sep = f"{record.question}?", " "
    else:
        stem, sep = record.question, "\n"
        listed = "\n".join(f"{LETTERS[i]}) {option}" for i, option in enumerate(options))
    prompt = f"{stem}{sep}{listed}" + ("\n" if reasoning else f"{sep}Answer:")
    target = _mcq_trace(record, options, letter, moved) if reasoning else letter
    row = _base_row(record, "mcq")
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
        return _options_or_raise(record, num_options, rng)
    except RenderError:
        raise
    except (ValueError, KeyError, ExpressionError) as error:
        raise RenderError(record, f"cannot build {num_options} options: {error}") from None


def _options_or_raise(record: Record, num_options: int, rng: random.Random
                      ) -> tuple[str, list[str]]:
    if record.choices:
        if record.answer not in record.choices:
            raise RenderError(record, f"answer {record.answer!r} is not one of its choices "
                                      f"{list(record.choices)!r}")
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
            record, f"the answer {record.answer[:40]!r} is not a number and the "
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
        raise RenderError(record, "countdown needs a solution expression")
    return record.solution


def _mcq_trace(record: Record, options: list[str], letter: str, moved: dict[str, str]) -> str:
    if record.task == "countdown":
        weighed = []
        for index, option in enumerate(options):
            value = format_fraction(evaluate(parse_expression(option)))
            verdict = "yes" if LETTERS[index] == letter else "no"
            weighed.append(f"{LETTERS[index]}){option}={value} {verdict}")
        return f"{'; '.join(weighed)}. Answer: {letter}"
    gold = options[LETTERS.index(letter)]
    # A gold text listed twice is right under both letters.
    verdicts = ["yes" if option == gold else "no" for option in options]
    weighed = [f"{LETTERS[i]}){option} {verdicts[i]}" for i, option in enumerate(options)]
    if record.task == "arithmetic":
        return f"{_arithmetic_solution(record)}. {'; '.join(weighed)}. Answer: {letter}"
    # Long source options are weighed by letter only, to keep the trace short.
    if any(len(option) > 20 for option in options):
        weighed = [f"{LETTERS[i]} {verdicts[i]}" for i in range(len(options))]
    reasoning = remap_letters(_clean_solution(record.solution), moved) if record.choices else (
        _clean_solution(record.solution))
    head = f"{reasoning}\n" if reasoning else ""
    return f"{head}{'; '.join(weighed)}. Answer: {letter}"


def remap_letters(text: str, moved: dict[str, str]) -> str:
    """Rename the option letters a rationale refers to ("Answer: C", "option (B)", "(D)", a
    closing line "E") after the options were shuffled; other capitals are left alone.

    >>> remap_letters("so 3*4=12\\nAnswer: C", {"A": "B", "B": "C", "C": "A"})
    'so 3*4=12\\nAnswer: A'
    """
    def rename(match: re.Match[str]) -> str:
        # One pass over every form, so a renamed letter is never renamed again.
        head, old, tail = match.group("head"), match.group("letter"), match.group("tail")
        return f"{head}{moved.get(old, old)}{tail}"

    return _OPTION_REFERENCE.sub(rename, text)


def _generic_trace(record: Record, answer: str) -> str:
    reasoning = _clean_solution(record.solution)
    return f"{reasoning}\nAnswer: {answer}" if reasoning else f"Answer: {answer}"


def _clean_solution(solution: str | None) -> str:
    return _CALCULATOR_NOTE.sub("", solution or "").strip()
