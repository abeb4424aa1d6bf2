"""scripts/results/gpu.py --dry-run: every part of the GPU evidence run, end to end, on a CPU.

The GPU run is one shot on a lent device (15 minutes in all), so what it needs is checked
here first: each kind of part's process once (the dry run's scope: one size, darling's RL arm,
one reward spec), the figures each writes, and the page made from them. The GPU run's full plan,
every size's config, the deadline, the two arms' comparison and the page's layout for two sizes
and arms are tests/unit/scripts/test_gpu.py's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_the_dry_run_runs_each_kind_of_part_and_writes_the_page_from_their_figures(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    done = subprocess.run(
        [sys.executable, "scripts/results/gpu.py", "--dry-run", "--seeds", "0", "--out", str(out),
         "--work", str(work), "--deadline", "840", "--scale-on-cpu", "study",
         # Two at a time, as the cores here: all at once cost more CPU in all.
         "--max-jobs", "2"],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    evidence = json.loads((out / "gpu.json").read_text())
    assert {name: job["state"] for name, job in evidence["jobs"].items()} == {
        name: "ok" for name in [
            "gpu-tests", "big-model",
            "sft-study-s0", "rl-study-s0-darling", "reward-correctness+batch"]}
    # Its 3 pairs came back, each pair's ratio from its own two runs.
    (figures,) = evidence["reward"].values()
    bare, ours = figures["median_step_seconds"].values()
    assert figures["pairs_done"] == 3 and len(bare) == len(ours) == 3
    assert figures["ratios"] == pytest.approx([b / a for a, b in zip(bare, ours)])
    big = evidence["big_model"]
    assert big["dry_run"] and big["parameters"] > 0
    assert set(big["rollout"]["arms"]) == {"bare generate", "breadth transformers backend"}
    assert all(arm["tokens_per_step"] > 0 for arm in big["grpo"]["arms"].values())
    # darling against its SFT start, paired by problem (its control did not run: no Δ between).
    (row,) = evidence["scale"]
    assert (row["size"], row["seed"], list(row["arms"])) == ("study", 0, ["darling"])
    assert set(row["arms"]["darling"]["paired_delta"]) >= {"pass_at_1"}
    assert "darling_minus_control" not in row
    assert evidence["scale_placement"] == {"study": "CPU cores"}  # as --scale-on-cpu said
    assert row["sft_stages"]["sft"]["wall_s"] > 0
    page = (out / "gpu.md").read_text()
    assert "| not run | " in page  # the control's pass@1
    assert page.count("| 0 | darling |") == 1 and "| 0 | correctness@unscaled |" not in page
    assert "**Dry run**" in page and "2 skipped" in page  # no CUDA here: the GPU tests skip
    assert page.count("| 300 ×") == 0 and page.count("| 2 × 3 of 3 |") == 1
    assert (out / "logs.tar.gz").stat().st_size > 0
