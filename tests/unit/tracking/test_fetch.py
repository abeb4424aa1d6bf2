"""fetch_runs / grid_summary / summary_markdown / render_table / plot_grid against a real MLflow
store (sqlite) laid out like the pipeline logs it: parent runs tagged format/reward/seed/grid.id,
evaluate-sft and evaluate-rl children with EvaluationResult.metrics() and the eval/pass_at_k
curve (step=k), the evaluate metrics copied onto the parent as <model>/<name>."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from breadth.evaluation.result import headline_metrics
from breadth.evaluation.summary import evaluate_models
from breadth.study.grid_report import plot_grid, render_table, summary_markdown
from breadth.study.grid_settings import ClaimSettings
from breadth.study.grid_statistics import grid_summary
from breadth.tracking.fetch import GRID_SUMMARY_KIND, CompareError, fetch_runs, previous_grid_id

GRID = "grid-2026-11-22"
FORMATS = ("free_form", "mcq")
REWARDS = ("correctness", "correctness+ucb", "darling")
SEEDS = (0, 1)
PNG = b"\x89PNG\r\n\x1a\n"


def _rollouts(fmt: int, reward: int, seed: int) -> pd.DataFrame:
    """SFT spreads over 8 outcomes per problem; RL over fewer, depending on reward and seed.
    Problems 0-3 (and 4 in mcq) are solvable: their outcome p*100 is correct."""
    rows = []
    spreads = {"sft": 8, "rl": 2 + 2 * reward + seed}
    for model, spread in spreads.items():
        for p in range(8):
            solvable = p < 4 + fmt
            for s in range(16):
                outcome = p * 100 + (s % spread) + (0 if solvable else 1)
                rows.append({"problem_id": f"p{p}", "sample_index": s, "model": model,
                             "outcome": str(outcome), "correct": outcome == p * 100,
                             "score": float(outcome == p * 100)})
    return pd.DataFrame(rows)


def _log(client, run_id: str, metrics: dict[str, float], curves=None, tags=None) -> None:
    """One batch per run (sqlite commits dominate the test's time); `curves` as
    EvaluationResult.curves() gives them (step = k)."""
    from mlflow.entities import Metric, RunTag

    now = int(time.time() * 1000)
    items = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
    items += [Metric(name, float(v), now, int(k)) for name, curve in (curves or {}).items()
              for k, v in curve]
    client.log_batch(run_id, metrics=items, tags=[RunTag(k, v) for k, v in (tags or {}).items()])
    client.set_terminated(run_id)


def _pipeline_run(client, exp, fmt, reward, seed, *, grid=GRID, full_copy=True, evaluate=True,
                  params=None):
    """A parent run with its evaluate children, as tasks/evaluate.py logs them; `params`, the
    config open_parent_run logs on it."""
    tags = {"format": FORMATS[fmt], "reward": REWARDS[reward], "seed": str(seed),
            "preset": "default", "model": "tiny-from-scratch", "config.hash": f"c{fmt}{reward}",
            "dataset.hash": f"d{fmt}{seed}", "prefect.flow_run_id": "f",
            "mlflow.runName": "pipeline-default"}
    if grid:
        tags |= {"grid.id": grid, "grid.cell": f"{FORMATS[fmt]}/{REWARDS[reward]}/seed{seed}"}
    parent = client.create_run(exp, tags=tags).info.run_id
    if params:
        from mlflow.entities import Param

        client.log_batch(parent, params=[Param(k, str(v)) for k, v in params.items()])
    results = evaluate_models(_rollouts(fmt, reward, seed), base_model="sft", num_bootstrap=40,
                              seed=seed, split_k=16, min_split=1)
    metrics = {name: r.metrics() for name, r in results.items()}
    if fmt == 1 and reward == 0:  # only some cells ran the search stage
        metrics["rl"]["search/evolutionary_success"] = 0.5 + 0.25 * seed
    children = {}
    if evaluate:
        for name, result in results.items():
            child = client.create_run(exp, tags={
                "mlflow.parentRunId": parent, "mlflow.runName": f"evaluate-{name}",
                "breadth.stage": f"evaluate-{name}", "breadth.stage_key": f"evaluate-{parent}",
                "model.role": name}).info.run_id
            curves = result.curves()
            _log(client, child, metrics[name],
                 {c: curves[c] for c in ("eval/pass_at_k", "eval/pass_hat_k")})
            children[name] = child
    # publish_report copies the headline metrics onto the parent (full_copy); some runs carry
    # only pass@1 there, the rest only on the evaluate children.
    copied = {
        f"{n}/{k}": v
        for n, m in metrics.items()
        for k, v in headline_metrics(m).items()
        if full_copy or k == "eval/pass_at_1"
    }
    _log(client, parent, copied, tags={"stage_run.evaluate": children["sft"]} if children else {})
    return parent, metrics, results, children


@pytest.fixture(scope="module")
def store(tmp_path_factory, mlflow_db):
    from mlflow import MlflowClient

    # sqlite commits fsync; on tmpfs the ~50 runs take a third of the time they take on disk
    # (the suite runs on 2 shared cores).
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if os.access(shm, os.W_OK) else None) as fast:
        database = mlflow_db(Path(fast).resolve() / "mlflow.db")
        yield _fill_store(MlflowClient(f"sqlite:///{database}"))


def _fill_store(client):
    uri = client.tracking_uri
    exp = client.create_experiment("grid")
    other = client.create_experiment("adhoc")
    logged = {}
    for fmt in range(2):
        for reward in range(3):
            for seed in SEEDS:
                cached = (fmt, reward, seed) == (0, 2, 1)
                run_id, metrics, results, _ = _pipeline_run(
                    client, exp, fmt, reward, seed, full_copy=seed == 0, evaluate=not cached
                )
                if cached:  # evaluate served from cache: the children are an earlier run's
                    _, _, _, children = _pipeline_run(client, other, fmt, reward, seed, grid=None)
                    client.set_tag(run_id, "stage_run.evaluate", children["sft"])
                logged[(FORMATS[fmt], REWARDS[reward], seed)] = (run_id, metrics, results)
    # Noise that must not show up in the grid: its summary run, a failed cell, another grid.
    _log(client, client.create_run(exp, tags={"grid.id": GRID}).info.run_id, {"x/y": 1.0})
    failed = client.create_run(exp, tags={"grid.id": GRID, "format": "mcq", "reward": "passk",
                                          "seed": "0"}).info.run_id
    client.set_terminated(failed, "FAILED")
    _pipeline_run(client, exp, 0, 0, 0, grid="grid-yesterday", evaluate=False)
    return uri, logged


def test_fetch_runs_by_grid_gives_one_row_per_finished_cell_run(store):
    uri, logged = store
    runs = fetch_runs(uri, grid_id=GRID)
    assert len(runs) == 12
    assert set(runs["run_id"]) == {v[0] for v in logged.values()}
    assert list(zip(runs["format"], runs["reward"], runs["seed"])) == sorted(logged)
    assert set(runs["grid_id"]) == {GRID} and set(runs["status"]) == {"FINISHED"}
    assert runs.loc[0, "grid_cell"] == "free_form/correctness/seed0"
    for _, row in runs.iterrows():
        _, metrics, results = logged[(row["format"], row["reward"], row["seed"])]
        # Every metric of both evaluate children, also where the parent got only a subset.
        for model in ("sft", "rl"):
            for name, value in metrics[model].items():
                assert row[f"{model}/{name}"] == pytest.approx(value), (model, name)
            assert row[f"curve_{model}"] == dict(results[model].curves()["eval/pass_at_k"])
            assert row[f"pass_hat_curve_{model}"] == dict(
                results[model].curves()["eval/pass_hat_k"])
        assert sorted(row["curve_rl"]) == sorted(row["pass_hat_curve_rl"]) == [1, 2, 4, 8, 16]


def test_fetch_runs_by_id_keeps_the_given_order(store):
    uri, logged = store
    ids = [logged[("mcq", "darling", 1)][0], logged[("free_form", "correctness", 0)][0]]
    runs = fetch_runs(uri, run_ids=ids)
    assert list(runs["run_id"]) == ids
    assert list(runs["reward"]) == ["darling", "correctness"]
    assert runs.loc[0, "rl/eval/pass_at_1"] == pytest.approx(
        logged[("mcq", "darling", 1)][1]["rl"]["eval/pass_at_1"]
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"run_ids": ["0123abcd"]}, CompareError, r"0123abcd not found .*parent run id"),
        ({"grid_id": "no-such-grid"}, CompareError, r"'no-such-grid' matches nothing.*grid\.id"),
        ({"grid_id": "it's"}, ValueError, r"quote"),
        ({}, ValueError, r"either run_ids or grid_id"),
        ({"run_ids": ["a"], "grid_id": "b"}, ValueError, r"either run_ids or grid_id"),
    ],
)
def test_fetch_runs_errors_name_the_id_and_the_fix(store, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        fetch_runs(store[0], **kwargs)


def test_fetch_runs_points_a_child_run_id_to_its_parent(store):
    from mlflow import MlflowClient

    uri, logged = store
    parent = logged[("mcq", "correctness", 0)][0]
    client = MlflowClient(uri)
    exp = client.get_run(parent).info.experiment_id
    child = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent}'")[0].info.run_id
    with pytest.raises(CompareError, match=f"stage \\(child\\) runs.*{child} -> {parent}"):
        fetch_runs(uri, run_ids=[child])


# The audit's case: a short run and a default one, both free_form / correctness.
SHORT = {"rl.max_steps": 2, "sft.epochs": 1.0, "data.num_train": 200, "rollout.num_samples": 4}
SHORT_LABEL = "data.num_train=200, rl.max_steps=2, rollout.num_samples=4, sft.epochs=1.0"
DEFAULT_LABEL = "data.num_train=9000, rl.max_steps=300, rollout.num_samples=16, sft.epochs=12.0"


def config_params(**changes) -> dict[str, str]:
    """A parent run's params as open_parent_run logs them (PipelineConfig.flat())."""
    from breadth.config import load_config

    return {key: str(value) for key, value in {**load_config("default").flat(), **changes}.items()}


def test_runs_of_one_cell_with_unlike_configs_are_not_pooled_as_seeds(store):
    from mlflow import MlflowClient

    uri, _ = store
    client = MlflowClient(uri)
    exp = client.create_experiment("unlike-configs")
    short = _pipeline_run(client, exp, 0, 0, 0, grid=None, params=config_params(**SHORT))[0]
    # Seeds 0 and 1 of the default config; the preset's name and the experiment are labels.
    default = [_pipeline_run(client, exp, 0, 0, seed, grid=None, params=config_params(
        seed=seed, preset=name, **{"tracking.experiment": name}))[0]
        for seed, name in ((0, "default"), (1, "mine"))]
    runs = fetch_runs(uri, run_ids=[short, *default])
    config = runs.loc[0, "config"]
    assert config["rl.max_steps"] == "2" and config["data.format"] == "free_form"
    assert not {"seed", "preset"} & set(config) and not any(k.startswith("tracking.") for k in config)
    summary = grid_summary(runs)
    differing = ["data.num_train", "rl.max_steps", "rollout.num_samples", "sft.epochs"]
    assert summary.attrs["split_cells"] == {"free_form / correctness": differing}
    rows = {row["config"]: row for _, row in summary.iterrows()}
    assert set(rows) == {SHORT_LABEL, DEFAULT_LABEL}
    pooled = rows[DEFAULT_LABEL]
    assert pooled["seeds"] == 2 and rows[SHORT_LABEL]["seeds"] == 1
    assert rows[SHORT_LABEL]["ci"] == "the run's bootstrap over problems"
    assert pooled["pass_at_1"] == pytest.approx(runs.loc[1:, "rl/eval/pass_at_1"].mean())
    md = summary_markdown(summary)
    assert f"| free_form / correctness [{SHORT_LABEL}] | 1 |" in md


def test_fetch_runs_refuses_a_rerun_of_one_config_and_seed(store):
    """A re-run (same config, same seed) counted as a second seed with the same values, and its
    per-problem rows as more problems: a narrower interval than the data hold."""
    from mlflow import MlflowClient

    uri, _ = store
    client = MlflowClient(uri)
    exp = client.create_experiment("reruns")
    first, again = (_pipeline_run(client, exp, 0, 0, 3, grid=None, params=config_params(seed=3))[0]
                    for _ in range(2))
    with pytest.raises(CompareError, match=f"{again} repeats {first}.*one run per seed"):
        fetch_runs(uri, run_ids=[first, again])
    other_seed = _pipeline_run(client, exp, 0, 0, 4, grid=None, params=config_params(seed=4))[0]
    assert len(fetch_runs(uri, run_ids=[first, other_seed])) == 2


@pytest.mark.parametrize("status", ["FAILED", "RUNNING", "KILLED"])
def test_fetch_runs_refuses_a_run_that_did_not_finish(store, status):
    from mlflow import MlflowClient

    uri, logged = store
    client = MlflowClient(uri)
    exp = client.get_run(logged[("mcq", "correctness", 0)][0]).info.experiment_id
    unfinished = client.create_run(exp, tags={"format": "mcq", "reward": "correctness",
                                              "seed": "1", "config.hash": "c"}).info.run_id
    if status != "RUNNING":
        client.set_terminated(unfinished, status)
    for ids in ([unfinished], [logged[("mcq", "correctness", 0)][0], unfinished]):
        with pytest.raises(CompareError, match=f"{unfinished} is {status}.*FINISHED.*breadth runs"):
            fetch_runs(uri, run_ids=ids)


def test_the_study_frame_of_runs_names_each_rows_run(store, tmp_path):
    """Two runs of one cell and seed (unlike configs) give rows the summary can tell apart."""
    from mlflow import MlflowClient

    from breadth.study.frame import study_frame_of_runs

    uri, _ = store
    client = MlflowClient(uri)
    exp = client.create_experiment("reports", artifact_location=(tmp_path / "a").as_uri())
    ids = []
    for params in (config_params(**SHORT), config_params()):
        run_id, _, results, _ = _pipeline_run(client, exp, 0, 0, 0, grid=None, params=params)
        report = tmp_path / run_id
        report.mkdir()
        for model, result in results.items():
            result.per_problem.reset_index().to_parquet(report / f"per_problem_{model}.parquet")
        client.log_artifacts(run_id, str(report), "report")
        ids.append(run_id)
    frame = study_frame_of_runs(uri, fetch_runs(uri, run_ids=ids))
    assert list(frame["run_id"].unique()) == ids
    assert set(frame["objective"]) == {"correctness"} and set(frame["seed"]) == {0}


def _study_frame(logged) -> pd.DataFrame:
    """The per-problem tables of every cell, as load_study_frame builds them from reports."""
    frames = [result.per_problem.reset_index().assign(format=f, objective=r, seed=s, model=m)
              for (f, r, s), (_, _, results) in logged.items()
              for m, result in results.items()]
    return pd.concat(frames, ignore_index=True)


SPLIT = ClaimSettings(split_k=16, min_split=1, num_resamples=200)  # as the cells were evaluated


def test_grid_summary_is_the_mean_across_seeds_with_a_bootstrap_interval(store):
    uri, logged = store
    summary = grid_summary(fetch_runs(uri, grid_id=GRID), _study_frame(logged), settings=SPLIT)
    assert list(zip(summary["format"], summary["reward"])) == [
        (f, r) for f in FORMATS for r in REWARDS
    ]
    assert set(summary["seeds"]) == {2} and summary.attrs["k"] == 16
    assert set(summary["ci"]) == {"bootstrap over seeds × problems"}
    sources = {"pass_at_1": "eval/pass_at_1", "pass_at_kmax": "eval/pass_at_16",
               "distinct_solved": "transfer/solved/distinct_outcomes",
               "distinct_unsolved": "transfer/unsolved/distinct_outcomes"}
    for _, row in summary.iterrows():
        per_seed = [logged[(row["format"], row["reward"], s)][1] for s in SEEDS]
        for column, name in sources.items():
            values = [m["rl"][name] for m in per_seed]
            assert row[column] == pytest.approx(np.mean(values)), column
            assert row[f"{column}_ci_low"] <= row[column] <= row[f"{column}_ci_high"], column
        for column in ("pass_at_1", "pass_at_kmax", "base_pass_at_1", "base_pass_at_kmax"):
            assert 0.0 <= row[f"{column}_ci_low"] and row[f"{column}_ci_high"] <= 1.0, column
        sft = [m["sft"]["eval/pass_at_1"] for m in per_seed]
        rl = [m["rl"]["eval/pass_at_1"] for m in per_seed]
        assert row["base_pass_at_1"] == pytest.approx(np.mean(sft))
        assert row["pass_at_1_delta"] == pytest.approx(np.mean(rl) - np.mean(sft))
        base_unsolved = [m["rl"]["transfer/unsolved/base/distinct_outcomes"] for m in per_seed]
        assert row["base_distinct_unsolved"] == pytest.approx(np.mean(base_unsolved))
    # Hand-checked cell: free_form / correctness, RL spread 2 (seed 0) and 3 (seed 1) on the
    # 4 unsolved problems, the SFT spread 8 on all of them.
    cell = summary.iloc[0]
    assert (cell["distinct_unsolved"], cell["base_distinct_unsolved"]) == (2.5, 8.0)
    assert cell["pass_at_1"] == pytest.approx(np.mean([0.5 * 8 / 16, 0.5 * 6 / 16]))
    # The search stage ran only in mcq / correctness: its value there, NaN elsewhere.
    search = summary.set_index(["format", "reward"])["search_success"]
    assert search[("mcq", "correctness")] == pytest.approx(0.625)
    assert search.drop(("mcq", "correctness")).isna().all()


def test_summary_markdown_and_rich_table_show_every_cell(store):
    from rich.console import Console

    uri, logged = store
    summary = grid_summary(fetch_runs(uri, grid_id=GRID), _study_frame(logged), settings=SPLIT)
    md = summary_markdown(summary)
    titles = [line for line in md.splitlines() if line.startswith("### ")]
    assert titles[:2] == ["### pass@1", "### pass@16"] and any("search" in t for t in titles)
    tables = md.split("### ")[1:]
    for table in tables:
        rows = [line for line in table.splitlines() if line.startswith("| ")]
        assert len(rows) == 2 + 6  # header, rule, one row per cell
        # Narrow enough for a flow-run page: a cell label and at most four columns.
        assert rows[0].count("|") <= 6 and max(len(r) for r in rows) <= 110, rows[0]
    first = summary.iloc[0]
    assert f"| free_form / correctness | 2 | {first['base_pass_at_1']:.3f} [" in tables[0]
    table = render_table(summary)
    assert table.row_count == 6
    console = Console(record=True, width=400)
    console.print(table)
    text = console.export_text()
    assert "darling" in text and "mcq" in text and "[" in text


def test_plot_grid_writes_the_pass_at_k_pass_hat_k_and_tradeoff_pngs(store, tmp_path):
    runs = fetch_runs(store[0], grid_id=GRID)
    paths = plot_grid(runs, grid_summary(runs), tmp_path / "plots")
    assert [p.name for p in paths] == [
        "pass_at_k_by_format.png",
        "pass_at_1_cost_vs_pass_at_k_gain.png",
        "pass_hat_k_by_format.png",
    ]
    for path in paths:
        assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5_000


# --------------------------------------------------------------------- pure, table-driven



def test_a_cached_evaluate_stage_is_read_from_the_run_that_filled_the_cache(store):
    from mlflow import MlflowClient

    uri, logged = store
    run_id, metrics, results = logged[("free_form", "darling", 1)]
    client = MlflowClient(uri)
    exp = client.get_run(run_id).info.experiment_id
    assert client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{run_id}'") == []
    row = fetch_runs(uri, run_ids=[run_id]).iloc[0]
    assert row["curve_rl"] == dict(results["rl"].curves()["eval/pass_at_k"])
    # The parent got only the pass@k subset; the rest comes from the cached children.
    assert row["rl/transfer/unsolved/distinct_outcomes"] == pytest.approx(
        metrics["rl"]["transfer/unsolved/distinct_outcomes"]
    )


def test_previous_grid_id_is_the_newest_earlier_summary_of_the_same_study(store):
    from mlflow import MlflowClient

    uri, _ = store
    client = MlflowClient(uri)
    experiment = "previous-grid-lookup"
    exp = client.create_experiment(experiment)
    for grid, study in (("g1", "h"), ("g2", "other"), ("g3", "h"), ("g4", "h")):
        client.create_run(exp, tags={"breadth.kind": GRID_SUMMARY_KIND, "grid.id": grid,
                                     "grid.config_hash": study})
        time.sleep(0.01)  # distinct start times
    assert previous_grid_id(uri, experiment, "h", "g4") == "g3"
    assert previous_grid_id(uri, experiment, "other", "g2") is None
    assert previous_grid_id(uri, "no-such-experiment", "h", "g4") is None
    with pytest.raises(ValueError, match="grid id .* quote"):
        previous_grid_id(uri, experiment, "h", "g4' or tags.x = 'y")
