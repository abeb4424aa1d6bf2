"""What each claim pre-registers before any grid runs: its smallest effect of interest (δ), why,
and what its source paper reports. Fixed here, in code, so no δ is chosen after seeing data;
`docs/design/algorithms.md` gives the same table and the reasoning.

δ is on the row's own scale (a difference of proportions, a count of answers per problem, a
share of tokens). An equivalence interval inside ±δ reads *within δ* (`claim_table`): whatever
the true effect is, it is smaller than anything the field would act on.

A δ is either a fixed number or a **rule**: a fixed fraction of the SFT arm's own level of the
row's measure, on the row's problems (the warm start's level, which RL does not move and no
verdict reads), so it follows the task and the number of samples: 4.78 distinct outcomes of
32 on chain and at most 4 on mcq are not one scale. The rule is a formula fixed before data; the
row records the SFT level it read and the δ it gave (`Claim.sft_level`, `Claim.delta`,
`Claim.delta_rule`).

The levels the rules were checked against (committed measurements, before the fresh-seed
nightly): SFT pass@n = pass@32 0.867 on the chain nightly
(`docs/results/superseded/nightly-grid-80e1e8eb/pass_at_k_by_objective.csv`, 15 seeds), 0.459 on the
multi-answer grid (`docs/results/grids/multi-grid-3862d9ef/`); SFT distinct outcomes 4.78
of 32 samples on chain (`docs/results/pilot.json`, 4 seeds; RL's fall beside the nightly's
forking row −0.476); SFT distinct correct outcomes 0.47 on the multi-answer task's eval problems
(`docs/results/grids/multi-grid-3862d9ef/train_eval_gap.md`; the RL arms 0.40–0.46).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from breadth.study.grid_design import PASSK, VECTOR

__all__ = ["DELTAS", "PAPERS", "RENAMED", "Smallest", "paper_of", "today"]

_SCALES = {
    "level": "{level}",
    "above one": "({level} − 1)",
    "headroom": "(1 − {level})",
}
"""What a rule's fraction multiplies: SFT's level, its level above 1 (distinct outcomes: one
answer is full collapse), or what it leaves to gain (1 − a proportion)."""


@dataclass(frozen=True)
class Smallest:
    """A pre-registered δ: `delta` fixed, or `fraction` x `scale` of SFT's `level` (named as
    the row's measure on SFT), at most `cap`."""

    why: str
    delta: float | None = None
    fraction: float | None = None
    scale: str = ""
    """A key of `_SCALES`."""
    level: str = ""
    """The SFT measure the rule reads, as the formula names it (e.g. "SFT pass@n")."""
    cap: float | None = None

    def __post_init__(self):
        if (self.delta is None) == (self.fraction is None):
            raise ValueError(f"a δ is a fixed number or a rule, not both or neither: {self}")
        if self.fraction is not None and (self.scale not in _SCALES or not self.level):
            raise ValueError(f"a δ rule needs a scale of {sorted(_SCALES)} and a level: {self}")

    @property
    def is_rule(self) -> bool:
        return self.fraction is not None

    def formula(self) -> str:
        """The δ as the table prints it before a level is known.

        >>> DELTAS["pass@n"].formula(), DELTAS["pass@1"].formula()
        ('min(0.05, (1 − SFT pass@n) / 4)', '0.02')
        """
        if not self.is_rule:
            return f"{self.delta:g}"
        scaled = _SCALES[self.scale].format(level=self.level)
        share = f"{scaled} / {round(1 / self.fraction):g}" if (1 / self.fraction).is_integer() \
            else f"{self.fraction:g} × {scaled}"
        return share if self.cap is None else f"min({self.cap:g}, {share})"

    def of(self, level: float | None) -> float | None:
        """δ at SFT's `level` (ignored by a fixed δ); None where the rule has no level or
        leaves no room (δ <= 0: SFT at the floor or the ceiling of the measure).

        >>> DELTAS["pass@n"].of(0.867), DELTAS["pass@n"].of(0.459), DELTAS["pass@1"].of(None)
        (0.03325, 0.05, 0.02)
        >>> round(DELTAS["distinct"].of(4.78), 3), DELTAS["distinct"].of(1.0)
        (0.378, None)
        """
        if not self.is_rule:
            return self.delta
        if level is None or not math.isfinite(level):
            return None
        base = {"level": level, "above one": level - 1.0, "headroom": 1.0 - level}[self.scale]
        delta = self.fraction * base
        if self.cap is not None:
            delta = min(self.cap, delta)
        return float(delta) if delta > 0 else None

    def text(self, level: float | None) -> str:
        """What a row's detail says of its δ: the rule, the level it read and the δ it gave.

        >>> DELTAS["pass@n"].text(0.867)
        'δ = min(0.05, (1 − SFT pass@n) / 4) = 0.0333 at SFT pass@n 0.867 (pre-registered rule)'
        >>> DELTAS["distinct"].text(1.0)
        'δ = (SFT distinct outcomes − 1) / 10: none at SFT distinct outcomes 1 (no room to move)'
        """
        if not self.is_rule:
            return f"δ = {self.delta:g} (pre-registered)"
        if level is None or not math.isfinite(level):
            return f"δ = {self.formula()}: none (no SFT level on these problems)"
        delta = self.of(level)
        if delta is None:
            return f"δ = {self.formula()}: none at {self.level} {level:.3g} (no room to move)"
        return (f"δ = {self.formula()} = {delta:.3g} at {self.level} {level:.3g} "
                "(pre-registered rule)")


DELTAS: dict[str, Smallest] = {
    "pass@1": Smallest(
        "2 points of pass@1: the smallest gain RL papers report as a gain (Yue et al. and "
        "DARLING tabulate pass@1 to 0.1 points and discuss gains of several points). Fixed, not "
        "a share of SFT's level: pass@1 is a proportion, and the papers' gains are in points; "
        "at the committed SFT levels (0.51 chain, 0.11-0.13 multi) it is 4% and 15-18% of the "
        "level and 2-4% of the headroom", delta=0.02),
    "pass@n": Smallest(
        "a quarter of what SFT leaves unsolved at n (1 − SFT pass@n), at most 5 points. A rise "
        "cannot exceed that headroom, so a fixed 5 points against chain's 0.133 would read a "
        "rise that closes 38% of the gap as 'within δ'; a fall of 5 points is the smallest "
        "base-over-RL gap at large k in Yue et al. (5-20 points), the cap. Chain nightly: "
        "0.133 / 4 = 0.033; multi-answer: 0.05 (the cap)",
        fraction=0.25, scale="headroom", level="SFT pass@n", cap=0.05),
    "distinct": Smallest(
        "a tenth of SFT's distinct outcomes above one (one answer is a full collapse, so "
        "above one is what a collapse can remove), read at the row's n samples on the row's "
        "problems: chain 4.78 of 32 -> 0.38 (RL's narrowing beside the nightly's forking row, "
        "-0.48, is beyond it; the old ±0.5 held it); mcq, capped at its 4 options, at most 0.3",
        fraction=0.1, scale="above one", level="SFT distinct outcomes"),
    "distinct_correct": Smallest(
        "a tenth of SFT's distinct correct outcomes per problem (its floor is 0: no right "
        "answer): 0.047 at the multi-answer task's 0.47 (the old ±0.25 was over half the level "
        "of every arm, 0.40-0.47)",
        fraction=0.1, scale="level", level="SFT distinct correct outcomes"),
    "forking": Smallest(
        "2 points of the share of reasoning tokens above SFT's 80th-percentile entropy: a "
        "tenth of SFT's share, which is 20% by construction (so fixed: SFT's level is the "
        "threshold's definition, not a measurement)", delta=0.02),
    "format": Smallest(
        "10 points of relative fall (1 - RL / SFT) between the formats: a tenth of the warm "
        "start's diversity (already a share of SFT's level)", delta=0.10),
    "search": Smallest(
        "5 points of success at equal budget: the scale of VPO's gains (best@30, +0.10 to "
        "+0.16); no grid has measured it yet", delta=0.05),
    # Issue #52 item 4: UCB on its paper's pass@k and diversity, and coverage as Yue et al. mean it.
    "ucb pass@n": Smallest(
        "as pass@n's rule, a quarter of what SFT leaves unsolved at n, at most 5 points: UCB's "
        "gain in pass@k over correctness is bounded by that headroom too (RL at correctness "
        "sits near SFT at n: the chain nightly's Δ pass@32 -0.008), and 5 points is the "
        "smallest pass@k gap at large k the field reports (Yue et al.)",
        fraction=0.25, scale="headroom", level="SFT pass@n", cap=0.05),
    "ucb distinct": Smallest(
        "a twentieth of SFT's distinct outcomes above one: UCB's claim is that it mitigates "
        "the collapse correctness causes, which on chain was -0.48 of SFT's 3.78 above one "
        "(about a tenth, `distinct`'s δ); half of that collapse is the smallest mitigation of "
        "interest: 0.19 at chain's 4.78 of 32 samples, at most 0.15 on mcq's 4 options",
        fraction=0.05, scale="above one", level="SFT distinct outcomes"),
    "coverage": Smallest(
        "5 points of a split's problems: pass@n's cap, the smallest base-over-RL gap at large "
        "k in Yue et al. (5-20 points); the coverage rows split that gap by whether SFT "
        "solved the problem, each row on its own split. Fixed, not a share of SFT's "
        "level on the split: SFT's held-out level is near 1 on the problems it solved in its "
        "first half and near 0 on the rest by selection, so neither is the room a loss or a "
        "gain has", delta=0.05),
}

RENAMED: dict[str, str] = {
    "transfer": "diversity on unsolved",
    "forking": "forking share",
}
"""Claims renamed by #52 item 4 to what they measure: {name in tables written before, name
today}. A committed table keeps its names (each row was decided with the sign it had); the
names are matched through this where a row is looked up by claim (a `--reference` table, a
pilot's measure)."""

# From the project's shared design notes on the algorithms ("What the source papers report"): copies of
# the papers' pages; "abstract only" where no numbers were available. Keys are claims, or
# "claim/objective" where one claim has rows for several objectives.
PAPERS: dict[str, str] = {
    "sharpening": "Yue et al. 2025: base models overtake RL at large k (tens to hundreds); RL "
                  "narrows the set of solvable problems",
    "crossover": "Yue et al. 2025: base pass@k overtakes RL's at k in the tens to hundreds",
    "coverage": "Yue et al. 2025: RL narrows the set of solvable problems: the problems RL "
                "solves are nearly a subset of the base's (a loss of some, a gain of few; here "
                "a fall or no change in the gained row agrees, a rise refutes)",
    "diversity on unsolved": "not Yue et al.'s claim (theirs is coverage, the coverage rows): "
                             "distinct outcomes, mostly wrong, on the problems SFT does not "
                             "solve; no paper reports it",
    "historical": "Song, Kempe, Munos 2025 (abstract only): historical and batch exploration "
                  "both improve accuracy and mitigate the diversity collapse",
    "batch": "Song, Kempe, Munos 2025 (abstract only): historical and batch exploration both "
             "improve accuracy and mitigate the diversity collapse",
    f"pass@k objective/{PASSK}": "Pass@k Training (Chen et al. 2025): not reported (no numbers "
                              "held)",
    f"pass@k objective/{VECTOR}": "VPO best@30, GRPO → VPO: Maze 0.432 → 0.593, MuSiQue 0.728 → "
                               "0.832, EUREQA 0.236 → 0.279, ToolRL 0.925 → 0.952",
    "darling": "DARLING (abstract only): higher pass@1 and pass@k on math than quality-only RL",
    "forking share": "not the 80/20 paper's claim: Wang et al. 2025 find ~20% of tokens above "
                     "entropy 0.672 (Qwen3) and train on them alone (+11.04 AIME'25, +7.71 "
                     "AIME'24 at 32B, +4.79 / +5.21 at 14B, comparable at 8B). This row "
                     "measures whether RL changes the share of tokens above SFT's 80th-"
                     "percentile entropy, which they do not claim",
    "format": "CoT Encyclopedia 2025: training-data format shapes reasoning more than domain; "
              "mcq → breadth-first, free-form → depth-first (no collapse rates reported)",
    "search": "VPO: in OpenEvolve, VPO solves some of the 32 hardest problems GRPO never solves "
              "(no success at equal budget reported)",
}


def paper_of(claim: str, objective: str = "") -> str:
    """What the source paper reports for a claim (and objective), or "not reported".

    >>> paper_of("coverage")[:10], paper_of("nonesuch")
    ('Yue et al.', 'not reported')
    """
    return PAPERS.get(f"{claim}/{objective}", PAPERS.get(claim, "not reported"))


def today(claim: str) -> str:
    """A claim's name today (`RENAMED`), for a row of a table written before.

    >>> today("forking"), today("sharpening")
    ('forking share', 'sharpening')
    """
    return RENAMED.get(claim, claim)
