"""The Prefect run form's preset field chooses the preset; the form's changes override it."""

from __future__ import annotations

import pytest

import flows.pipeline
from breadth.config import ConfigError, PipelineConfig, load_config, with_form_changes


def _form(**changes) -> PipelineConfig:
    """What the form submits: every field, at its default unless the user changed it."""
    values = PipelineConfig().model_dump(mode="json")
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = values
        for part in parents:
            node = node[part]
        node[leaf] = value
    return PipelineConfig.model_validate(values)


def test_an_untouched_form_with_a_preset_runs_that_preset():
    assert with_form_changes("ucb", _form()) == load_config("ucb")


def test_fields_changed_in_the_form_override_the_preset():
    config = with_form_changes("ucb", _form(rl__max_steps=7, seed=2))
    assert config == load_config("ucb", ["rl.max_steps=7", "seed=2"])
    assert config.rl.reward.spec == "correctness+ucb" and config.preset == "ucb"


def test_the_preset_label_typed_in_the_form_is_replaced_by_the_chosen_preset():
    assert with_form_changes("mcq", _form(preset="something-else")).preset == "mcq"


def test_an_unknown_preset_is_refused_with_the_list():
    with pytest.raises(ConfigError, match="unknown preset 'nope'. Available presets: batch"):
        with_form_changes("nope", _form())


@pytest.mark.parametrize(("preset", "expected"), [(None, "default"), ("ucb", "ucb")])
def test_the_flow_runs_the_chosen_preset(monkeypatch, preset, expected):
    ran = []
    monkeypatch.setattr(flows.pipeline, "run_pipeline", lambda config, tags: ran.append(config))
    flows.pipeline.pipeline.fn(preset=preset, config=_form(rl__max_steps=5))
    (config,) = ran
    assert config.preset == expected and config.rl.max_steps == 5
    assert config.rl.reward.spec == load_config(expected).rl.reward.spec


def test_the_form_offers_the_presets_as_a_drop_down_above_the_config():
    from prefect.utilities.callables import parameter_schema

    schema = parameter_schema(flows.pipeline.pipeline.fn).model_dump()
    field = schema["properties"]["preset"]
    assert next(iter(schema["properties"])) == "preset"
    assert "ucb" in field["anyOf"][0]["enum"] and "overrides it" in field["description"]


@pytest.mark.parametrize("flow", ["flows.pipeline:pipeline", "flows.grid:grid"])
def test_every_parameter_of_a_deployed_flow_has_help_text_in_the_form(flow):
    """The nightly's one parameter, `study`, had none: its docstring had no `Args:`."""
    import importlib

    from prefect.utilities.callables import parameter_schema

    module, name = flow.split(":")
    schema = parameter_schema(getattr(importlib.import_module(module), name).fn).model_dump()
    assert schema["properties"]
    assert not [key for key, field in schema["properties"].items() if not field.get("description")]
