"""Every documented bad input to the CLI (config, preset files, prepare, evaluate): exit code 2,
a one-paragraph message naming the problem, no traceback, and no output folder left behind."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from breadth.cli import app

runner = CliRunner()
GOOD_GSM8K = {"question": "Sam has 3 apples and buys 4. How many now?", "answer": "3+4=7\n#### 7"}


@pytest.fixture
def inputs(tmp_path, monkeypatch) -> Path:
    """A folder of bad (and a few good) input files; the CLI runs from inside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path / ".breadth"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    Path("binary.yaml").write_bytes(b"\xff\xfe\x00\x01rl: 1")
    Path("folder.yaml").mkdir()
    Path("malformed.yaml").write_text("rl: [1, 2\n")
    Path("list.yaml").write_text("- 1\n- 2\n")
    Path("unknown-key.yaml").write_text("rl:\n  max_stepz: 4\n")
    Path("binary.jsonl").write_bytes(b"\xff\xd8\xff\xe0 JFIF")
    Path("garbage.parquet").write_bytes(b"\x00\x01 not parquet")
    Path("empty.jsonl").write_text("")
    Path("blank.jsonl").write_text("\n  \n\n")
    Path("a-file").write_text("x")
    Path("folder.jsonl").mkdir()
    Path("good.jsonl").write_text("\n".join(
        json.dumps({"question": f"Sam has {n} apples. Twice that?", "answer": f"#### {2 * n}"})
        for n in range(20)) + "\n")
    Path("bad-rows.jsonl").write_text(json.dumps(GOOD_GSM8K) + "\n"
                                      + json.dumps({"question": "q", "answer": "no marker"}) + "\n")
    Path("text-answers.jsonl").write_text("\n".join(
        json.dumps({"question": f"Capital number {n}?", "answer": f"City {n}"}) for n in range(9)))
    Path("only-test").mkdir()
    Path("only-test/test.jsonl").write_text(Path("good.jsonl").read_text())
    rollouts = {"problem_id": ["a"] * 4, "correct": [True, False, False, False],
                "outcome": ["1", "2", "2", "3"], "text": ["x"] * 4, "model": ["m"] * 4}
    pd.DataFrame(rollouts).to_parquet("good-rollouts.parquet")
    pd.DataFrame({**rollouts, "problem_id": ["z"] * 4}).to_parquet("other-problems.parquet")
    pd.DataFrame({key: values[:1] for key, values in rollouts.items()}).to_parquet(
        "one-sample.parquet")
    pd.DataFrame({"problem_id": ["a"] * 4 + ["b"] * 2 + ["c"] * 4, "correct": [True] * 10,
                  "outcome": ["1"] * 10}).to_parquet("uneven-rollouts.parquet")
    pd.DataFrame({"x": [1, 2]}).to_parquet("no-columns.parquet")
    pd.DataFrame({"question": ["2+2?", "3+3?"], "solution": ["4", "6"]}).to_parquet(
        "renamed.parquet")
    pd.DataFrame({"problem_id": [], "correct": [], "outcome": []}).to_parquet("no-rows.parquet")
    return tmp_path


CONFIG_CASES = [
    (["run", "--preset", "nope"], "unknown preset 'nope'"),
    (["run", "--set", "rl.max_steps=abc"], "rl.max_steps"),
    (["run", "--set", "rl.max_stepz=4"], "unknown config key 'rl.max_stepz'"),
    (["run", "--set", "data.source=csv:x.csv"], "jsonl:PATH"),
    (["run", "--set", "data.eval_only=true"], "sft.enabled=false and rl.enabled=false"),
    (["run", "--set", "data.eval_fraction=0"], "data.eval_fraction"),
    (["config", "--preset", "missing.yaml"], "preset file missing.yaml does not exist"),
    (["config", "--preset", "folder.yaml"], "is a folder"),
    (["config", "--preset", "binary.yaml"], "not UTF-8"),
    (["config", "--preset", "malformed.yaml"], "not valid YAML at line"),
    (["config", "--preset", "list.yaml"], "must be a YAML mapping"),
    (["config", "--preset", "unknown-key.yaml"], "rl.max_stepz"),
    # Files this machine lacks: named before the stack starts, not after a task's retries.
    (["run", "--set", "data.source=jsonl:missing.jsonl"], "missing.jsonl does not exist"),
    (["run", "--set", "data.source=jsonl:folder.jsonl"], "folder.jsonl is a folder"),
    (["run", "--set", "model.name_or_path=./no-model"], "model.name_or_path=./no-model"),
    (["grid", "--set", "data.eval_source=hf:./no-dir"], "no-dir does not exist"),
    # The power pilot the claims cite: read before the stack starts.
    (["grid", "--pilot", "missing.json"], "--pilot: pilot sizing missing.json"),
    (["grid", "--pilot", "malformed.yaml"], "not a power pilot's JSON"),
    # The fuller grid's table the left-out rows cite: read before the stack starts too.
    (["grid", "--reference", "missing.json"], "--reference: reference table missing.json"),
    (["grid", "--reference", "malformed.yaml"], "--claims-out DIR` wrote for a fuller grid"),
]
PREPARE_CASES = [
    (["--source", "jsonl:missing.jsonl"], "does not exist"),
    (["--source", "jsonl:folder.jsonl"], "but a folder"),
    (["--source", "jsonl:binary.jsonl"], "not UTF-8"),
    (["--source", "parquet:garbage.parquet"], "cannot be read as parquet"),
    (["--source", "jsonl:empty.jsonl"], "has no usable rows"),
    (["--source", "jsonl:blank.jsonl"], "has no usable rows"),
    (["--source", "jsonl:bad-rows.jsonl"], "line 2, field 'answer'"),
    (["--source", "jsonl:text-answers.jsonl", "--format", "mcq"], "is not a number"),
    (["--source", "hf:someone/not-cached"], "could not be loaded"),
    (["--source", "hf:only-test"], "only an evaluation split"),
    (["--source", "jsonl:good.jsonl", "--eval-only", "--eval-source", "jsonl:good.jsonl"],
     "exclude each other"),
    (["--source", "nope:x"], "is not one of"),
    (["--format", "essay"], "data.format"),
    (["--num-train", "0"], "data.num_train"),
    (["--difficulty", "7"], "data.difficulty"),
    (["--eval-fraction", "1.5"], "data.eval_fraction"),
    (["--difficulty", "1"], "arithmetic at difficulty 1 holds only 90 distinct prompts"),
    (["--source", "parquet:renamed.parquet"], "the rows have ['question', 'solution']"),
]
EVALUATE_CASES = [
    (["--rollouts", "missing.parquet"], "does not exist"),
    (["--rollouts", "folder.jsonl"], "is a folder"),
    (["--rollouts", "garbage.parquet"], "magic bytes"),
    (["--rollouts", "no-columns.parquet"], "lack required columns"),
    (["--rollouts", "no-rows.parquet"], "rollouts are empty"),
    (["--rollouts", "good-rollouts.parquet", "--base", "other-problems.parquet"],
     "share no problem_id"),
    # The split budget (4) is more than the base's one sample: the fix named must be one
    # that `evaluate` takes (it took only --seed, so "lower evaluation.transfer_split_k" was
    # advice it could not follow).
    (["--rollouts", "good-rollouts.parquet", "--base", "one-sample.parquet"],
     "add --set evaluation.transfer_split_k=1"),
    (["--rollouts", "good-rollouts.parquet", "--set", "evaluation.transfer_split_kk=1"],
     "unknown config key 'evaluation.transfer_split_kk'"),
    (["--rollouts", "good-rollouts.parquet", "--preset", "nope"], "unknown preset 'nope'"),
    (["--rollouts", "good-rollouts.parquet", "--seed", "1", "--set", "seed=2"],
     "the seed is given twice"),
]


def check_refused(args: list[str], must_mention: str, inputs: Path, out: Path | None) -> None:
    before = sorted(p.relative_to(inputs) for p in inputs.rglob("*") if "hf-home" not in p.parts)
    result = runner.invoke(app, args)
    text = result.output
    assert result.exit_code == 2, text
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in text and text.startswith("error: "), text
    assert "\n\n" not in text.strip(), f"more than one paragraph:\n{text}"
    assert must_mention in " ".join(text.split()), text
    if out is not None:
        assert not out.exists(), "no partial output may be left"
    after = sorted(p.relative_to(inputs) for p in inputs.rglob("*") if "hf-home" not in p.parts
                   and ".breadth" not in p.parts)
    assert after == [p for p in before if ".breadth" not in p.parts], "a file was written"


@pytest.mark.parametrize("args,must_mention", CONFIG_CASES, ids=[m for _, m in CONFIG_CASES])
def test_bad_config_and_preset_files(inputs, args, must_mention) -> None:
    check_refused(args, must_mention, inputs, None)
    assert not (inputs / ".breadth" / "run").exists(), "no service may start"


@pytest.mark.parametrize("args,must_mention", PREPARE_CASES, ids=[m for _, m in PREPARE_CASES])
def test_bad_prepare_inputs(inputs, args, must_mention) -> None:
    check_refused(["prepare", "--out", "out", *args], must_mention, inputs, inputs / "out")


def test_prepare_into_a_file(inputs) -> None:
    check_refused(["prepare", "--out", "a-file", "--source", "jsonl:good.jsonl"], "is a file",
                  inputs, None)
    assert (inputs / "a-file").read_text() == "x"


@pytest.mark.parametrize("args,must_mention", EVALUATE_CASES, ids=[m for _, m in EVALUATE_CASES])
def test_bad_evaluate_inputs(inputs, args, must_mention) -> None:
    check_refused(["evaluate", "--out", "report", *args], must_mention, inputs, inputs / "report")


def test_evaluate_into_a_file(inputs) -> None:
    check_refused(["evaluate", "--out", "a-file", "--rollouts", "good-rollouts.parquet"],
                  "is a file", inputs, None)


def test_evaluate_says_plainly_that_sample_counts_are_uneven(inputs) -> None:
    # Problem b has 2 samples, a and c 4: the report is written (no sample is dropped), and
    # the command's own output says which problems are short and where the curves stop.
    with warnings.catch_warnings():  # a Python warning escaping the command fails it
        warnings.simplefilter("error")
        result = runner.invoke(app, ["evaluate", "--out", "r", "--rollouts",
                                     "uneven-rollouts.parquet"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "warning: trained: 1 of 3 problems have fewer than 4 samples ('b' (n=2))" in text
    assert "stop at k = 2 for every problem" in text
    assert (inputs / "r" / "report.md").is_file()


def test_evaluate_says_plainly_that_the_models_are_not_like_for_like(inputs) -> None:
    """The base has problems a and b at 8 samples, the trained model only a at 4: the command
    said only, in a log line, that a problem was left out of the transfer analysis."""
    pd.DataFrame({"problem_id": ["a"] * 8 + ["b"] * 8, "correct": [True, False] * 8,
                  "outcome": ["1", "2"] * 8}).to_parquet("base-ab.parquet")
    result = runner.invoke(app, ["evaluate", "--out", "r", "--rollouts", "good-rollouts.parquet",
                                 "--base", "base-ab.parquet", "--set",
                                 "evaluation.transfer_split_k=1"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert ("warning: The models were evaluated on different problem sets: base on 2 problems, "
            "trained on 1 problem; 1 problem is in both sets.") in text
    assert ("warning: Diversity is not comparable across unlike sample counts (base n = 8 and "
            "trained n = 4 samples per problem)") in text


def test_evaluate_into_a_used_folder_leaves_only_this_reports_files(inputs) -> None:
    """A report with --base, then one without into the same folder: the first's
    per_problem_base.parquet stayed, read as this evaluation's. The user's own files stay."""
    Path("r").mkdir()
    Path("r/notes.txt").write_text("mine")
    base = ["--base", "good-rollouts.parquet", "--set", "evaluation.transfer_split_k=1"]
    assert runner.invoke(app, ["evaluate", "--out", "r", "--rollouts", "good-rollouts.parquet",
                               *base]).exit_code == 0
    assert (inputs / "r" / "per_problem_base.parquet").is_file()
    result = runner.invoke(app, ["evaluate", "--out", "r", "--rollouts", "good-rollouts.parquet"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (inputs / "r").iterdir()) == [
        "diversity.png", "metrics.json", "notes.txt", "paired.json", "pass_at_k.png",
        "per_problem_trained.parquet", "report.md"]
    assert f"removed {Path('r') / 'per_problem_base.parquet'}" in result.output


def test_evaluate_takes_config_keys_as_run_does(inputs) -> None:
    """--preset and --set reach the evaluation: the fix the split-budget error names works, and
    a --set evaluation.* value is the one the report used; --seed still sets the seed."""
    args = ["evaluate", "--rollouts", "good-rollouts.parquet", "--base", "one-sample.parquet",
            "--set", "evaluation.transfer_split_k=1", "--set", "evaluation.bootstrap_samples=12",
            "--seed", "5"]
    result = runner.invoke(app, [*args, "--out", "r"])
    assert result.exit_code == 0, result.output
    settings = json.loads((inputs / "r" / "metrics.json").read_text())["trained"]["settings"]
    assert (settings["num_bootstrap"], settings["seed"]) == (12, 5)


def test_the_same_commands_succeed_on_good_input(inputs) -> None:
    # Positive controls: the checks above refuse bad input, not every input.
    assert runner.invoke(app, ["prepare", "--out", "p", "--source", "jsonl:good.jsonl"]
                         ).exit_code == 0
    assert sum(json.loads((inputs / "p" / "manifest.json").read_text())["counts"].values()) == 20
    assert runner.invoke(app, ["prepare", "--out", "defaults"]).exit_code == 0
    assert runner.invoke(app, ["evaluate", "--out", "r", "--rollouts", "good-rollouts.parquet"]
                         ).exit_code == 0
    assert runner.invoke(app, ["config", "--set", "data.eval_fraction=0.2"]).exit_code == 0


def test_prepare_says_what_the_data_set_left_out(inputs) -> None:
    """Skipped rows were listed only in manifest.json, and a --num-train the source could not
    fill passed without a word."""
    Path("some-bad.jsonl").write_text(Path("bad-rows.jsonl").read_text()
                                      + Path("good.jsonl").read_text())
    result = runner.invoke(app, ["prepare", "--out", "p", "--source", "jsonl:some-bad.jsonl",
                                 "--on-bad-rows", "skip", "--num-train", "1000"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, text
    assert "skipped 1 bad row(s)" in text and "line 2, field 'answer'" in text
    # A manifest written before bad rows had a source key is summarised the same way.
    from breadth.cli.data import _what_was_left_out
    from breadth.data.prepare import Manifest

    manifest = json.loads((inputs / "p" / "manifest.json").read_text())
    assert [row.pop("source") for row in manifest["bad_rows"]] == [None]
    assert "line 2, field 'answer'" in _what_was_left_out(Manifest(**manifest))[0]
    train = json.loads((inputs / "p" / "manifest.json").read_text())["counts"]["train"]
    assert f"asked for 1000 train rows, the source has only {train}" in text
