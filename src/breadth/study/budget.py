"""What a nightly can afford, each claim row priced at its own arms, and the nightly that
decides the most rows within its hours.

A grid's stage work splits in two (`tasks/stage_keys.py`): a seed's *warm start* (data, model
init, SFT, and the SFT model's rollouts and search), whose cache keys do not read the RL
config, so every objective of a seed shares it; and each objective's *own* stages (RL, the RL
model's rollouts and search, evaluate). A nightly of S seeds running k objectives of one
format costs S x (warm start + k x objective) minutes of stage work, spread over its workers.

A row is priced at its arms (the objectives it compares, in its format; the format claim:
correctness in both formats), not at every cell its grid ran, since a nightly may be thinned to
them (issue #26: "drop or thin cells rather than miss that"). Hours are stage work over the
workers, none of them idle: a seed's objectives wait on its warm start, so a real night can
take longer. The seeds a row needs come from its grid's spread at that grid's family size:
a thinned nightly decides fewer rows, so Holm asks less of each, and fewer seeds would do.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["WARM_START_STAGES", "FormatCost", "NightlyBudget", "NightlyPlan", "RowPrice",
           "arms_text", "nightly_budget", "plan_nightly", "plan_text", "row_arms", "row_name"]

WARM_START_STAGES = frozenset({"prepare", "init-model", "sft", "rollout-sft", "search-sft",
                               "rollout-base", "search-base"})
"""The stages whose cache keys (`tasks/stage_keys.py`) do not read the RL config: one run per
seed and format, whatever objectives the seed runs."""

Arms = Mapping[str, Collection[str]]
"""format -> the objectives a row (or a nightly) runs in it."""


def row_arms(fmt: str, objectives: Sequence[str]) -> dict[str, list[str]]:
    """A row's arms by format: "both" (the format claim) runs its objectives in each format.

    >>> row_arms("both", ["correctness"])
    {'free_form': ['correctness'], 'mcq': ['correctness']}
    """
    formats = ("free_form", "mcq") if fmt == "both" else (fmt,)
    return {f: list(objectives) for f in formats}


def arms_text(arms: Arms) -> str:
    """'free_form: correctness, vector; mcq: correctness'."""
    return "; ".join(f"{fmt}: {', '.join(objectives)}" for fmt, objectives in arms.items())


def row_name(claim: str, fmt: str, measure: str) -> str:
    """A row as a plan names it: its claim, format and the head of its measure.

    >>> row_name("sharpening", "free_form", "Δ pass@n, RL − SFT (correctness)")
    'sharpening (free_form, Δ pass@n)'
    """
    return f"{claim} ({fmt}, {measure.split(',')[0]})"


@dataclass(frozen=True)
class FormatCost:
    """One format's minutes of stage work, as its grid measured them."""

    warm_start: float
    """A seed's warm start, shared by its objectives."""
    objective: float
    """One objective's own stages."""
    split: bool = True
    """False: the grid's minutes were not split by stage; `warm_start` holds a full seed's, so a
    thinner seed is priced as a full one (an upper bound)."""

    def seed_minutes(self, objectives: int) -> float:
        """One seed of `objectives` objectives.

        >>> FormatCost(10.0, 4.0).seed_minutes(2), FormatCost(30.0, 0.0, split=False).seed_minutes(1)
        (18.0, 30.0)
        """
        return self.warm_start + objectives * self.objective


@dataclass(frozen=True)
class RowPrice:
    """What the seeds a row needs cost as a nightly of its arms."""

    arms: dict[str, list[str]]
    seed_minutes: float
    seeds: int | None
    """Seeds for a verdict (None: more than any sizing gives)."""
    fits: bool
    seeds_within: int
    """The most seeds of these arms the nightly holds."""
    workers: int
    nightly_hours: float
    split: bool = True
    pilot_sized: bool = False
    pilot_seeds: int | None = None

    def hours(self, seeds: int | None) -> float | None:
        return None if seeds is None else seeds * self.seed_minutes / self.workers / 60.0

    def cost(self, seeds: int | None) -> str:
        """'17 seeds take 3.7 h', or 'more than 200 seeds'."""
        return ("more than 200 seeds" if seeds is None
                else f"{seeds} seeds take {self.hours(seeds):.1f} h")

    def text(self) -> str:
        """The clause an inconclusive row adds to its details."""
        arms = arms_text(self.arms)
        whole = "" if self.split else (", a full seed of the grid's cells (its stage work is not "
                                       "split by stage)")
        pilot = f" (the pilot's {self.cost(self.pilot_seeds)})" if self.pilot_sized else ""
        head = (f"a nightly of its arms ({arms}), at {self.seed_minutes:.0f} min of stage work a "
                f"seed{whole} on {self.workers} workers: {self.cost(self.seeds)}{pilot}")
        if self.fits:
            return f"{head}, within the {self.nightly_hours:g}-h nightly"
        return (f"{head}, beyond the {self.nightly_hours:g}-h nightly, which holds "
                f"{self.seeds_within} seeds of them")


@dataclass(frozen=True)
class NightlyBudget:
    """What a nightly can afford, priced at a grid's own stage work per format."""

    costs: Mapping[str, FormatCost]
    workers: int = 2
    hours: float = 3.0

    def prices(self, arms: Arms) -> bool:
        """Whether every format of `arms` has a cost."""
        return bool(arms) and all(fmt in self.costs for fmt in arms)

    def seed_minutes(self, arms: Arms) -> float:
        """One seed of `arms`.

        >>> NightlyBudget({"mcq": FormatCost(10.0, 4.0), "free_form": FormatCost(5.0, 2.0)}
        ...               ).seed_minutes({"mcq": ["a"], "free_form": ["a", "b"]})
        23.0
        """
        return sum(self.costs[fmt].seed_minutes(len(objectives))
                   for fmt, objectives in arms.items())

    def hours_for(self, seeds: int, arms: Arms) -> float:
        """Hours of `seeds` seeds of `arms` on the workers, none of them idle.

        >>> NightlyBudget({"mcq": FormatCost(30.0, 30.0)}).hours_for(4, {"mcq": ["a", "b"]})
        3.0
        """
        return seeds * self.seed_minutes(arms) / self.workers / 60.0

    def holds(self, seeds: int | None, arms: Arms) -> bool:
        """Whether `seeds` seeds (None: more than any sizing gives) of `arms` fit the hours."""
        return seeds is not None and self.hours_for(seeds, arms) <= self.hours

    def seeds_within(self, arms: Arms) -> int:
        """The most seeds of `arms` the hours hold.

        >>> budget = NightlyBudget({"mcq": FormatCost(90.0, 0.0)})
        >>> budget.seeds_within({"mcq": []}), NightlyBudget(budget.costs, hours=2.9).seeds_within({"mcq": []})
        (4, 3)
        """
        seeds = int(self.hours * 60.0 * self.workers // self.seed_minutes(arms))
        # Float division may land a hair below a whole seed that `holds` accepts.
        return seeds + 1 if self.holds(seeds + 1, arms) else seeds

    def price(self, arms: Arms, seeds: int | None, pilot_sized: bool = False,
              pilot_seeds: int | None = None) -> RowPrice | None:
        """`seeds` seeds of `arms` (and the pilot's, where a pilot sized the row); None where a
        format of `arms` has no cost."""
        if not self.prices(arms):
            return None
        return RowPrice({fmt: list(objectives) for fmt, objectives in arms.items()},
                        self.seed_minutes(arms), seeds, self.holds(seeds, arms),
                        self.seeds_within(arms), self.workers, self.hours,
                        all(self.costs[fmt].split for fmt in arms), pilot_sized, pilot_seeds)


def nightly_budget(provenance: Mapping, workers: int = 2, hours: float = 3.0) -> NightlyBudget | None:
    """The budget priced at a grid's provenance (`breadth.study.frame.grid_provenance`): per
    format, its `stage_split` (warm start per seed, own stages per objective); a format without
    one (a grid published before) is priced at its minutes per full seed, its minutes over its
    cells times the most cells one seed ran, whatever a row's arms. None: nothing to price.

    >>> budget = nightly_budget({"stage_split": {"free_form": [9.0, 10.0]},
    ...                          "compute_minutes": {"free_form": 116.0, "mcq": 200.0},
    ...                          "format_cells": {"free_form": [8, 2], "mcq": [4, 1]}})
    >>> budget.costs["free_form"], budget.costs["mcq"]
    (FormatCost(warm_start=9.0, objective=10.0, split=True), FormatCost(warm_start=50.0, objective=0.0, split=False))
    >>> nightly_budget({"seeds": 4}) is None
    True
    """
    costs = {fmt: FormatCost(float(warm), float(own))
             for fmt, (warm, own) in (provenance.get("stage_split") or {}).items()
             if warm + own > 0}  # no stage run with times: nothing to price it at
    for fmt, minutes in (provenance.get("compute_minutes") or {}).items():
        cells, full_seed = (provenance.get("format_cells") or {}).get(fmt, (0, 0))
        if fmt not in costs and minutes > 0 and cells > 0:
            costs[fmt] = FormatCost(minutes / cells * full_seed, 0.0, split=False)
    return NightlyBudget(costs, workers, hours) if costs else None


@dataclass(frozen=True)
class NightlyPlan:
    """A nightly that decides `rows` (indices into the rows planned over)."""

    arms: dict[str, list[str]]
    seeds: int
    hours: float
    rows: tuple[int, ...]


def plan_nightly(needs: Sequence[tuple[Arms, int | None]],
                 budget: NightlyBudget) -> NightlyPlan | None:
    """The nightly that decides the most rows within the budget's hours: the union of their
    arms at the most seeds any of them needs; among equals the cheapest, then the first rows.
    `needs` holds each row's (arms, seeds for a verdict). None: no row fits alone.

    A grid runs every objective at every seed, so a set of rows costs its largest seed count
    over all its arms; it fits only if each of its rows fits alone, so the search runs over
    the rows that do.

    >>> budget = NightlyBudget({"ff": FormatCost(10.0, 10.0)}, workers=1, hours=3.0)
    >>> plan_nightly([({"ff": ["a"]}, 6), ({"ff": ["a", "b"]}, 4), ({"ff": ["c"]}, 8)], budget)
    NightlyPlan(arms={'ff': ['a', 'b']}, seeds=6, hours=3.0, rows=(0, 1))
    """
    alone = [i for i, (arms, seeds) in enumerate(needs)
             if budget.prices(arms) and budget.holds(seeds, arms)]
    for size in range(len(alone), 0, -1):
        plans = []
        for rows in itertools.combinations(alone, size):
            arms: dict[str, set[str]] = {}
            for i in rows:
                for fmt, objectives in needs[i][0].items():
                    arms.setdefault(fmt, set()).update(objectives)
            seeds = max(needs[i][1] for i in rows)
            if budget.holds(seeds, arms):
                plans.append(NightlyPlan({fmt: sorted(o) for fmt, o in sorted(arms.items())},
                                         seeds, budget.hours_for(seeds, arms), rows))
        if plans:
            return min(plans, key=lambda plan: plan.hours)
    return None


def plan_text(rows: Sequence[tuple[str, Arms, int | None]], budget: NightlyBudget) -> str:
    """The nightly that decides the most of `rows` (each its name, arms and seeds for a
    verdict), and what it leaves out; or that none fits.

    >>> budget = NightlyBudget({"ff": FormatCost(10.0, 10.0)}, workers=1, hours=3.0)
    >>> print(plan_text([("a", {"ff": ["x"]}, 6), ("b", {"ff": ["x", "y"]}, 9)], budget))
    **The nightly that decides the most of these rows in 3 h**: ff: x; 6 seeds, 2.0 h of stage work on 1 workers. It decides 1 of 2: a. It leaves out b, whose seeds are beyond the hours with them. Seeds are sized at the Holm family of the table they come from; a nightly thinned to fewer arms decides fewer rows, a smaller family, so its rows need somewhat fewer.
    """
    plan = plan_nightly([(arms, seeds) for _, arms, seeds in rows], budget)
    if plan is None:
        return (f"**No nightly of {budget.hours:g} h decides any of these rows**: each needs more "
                f"seeds of its arms than the hours hold. {FAMILY_CAVEAT}")
    decided = [rows[i][0] for i in plan.rows]
    left = [name for i, (name, _, _) in enumerate(rows) if i not in plan.rows]
    return (f"**The nightly that decides the most of these rows in {budget.hours:g} h**: "
            f"{arms_text(plan.arms)}; {plan.seeds} seeds, {plan.hours:.1f} h of stage work on "
            f"{budget.workers} workers. It decides {len(plan.rows)} of {len(rows)}: "
            f"{'; '.join(decided)}. It leaves out {', '.join(left) or 'none'}, whose seeds are "
            f"beyond the hours with them. {FAMILY_CAVEAT}")


FAMILY_CAVEAT = ("Seeds are sized at the Holm family of the table they come from; a nightly "
                 "thinned to fewer arms decides fewer rows, a smaller family, so its rows need "
                 "somewhat fewer.")
