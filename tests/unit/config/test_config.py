"""Config: presets validate, overrides are typed, and every error names the key and the fix."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from breadth.config import (
    ConfigError,
    PipelineConfig,
    available_presets,
    describe_keys,
    load_config,
    validated,
)
from breadth.study.grid_design import GridConfig


@pytest.mark.parametrize("preset", available_presets())
def test_every_preset_validates(preset):
    config = load_config(preset)
    assert config.preset == preset


def test_temperature_zero_is_a_greedy_run_with_one_sample_per_problem():
    config = load_config("default", ["rollout.temperature=0", "rollout.num_samples=1",
                                     "evaluation.transfer_split_k=1",
                                     "evaluation.search_budget=0"])
    assert (config.rollout.temperature, config.rollout.num_samples) == (0.0, 1)


def test_overrides_are_typed():
    config = load_config("default", ["rl.max_steps=7", "data.format=mcq", "rl.epsilon_high=0.28"])
    assert (config.rl.max_steps, config.data.format, config.rl.epsilon_high) == (7, "mcq", 0.28)


@pytest.mark.parametrize(
    ("preset", "overrides", "must_mention"),
    [
        ("no-such-preset", [], ["unknown preset 'no-such-preset'", "default", "--preset"]),
        ("default", ["rl.max_steps=abc"], ["rl.max_steps", "valid integer", "'abc'"]),
        ("default", ["data.format=essay"], ["data.format", "'free_form' or 'mcq'", "'essay'"]),
        ("default", ["rl.maxsteps=3"], ["unknown config key 'rl.maxsteps'", "breadth config"]),
        ("default", ["max_steps=3"], ["Did you mean 'rl.max_steps'?"]),
        ("default", ["rl.max_steps"], ["not key=value"]),
        ("default", ["model.num_heads=8"], ["head dim", "below 32"]),
        ("default", ["rl.top_entropy_quantile=2"], ["rl.top_entropy_quantile", "less than or equal"]),
        ("default", ["rl.reward.spec=corectness+ucb"],
         ["rl.reward.spec", "unknown reward 'corectness'", "Did you mean 'correctness'?"]),
        ("default", ["rl.reward.spec=passk", "rl.reward.passk_k=9"],
         ["k=9 must be between 1 and rl.num_generations=8"]),
        ("default", ["rl.reward.spec=passk:k=8"], ["k=8 equals rl.num_generations=8", "k < "]),
        ("default", ["rl.reward.spec=passk", "rl.num_generations=4"],
         ["k=4 equals rl.num_generations=4"]),
        ("default", ["rl.reward.spec=unlikeliness"],
         ["'unlikeliness' cannot be trained", "completion_mean_logprob", "Use one of: correctness"]),
        ("default", ["data.source=jsonl"], ["data.source", "not one of", "jsonl:PATH"]),
        ("default", ["data.source=synthetic:algebra"], ["unknown synthetic task 'algebra'"]),
        ("default", ["rl.num_processes=3"],
         ["rl.prompts_per_step=32 is not divisible by rl.num_processes=3", "multiple of 3"]),
        ("default", ["preset=ucb"], ["`preset` is only a label", "--preset ucb"]),
        ("default", ["data.source=no"], ["data.source", "(got 'no')"]),
        ("default", ["rollout.temperature=0"],
         ["rollout.temperature=0 decodes greedily", "rollout.num_samples=16 samples",
          "Set rollout.num_samples=1"]),
        ("default", ["rollout.temperature=0", "rollout.num_samples=1"],
         ["evaluation.transfer_split_k=1 (not 4", "evaluation.search_budget=0 (not 16"]),
        ("default", ["rollout.temperature=1e-6"],
         ["rollout.temperature=1e-06 is below 0.01", "set rollout.temperature=0"]),
        ("default", ["rl.temperature=0"], ["rl.temperature", "greater than 0"]),
    ],
)
def test_bad_config_names_the_key_and_the_fix(preset, overrides, must_mention):
    with pytest.raises(ConfigError) as caught:
        load_config(preset, overrides)
    for text in must_mention:
        assert text in str(caught.value)


@pytest.mark.parametrize(("override", "expected"), [
    ("tracking.experiment=2024", "2024"),
    ("tracking.experiment=3.10", "3.10"),
    ("tracking.experiment=yes", "yes"),
    ("tracking.experiment=2024-01-31", "2024-01-31"),
    ("tracking.experiment='2024'", "2024"),
    ("tracking.experiment=", None),
    ("model.name_or_path=null", None),
])
def test_a_text_key_keeps_the_text_yaml_would_read_as_a_number_or_boolean(override, expected):
    key, _ = override.split("=", 1)
    section, name = key.split(".")
    assert getattr(getattr(load_config("default", [override]), section), name) == expected


def _through(route: str, key: str, written: str, tmp_path):
    """`key: written` in a preset file, or `--set key=written`: the two read values alike."""
    if route == "--set":
        return load_config("default", [f"{key}={written}"])
    *sections, leaf = key.split(".")
    path = tmp_path / "mine.yaml"
    path.write_text("".join(f"{'  ' * depth}{section}:\n" for depth, section in enumerate(sections))
                    + f"{'  ' * len(sections)}{leaf}: {written}\n")
    return load_config(str(path))


def _value(config, key: str):
    for part in key.split("."):
        config = getattr(config, part)
    return config


@pytest.mark.parametrize("route", ["preset", "--set"])
@pytest.mark.parametrize(("key", "written", "expected"), [
    ("tracking.experiment", "no", "no"),
    ("tracking.experiment", "3.10", "3.10"),
    ("tracking.experiment", "2024-01-31", "2024-01-31"),
    ("tracking.experiment", "1:30", "1:30"),
    ("tracking.experiment", "2024-13-45", "2024-13-45"),  # no date: made, it failed
    ("tracking.experiment", "!!int x", "x"),
    ("tracking.experiment", "'2024'", "2024"),
    ("tracking.experiment", "null", None),
    ("rollout.vllm_url", "[http://a:8000, 2024]", ["http://a:8000", "2024"]),
    ("rl.scale_rewards", "none", "none"),
])
def test_a_preset_text_value_keeps_its_text_as_set_does(route, key, written, expected, tmp_path):
    """A preset's `experiment: no` failed with "Input should be a valid string (got False)",
    and `3.10` with "(got 3.1)", while `--set` kept the characters typed: now both do."""
    assert _value(_through(route, key, written, tmp_path), key) == expected


@pytest.mark.parametrize("route", ["preset", "--set"])
@pytest.mark.parametrize(("key", "written", "must_mention"), [
    ("seed", "010", "an octal number in YAML, read as 8; write 8, or 10 without the zero"),
    ("seed", "0777", "an octal number in YAML, read as 511; write 511, or 777 without the zero"),
    ("rl.max_steps", "1:30", "a base-60 number in YAML, read as 90; write the number meant"),
    ("rl.vllm_server_timeout_s", "1:30", "read as 90"),
    ("rl.max_steps", "on", "a yes/no word in YAML, read as true; write a whole number"),
    ("sft.epochs", "yes", "write a number"),
    ("data.num_train", "false", "read as false"),
])
def test_a_number_yaml_would_change_is_refused(route, key, written, must_mention, tmp_path):
    """`seed: 010` became 8 (YAML 1.1 octal), `max_steps: 1:30` 90 (base 60) and
    `max_steps: on` 1 (a YAML flag pydantic takes as a number), without a word."""
    with pytest.raises(ConfigError) as caught:
        _through(route, key, written, tmp_path)
    message = str(caught.value)
    assert f"config key {key}: {written} is " in message and must_mention in message
    where = "preset file " + str(tmp_path / "mine.yaml") if route == "preset" else "--set '"
    assert message.startswith(where)
    if route == "preset":
        assert f", line {key.count('.') + 1}: " in message


@pytest.mark.parametrize("route", ["preset", "--set"])
@pytest.mark.parametrize(("key", "written", "expected"), [
    ("sft.learning_rate", "1e-4", 1e-4),  # PyYAML reads text; pydantic reads the number
    ("rl.learning_rate", "5.0e-7", 5e-7),
    ("seed", "'010'", 10),  # quoted: text, read as the decimal it shows
    ("seed", "0x10", 16),
    ("seed", "0", 0),
    ("seed", "00", 0),  # zero-padded, the same number in octal and decimal: taken
    ("seed", "07", 7),
    ("seed", "01", 1),
    ("seed", "-07", -7),
    ("rl.max_steps", "1_000", 1000),
    ("sft.enabled", "no", False),
    ("rl.adaptive_entropy", "on", True),
    ("data.difficulty", "2", 2),
    ("data.num_train", "null", None),
])
def test_numbers_and_flags_yaml_reads_as_written_are_kept(route, key, written, expected,
                                                         tmp_path):
    assert _value(_through(route, key, written, tmp_path), key) == expected


@pytest.mark.parametrize("route", ["preset", "--set"])
@pytest.mark.parametrize(("key", "written", "must_mention"), [
    ("seed", "2024-13-45", ("2024-13-45 looks like a date to YAML but is not one "
                            "(month must be in 1..12); write a whole number")),
    ("rl.max_steps", "!!int x", "!!int x is not a whole number"),
    ("rl.learning_rate", "!!float x", "!!float x is not a number"),
    ("sft.enabled", "!!bool x", "!!bool x is not a yes/no word"),
    ("seed", "!!timestamp x", "!!timestamp x is not a date"),
])
def test_a_value_yaml_cannot_make_is_refused_naming_the_key(route, key, written, must_mention,
                                                           tmp_path):
    """`seed: 2024-13-45` (a date by its look) and `!!int x` ended in a traceback
    (ValueError: month must be in 1..12) from YAML's constructor."""
    with pytest.raises(ConfigError) as caught:
        _through(route, key, written, tmp_path)
    message = str(caught.value)
    assert f"config key {key}: {must_mention}" in message
    where = "preset file " + str(tmp_path / "mine.yaml") if route == "preset" else "--set '"
    assert message.startswith(where)
    if route == "preset":
        assert f", line {key.count('.') + 1}: " in message


@pytest.mark.parametrize("text", ["rl:\n  max_stepz: 2024-13-45\n", "2024-13-45: 1\n",
                                  "!!int x\n", "seed: !!int '7x'\n"])
def test_a_preset_value_yaml_cannot_make_anywhere_is_a_config_error(text, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="quote it|write a whole number"):
        load_config(str(path))


def test_unknown_keys_in_a_preset_file_fail(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("rl:\n  max_stepz: 3\n")
    with pytest.raises(ConfigError, match="rl.max_stepz"):
        load_config(str(path))


def test_every_field_has_help_text_for_the_ui_form():
    missing = [key for key, description in describe_keys(PipelineConfig) if not description]
    assert not missing


def test_help_texts_keep_their_syntax_out_of_markdown_emphasis():
    # The Prefect form renders help texts as markdown: `c*b; ... c*(b` outside a code span
    # turned into italics and lost its asterisks.
    import re

    mangled = [key for key, description in describe_keys(PipelineConfig)
               if re.search(r"\*\S|\S\*|(?<![\w`])_\w|\w_(?![\w`])",
                            re.sub(r"`[^`]*`", "", description))]
    assert not mangled, f"wrap the syntax of these help texts in backticks: {mangled}"


def test_content_hash_changes_with_the_section_only():
    a, b = load_config("default"), load_config("default", ["rl.max_steps=3"])
    assert a.content_hash("data") == b.content_hash("data")
    assert a.content_hash("rl") != b.content_hash("rl")
    assert a.content_hash() != b.content_hash()


def test_a_grid_whose_cells_differ_beyond_the_objective_is_refused_before_compute():
    from breadth.config import ConfigError, load_config
    from breadth.study.grid_design import GridConfig, check_fair

    # Through objective_overrides: refused when the grid is built (only reward and entropy
    # keys may differ by objective).
    with pytest.raises(ValueError) as info:
        GridConfig(preset="default", formats=["free_form"], seeds=[0],
                   rewards=["correctness", "correctness+ucb"],
                   objective_overrides={"correctness+ucb": ["rl.num_problems=64",
                                                            "data.num_eval=32"]})
    assert "objective_overrides['correctness+ucb'] sets 'rl.num_problems'" in str(info.value)
    # Cells that differ anyhow (e.g. a reward that sets other keys) are refused by check_fair.
    cells = [("free_form", "correctness", 0, load_config("default")),
             ("free_form", "correctness+ucb", 0,
              load_config("default", ["rl.num_problems=64", "data.num_eval=32"]))]
    with pytest.raises(ConfigError) as unfair:
        check_fair(cells)
    message = str(unfair.value)
    for fragment in ("rl.num_problems", "data.num_eval", "free_form/correctness+ucb/seed0=64",
                     "reward and entropy keys"):
        assert fragment in message
    # Reward keys are the objective: allowed, and they reach the cell.
    fair = GridConfig(preset="default", formats=["free_form"], seeds=[0],
                      rewards=["correctness", "correctness+ucb"],
                      objective_overrides={"correctness+ucb": ["rl.reward.ucb_coef=0.5"]})
    assert [c[3].rl.reward.ucb_coef for c in fair.cells()] == [0.2, 0.5]


def test_objective_overrides_must_name_a_grid_objective():
    from breadth.config import ConfigError
    from breadth.study.grid_design import GridConfig

    grid = GridConfig(preset="default", rewards=["correctness"],
                      objective_overrides={"ucb": ["rl.reward.ucb_coef=0.5"]})
    with pytest.raises(ConfigError, match=r"objectives \['ucb'\] that are not in the grid"):
        grid.cells()


def test_the_default_grid_is_the_thinned_nightly_fair_and_on_the_study_pool():
    from breadth.study.grid_design import GridConfig

    cells = GridConfig().cells()
    # free_form only (mcq is beyond 3 h: docs/results/grids/full-grid-6abeba80/claims.md):
    # correctness and ucb, 15 seeds
    assert sorted({(c[0], c[1]) for c in cells}) == [
        ("free_form", "correctness"), ("free_form", "correctness+ucb")]
    assert len(cells) == 2 * 15
    assert {c[3].rl.num_problems for c in cells} == {512}
    assert {c[3].preset for c in cells} == {"reasoning"}
    assert {c[3].data.source for c in cells} == {"synthetic:chain"}


def test_a_grid_that_names_its_own_objectives_is_not_thinned_by_the_nightlys_default():
    from breadth.study.grid_design import GridConfig

    named = GridConfig(formats=["mcq", "free_form"], rewards=["correctness", "darling"],
                       seeds=[0])
    assert named.format_rewards == {}
    assert {(c[0], c[1]) for c in named.cells()} == {
        (f, r) for f in ("mcq", "free_form") for r in ("correctness", "darling")}


# A preset extending another, and each objective preset against its base: test_presets.py.


def test_a_preset_that_extends_itself_is_refused(tmp_path):
    from breadth.config import ConfigError

    path = tmp_path / "loop.yaml"
    path.write_text(f"extends: {path}\n")
    with pytest.raises(ConfigError, match="extend each other in a cycle"):
        load_config(str(path))


BAD_BEFORE_COMPUTE = {
    "rl": {"reward": {"spec": "corectness"}},
    "data": {"source": "csv:problems.csv"},
}


@pytest.mark.parametrize("section", sorted(BAD_BEFORE_COMPUTE))
def test_the_prefect_form_refuses_bad_values_at_validation(section):
    # The flow's parameter is a PipelineConfig: Prefect validates the form with this model.
    with pytest.raises(ValidationError, match=section):
        PipelineConfig.model_validate({section: BAD_BEFORE_COMPUTE[section]})


def test_the_grid_refuses_a_bad_reward_before_any_cell_runs():
    with pytest.raises(ConfigError, match="Did you mean 'darling'"):
        GridConfig(rewards=["correctness", "darlin"], seeds=[0]).cells()


def test_the_run_command_refuses_a_bad_reward_before_the_stack_starts(monkeypatch):
    from typer.testing import CliRunner

    from breadth import cli

    monkeypatch.setattr(cli.stack, "start_stack", lambda: pytest.fail("stack started"))
    result = CliRunner().invoke(cli.app, ["run", "--set", "rl.reward.spec=corectness+ucb"])
    assert result.exit_code == 2
    assert "Did you mean 'correctness'?" in result.output
    assert "Traceback" not in result.output


def test_a_preset_file_extends_its_neighbour_from_any_directory(tmp_path, monkeypatch):
    """`extends: base.yaml` in a preset file names the file beside it; it was read relative to
    the current directory, so the preset worked only when run from its own folder."""
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "base.yaml").write_text("rl:\n  max_steps: 7\n")
    (tmp_path / "studies" / "child.yaml").write_text("extends: base.yaml\nsft:\n  epochs: 2\n")
    monkeypatch.chdir(tmp_path)
    config = load_config("studies/child.yaml")
    assert (config.rl.max_steps, config.sft.epochs) == (7, 2)


def test_presets_that_extend_each_other_are_named_as_a_cycle(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match=r"cycle: .*a.yaml -> .*b.yaml -> .*a.yaml; remove one"):
        load_config(str(tmp_path / "a.yaml"))


def test_a_cycle_spelled_through_dot_dot_is_still_a_cycle(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("extends: ../a/x.yaml\n")
    with pytest.raises(ConfigError, match="extend each other in a cycle"):
        load_config(str(tmp_path / "a" / "x.yaml"))


def test_a_folder_given_as_a_preset_is_named_as_a_path(tmp_path):
    (tmp_path / "presets").mkdir()
    with pytest.raises(ConfigError, match="is a path but not a .yaml or .yml file"):
        load_config(str(tmp_path / "presets"))


def test_a_reward_that_needs_scale_rewards_none_says_so_in_the_config():
    """passk and darling ran TRL with scale_rewards='none' while the config, and so the run's
    logged params, said 'group'; a --set rl.scale_rewards=batch was silently replaced."""
    for preset in ("passk", "darling"):
        config = load_config(preset)
        assert config.rl.scale_rewards == "none" and config.flat()["rl.scale_rewards"] == "none"
    with pytest.raises(ConfigError, match="rl.scale_rewards='batch' conflicts with the reward 'passk'"):
        load_config("passk", ["rl.scale_rewards=batch"])
    # A whole config's JSON (a grid cell, a GRPO worker's job) holds what the reward set.
    whole = load_config("darling").model_dump(mode="json")
    assert PipelineConfig.model_validate(whole).rl.scale_rewards == "none"
    assert load_config("default", ["rl.scale_rewards=batch"]).rl.scale_rewards == "batch"


@pytest.mark.parametrize("given", ["--set", "JSON"])
def test_the_default_scale_rewards_given_beside_darling_is_refused_not_replaced(given):
    """An explicit 'group' was taken for "unset" (it is the default: the run form used to send
    every default) and silently became 'none'."""
    with pytest.raises(ConfigError, match="rl.scale_rewards='group' conflicts with the reward"):
        if given == "--set":
            load_config("darling", ["rl.scale_rewards=group"])
        else:
            whole = PipelineConfig().model_dump(mode="json")
            whole["rl"]["reward"]["spec"] = "darling"
            validated(whole)


def test_an_invalid_value_names_the_preset_file_or_the_override_that_gave_it(tmp_path):
    """Both were "Fix the preset or the --set value", whichever of them held the value."""
    preset = tmp_path / "mine.yaml"
    preset.write_text("extends: default\ndata:\n  format: xml\n")
    with pytest.raises(ConfigError, match=f"config key data.format: .*\nFix the preset {preset};"):
        load_config(str(preset))
    with pytest.raises(ConfigError, match=r"rl.max_steps \(from the override rl.max_steps=0\).*"
                                          r"\nFix the override rl.max_steps=0;"):
        load_config(str(preset), ["data.format=mcq", "rl.max_steps=0"])


def test_a_preset_lists_the_configs_keys_once_not_once_a_value(monkeypatch):
    # Listing the keys walks every config model; once a value, it was most of load_config.
    from breadth.config import reader

    calls = []
    known = reader._known_keys
    monkeypatch.setattr(reader, "_known_keys", lambda: calls.append(1) or known())
    values = reader.preset_values("default")
    assert len(calls) == 1 and sum(1 for _ in _leaves(values)) > 10
    # A value is still read by its key's kind: a text key keeps the characters written.
    assert reader._read_preset_yaml("tracking:\n  experiment: 3.10\n", "p") == {
        "tracking": {"experiment": "3.10"}}


def _leaves(tree):
    for value in tree.values():
        yield from _leaves(value) if isinstance(value, dict) else [value]
