"""What a task is: how its problems are drawn, shown (free-form and mcq, with and without a
trace), verified, scored and told apart; what makes two problems one (`Task.problem_key`);
and what is known about its answers.

A task is one subclass of `Task` in its own module plus one entry in `registry.BUILTIN_TASKS`.
The base class is the behaviour of a problem read from a file (the "generic" task): questions
and answers as the source gives them, a numeric or textual verifier, the source's rationale as
the trace.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from breadth.data.distractors import numeric_distractors
from breadth.data.extraction import LETTERS, canonical_number
from breadth.data.generators.natural import (
    NUMBER_INSTRUCTION,
    WorkedInWords,
    instruction,
    mcq_prompt,
    natural_target,
)
from breadth.data.records import Record, RenderError
from breadth.data.synthetic import DIFFICULTIES, generate_problems
from breadth.data.unicode_text import normalize_text
from breadth.data.verifiers import Verification, verify_free_form

_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")  # GSM8K's "<<48/2=24>>" annotations
# How AQuA rationales name an option: "Answer: C", "ANSWER IS C", "Ans - (B)", "option D",
# "(E)", or a closing line that is just the letter.
_OPTION_REFERENCE = re.compile(
    r"(?P<head>(?i:\b(?:correct\s+)?(?:answer|ans|option|choice)\b)\s*(?:(?i:is)\s*)?"
    r"[:=.\-]?\s*(?:(?i:option|choice)\s*)?\(?|(?<![A-Za-z])\(|"
    r"\n\s*\(?(?=[A-J]\)?\.?[ \t]*(?:\n|$)))"
    r"(?P<letter>[A-J])(?P<tail>(?<=\(.)\)|(?![A-Za-z]))"
)


@dataclass(frozen=True)
class TaskProperties:
    """What is known about a task's problems before any model sees them."""

    answers: str
    """How many right answers a problem has, in words ("one", "one or more", ">= 2")."""
    outcome: str
    """What counts as the same answer for diversity (the verifier's outcome key)."""
    graded: bool = False
    """Whether a wrong answer gets a partial score (closeness, in [0, 1]) for search."""
    reasoning_path: bool = False
    """Whether `Task.reasoning_path` reads the order of work from a completion."""
    trace: str = ""
    """What the reasoning trace holds, in words."""


class Task:
    """One task. Subclasses set the class attributes and override what differs from a file
    source's problems (this class's behaviour)."""

    name: ClassVar[str] = "generic"
    summary: ClassVar[str] = ("Problems read from a file or hub source: the source's question, "
                              "answer, choices and rationale.")
    levels: ClassVar[tuple[int, ...]] = ()
    """Difficulty levels the generator knows; () for a task that is never generated."""
    level_help: ClassVar[dict[int, str]] = {}
    """Each level in words, for the guide and `--help`."""
    properties: ClassVar[TaskProperties] = TaskProperties(
        answers="one (the source's)", outcome="the extracted number, or the normalised text")
    same_problem: ClassVar[str] = ("the question's text, normalised (case, spacing, "
                                   "punctuation at its ends)")
    """What makes two problems one (`problem_key`), in words: the guide's table and the errors
    that count a split's problems say it."""

    # --- generation ---------------------------------------------------------------------

    def draw(self, rng: random.Random, level: int, split: str) -> Record | None:
        """One random problem of `level`, or None to draw again; `problem_key` names it."""
        raise NotImplementedError(f"task {self.name!r} has no generator")

    def problem_key(self, record: Record) -> str:
        """The canonical key of what `record` asks, however it is written: records with equal
        keys are one problem, so they are never on both sides of a split, and an eval set
        holds each key once. A file or hub source's problem is its normalised question text.

        >>> Task().problem_key(Record.create(source="s", split="train", answer="4",
        ...                                  question="  What is 2 + 2? "))
        'what is 2 + 2'
        """
        return question_key(record.question)

    def generate(self, num: int, *, seed: int, difficulty: int | None, split: str,
                 fill: bool = False) -> list[Record]:
        """`num` distinct problems of one level (None: the levels mixed, in equal shares; with
        `fill` a level short of its share passes the rest to the next), deterministic per
        seed; see `synthetic.generate_problems`."""
        if not self.levels:
            raise ValueError(f"task {self.name!r} is not generated: it comes from a file or hub "
                             "source (data.source=jsonl:PATH, parquet:PATH or hf:NAME)")
        return generate_problems(self, num, seed=seed, difficulty=difficulty, split=split,
                                 fill=fill)

    # --- rendering ----------------------------------------------------------------------

    def free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        """(prompt, target) of the free-form row; with `reasoning` the target holds a trace
        that ends in the answer line."""
        if reasoning:
            return f"{record.question}\n", _generic_trace(record, record.answer)
        return f"{record.question}\nAnswer:", record.answer

    def mcq_options(self, record: Record, num_options: int, rng: random.Random
                    ) -> tuple[str, list[str]]:
        """(gold option, options with the gold first): the source's choices, else the gold
        and `num_options - 1` generated distractors."""
        if record.choices:
            if record.answer not in record.choices:
                raise RenderError(record, f"answer {record.answer!r} is not one of its choices "
                                          f"{list(record.choices)!r}")
            return record.answer, list(record.choices)
        gold = canonical_number(record.answer)
        if gold is None:
            raise RenderError(
                record, f"the answer {record.answer[:40]!r} is not a number and the "
                "source gives no choices, so mcq distractors cannot be generated; use "
                "--format free_form or a source with choices"
            )
        wrong = numeric_distractors(gold, num_options - 1, rng, expression=None)
        return gold, [gold, *wrong]

    def mcq_prompt(self, record: Record, options: list[str], reasoning: bool) -> str:
        """The mcq prompt: the stem, the lettered options and (without a trace) the cue."""
        listed = "\n".join(f"{LETTERS[i]}) {option}" for i, option in enumerate(options))
        return f"{record.question}\n{listed}" + ("\n" if reasoning else "\nAnswer:")

    def mcq_trace(self, record: Record, options: list[str], letter: str,
                  moved: dict[str, str]) -> str:
        """The mcq target with a trace: the source's rationale (its option letters renamed
        after shuffling, `moved`), each option weighed, and the answer line."""
        weighed, verdicts = weigh_options(options, letter)
        # Long source options are weighed by letter only, to keep the trace short.
        if any(len(option) > 20 for option in options):
            weighed = [f"{LETTERS[i]} {verdicts[i]}" for i in range(len(options))]
        reasoning = _rationale(record, moved)
        head = f"{reasoning}\n" if reasoning else ""
        return f"{head}{'; '.join(weighed)}. Answer: {letter}"

    # --- the natural rendering (data.rendering=natural, `generators.natural`) -----------

    def natural_free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        """(prompt, target) in words, for an instruct model: the question and the request for
        an answer line; the target is the work (with `reasoning`, in words) and that line."""
        numeric = canonical_number(record.answer) is not None
        ask = NUMBER_INSTRUCTION if numeric else instruction("your final answer")
        work = clean_solution(record.solution) if reasoning else ""
        return f"{record.question}\n{ask}", natural_target(work, record.answer)

    def natural_mcq_prompt(self, record: Record, options: list[str]) -> str:
        """The natural mcq prompt (the same with or without a trace): the question, the
        options one a line, the request for a letter."""
        return mcq_prompt(record.question, options)

    def natural_mcq_trace(self, record: Record, options: list[str], letter: str,
                          moved: dict[str, str]) -> str:
        """The natural mcq target with a trace: the work in words, then the answer line."""
        return natural_target(_rationale(record, moved), letter)

    # --- verification -------------------------------------------------------------------

    def verify(self, completion: object, row: Mapping[str, Any]) -> Verification:
        """The verdict on a free-form completion (mcq is verified by letter, for every task).
        Never raises on model text; a malformed row raises, naming the field."""
        return verify_free_form(completion, str(row["answer"]))

    def reasoning_path(self, completion: object, row: Mapping[str, Any]) -> str | None:
        """The order of work a completion followed, as a key (equal keys: the same path), for
        diversity of reasoning; None when the task has no such notion or none can be read."""
        return None

    def valid_answers(self, record: Record) -> list[str] | None:
        """Every right answer's outcome key, enumerated; None when they cannot be listed."""
        return None


class WorkedExpression(WorkedInWords, Task):
    """A task whose question is a sum or expression written inline ("12+7*3") and whose trace is
    its worked steps ("7*3=21, 12+21=33") (arithmetic, chain): both renderings follow from
    `worked`, the compact one here and the natural one in `WorkedInWords`."""

    def worked(self, record: Record) -> str:
        """The record's steps, comma-separated ("7*3=21, 12+21=33")."""
        raise NotImplementedError

    def worked_steps(self, record: Record) -> list[str]:
        return self.worked(record).split(", ")

    def free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        target = f"{self.worked(record)}. Answer: {record.answer}" if reasoning else record.answer
        return f"{record.question}=", target

    def mcq_prompt(self, record: Record, options: list[str], reasoning: bool) -> str:
        return inline_mcq_prompt(f"{record.question}=?", options, reasoning)

    def mcq_trace(self, record: Record, options: list[str], letter: str,
                  moved: dict[str, str]) -> str:
        # Weighed: with the work and then only the letter, the study model wrote correct chain
        # work and picked the letter at chance after 768 SFT steps (pass@1 0.232, chance 0.25).
        return weighed_trace(self.worked(record), options, letter)


def inline_mcq_prompt(stem: str, options: list[str], reasoning: bool) -> str:
    """A short synthetic mcq prompt on one line: "stem A)x B)y Answer:" (no cue before a trace).

    >>> inline_mcq_prompt("3+4=?", ["7", "8"], False)
    '3+4=? A)7 B)8 Answer:'
    """
    listed = " ".join(f"{LETTERS[i]}){option}" for i, option in enumerate(options))
    return f"{stem} {listed}" + ("\n" if reasoning else " Answer:")


def weigh_options(options: list[str], letter: str) -> tuple[list[str], list[str]]:
    """("A)31 no", ...) for every option, and the verdicts; a gold text listed twice is right
    under both letters."""
    gold = options[LETTERS.index(letter)]
    verdicts = ["yes" if option == gold else "no" for option in options]
    return [f"{LETTERS[i]}){option} {verdicts[i]}" for i, option in enumerate(options)], verdicts


def weighed_trace(work: str, options: list[str], letter: str) -> str:
    """The work, each option weighed against its result, then the letter: copying the options
    one by one with a verdict is what a small model learns; finding its result among them in
    the letter's one token is a lookup it does not (docs/results/tasks.md).

    >>> weighed_trace("3+4=7", ["8", "7"], "B")
    '3+4=7. A)8 no; B)7 yes. Answer: B'
    """
    weighed, _ = weigh_options(options, letter)
    return f"{work}. {'; '.join(weighed)}. Answer: {letter}"


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


def _rationale(record: Record, moved: dict[str, str]) -> str:
    """A source's rationale, its option letters renamed after shuffling (`moved`)."""
    reasoning = clean_solution(record.solution)
    return remap_letters(reasoning, moved) if record.choices else reasoning


def _generic_trace(record: Record, answer: str) -> str:
    reasoning = clean_solution(record.solution)
    return f"{reasoning}\nAnswer: {answer}" if reasoning else f"Answer: {answer}"


def question_key(text: str) -> str:
    """A question as a key: Unicode digits as ASCII, case folded, runs of spacing as one space,
    punctuation at either end dropped ("What is 2+2?" and "what is  2+2" are one question).

    >>> question_key("What is  2+2? ") == question_key("what is 2+2")
    True
    """
    folded = " ".join(normalize_text(text).casefold().split())
    return folded.strip(string.punctuation + " ")


def clean_solution(solution: str | None) -> str:
    """A source's rationale without GSM8K's calculator notes."""
    return _CALCULATOR_NOTE.sub("", solution or "").strip()


__all__ = ["DIFFICULTIES", "Task", "TaskProperties", "WorkedExpression", "clean_solution",
           "inline_mcq_prompt", "question_key", "remap_letters", "weigh_options", "weighed_trace"]
