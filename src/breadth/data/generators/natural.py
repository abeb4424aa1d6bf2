"""The natural rendering (`data.rendering=natural`): problems in words for a pretrained instruct
model, each prompt ending by asking for an answer line the verifier reads.

    free_form  "What is 48 - 37?\\nEnd your reply with 'The answer is' followed by the number."
               target "48 - 37 = 11.\\nThe answer is 11."
    mcq        "What is 48 - 37?\\nA) 11\\nB) 85\\nC) 10\\nD) 12\\nEnd your reply with 'The answer
               is' followed by the letter of the right option."
               target "The answer is A."

With a trace (`data.reasoning`) the work comes in words before the answer line ("First,
7 * 3 = 21. Then 12 + 21 = 33.\\nThe answer is 33."). A task says its question in words; the
pieces every task shares are here. The compact rendering (the character model's) is the tasks'
`free_form` / `mcq_prompt` / `mcq_trace`, unchanged.

The request names what follows "The answer is" in words, with no placeholder: asked for "a line
of the form 'The answer is X', where X is the letter ...", SmolLM2-135M-Instruct copied the
placeholder ("The answer is X.") in 5 of 16 greedy replies on arithmetic mcq (difficulty 2) and
answered 3 of 16 right; asked for "'The answer is' followed by the letter ...", it copied none
and answered 9 of 16 right (most of its letters were D, the gold letter of 8 of those 16).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from breadth.data.extraction import LETTERS
from breadth.data.records import Record

NATURAL_META_KEY = "rendering"
"""A natural row's meta says so (`{"rendering": "natural"}`), for a verifier whose rules differ
by rendering (chain checks the compact scratchpad's work); compact rows' meta is unchanged."""
ANSWER_PREFIX = "The answer is"
_OPERATOR = re.compile(r"\s*([-+*/=])\s*")


def instruction(what: str) -> str:
    """The request for the answer line, naming what follows its prefix.

    >>> instruction("the expression")
    "End your reply with 'The answer is' followed by the expression."
    """
    return f"End your reply with '{ANSWER_PREFIX}' followed by {what}."


NUMBER_INSTRUCTION = instruction("the number")
LETTER_INSTRUCTION = instruction("the letter of the right option")


def answer_line(answer: str) -> str:
    """The line an answer ends on.

    >>> answer_line("11")
    'The answer is 11.'
    """
    return f"{ANSWER_PREFIX} {answer}."


def natural_target(work: str, answer: str) -> str:
    """The work (if any) on its own line, then the answer line.

    >>> natural_target("48 - 37 = 11.", "11")
    '48 - 37 = 11.\\nThe answer is 11.'
    """
    return f"{work}\n{answer_line(answer)}" if work else answer_line(answer)


def spaced(expression: str) -> str:
    """A compact expression or step with a space around each operator.

    >>> spaced("12+7*3"), spaced("(3+5)*2=16")
    ('12 + 7 * 3', '(3 + 5) * 2 = 16')
    """
    return _OPERATOR.sub(r" \1 ", expression).strip()


def in_words(steps: Sequence[str]) -> str:
    """Compact steps as sentences, ending in a full stop.

    >>> in_words(["48-37=11"])
    '48 - 37 = 11.'
    >>> in_words(["7*3=21", "12+21=33"])
    'First, 7 * 3 = 21. Then 12 + 21 = 33.'
    """
    if len(steps) == 1:
        return f"{spaced(steps[0])}."
    first, *rest = (spaced(step) for step in steps)
    return " ".join([f"First, {first}.", *(f"Then {step}." for step in rest)])


def listed_numbers(numbers: Sequence[int]) -> str:
    """Numbers as words list them.

    >>> listed_numbers([7, 6, 4])
    '7, 6 and 4'
    """
    *head, last = map(str, numbers)
    return f"{', '.join(head)} and {last}" if head else last


def mcq_prompt(question: str, options: Sequence[str]) -> str:
    """The question, each option on its own line ("A) 11"), then the answer-line request.

    >>> print(mcq_prompt("What is 3 + 4?", ["7", "8"]))
    What is 3 + 4?
    A) 7
    B) 8
    End your reply with 'The answer is' followed by the letter of the right option.
    """
    listed = "\n".join(f"{LETTERS[i]}) {option}" for i, option in enumerate(options))
    return f"{question}\n{listed}\n{LETTER_INSTRUCTION}"


def chosen(work: str, letter: str) -> str:
    """An mcq trace: the work, which option it lands on, and the answer line.

    >>> chosen("48 - 37 = 11.", "A")
    '48 - 37 = 11, which is option A.\\nThe answer is A.'
    """
    return natural_target(f"{work.rstrip('.')}, which is option {letter}.", letter)


def what_is(expression: str) -> str:
    """The question an expression asks.

    >>> what_is("48-37")
    'What is 48 - 37?'
    """
    return f"What is {spaced(expression)}?"


def worked_free_form(expression: str, answer: str, steps: Sequence[str], reasoning: bool
                     ) -> tuple[str, str]:
    """The free-form (prompt, target) of a task whose answer is an expression's value
    (arithmetic, chain): with `reasoning` its steps in words, else the expression = its value.

    >>> worked_free_form("12+7*3", "33", ["7*3=21", "12+21=33"], False)[1]
    '12 + 7 * 3 = 33.\\nThe answer is 33.'
    """
    work = in_words(steps) if reasoning else f"{spaced(expression)} = {answer}."
    return f"{what_is(expression)}\n{NUMBER_INSTRUCTION}", natural_target(work, answer)


class WorkedInWords:
    """The natural rendering of a task whose answer is an expression's value, worked in steps
    (arithmetic, chain): mixed in before `Task`, it needs only the record's steps."""

    def worked_steps(self, record: Record) -> list[str]:
        """The record's compact steps ("7*3=21", "12+21=33")."""
        raise NotImplementedError

    def natural_free_form(self, record: Record, reasoning: bool) -> tuple[str, str]:
        return worked_free_form(record.question, record.answer, self.worked_steps(record),
                                reasoning)

    def natural_mcq_prompt(self, record: Record, options: list[str]) -> str:
        return mcq_prompt(what_is(record.question), options)

    def natural_mcq_trace(self, record: Record, options: list[str], letter: str,
                          moved: dict[str, str]) -> str:
        return chosen(in_words(self.worked_steps(record)), letter)


__all__ = ["ANSWER_PREFIX", "LETTER_INSTRUCTION", "NATURAL_META_KEY", "NUMBER_INSTRUCTION",
           "WorkedInWords", "answer_line", "chosen", "in_words", "instruction", "listed_numbers",
           "mcq_prompt", "natural_target", "spaced", "what_is", "worked_free_form"]
