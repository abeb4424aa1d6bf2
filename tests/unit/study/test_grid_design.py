"""GridConfig: every cell a validated pipeline config; a study hash that ignores seeds."""

from __future__ import annotations

import pytest

from breadth.config import ConfigError, load_config
from breadth.study.grid_design import GridConfig


def test_cells_are_formats_x_rewards_x_seeds_with_each_config_set():
    study = GridConfig(formats=["mcq", "free_form"], rewards=["correctness", "darling@entropy"],
                       seeds=[0, 3], overrides=["rl.max_steps=2"])
    cells = study.cells()
    assert [(f, r, s) for f, r, s, _ in cells] == [
        (f, r, s) for f in ("mcq", "free_form") for r in ("correctness", "darling@entropy")
        for s in (0, 3)
    ]
    for fmt, reward, seed, config in cells:
        assert (config.data.format, config.seed, config.rl.max_steps) == (fmt, seed, 2)
        assert config.rl.reward.spec == reward.removesuffix("@entropy")
        entropy = reward.endswith("@entropy")
        assert (config.rl.epsilon_high == 0.28) is entropy
        assert (config.rl.top_entropy_quantile == 0.2) is entropy


def test_cells_refuse_an_unknown_variant():
    with pytest.raises(ConfigError, match="unknown variant 'hot'"):
        GridConfig(rewards=["correctness@hot"], seeds=[0]).cells()


def test_a_cell_key_error_names_its_grid_option_and_an_override_by_its_text():
    with pytest.raises(ConfigError) as caught:
        GridConfig(preset="default", rewards=["correctnes"], seeds=[0],
                   overrides=["rl.max_steps=abc"]).cells()
    text = str(caught.value)
    assert "config key rl.reward.spec (from --reward):" in text
    # A shared override: not the grid's option, and named as written.
    assert "config key rl.max_steps (from the override rl.max_steps=abc):" in text
    fix = text.splitlines()[-1]
    assert fix.startswith("Fix ") and "--reward" in fix and "the override rl.max_steps=abc" in fix


def test_content_hash_ignores_seeds_and_grid_id_but_not_the_study():
    base = GridConfig(rewards=["correctness"], seeds=[0])
    same_study = GridConfig(rewards=["correctness"], seeds=[5, 6], grid_id="night-2")
    assert base.content_hash() == same_study.content_hash()
    for other in (GridConfig(rewards=["darling"], seeds=[0]),
                  GridConfig(rewards=["correctness"], seeds=[0], formats=["mcq"]),
                  GridConfig(rewards=["correctness"], seeds=[0], overrides=["rl.max_steps=2"])):
        assert other.content_hash() != base.content_hash()


def test_a_preset_edited_between_nights_is_another_study(tmp_path):
    """The alarm compares a night with the previous one of the same study: a preset whose
    content changed (here n = 32 -> 128 samples at evaluation) must not count as the same."""
    before, after = tmp_path / "before" / "nightly.yaml", tmp_path / "after" / "nightly.yaml"
    for path, samples in ((before, 32), (after, 128)):
        path.parent.mkdir()
        path.write_text(f"extends: reasoning\nrollout:\n  num_samples: {samples}\n")
    assert load_config(str(before)).preset == load_config(str(after)).preset  # the same name
    assert (GridConfig(preset=str(before), rewards=["correctness"], seeds=[0]).content_hash()
            != GridConfig(preset=str(after), rewards=["correctness"], seeds=[0]).content_hash())


def test_how_cells_run_is_not_part_of_the_study():
    in_process = GridConfig(rewards=["correctness"], seeds=[0])
    on_a_pool = GridConfig(rewards=["correctness"], seeds=[0], cell_runner="deployment",
                           cell_deployment="breadth-pipeline/gpu")
    assert in_process.content_hash() == on_a_pool.content_hash()


def test_cell_runner_names_the_allowed_values():
    with pytest.raises(ValueError, match="cell_runner"):
        GridConfig(cell_runner="cluster")


@pytest.mark.parametrize(("field", "values", "repeated"), [
    ("seeds", [0, 1, 0], "0"),
    ("rewards", ["correctness", "darling", "correctness"], "'correctness'"),
    ("formats", ["mcq", "mcq"], "'mcq'"),
])
def test_a_repeated_format_reward_or_seed_is_refused_naming_it(field, values, repeated):
    # A repeated seed would run the same cell twice and count it as one more sample.
    with pytest.raises(ValueError, match=field) as caught:
        GridConfig.model_validate({field: values})
    assert f"{repeated} given more than once" in str(caught.value)


@pytest.mark.parametrize(("override", "axis"), [
    ("seed=5", "seeds"), ("data.format=mcq", "formats"), ("rl.reward.spec=darling", "rewards"),
    (" seed = 5", "seeds"),
])
def test_overrides_may_not_set_what_each_cell_sets_itself(override, axis):
    # The cell's own seed, format and reward come after the overrides: this one would be lost.
    with pytest.raises(ValueError, match="overrides") as caught:
        GridConfig(overrides=["rl.max_steps=2", override])
    assert f"from its `{axis}`" in str(caught.value)


def test_an_entropy_knob_set_for_every_cell_is_refused_where_the_variant_sets_it_again():
    """The @entropy cells apply their knobs after the shared overrides: --set rl.epsilon_high
    was silently replaced there (0.28) while it held in the other cells."""
    with pytest.raises(ValueError, match="correctness@entropy cells set again") as caught:
        GridConfig(rewards=["correctness", "correctness@entropy"],
                   overrides=["rl.epsilon_high=0.3"])
    assert "objective_overrides" in str(caught.value)
    # Without an @entropy objective it holds everywhere; through objective_overrides it wins.
    GridConfig(rewards=["correctness", "darling"], overrides=["rl.epsilon_high=0.3"])
    study = GridConfig(formats=["mcq"], seeds=[0], rewards=["correctness@entropy"],
                       objective_overrides={"correctness@entropy": ["rl.epsilon_high=0.3"]})
    assert study.cells()[0][3].rl.epsilon_high == 0.3


@pytest.mark.parametrize("override", ["seed=3", "data.format=mcq", "rl.reward.spec=darling",
                                      "rl.max_steps=5"])
def test_objective_overrides_take_only_reward_and_entropy_keys(override):
    """They apply after each cell's own seed and format, and fairness lets those differ:
    `seed=3` made all three of an objective's seeds one run, counted as three samples."""
    with pytest.raises(ValueError, match=r"objective_overrides\['correctness\+ucb'\] sets"):
        GridConfig(rewards=["correctness", "correctness+ucb"],
                   objective_overrides={"correctness+ucb": [override]})
    fine = GridConfig(rewards=["correctness", "correctness+ucb"],
                      objective_overrides={"correctness+ucb": ["rl.reward.ucb_coef=0.5"]})
    assert fine.objective_overrides["correctness+ucb"] == ["rl.reward.ucb_coef=0.5"]


def test_a_reward_parameter_that_fails_a_check_across_keys_names_reward_as_a_cause():
    """passk's k is checked against rl.num_generations at the `rl` section: the error was
    blamed on the preset or --set alone, though --reward set k=999."""
    with pytest.raises(ConfigError) as caught:
        GridConfig(preset="study", rewards=["passk:k=999"], formats=["free_form"],
                   seeds=[0]).cells()
    assert "Fix --reward or the preset study;" in str(caught.value)


def test_the_unscaled_variant_is_correctness_at_the_step_size_of_darling_and_passk():
    """The claims compare darling and passk with UNSCALED_CONTROL: the grid must run it."""
    from breadth.study.grid_design import UNSCALED_CONTROL

    (cell,) = GridConfig(formats=["mcq"], seeds=[0], rewards=[UNSCALED_CONTROL]).cells()
    assert cell[1] == "correctness@unscaled"
    assert (cell[3].rl.reward.spec, cell[3].rl.scale_rewards) == ("correctness", "none")
    with pytest.raises(ValueError, match="correctness@unscaled cells set again"):
        GridConfig(rewards=["correctness", UNSCALED_CONTROL], overrides=["rl.scale_rewards=group"])


def test_format_rewards_thins_a_format_to_some_objectives_in_the_grids_order():
    grid = GridConfig(preset="default", formats=["free_form", "mcq"],
                      rewards=["correctness", "correctness+batch", "correctness+ucb"],
                      format_rewards={"mcq": ["correctness+ucb", "correctness"]}, seeds=[0])
    cells = [(fmt, objective) for fmt, objective, _, _ in grid.cells()]
    assert cells == [("free_form", "correctness"), ("free_form", "correctness+batch"),
                     ("free_form", "correctness+ucb"), ("mcq", "correctness"),
                     ("mcq", "correctness+ucb")]


@pytest.mark.parametrize("thin,message", [
    ({"mcq": ["correctness"]}, "format 'mcq', which is not in the grid's formats"),
    ({"free_form": ["darling"]}, r"\['darling'\]"),
    ({"free_form": []}, "at least one"),
])
def test_format_rewards_naming_what_the_grid_lacks_is_refused(thin, message):
    grid = GridConfig(preset="default", formats=["free_form"], rewards=["correctness"],
                      format_rewards=thin, seeds=[0])
    with pytest.raises(ConfigError, match=message):
        grid.cells()
