"""Search at test time against an abstract sampler: evolutionary search vs independent sampling.

Evolutionary search (AlphaEvolve / OpenEvolve style, reduced to its core): each problem keeps
a population of scored attempts; every generation picks parents by verifier score
(tournament or top-m), shows them with their scores in a child prompt, samples children,
scores them and keeps the best `population_size`. It stops when the problem's sample budget
is spent (or, by default, once it is solved: later samples cannot change "solved within s").
The report is success rate against samples spent, next to independent sampling from the
plain prompt with the same budget.

Nothing here knows about models: a `Sampler` maps (prompts, n per prompt, seed) to texts, a
scorer maps (text, row) to anything with `.score` and `.correct` (e.g.
`breadth.data.generators.verify`, which returns a `Verification`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from breadth.evaluation.search_results import Attempt, SearchComparison, SearchResult

__all__ = [
    "CHILD_PROMPT_TEMPLATE",
    "EvolutionConfig",
    "Sampler",
    "Scorer",
    "SearchComparison",
    "SearchResult",
    "build_child_prompt",
    "compare_search",
    "evolutionary_search",
    "independent_sampling",
    "select_parents",
]

Sampler = Callable[[list[str], int, int], list[list[str]]]
"""(prompts, n samples per prompt, seed) -> one list of n completion texts per prompt."""


class Scored(Protocol):
    score: float
    correct: bool


Scorer = Callable[[str, Mapping[str, Any]], Scored]
"""(completion text, rendered row) -> an object with .score and .correct (a Verification)."""

# The attempts come first and the problem prompt last, so the prompt's own answer cue (e.g.
# "Answer:") is what the model continues from, exactly as in independent sampling.
CHILD_PROMPT_TEMPLATE = "Attempts (score, higher is better):\n{attempts}\n{prompt}"
ATTEMPT_LINE = "[{score:.2f}] {text}"


@dataclass(frozen=True)
class EvolutionConfig:
    """Settings of `evolutionary_search`; every random choice derives from `seed`."""

    sample_budget: int = 64
    """Samples per problem, initial population included."""
    initial_samples: int = 8
    """Generation 0: samples from the plain problem prompt."""
    children_per_generation: int = 8
    """Samples drawn from each child prompt per generation."""
    population_size: int = 8
    """Best attempts kept per problem (by score; earlier attempt wins a tie)."""
    num_parents: int = 2
    """Attempts shown in a child prompt."""
    selection: Literal["tournament", "top_m"] = "tournament"
    tournament_size: int = 3
    max_attempt_chars: int = 200
    """Each parent is cut to this many characters (prompts stay short for small models)."""
    stop_when_solved: bool = True
    seed: int = 0
    template: str = CHILD_PROMPT_TEMPLATE

    def __post_init__(self) -> None:
        positive = ("sample_budget", "initial_samples", "children_per_generation",
                    "population_size", "num_parents", "tournament_size", "max_attempt_chars")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"EvolutionConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.selection not in ("tournament", "top_m"):
            raise ValueError(
                f"EvolutionConfig.selection must be 'tournament' or 'top_m', got {self.selection!r}"
            )
        if "{prompt}" not in self.template or "{attempts}" not in self.template:
            raise ValueError("EvolutionConfig.template must contain {prompt} and {attempts}")


def build_child_prompt(
    prompt: str,
    parents: Sequence[Attempt],
    *,
    template: str = CHILD_PROMPT_TEMPLATE,
    max_attempt_chars: int = 200,
) -> str:
    """The problem prompt with the parents and their scores, best first, one line each.

    Parent text is flattened to one line of printable ASCII (the tiny character-level model
    knows nothing else) and cut to `max_attempt_chars`.

    >>> print(build_child_prompt("2+2=", [Attempt("5", 0.0, False), Attempt("4\\n", 1.0, True)]))
    Attempts (score, higher is better):
    [1.00] 4
    [0.00] 5
    2+2=
    """
    ordered = sorted(parents, key=lambda a: -a.score)
    lines = [
        ATTEMPT_LINE.format(score=a.score, text=_one_line(a.text, max_attempt_chars))
        for a in ordered
    ]
    return template.format(attempts="\n".join(lines), prompt=prompt)


def _one_line(text: str, limit: int) -> str:
    cut = text[:limit]
    return "".join(ch if " " <= ch <= "~" else " " if ch in "\n\r\t" else "?" for ch in cut).strip()


def select_parents(
    population: Sequence[Attempt],
    num_parents: int,
    rng: np.random.Generator,
    selection: str = "tournament",
    tournament_size: int = 3,
) -> list[Attempt]:
    """Distinct parents chosen by score: the top m, or the winners of random tournaments.

    >>> pop = [Attempt("a", 0.1, False), Attempt("b", 0.9, False), Attempt("c", 0.5, False)]
    >>> [p.text for p in select_parents(pop, 2, np.random.default_rng(0), "top_m")]
    ['b', 'c']
    """
    m = min(num_parents, len(population))
    if selection == "top_m":
        order = sorted(range(len(population)), key=lambda i: (-population[i].score, i))
        return [population[i] for i in order[:m]]
    if selection != "tournament":
        raise ValueError(f"selection must be 'tournament' or 'top_m', got {selection!r}")
    remaining = list(range(len(population)))
    chosen = []
    for _ in range(m):
        entrants = rng.choice(
            len(remaining), size=min(tournament_size, len(remaining)), replace=False
        )
        winner = min(entrants, key=lambda j: (-population[remaining[j]].score, remaining[j]))
        chosen.append(population[remaining.pop(int(winner))])
    return chosen


def evolutionary_search(
    problems: Sequence[Mapping[str, Any]],
    sampler: Sampler,
    scorer: Scorer,
    config: EvolutionConfig | None = None,
) -> SearchResult:
    """Run evolutionary search on every problem (rows with `prompt`, ideally `problem_id`).

    Generation 0 samples `initial_samples` from the plain prompt; each later generation
    samples `children_per_generation` from one child prompt per active problem, until each
    problem's `sample_budget` is spent. Calls to the sampler batch all active problems.

    >>> rows = [{"problem_id": "p", "prompt": "1+1=", "answer": "2"}]
    >>> sampler = lambda prompts, n, seed: [["2"] * n for _ in prompts]
    >>> scorer = lambda text, row: Attempt(text, float(text == row["answer"]), text == row["answer"])
    >>> evolutionary_search(rows, sampler, scorer, EvolutionConfig(sample_budget=4, initial_samples=2)).first_success
    [1]
    """
    cfg = config or EvolutionConfig()
    rng = np.random.default_rng(cfg.seed)
    num = len(problems)
    populations: list[list[Attempt]] = [[] for _ in range(num)]
    spent = [0] * num
    first: list[int | None] = [None] * num
    num_correct = [0] * num
    best = [-np.inf] * num

    def record(p: int, texts: list[str]) -> None:
        for text in texts:
            v = scorer(text, problems[p])
            spent[p] += 1
            attempt = Attempt(text, float(v.score), bool(v.correct))
            num_correct[p] += attempt.correct
            best[p] = max(best[p], attempt.score)
            if attempt.correct and first[p] is None:
                first[p] = spent[p]
            populations[p].append(attempt)
        # Keep the best; a stable sort lets the earlier attempt win a tie.
        populations[p] = sorted(populations[p], key=lambda a: -a.score)[: cfg.population_size]

    generation = 0
    while True:
        active = [
            p
            for p in range(num)
            if spent[p] < cfg.sample_budget and not (cfg.stop_when_solved and first[p] is not None)
        ]
        if not active:
            break
        want = cfg.initial_samples if generation == 0 else cfg.children_per_generation
        by_n: dict[int, list[int]] = {}
        for p in active:
            by_n.setdefault(min(want, cfg.sample_budget - spent[p]), []).append(p)
        for n, members in sorted(by_n.items()):
            if generation == 0:
                prompts = [str(problems[p]["prompt"]) for p in members]
            else:
                prompts = [
                    build_child_prompt(
                        str(problems[p]["prompt"]),
                        select_parents(
                            populations[p], cfg.num_parents, rng, cfg.selection, cfg.tournament_size
                        ),
                        template=cfg.template,
                        max_attempt_chars=cfg.max_attempt_chars,
                    )
                    for p in members
                ]
            texts = _call_sampler(sampler, prompts, n, _derive_seed(cfg.seed, generation, n))
            for p, outs in zip(members, texts):
                record(p, outs)
        generation += 1
    return SearchResult(
        method="evolutionary",
        budget=cfg.sample_budget,
        problem_ids=_ids(problems),
        first_success=first,
        num_correct=num_correct,
        samples_spent=spent,
        best_score=[float(b) for b in best],
    )


def independent_sampling(
    problems: Sequence[Mapping[str, Any]],
    sampler: Sampler,
    scorer: Scorer,
    budget: int,
    seed: int = 0,
) -> SearchResult:
    """`budget` independent samples per problem from the plain prompt, in one sampler call.

    >>> rows = [{"problem_id": "p", "prompt": "1+1=", "answer": "2"}]
    >>> sampler = lambda prompts, n, seed: [["3", "2"] for _ in prompts]
    >>> scorer = lambda text, row: Attempt(text, float(text == row["answer"]), text == row["answer"])
    >>> independent_sampling(rows, sampler, scorer, budget=2).success_curve()
    [(1, 0.5), (2, 1.0)]
    """
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    texts = _call_sampler(sampler, [str(p["prompt"]) for p in problems], budget, seed)
    first: list[int | None] = []
    num_correct, best = [], []
    for row, outs in zip(problems, texts):
        verdicts = [scorer(t, row) for t in outs]
        flags = [bool(v.correct) for v in verdicts]
        first.append(flags.index(True) + 1 if any(flags) else None)
        num_correct.append(sum(flags))
        best.append(max(float(v.score) for v in verdicts))
    return SearchResult(
        method="independent",
        budget=budget,
        problem_ids=_ids(problems),
        first_success=first,
        num_correct=num_correct,
        samples_spent=[budget] * len(problems),
        best_score=best,
        exchangeable=True,
    )


def compare_search(
    problems: Sequence[Mapping[str, Any]],
    sampler: Sampler,
    scorer: Scorer,
    config: EvolutionConfig | None = None,
) -> SearchComparison:
    """Evolutionary search and independent sampling with the same per-problem sample budget."""
    cfg = config or EvolutionConfig()
    return SearchComparison(
        evolutionary=evolutionary_search(problems, sampler, scorer, cfg),
        independent=independent_sampling(
            problems, sampler, scorer, cfg.sample_budget, seed=cfg.seed
        ),
    )


def _call_sampler(sampler: Sampler, prompts: list[str], n: int, seed: int) -> list[list[str]]:
    texts = sampler(prompts, n, seed)
    _check_shape(texts, len(prompts), n, "sampler")
    return [[t if isinstance(t, str) else "" for t in outs] for outs in texts]


def _check_shape(texts, num_prompts: int, n: int, who: str) -> None:
    if len(texts) != num_prompts or any(len(t) != n for t in texts):
        got = [len(t) for t in texts][:5]
        raise ValueError(
            f"{who} returned {len(texts)} lists (lengths {got}...) for {num_prompts} prompts x {n} "
            "samples; it must return one list of n texts per prompt"
        )


def _derive_seed(seed: int, generation: int, n: int) -> int:
    # Distinct, reproducible seeds per generation and batch size (no shared random stream).
    return int(np.random.SeedSequence([seed, generation, n]).generate_state(1)[0])


def _ids(problems: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(p.get("problem_id", i)) for i, p in enumerate(problems)]
