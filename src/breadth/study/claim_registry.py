"""What each claim pre-registers before any grid runs: its smallest effect of interest (δ), why,
and what its source paper reports. Fixed here, in code, so no δ is chosen after seeing data;
`docs/design/algorithms.md` gives the same table and the reasoning.

δ is on the row's own scale (a difference of proportions, a count of answers per problem, a
share of tokens). An interval inside ±δ (at the family's equivalence level) is the verdict
*no effect*: whatever the true effect is, it is smaller than anything the field would act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from breadth.study.grid_design import PASSK, VECTOR

__all__ = ["DELTAS", "PAPERS", "Smallest", "paper_of"]


@dataclass(frozen=True)
class Smallest:
    delta: float
    why: str


DELTAS: dict[str, Smallest] = {
    "pass@1": Smallest(0.02, "2 points of pass@1: the smallest gain RL papers report as a gain "
                             "(Yue et al. and DARLING tabulate pass@1 to 0.1 points and discuss "
                             "gains of several points)"),
    "pass@n": Smallest(0.05, "5 points of pass@n (pass@k at the largest k): Yue et al.'s "
                             "base-over-RL gaps at large k are 5-20 points"),
    "distinct": Smallest(0.5, "half a distinct outcome per problem (n = 32 samples): one more "
                              "distinct answer on every second problem"),
    "distinct_correct": Smallest(0.25, "a quarter of a distinct correct answer per problem: "
                                       "a distinct right answer found on one problem in four"),
    "forking": Smallest(0.02, "2 points of the share of reasoning tokens above SFT's "
                              "80th-percentile entropy (20% by construction for SFT): a tenth of "
                              "the forking tokens gained or lost"),
    "format": Smallest(0.10, "10 points of relative fall (1 - RL / SFT) between the formats: "
                             "a tenth of the warm start's diversity"),
    "search": Smallest(0.05, "5 points of success at equal budget: the scale of VPO's gains "
                             "(best@30, +0.10 to +0.16)"),
}

# From the project's shared design notes on the algorithms ("What the source papers report"): copies of
# the papers' pages; "abstract only" where no numbers were available. Keys are claims, or
# "claim/objective" where one claim has rows for several objectives.
PAPERS: dict[str, str] = {
    "sharpening": "Yue et al. 2025: base models overtake RL at large k (tens to hundreds); RL "
                  "narrows the set of solvable problems",
    "crossover": "Yue et al. 2025: base pass@k overtakes RL's at k in the tens to hundreds",
    "transfer": "Yue et al. 2025: RL narrows the set of solvable problems (no split by "
                "base-solved reported)",
    "historical": "Song, Kempe, Munos 2025 (abstract only): historical and batch exploration "
                  "both improve accuracy and mitigate the diversity collapse",
    "batch": "Song, Kempe, Munos 2025 (abstract only): historical and batch exploration both "
             "improve accuracy and mitigate the diversity collapse",
    f"pass@k objective/{PASSK}": "Pass@k Training (Chen et al. 2025): not reported (no numbers "
                              "held)",
    f"pass@k objective/{VECTOR}": "VPO best@30, GRPO → VPO: Maze 0.432 → 0.593, MuSiQue 0.728 → "
                               "0.832, EUREQA 0.236 → 0.279, ToolRL 0.925 → 0.952",
    "darling": "DARLING (abstract only): higher pass@1 and pass@k on math than quality-only RL",
    "forking": "80/20 (Wang et al. 2025): ~20% of tokens above entropy 0.672 (Qwen3); training "
               "on them alone +11.04 AIME'25 and +7.71 AIME'24 at 32B, +4.79 / +5.21 at 14B, "
               "comparable at 8B",
    "format": "CoT Encyclopedia 2025: training-data format shapes reasoning more than domain; "
              "mcq → breadth-first, free-form → depth-first (no collapse rates reported)",
    "search": "VPO: in OpenEvolve, VPO solves some of the 32 hardest problems GRPO never solves "
              "(no success at equal budget reported)",
}


def paper_of(claim: str, objective: str = "") -> str:
    """What the source paper reports for a claim (and objective), or "not reported".

    >>> paper_of("transfer")[:10], paper_of("nonesuch")
    ('Yue et al.', 'not reported')
    """
    return PAPERS.get(f"{claim}/{objective}", PAPERS.get(claim, "not reported"))
