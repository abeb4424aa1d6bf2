"""`breadth runs` and `breadth compare --json` against a real MLflow store (sqlite, no server),
laid out as the pipeline logs it (see tests/unit/tracking/test_fetch.py)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from breadth.cli import app
from breadth.tracking.recent import headline
from tests.unit.tracking.test_fetch import (
    GRID,
    SHORT,
    SHORT_LABEL,
    _log,
    _pipeline_run,
    config_params,
)

runner = CliRunner()
PREFECT_RUN = "http://127.0.0.1:4200/flow-runs/flow-run/0b1c"


@pytest.fixture(scope="module")
def store(mlflow_db):
    """Two grid cells (with evaluate children), a lone run started last, and noise: the grid's
    summary run."""
    from mlflow import MlflowClient

    shm = Path("/dev/shm")  # sqlite on tmpfs: its commits take a third of the time
    with tempfile.TemporaryDirectory(dir=shm if os.access(shm, os.W_OK) else None) as fast:
        client = MlflowClient(f"sqlite:///{mlflow_db(Path(fast).resolve() / 'mlflow.db')}")
        grid = client.create_experiment("grid")
        cells = [_pipeline_run(client, grid, fmt, 0, 0)[0] for fmt in (0, 1)]
        _log(client, client.create_run(grid, tags={"grid.id": GRID}).info.run_id, {"x/y": 1.0})
        adhoc = client.create_experiment("adhoc")
        lone = client.create_run(adhoc, start_time=int(time.time() * 1000) + 60_000,
                                 run_name="default·1a2b3c4d",
                                 tags={"config.hash": "1a2b3c4d", "preset": "default",
                                       "prefect.flow_run_url": PREFECT_RUN,
                                       "breadth.cached": "all"}).info.run_id
        _log(client, lone, {"sft/eval/pass_at_1": 0.25, "sft/eval/pass_at_4": 0.5,
                            "sft/eval/distinct_outcomes": 3.0})
        yield client.tracking_uri, cells, lone


@pytest.fixture(scope="module")
def lone_runs(mlflow_db):
    """Lone runs of one cell (free_form / correctness, seed 0): a short config, the default
    one, and a FAILED run; and a darling run of the short config. Its own store: `breadth
    runs` lists every run of `store`."""
    from mlflow import MlflowClient

    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if os.access(shm, os.W_OK) else None) as fast:
        client = MlflowClient(f"sqlite:///{mlflow_db(Path(fast).resolve() / 'mlflow.db')}")
        exp = client.create_experiment("adhoc")
        short, default = (_pipeline_run(client, exp, 0, 0, 0, grid=None, params=params)[0]
                          for params in (config_params(**SHORT), config_params()))
        failed = client.create_run(exp, tags={"format": "free_form", "reward": "correctness",
                                              "seed": "0", "config.hash": "c"}).info.run_id
        client.set_terminated(failed, "FAILED")
        darling = _pipeline_run(client, exp, 0, 2, 0, grid=None,
                                params=config_params(**SHORT))[0]
        yield client.tracking_uri, short, default, failed, darling


def _invoke(store, args, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store[0])
    return runner.invoke(app, args)


def test_runs_lists_pipeline_runs_newest_first_as_json(store, monkeypatch):
    _, cells, lone = store
    result = _invoke(store, ["runs", "--json"], monkeypatch)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows[0]["run_id"] == lone  # children and the summary run left out
    assert sorted(row["run_id"] for row in rows[1:]) == sorted(cells)
    assert [row["started"] for row in rows] == sorted((row["started"] for row in rows), reverse=True)
    first = rows[0]
    assert (first["name"], first["experiment"], first["status"], first["model"]) == (
        "default·1a2b3c4d", "adhoc", "FINISHED", "sft")
    assert first["headline"] == {"pass@1": 0.25, "pass@4": 0.5, "distinct outcomes": 3.0}
    assert first["mlflow_url"] is None  # a local store has no UI to link
    cell = rows[1]
    assert cell["model"] == "rl" and cell["grid_id"] == GRID and cell["format"] in {"free_form", "mcq"}
    assert set(cell["headline"]) == {"pass@1", "pass@16", "distinct outcomes"}


def test_runs_filters_and_table(store, monkeypatch):
    _, cells, _ = store
    grid = json.loads(_invoke(store, ["runs", "--json", "--grid", GRID], monkeypatch).output)
    assert sorted(row["run_id"] for row in grid) == sorted(cells)
    one = json.loads(_invoke(store, ["runs", "--json", "-n", "1", "--experiment", "grid"],
                             monkeypatch).output)
    assert len(one) == 1 and one[0]["run_id"] in cells
    table = _invoke(store, ["runs"], monkeypatch)
    assert table.exit_code == 0 and "default·1a2b3c4d" in table.output and "pass@16" in table.output


def test_runs_shows_each_runs_experiment_and_how_much_came_from_the_cache(store, monkeypatch):
    """Six cached re-runs were six identical rows, with no cached or experiment column."""
    _, _, lone = store
    rows = json.loads(_invoke(store, ["runs", "--json"], monkeypatch).output)
    assert {row["run_id"]: row["cached"] for row in rows}[lone] == "all"
    assert {row["cached"] for row in rows if row["run_id"] != lone} == {None}  # not said: "-"
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe: the whole table
    table = _invoke(store, ["runs"], monkeypatch).output
    header = next(line for line in table.splitlines() if "run id" in line)
    assert "experiment" in header and "cached" in header
    lone_row = next(line for line in table.splitlines() if lone in line)
    assert " adhoc " in lone_row and " all " in lone_row


def test_runs_names_an_unknown_experiment_with_a_suggestion(store, monkeypatch):
    result = _invoke(store, ["runs", "--experiment", "gird"], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "no MLflow experiment named 'gird'" in text and "Did you mean 'grid'?" in text


def test_headline_takes_the_final_model_and_its_largest_k():
    model, figures = headline({"sft/eval/pass_at_1": 0.1, "sft/eval/pass_at_32": 0.9})
    assert (model, figures) == ("sft", {"pass@1": 0.1, "pass@32": 0.9})


def test_compare_json_parses_and_matches_the_runs(store, monkeypatch, tmp_path):
    _, cells, _ = store
    result = _invoke(store, ["compare", *cells, "--out", str(tmp_path), "--json"], monkeypatch)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # nothing but JSON on stdout
    assert [run["run_id"] for run in data["runs"]] == cells
    assert len(data["cells"]) == 2 and {c["format"] for c in data["cells"]} == {"free_form", "mcq"}
    assert data["model"] == "rl" and data["claims"] is None
    assert data["plots"] and all(Path(path).is_file() for path in data["plots"])


def test_compare_of_an_unknown_run_names_only_real_options(store, monkeypatch):
    result = _invoke(store, ["compare", "no-such-run"], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "no-such-run" in text and "MLFLOW_TRACKING_URI" in text
    assert "--tracking-uri" not in text


def test_compare_shows_runs_with_unlike_configs_as_separate_rows(lone_runs, monkeypatch, tmp_path):
    _, short, default, _, _ = lone_runs
    args = ["compare", short, default, "--out", str(tmp_path)]
    data = json.loads(_invoke(lone_runs, [*args, "--json"], monkeypatch).output)
    assert [(c["config"], c["seeds"]) for c in data["cells"]] == [
        (SHORT_LABEL, 1),
        ("data.num_train=9000, rl.max_steps=300, rollout.num_samples=16, sft.epochs=12.0", 1),
    ]
    assert data["split_cells"] == {"free_form / correctness": sorted(SHORT)}
    assert data["plots"] and all(Path(path).is_file() for path in data["plots"])
    _without_plots(monkeypatch)  # the same runs' PNGs: drawn by the --json compare above
    result = _invoke(lone_runs, args, monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "not pooled: runs of free_form / correctness differ in config beyond the seed" in text
    assert "rl.max_steps=2" in text and "rl.max_steps=300" in text and "pass@1: rl" in text
    assert "not one factor" not in text  # one reward: nothing compared across rewards


@pytest.mark.parametrize("with_finished", [False, True])
def test_compare_of_a_failed_run_is_an_error_naming_it(lone_runs, monkeypatch, tmp_path,
                                                       with_finished):
    _, _, default, failed, _ = lone_runs
    ids = [default, failed] if with_finished else [failed]
    result = _invoke(lone_runs, ["compare", *ids, "--out", str(tmp_path)], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"{failed} is FAILED" in text and "breadth runs" in text
    assert not list(tmp_path.iterdir())  # no plots of nothing


def test_compare_of_an_unknown_model_names_the_models_of_the_runs(lone_runs, monkeypatch,
                                                                  tmp_path):
    _, _, default, _, _ = lone_runs
    result = _invoke(lone_runs, ["compare", default, "--model", "nosuch", "--out", str(tmp_path)],
                     monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "--model nosuch" in text and "rl, sft" in text
    assert not list(tmp_path.iterdir())


def test_runs_refused_by_the_server_says_why_and_how_to_fix_it(monkeypatch, tmp_path):
    from tests.unit.tracking.fake_mlflow import FakeMlflow
    from tests.unit.tracking.test_rest import AUTH_VARIABLES

    for name in AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials: the REST client
    with FakeMlflow() as fake:
        # /health answers; the experiment listing is refused.
        fake.failures = [(200, {}), (403, {"error_code": "PERMISSION_DENIED",
                                           "message": "Permission denied."})]
        result = _invoke((fake.url,), ["runs"], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.exception  # a clear error, not a traceback
    assert "HTTP 403: PERMISSION_DENIED: Permission denied." in text
    assert "MLFLOW_TRACKING_TOKEN" in text  # the fix


def test_an_empty_filtered_listing_says_the_filter_matched_nothing(store, monkeypatch):
    """`runs --grid nosuch` used to say MLflow had no runs at all (start one with `breadth
    run`), beside a store full of them."""
    result = _invoke(store, ["runs", "--grid", "grid-nosuch", "--experiment", "grid"], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "no pipeline runs of grid 'grid-nosuch' in experiment 'grid'" in text
    assert "start one" not in text and "grid.id" in text


def test_the_table_links_each_run_to_prefect(store, monkeypatch):
    result = _invoke(store, ["runs", "-n", "1"], monkeypatch)
    assert result.exit_code == 0 and "Prefect" in result.output
    assert PREFECT_RUN in "".join(result.output.split())  # the lone run's flow run page


@pytest.mark.parametrize(("uri", "expected"), [
    ("127.0.0.1:15000", "It has no scheme: write http://127.0.0.1:15000."),
    ("localhost:5000", "It has no scheme: write http://localhost:5000."),
    ("{tmp}/mlruns", "MLflow 3 refuses a folder"),
    ("file://{tmp}/mlruns", "MLflow 3 refuses a folder"),
])
def test_a_tracking_uri_mlflow_would_refuse_is_a_clear_error(uri, expected, monkeypatch, tmp_path):
    """Host:port without http:// (read as a folder) and a folder (MLflow 3 refuses its file
    store) ended in a traceback from inside MLflow."""
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for command in (["runs"], ["compare", "r1"]):
        result = _invoke((uri.format(tmp=tmp_path),), command, monkeypatch)
        text = " ".join(result.output.split())
        assert result.exit_code == 2, result.exception
        assert expected in text and "Traceback" not in text


def test_compare_says_when_rows_differ_in_more_than_their_reward(lone_runs, monkeypatch, tmp_path):
    """correctness at the default config against darling at a short one: two rows, as if only
    the reward differed."""
    _, short, default, _, darling = lone_runs
    result = _invoke(lone_runs, ["compare", default, darling, "--out", str(tmp_path)], monkeypatch)
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "not one factor: the rows differ in more than their format and reward" in text
    assert all(key in text for key in SHORT if not key.startswith("rl.reward."))
    _without_plots(monkeypatch)  # two rewards and unlike configs: drawn by the compare above
    same = _invoke(lone_runs, ["compare", short, darling, "--out", str(tmp_path), "--json"],
                   monkeypatch)
    assert json.loads(same.output)["keys_beyond_the_rows"] == []


def _grid_with_splits(monkeypatch, split_ks) -> list:
    """`compare --grid g` over runs (one per seed) logged with these transfer_split_k, its
    MLflow reads faked; -> [(what, the ClaimSettings it was given)] once it has run."""
    import pandas as pd

    from breadth.study import claims, grid_report
    from breadth.study import grid_statistics as grid
    from tests.unit.study.test_claims import _cells

    runs = pd.DataFrame({
        "run_id": [f"r{i}" for i in range(len(split_ks))], "grid_id": "g",
        "format": "free_form", "reward": "correctness", "seed": range(len(split_ks)),
        "rl/eval/pass_at_1": 0.5, "sft/eval/pass_at_1": 0.25,
        "config": [{"evaluation.transfer_split_k": str(k), "evaluation.transfer_min_split": "20",
                    "rl.max_steps": "100"} for k in split_ks],
    })
    seen = []
    summary, evaluate = grid.grid_summary, claims.evaluate_claims

    def summarise(*args, settings=None, **kwargs):
        seen.append(("summary", settings))
        return summary(*args, settings=settings, **kwargs)

    def claims_of(frame, settings=None, pilot=None, budget=None, reference=None):
        seen.append(("claims", settings))
        return evaluate(frame, settings, pilot, budget, reference)

    def no_tables(uri, runs):
        raise FileNotFoundError("no per-problem tables")

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    monkeypatch.setattr("breadth.tracking.runs.check_tracking_server", lambda uri: None)
    monkeypatch.setattr("breadth.tracking.fetch.fetch_runs", lambda uri, **_: runs)
    monkeypatch.setattr("breadth.study.frame.study_frame_of_runs", no_tables)
    monkeypatch.setattr("breadth.study.frame.load_study_frame",
                        lambda uri, grid_id: _cells([8, 0] * 20))
    monkeypatch.setattr("breadth.study.frame.load_training_histories", lambda uri, frame: {})
    monkeypatch.setattr("breadth.study.frame.grid_provenance", lambda uri, grid_id: {})
    monkeypatch.setattr("breadth.study.frame.provenance_header", lambda *_: "# claims")
    monkeypatch.setattr(grid_report, "plot_grid", lambda *_: [])
    monkeypatch.setattr(grid, "grid_summary", summarise)
    monkeypatch.setattr(claims, "evaluate_claims", claims_of)
    return seen


def test_compare_grid_splits_problems_as_the_runs_were_evaluated(monkeypatch, tmp_path):
    """compare --grid used the default split (pass@4) for the summary and the claims whatever
    the cells were evaluated with; the grid flow used the cells' own."""
    seen = _grid_with_splits(monkeypatch, [1, 1])
    result = runner.invoke(app, ["compare", "--grid", "g", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    splits = [(what, s.split_k, s.min_split) for what, s in seen]
    assert splits == [("summary", 1, 20), ("claims", 1, 20)]
    # At split_k = 1 every problem is base-unsolved (SFT pass@1 = 0.25 < 0.5): a verdict, where
    # the default pass@4 leaves the split empty.
    transfer = next(c for c in json.loads(result.output)["claims"]
                    if c["claim"] == "diversity on unsolved")
    assert transfer["verdict"] == "reproduced"


def test_compare_grid_refuses_runs_evaluated_with_different_splits(monkeypatch, tmp_path):
    _grid_with_splits(monkeypatch, [1, 4])
    result = runner.invoke(app, ["compare", "--grid", "g", "--out", str(tmp_path)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "different transfer splits" in text
    assert "evaluation.transfer_split_k: 1 (runs r0); 4 (runs r1)" in text


REMOTE_MLFLOW = ("https://mlflow.research-cluster.example.com/#/experiments/123456789012345678/"
                 "runs/0123456789abcdef0123456789abcdef")
REMOTE_PREFECT = ("https://prefect.research-cluster.example.com/flow-runs/flow-run/"
                  "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0")
REMOTE_ROWS = [
    {"name": "study·free_form·correctness+ucb*0.5·seed2·1a2b3c4d", "status": "FINISHED",
     "started": "2025-01-01T02:00:00", "experiment": "study", "cached": "none", "model": "rl", "run_id": "0123456789abcdef0123456789abcdef",
     "headline": {"pass@1": 0.25, "pass@16": 0.5, "pass@32": 0.6, "distinct outcomes": 3.0},
     "mlflow_url": REMOTE_MLFLOW, "prefect_url": REMOTE_PREFECT},
    # A cached re-run: its first run's name marked cached, told apart by its id too.
    {"name": "default·1a2b3c4d·cached", "status": "FINISHED", "started": "2025-01-01T03:00:00",
     "experiment": "default", "cached": "all", "model": "rl", "run_id": "fedcba9876543210fedcba9876543210",
     "headline": {"pass@1": 0.25, "pass@16": 0.5, "distinct outcomes": 3.0},
     "mlflow_url": "http://127.0.0.1:5000/#/experiments/1/runs/fedcba9876543210fedcba9876543210",
     "prefect_url": None},
    {"name": "default·1a2b3c4d", "status": "FINISHED", "started": "2025-01-01T01:00:00",
     "experiment": "default", "cached": "none", "model": "rl", "run_id": "00112233445566778899aabbccddeeff",
     "headline": {"pass@1": 0.25, "pass@16": 0.5, "distinct outcomes": 3.0},
     "mlflow_url": "http://127.0.0.1:5000/#/experiments/1/runs/00112233445566778899aabbccddeeff",
     "prefect_url": "http://127.0.0.1:4200/flow-runs/flow-run/1"},
]
REMOTE_URLS = {row[key] for row in REMOTE_ROWS for key in ("mlflow_url", "prefect_url")} - {None}


def _runs_of(monkeypatch, rows, columns=None):
    import breadth.tracking.recent
    import breadth.tracking.runs

    monkeypatch.setattr(breadth.tracking.runs, "check_tracking_server", lambda uri: None)
    monkeypatch.setattr(breadth.tracking.recent, "recent_runs", lambda uri, **kwargs: rows)
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal: a pipe
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    result = runner.invoke(app, ["runs"])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_table_never_cuts_a_link(monkeypatch):
    """Links to a remote MLflow and Prefect are long: the table, at a fixed 260 columns, cropped
    them to a useless `http://…`."""
    output = _runs_of(monkeypatch, REMOTE_ROWS[:1])
    assert REMOTE_MLFLOW in output and REMOTE_PREFECT in output


def test_the_table_shows_each_runs_whole_id(store, monkeypatch):
    """`breadth compare` takes run ids, which the table did not show (only inside a link, and
    a local store has none); a cached re-run has its first run's name."""
    _, cells, lone = store
    monkeypatch.delenv("COLUMNS", raising=False)
    result = _invoke(store, ["runs"], monkeypatch)
    assert result.exit_code == 0, result.output
    assert "run id" in result.output
    for run_id in (lone, *cells):
        assert run_id in result.output
    output = _runs_of(monkeypatch, REMOTE_ROWS)
    for row in REMOTE_ROWS:
        assert row["run_id"] in output


@pytest.mark.parametrize("columns", [100, 60])
def test_a_narrow_terminal_gets_lines_that_fit_and_every_link_whole(monkeypatch, columns):
    """`COLUMNS=100 breadth runs` printed the table at ~240 columns, its box lines wrapped
    into a mess. Only a link longer than the terminal may overflow, on a line of its own."""
    output = _runs_of(monkeypatch, REMOTE_ROWS, columns)
    for line in output.splitlines():
        if len(line) > columns:
            label, url = line.split()
            assert label in ("MLflow", "Prefect") and url in REMOTE_URLS, line
    lines = [line.split() for line in output.splitlines()]
    for url in REMOTE_URLS:  # each whole, on its own line
        assert any(words[-1:] == [url] and len(words) == 2 for words in lines), url
    for row in REMOTE_ROWS:
        assert any(row["run_id"] in words for words in lines)
    assert all(f"{figure}" in output for figure in ("pass@32", "0.6", "distinct"))


def test_a_terminal_wide_enough_keeps_the_links_in_the_table(monkeypatch):
    output = _runs_of(monkeypatch, REMOTE_ROWS[:1], columns=440)  # the table is 418 wide
    [row] = [line for line in output.splitlines() if REMOTE_ROWS[0]["run_id"] + " " in line]
    assert REMOTE_MLFLOW in row and REMOTE_PREFECT in row and "Links" not in output


def _without_plots(monkeypatch) -> None:
    """`compare` without its PNGs (`plot_grid`), where the table, the JSON or the claims are
    the point: the PNGs took most of this module's CPU (about a second each, most of it
    matplotlib's layout). Each caller names the test that draws the same runs' PNGs."""
    monkeypatch.setattr("breadth.study.grid_report.plot_grid", lambda *args, **kwargs: [])


def _fake_compare(monkeypatch, runs, per_problem=None, study=None, plots=False):
    """`compare` over these parent-run rows, its MLflow reads faked: `per_problem` the runs'
    per-problem tables (None: the runs have none), `study` a grid's study frame. Without
    `plots`, no PNGs: test_each_comparison_writes_its_own_folder_by_default draws and checks
    those of `_one_run_with_a_small_split`, alone and as a grid, the runs the others compare."""
    def tables(uri, runs):
        if per_problem is None:
            raise FileNotFoundError("no per-problem tables")
        return per_problem

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    monkeypatch.setattr("breadth.tracking.runs.check_tracking_server", lambda uri: None)
    monkeypatch.setattr("breadth.tracking.fetch.fetch_runs", lambda uri, **_: runs)
    monkeypatch.setattr("breadth.study.frame.study_frame_of_runs", tables)
    def study_frame(uri, grid_id):
        if study is None:
            raise FileNotFoundError(f"grid {grid_id} logged no per-problem tables")
        return study

    monkeypatch.setattr("breadth.study.frame.load_study_frame", study_frame)
    # The RL training histories of the claims' "Collapse over training steps": none logged.
    monkeypatch.setattr("breadth.study.frame.load_training_histories", lambda uri, frame: {})
    monkeypatch.setattr("breadth.study.frame.grid_provenance", lambda uri, grid_id: {})
    monkeypatch.setattr("breadth.study.frame.provenance_header", lambda *_: "# claims")
    if not plots:
        _without_plots(monkeypatch)


def _one_run_with_a_small_split(run_id="0123456789abcdef"):
    """One run whose per-problem tables hold 10 base-solved and 30 base-unsolved problems."""
    import pandas as pd

    from tests.unit.study.test_grid_bootstrap import _runs, _split_study

    frame = _split_study(solved=10, unsolved=30).assign(run_id=run_id)
    runs = _runs(frame).assign(run_id=run_id, config=[{"evaluation.transfer_min_split": "20"}])
    return pd.DataFrame(runs), frame


def test_compare_shows_a_split_below_min_split_as_inconclusive(monkeypatch, tmp_path):
    """The summary showed `distinct, solved: rl` = 8.300 [6.777, 10.000] where the run's own
    report said the split was inconclusive (10 problems < 20)."""
    runs, frame = _one_run_with_a_small_split()
    _fake_compare(monkeypatch, runs, frame)
    result = runner.invoke(app, ["compare", "r", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    cell = json.loads(result.output)["cells"][0]
    assert cell["distinct_solved"] is None and cell["distinct_solved_ci_low"] is None
    assert cell["distinct_solved_inconclusive"] == "inconclusive (n=10 < 20)"
    assert cell["distinct_unsolved"] == 2.0 and cell["distinct_unsolved_inconclusive"] is None
    result = runner.invoke(app, ["compare", "r", "--out", str(tmp_path)])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    # The table wraps the cell in two lines: "inconclusive" above "(n=10 < 20)".
    assert "(n=10 < 20)" in text and "8.000" not in text


def test_compare_of_runs_is_not_titled_a_grid_summary(monkeypatch, tmp_path):
    """One run compared was headed "breadth grid summary"."""
    runs, frame = _one_run_with_a_small_split()
    _fake_compare(monkeypatch, runs, frame)
    result = runner.invoke(app, ["compare", "r", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "breadth comparison of 1 run" in result.output
    assert "grid summary" not in result.output
    _fake_compare(monkeypatch, runs.assign(grid_id="grid-7"), frame)
    result = runner.invoke(app, ["compare", "--grid", "grid-7", "--out", str(tmp_path)])
    assert "breadth grid summary: grid-7" in result.output


def test_compare_grid_prints_the_claims_as_a_table_not_markdown(monkeypatch, tmp_path):
    """The terminal got claims.md verbatim: `| **claim** |` rows, code fences and
    `![pass@k per objective](...png)` image links."""
    from tests.unit.study.test_claims import _cells

    runs, frame = _one_run_with_a_small_split()
    _fake_compare(monkeypatch, runs.assign(grid_id="grid-7"), frame, study=_cells([8, 0] * 20))
    result = runner.invoke(app, ["compare", "--grid", "grid-7", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "![" not in result.output and "| **" not in result.output
    assert "```" not in result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if "measure" in line)
    assert all(word in header for word in ("claim", "format", "value", "verdict"))
    row = next(line for line in lines if "darling" in line and "n/a" in line)
    assert "not run" in row
    # An interval on one line, with its Holm level (both seeds identical: no spread).
    assert any("+0.250 [+0.250, +0.250] (" in line for line in lines)
    assert all(word in header for word in ("δ", "Holm-adjusted", "unadjusted"))
    assert "sharpening" in result.output and "reproduced" in result.output
    assert "verdicts: " in result.output and " not run" in result.output.split("verdicts: ")[1]
    assert f"wrote {tmp_path / 'claims' / 'claims.md'}" in " ".join(result.output.split())
    assert (tmp_path / "claims" / "claims.md").read_text().count("| **") > 5


def test_each_comparison_writes_its_own_folder_by_default(monkeypatch, tmp_path):
    """Both compares wrote `compare/`: a grid's compare silently replaced a run compare's
    pass_at_k_by_format.png."""
    from tests.unit.study.test_claims import _cells

    monkeypatch.chdir(tmp_path)
    runs, frame = _one_run_with_a_small_split("0123456789abcdef")
    _fake_compare(monkeypatch, runs, frame, plots=True)
    lone = runner.invoke(app, ["compare", "0123456789abcdef"])
    assert lone.exit_code == 0, lone.output
    _fake_compare(monkeypatch, runs.assign(grid_id="grid-7"), frame, study=_cells([8, 0] * 20),
                  plots=True)
    grid = runner.invoke(app, ["compare", "--grid", "grid-7"])
    assert grid.exit_code == 0, grid.output
    for folder in ("compare/01234567", "compare/grid-7"):
        assert (tmp_path / folder / "pass_at_k_by_format.png").is_file(), folder
    assert (tmp_path / "compare/grid-7/claims/claims.md").is_file()
    assert "wrote compare/01234567/pass_at_k_by_format.png" in lone.output
    assert "replaced" not in lone.output + grid.output
    # The same comparison again (or an --out that holds plots) says what it replaced.
    again = runner.invoke(app, ["compare", "--grid", "grid-7"])
    text = " ".join(again.output.split())
    assert "wrote compare/grid-7/pass_at_k_by_format.png (replaced the earlier file)" in text
    assert "(replacing an earlier report)" in text


def test_compare_grid_of_one_format_shows_its_format_claim_not_run(monkeypatch, tmp_path):
    """A grid of one format had no format row in the terminal table nor in --json: the
    comparison of formats was left out instead of reading "not run"."""
    from tests.unit.study.test_claims import _cells

    runs, frame = _one_run_with_a_small_split()
    _fake_compare(monkeypatch, runs.assign(grid_id="grid-7"), frame, study=_cells([8, 0] * 20))
    result = runner.invoke(app, ["compare", "--grid", "grid-7", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    [claim] = [c for c in json.loads(result.output)["claims"] if c["claim"] == "format"]
    assert (claim["verdict"], claim["estimate"], claim["low"], claim["high"]) == (
        "not run", None, None, None)
    result = runner.invoke(app, ["compare", "--grid", "grid-7", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [row] = [" ".join(line.split()) for line in result.output.splitlines()
             if line.startswith("│ format ")]
    # δ, the adjusted value (n/a) and an empty unadjusted interval before the verdict.
    assert row.startswith("│ format │ both │") and row.endswith("│ ±0.1 │ n/a │ │ not run │")
