"""Small CLI commands users of lm-eval, TRL and Prefect expect: --version, shell completion,
presets, grid --dry-run. None of them starts the stack."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from breadth import cli
from breadth.config import available_presets


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.setattr(cli.stack, "start_stack", lambda: pytest.fail("the stack was started"))
    return CliRunner()


def test_version(runner):
    result = runner.invoke(cli.app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"breadth {version('breadth')}"


def test_shell_completion_script_names_the_command(runner, monkeypatch):
    # `--show-completion` takes the shell from the process tree (shellingham), which is `sh`
    # under some CI launchers; the script is checked for bash.
    monkeypatch.setattr("typer.completion._get_shell_name", lambda: "bash")
    result = runner.invoke(cli.app, ["--show-completion"], prog_name="breadth")
    assert result.exit_code == 0, result.output
    assert "_BREADTH_COMPLETE=complete_bash" in result.output
    assert "complete -o default -F _breadth_completion breadth" in result.output


@pytest.mark.parametrize(("words", "expected"), [
    ("breadth sta", ["stack"]),
    ("breadth stack lo", ["logs"]),
    ("breadth stack logs ml", ["mlflow"]),
    ("breadth run --preset stu", [p for p in available_presets() if p.startswith("stu")]),
])
def test_shell_completion_completes_commands_services_and_presets(runner, words, expected):
    # What bash's completion function does: run the command with these variables set.
    env = {"_BREADTH_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - 1)}
    result = runner.invoke(cli.app, [], prog_name="breadth", env=env)
    assert result.exit_code == 0, result.output
    assert expected and result.output.split() == expected


def test_presets_lists_every_preset_with_a_line(runner):
    result = runner.invoke(cli.app, ["presets"])
    assert result.exit_code == 0
    lines = result.output.strip().splitlines()
    assert [line.split()[0] for line in lines] == available_presets()
    assert all(len(line.split()) > 1 for line in lines)  # each has a description


def test_grid_dry_run_lists_validated_cells_and_starts_nothing(runner):
    result = runner.invoke(cli.app, ["grid", "--dry-run", "--format", "free_form",
                                     "--reward", "correctness", "--reward", "darling",
                                     "--seed", "0", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "grid of 4 cells" in result.output
    assert result.output.count("free_form") == 4 and result.output.count("darling") == 2


def test_grid_format_reward_thins_a_format_and_a_bad_one_names_the_option(runner):
    result = runner.invoke(cli.app, ["grid", "--dry-run", "--format", "free_form",
                                     "--format", "mcq", "--reward", "correctness",
                                     "--reward", "darling", "--format-reward", "mcq=correctness",
                                     "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert "grid of 3 cells" in result.output and result.output.count("darling") == 1
    bad = runner.invoke(cli.app, ["grid", "--dry-run", "--format-reward", "mcq"])
    assert bad.exit_code == 2 and "--format-reward 'mcq': give FORMAT=REWARD" in bad.output


def test_grid_dry_run_still_validates_every_cell(runner):
    result = runner.invoke(cli.app, ["grid", "--dry-run", "--reward", "correctness",
                                     "--set", "data.num_eval=8", "--reward", "passk:k=9"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("args", "must_mention"), [
    (["--format", "xml"], ["--format", "'free_form' or 'mcq'", "'xml'"]),
    (["--cell-runner", "foo"], ["--cell-runner", "'in_process' or 'deployment'", "'foo'"]),
    (["--seed", "0", "--seed", "0"], ["--seed", "0 given more than once"]),
    (["--reward", "darling", "--reward", "darling"], ["--reward", "'darling' given more than once"]),
    (["--set", "seed=5"], ["--set", "'seed=5'", "breadth grid --seed"]),
])
def test_grid_option_errors_name_the_option_not_the_model(runner, args, must_mention):
    result = runner.invoke(cli.app, ["grid", "--dry-run", *args])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    for text in must_mention:
        assert text in output
    for internal in ("GridConfig", "errors.pydantic.dev", "formats.0", "grid of"):
        assert internal not in output


def test_a_bad_reward_value_is_blamed_on_reward_not_the_preset_or_set(runner):
    """`--reward correctnes` was checked as each cell's rl.reward.spec, and the error ended
    "Fix the preset or the --set value", though neither held the typo."""
    result = runner.invoke(cli.app, ["grid", "--dry-run", "--preset", "default",
                                     "--reward", "correctnes"])
    output = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "rl.reward.spec (from --reward)" in output and "Did you mean 'correctness'?" in output
    assert "Fix --reward." in output
    assert "--set" not in output and "preset" not in output


def test_grid_dry_run_says_which_stages_the_cache_holds(runner, tmp_path, monkeypatch):
    from breadth_tasks.stage_keys import stage_keys

    from breadth.study.grid_design import GridConfig

    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_LOCAL_STORAGE_PATH", raising=False)
    study = GridConfig(formats=["free_form"], rewards=["correctness"], seeds=[0, 1, 2])
    cells = [stage_keys(config) for *_, config in study.cells()]
    storage = tmp_path / "prefect" / "storage"
    storage.mkdir(parents=True)
    for key in [cells[0]["prepare"], cells[0]["init"], *cells[2].values()]:
        (storage / key).write_text("a persisted result")
    result = runner.invoke(cli.app, ["grid", "--dry-run", "--format", "free_form", "--reward",
                                     "correctness", "--seed", "0", "--seed", "1", "--seed", "2"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "free_form" in line]
    stages = len(cells[0])
    assert [row.split("│")[-2].strip() for row in rows] == [
        f"2/{stages}: prepare, init", f"0/{stages}: none", f"{stages}/{stages}: all"]
    assert str(storage) in result.output


def test_each_preset_is_described_by_a_whole_sentence(runner):
    """The listing cut descriptions at the first comment line ("(or local copies: set")."""
    lines = runner.invoke(cli.app, ["presets"]).output.strip().splitlines()
    assert all(line.rstrip().endswith((".", ".)")) for line in lines), lines
    assert any("local paths)." in line for line in lines if line.startswith("qwen-gsm8k"))


def test_config_keys_shows_each_keys_value_in_the_preset(runner):
    """--keys listed names and help only: no default, and nothing of what a preset sets."""
    lines = runner.invoke(cli.app, ["config", "--keys", "--preset", "passk",
                                    "--set", "rl.max_steps=7"]).output.splitlines()
    assert any(line.startswith("rl.max_steps = 7  ") for line in lines)
    assert any(line.startswith("rl.scale_rewards = 'none'  ") for line in lines)
    assert any(line.startswith("model.name_or_path = (empty)  ") for line in lines)
