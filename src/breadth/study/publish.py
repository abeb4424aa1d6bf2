"""A grid's claims, published: its study frame loaded back from MLflow, every claim evaluated,
the report written. The one sequence behind `breadth compare --grid` (the CLI) and the grid
flow's claims task (`tasks/claims.py`); what each does with the files is its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from breadth.study import claims as study_claims
from breadth.study import curves as study_curves
from breadth.study import frame as study_frame
from breadth.study import report as study_report
from breadth.study.budget import NightlyBudget, nightly_budget, plan_text, row_name
from breadth.study.claim_table import Claim

# Modules, not their names: a test that fakes MLflow replaces the loader where it lives.
from breadth.study.grid_settings import ClaimSettings
from breadth.study.power import PilotSizing
from breadth.study.reference import ReferenceTable

__all__ = ["PublishedClaims", "publish_claims"]


@dataclass(frozen=True)
class PublishedClaims:
    claims: list[Claim]
    paths: list[Path]
    """claims.md, claims.json, pass_at_k_by_objective.png and .csv, then the training curves'
    figures and CSVs where the grid logged them (`write_study_report`)."""

    @property
    def markdown(self) -> Path:
        """claims.md: the provenance header, the table and its details."""
        return self.paths[0]


def publish_claims(tracking_uri: str, grid_id: str, out_dir: Path, settings: ClaimSettings, *,
                   command: str = "", note: str = "",
                   pilot: PilotSizing | None = None,
                   reference: ReferenceTable | None = None) -> PublishedClaims:
    """Grid `grid_id`'s claims report in `out_dir`, its header the grid's provenance, then
    `command` (the command line that wrote it) and `note` where given. Its "Collapse over
    training steps" section reads each cell's RL training histories (`load_training_histories`);
    a grid that logged none says so there. A power `pilot` (`read_pilot_sizing` of the file
    the caller names) puts its seed sd and seeds needed beside the rows it sized; a `reference`
    (`read_reference`: a fuller grid's claims.json) gives the rows of the formats this grid
    left out, not run, each citing what that grid measured and priced. Inconclusive
    rows price the seeds they need as a nightly of their arms at the grid's stage work, against
    the settings' nightly hours and workers (`breadth.study.budget.nightly_budget`), and the
    table ends with the nightly that would decide the most of them (`nightly_plan`).

    A grid whose cells lack their per-problem tables raises FileNotFoundError naming the run
    (`load_study_frame`): a claim must not silently lose an arm.
    """
    frame = study_frame.load_study_frame(tracking_uri, grid_id)
    provenance = study_frame.grid_provenance(tracking_uri, grid_id)
    header = study_frame.provenance_header(provenance, command)
    header += f"\n\n{note.strip()}" if note.strip() else ""
    budget = nightly_budget(provenance, settings.nightly_workers, settings.nightly_hours)
    claims = study_claims.evaluate_claims(frame, settings, pilot, budget, reference)
    training = study_curves.training_curves(
        study_frame.load_training_histories(tracking_uri, frame), confidence=settings.confidence)
    paths = study_report.write_study_report(frame, claims, Path(out_dir), header=header,
                                            settings=settings, training=training,
                                            plan=nightly_plan(claims, budget))
    return PublishedClaims(claims, paths)


def nightly_plan(claims: list[Claim], budget: NightlyBudget | None) -> str:
    """The nightly that decides the most of the priced (inconclusive) rows, "" where none is."""
    priced = [(row_name(c.claim, c.format, c.measure), c.power.price.arms, c.power.price.seeds)
              for c in claims if c.power is not None and c.power.price is not None]
    return plan_text(priced, budget) if priced and budget is not None else ""
