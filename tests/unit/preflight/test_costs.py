"""Costs before compute: the work of each stage (counted by hand here), the estimate from
measured rates, the evaluation warning, and the dry runs that print them without starting
anything."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from breadth import cli
from breadth.config import load_config
from breadth.preflight.costs import (
    eval_heavy_warning,
    measured,
    measured_rates,
    plan,
    rate_key,
    record_rate,
)

# A config small enough to count by hand.
SMALL = ["data.num_train=4000", "data.num_eval=64", "sft.epochs=2", "sft.batch_size=10", "rl.max_steps=3", "rl.prompts_per_step=2",
         "rl.num_generations=4", "rl.max_completion_length=5", "rollout.num_samples=5",
         "rollout.max_new_tokens=7", "evaluation.search_budget=6",
         "evaluation.transfer_split_k=4"]


def test_the_plan_counts_every_stage_as_by_hand():
    config = load_config("default", SMALL)
    works = {w.stage: w for w in plan(config, num_train=25, num_eval=7)}
    assert list(works) == ["sft", "rl", "rollout-sft", "rollout-rl", "search-sft", "search-rl"]
    # SFT: ceil(25 / 10) = 3 batches an epoch, 2 epochs: 6 steps over 50 examples.
    assert (works["sft"].steps, works["sft"].samples, works["sft"].work) == (6, 50, 50)
    # GRPO: 3 steps x 2 prompts x 4 generations = 24 completions of at most 5 tokens.
    assert (works["rl"].steps, works["rl"].samples, works["rl"].work) == (3, 24, 120)
    # Rollouts: 7 problems x 5 samples of at most 7 tokens, per model.
    assert (works["rollout-rl"].samples, works["rollout-rl"].work) == (35, 245)
    # Search: 6 samples a problem for evolution and 6 for independent sampling, at most.
    assert (works["search-sft"].samples, works["search-sft"].at_most) == (84, True)


def test_switched_off_stages_have_no_work():
    config = load_config("default", [*SMALL, "sft.enabled=false", "evaluation.search_budget=0"])
    assert [w.stage for w in plan(config, 25, 7)] == ["rl", "rollout-base", "rollout-rl"]


def test_the_warning_comes_past_ten_times_the_grpo_completions_and_names_the_keys():
    config = load_config("default", SMALL)
    # 7 problems: 2 x 35 + 2 x 84 = 238 samples, under 10 x 24 = 240: no warning.
    assert eval_heavy_warning(config, plan(config, 25, 7)) is None
    # 8 problems: 2 x 40 + 2 x 96 = 272.
    warning = eval_heavy_warning(config, plan(config, 25, 8))
    assert warning is not None
    assert "up to 272 samples, 11x the 24 completions GRPO trains on" in warning
    for key in ("data.num_eval (now 8 problems)", "rollout.num_samples (now 5)",
                "evaluation.search_budget (now 6"):
        assert key in warning
    no_rl = load_config("default", [*SMALL, "rl.enabled=false"])
    assert eval_heavy_warning(no_rl, plan(no_rl, 25, 1000)) is None  # nothing trained by sampling


def test_the_estimate_is_the_work_at_the_recorded_pace(tmp_path):
    config = load_config("default", SMALL)
    works = {w.stage: w for w in plan(config, num_train=25, num_eval=7)}
    assert measured_rates(tmp_path) == {}
    # An earlier run's SFT: 50 examples in 10 s, then 50 in 15 s: 100 examples in 25 s.
    record_rate(config, works["sft"], 10.0, home=tmp_path)
    record_rate(config, works["sft"], 15.0, home=tmp_path)
    # A search that drew 42 of its 84 samples (294 sample-tokens) in 3 s.
    record_rate(config, works["search-sft"], 3.0, samples=42, home=tmp_path)
    (tmp_path / "rates.jsonl").open("a").write("not json\n")  # a line cut by a crash
    rates = measured_rates(tmp_path)
    assert rates[rate_key(config, "sft")].per_second == pytest.approx(4.0)
    assert rates[rate_key(config, "sft")].runs == 2
    assert rates[rate_key(config, "search")].per_second == pytest.approx(98.0)
    assert rate_key(config, "rl") not in rates
    # Another model has its own pace: none measured.
    other = load_config("default", [*SMALL, "model.hidden_size=256"])
    assert rate_key(other, "sft") not in rates


def test_a_stage_records_its_pace_only_when_it_finishes(tmp_path, monkeypatch):
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path / "home"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(json.dumps({"counts": {"train": 25, "eval": 7}}))
    config = load_config("default", SMALL)
    with measured(config, "rollout-sft", data):
        pass
    with pytest.raises(RuntimeError), measured(config, "rollout-rl", data):
        raise RuntimeError("the stage failed")
    with measured(config, "rl", data, record=False):  # e.g. a resumed training
        pass
    records = [json.loads(line) for line in (tmp_path / "home" / "rates.jsonl").open()]
    assert [(r["stage"], r["samples"], r["work"]) for r in records] == [("rollout-sft", 35, 245)]


@pytest.fixture
def runner(monkeypatch, tmp_path):
    from breadth.cli import stack

    monkeypatch.setattr(stack, "bring_up_stack", lambda **_: pytest.fail("the stack was started"))
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_LOCAL_STORAGE_PATH", raising=False)
    monkeypatch.delenv("BREADTH_WORK_DIR", raising=False)
    return CliRunner()


def test_run_dry_run_prints_the_work_and_estimates_only_what_was_measured(runner, tmp_path):
    config = load_config("default", SMALL)
    sft = plan(config, num_train=4000, num_eval=64)[0]
    record_rate(config, sft, 80.0, home=tmp_path)  # 8,000 examples in 80 s: 100 a second
    result = runner.invoke(cli.app, ["run", "--dry-run", *(f"--set={o}" for o in SMALL)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "data: 4,000 training and 64 evaluation problems" in out
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
            for line in out.splitlines() if line.startswith("│")}
    # 800 steps x 10 examples = 8,000 examples at 100 a second.
    assert rows["sft"][:4] == ["800 steps x batch 10 (2 epochs of 4,000 problems)", "8,000",
                               "800", "1m20s"]
    assert rows["rl"][1:5] == ["24", "3", "?", "no measured rate"]
    assert rows["search-rl"][1] == "≤ 768"
    assert "estimate: at least 1m20s; no measured rate for rl, rollout-sft" in " ".join(out.split())
    # 2 x 320 + 2 x 768 samples against 24 completions.
    assert "warning: evaluation generates up to 2,176 samples, 91x" in " ".join(out.split())
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


def test_run_dry_run_refuses_data_that_cannot_be_prepared(runner, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "1+1"}\n')  # no answer
    result = runner.invoke(cli.app, ["run", "--dry-run", f"--set=data.source=jsonl:{bad}"])
    assert result.exit_code == 2, result.output
    # The fit check prepares the rows first (preflight.check_fit) and names the bad row.
    assert "preparing the data failed (checked before anything starts)" in result.output
    assert "1 bad row(s)" in result.output


def test_grid_dry_run_counts_a_stage_that_cells_share_once(runner):
    from breadth.study.grid_design import GridConfig

    args = ["--format", "free_form", "--reward", "correctness", "--reward", "darling",
            "--seed", "0", "--set", "data.num_eval=16"]
    result = runner.invoke(cli.app, ["grid", "--dry-run", *args])
    assert result.exit_code == 0, result.output
    cells = GridConfig(formats=["free_form"], rewards=["correctness", "darling"], seeds=[0],
                       overrides=["data.num_eval=16"]).cells()
    works = [{w.stage: w.samples for w in plan(config, 4000, 16)} for *_, config in cells]
    generated = [line.split("│")[5].strip() for line in result.output.splitlines()
                 if line.startswith("│")]
    everything = sum(s for stage, s in works[0].items() if stage != "sft")
    # The second objective trains its own GRPO from the same SFT model: the SFT model's
    # rollouts and search are the first cell's.
    reused = works[1]["rollout-sft"] + works[1]["search-sft"]
    assert generated == [f"{everything:,}", f"{everything - reused:,}"]


def test_the_flow_logs_the_plan_and_the_warning(tmp_path, caplog, monkeypatch):
    import logging

    from breadth.preflight.costs import log_plan

    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))  # no rates recorded there
    (tmp_path / "manifest.json").write_text(json.dumps({"counts": {"train": 25, "eval": 8}}))
    caplog.set_level(logging.INFO, logger="breadth.preflight.costs")
    log_plan(load_config("default", SMALL), tmp_path)
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    line = "rl: 3 steps x 2 prompts x 4 generations = 24 samples, 3 steps; no measured rate"
    assert ("INFO", line) in messages
    assert messages[-1][0] == "WARNING" and "11x the 24 completions" in messages[-1][1]


def test_a_plan_that_cannot_be_made_warns_and_never_stops_the_run(tmp_path, caplog):
    from breadth.preflight.costs import log_plan

    log_plan(load_config("default", SMALL), tmp_path / "no-such-data")
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "no plan of the run's work" in caplog.records[0].getMessage()
