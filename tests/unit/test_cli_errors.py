"""The CLI turns bad input into a one-paragraph error and exit code 2, before any compute."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from breadth.cli import app

runner = CliRunner()


def _dead_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize(
    ("args", "must_mention"),
    [
        (["run", "--preset", "nope"], "unknown preset 'nope'"),
        (["run", "--set", "rl.max_steps=abc"], "rl.max_steps"),
        (["run", "--set", "rollout.backend=tpu"], "'transformers', 'vllm' or 'auto'"),
        (["run", "--set", "preset=ucb"], "use --preset ucb"),
    ],
)
def test_bad_config_fails_before_the_stack_starts(args, must_mention, tmp_path, monkeypatch):
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert must_mention in " ".join(result.output.split())
    assert not (tmp_path / "run").exists(), "no service may start for an invalid config"


def test_a_stopped_service_is_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    for name in ("MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT", "PREFECT_API_URL"):
        monkeypatch.setenv(name, _dead_url() + ("/api" if name == "PREFECT_API_URL" else ""))
    result = runner.invoke(app, ["run"])
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    # Services are checked in start order; the first one that is down is named, with the fix.
    assert "s3 at" in text and "does not answer" in text
    assert "BREADTH_S3_ENDPOINT" in text and "breadth stack up" in text


@pytest.mark.parametrize("command", [
    ["run", "--set", "data.reasoning=true", "--set", "data.num_train=50"],
    ["grid", "--preset", "default", "--format", "free_form", "--reward", "correctness",
     "--seed", "0", "--set", "data.reasoning=true", "--set", "data.num_train=50"],
])
def test_rows_that_do_not_fit_the_token_limits_are_refused_before_the_stack_starts(
    command, tmp_path, monkeypatch
):
    """With data.reasoning=true the traces (up to 22 tokens) do not fit the 8-token completion
    budgets: refused in seconds, naming the keys and the values that fit."""
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))

    def no_stack(*args, **kwargs):
        raise AssertionError("the stack started for data that does not fit")

    monkeypatch.setattr("breadth.cli.stack.bring_up_stack", no_stack)
    result = runner.invoke(app, command)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "(rl.max_completion_length=8)" in text and "(rollout.max_new_tokens=8)" in text
    assert "Values that fit every row: --set rl.max_completion_length=" in text
