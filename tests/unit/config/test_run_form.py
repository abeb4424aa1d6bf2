"""The Prefect run form: its preset field chooses the preset, and every `config` field filled
in overrides it, whatever its value; a field left empty takes the preset's."""

from __future__ import annotations

import breadth_flows.pipeline
import pytest
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools import ValidationError, validate

from breadth.config import (
    ConfigError,
    PipelineConfig,
    available_presets,
    describe_keys,
    load_config,
)
from breadth.config.run_form import PipelineConfigForm, config_from_form


def _submitted(**filled) -> dict:
    """What the form submits: every field, empty (None) unless the user filled it in."""
    values = PipelineConfigForm().model_dump(mode="json")
    for dotted, value in filled.items():
        *parents, leaf = dotted.split("__")
        node = values
        for part in parents:
            node = node[part]
        node[leaf] = value
    return values


def _form(**filled) -> PipelineConfigForm:
    return PipelineConfigForm.model_validate(_submitted(**filled))


def _run(monkeypatch, parameters: dict) -> PipelineConfig:
    """The config the flow runs for these parameters, validated as the flow validates them."""
    ran = []
    monkeypatch.setattr(breadth_flows.pipeline, "run_pipeline", lambda config, tags: ran.append(config))
    breadth_flows.pipeline.pipeline.fn(**breadth_flows.pipeline.pipeline.validate_parameters(parameters))
    (config,) = ran
    return config


def test_an_untouched_form_with_a_preset_runs_that_preset():
    assert config_from_form("ucb", _form()) == load_config("ucb")


def test_an_untouched_form_without_a_preset_runs_the_default_preset():
    assert config_from_form(None, _form()) == load_config("default")


def test_fields_filled_in_the_form_override_the_preset():
    config = config_from_form("ucb", _form(rl__max_steps=7, seed=2))
    assert config == load_config("ucb", ["rl.max_steps=7", "seed=2"])
    assert config.rl.reward.spec == "correctness+ucb" and config.preset == "ucb"


@pytest.mark.parametrize("submitted", ["the form", "the API"])
def test_a_field_set_to_the_default_presets_value_overrides_the_preset(monkeypatch, submitted):
    """It used to be taken for a field left alone: the preset's value ran instead."""
    filled = {"rl__entropy_coef": 0.0, "rl__top_entropy_quantile": 1.0}  # entropy: 0.01, 0.2
    config = _submitted(**filled) if submitted == "the form" else \
        {"rl": {"entropy_coef": 0.0, "top_entropy_quantile": 1.0}}
    ran = _run(monkeypatch, {"preset": "entropy", "config": config})
    assert ran == load_config("entropy", ["rl.entropy_coef=0.0", "rl.top_entropy_quantile=1.0"])
    assert ran.rl.epsilon_high == 0.28  # the preset's value where the form was left empty


def test_the_preset_label_typed_in_the_form_is_replaced_by_the_chosen_preset():
    assert config_from_form("mcq", _form(preset="something-else")).preset == "mcq"


def test_without_a_chosen_preset_the_forms_label_names_the_run():
    assert config_from_form(None, _form(preset="study", seed=1)).preset == "study"


def test_an_unknown_preset_is_refused_with_the_list():
    with pytest.raises(ConfigError, match="unknown preset 'nope'. Available presets: batch"):
        config_from_form("nope", _form())


def test_an_invalid_combination_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="rl.prompts_per_step=32 is not divisible"):
        config_from_form("default", _form(rl__num_processes=3))


@pytest.mark.parametrize(("preset", "expected"), [("default", "default"), ("ucb", "ucb")])
def test_the_flow_runs_the_chosen_preset(monkeypatch, preset, expected):
    config = _run(monkeypatch, {"preset": preset, "config": _submitted(rl__max_steps=5)})
    assert config.preset == expected and config.rl.max_steps == 5
    assert config.rl.reward.spec == load_config(expected).rl.reward.spec


@pytest.mark.parametrize("preset", available_presets())
@pytest.mark.parametrize("given", ["model", "JSON"])
def test_a_whole_config_runs_as_it_is(monkeypatch, preset, given):
    """`breadth run` and a grid's in-process cells pass a PipelineConfig, a grid's deployment
    cells its JSON: every field is filled, so nothing of the default preset may leak in (a
    field that is None in the config and set in `default` would)."""
    whole = load_config(preset, ["seed=3"])
    config = _run(monkeypatch, {"config": whole if given == "model" else
                                whole.model_dump(mode="json")})
    assert config == whole and config.content_hash() == whole.content_hash()


def test_a_whole_configs_empty_fields_stay_empty_whatever_the_default_preset_sets(monkeypatch):
    """They were dropped and filled from the `default` preset: harmless only while it sets
    none of the keys whose empty value means something."""
    import breadth.config.run_form

    whole = load_config("ucb")
    assert whole.data.num_train is None
    real = breadth.config.run_form.preset_values
    monkeypatch.setattr(breadth.config.run_form, "preset_values", lambda *args: {
        **real(*args), "data": {**real(*args).get("data", {}), "num_train": 50}})
    assert config_from_form(None, _form()).data.num_train == 50  # the patch holds
    assert _run(monkeypatch, {"config": whole.model_dump(mode="json")}) == whole


@pytest.mark.parametrize("sender", ["a form registered before fields were empty", "breadth run"])
def test_a_whole_config_with_a_preset_is_refused(monkeypatch, sender):
    """Every field filled overrides every preset value: `ucb` would run the default config
    under the name `ucb`. Old forms and copied flow-run parameters send such a payload."""
    whole = PipelineConfig().model_copy(update={"seed": 2})
    config = whole.model_dump(mode="json") if sender != "breadth run" else whole
    with pytest.raises(ConfigError, match=r"preset='ucb' with a whole config.*breadth deploy"):
        _run(monkeypatch, {"preset": "ucb", "config": config})


def test_a_form_filled_except_one_defaulted_field_is_not_whole():
    """One field left empty: the preset's value fills it, as for any partly filled form."""
    filled = PipelineConfig(seed=2).model_dump(mode="json")
    filled["rl"]["max_steps"] = None
    config = config_from_form("ucb", PipelineConfigForm.model_validate(filled))
    assert config.rl.max_steps == load_config("ucb").rl.max_steps and config.seed == 2


def test_a_whole_configs_json_passes_the_servers_schema_check():
    """Grid cells are submitted to the adhoc deployment as JSON; the server checks it first."""
    schema = parameter_schema(breadth_flows.pipeline.pipeline).model_dump_for_openapi()
    params = {"preset": "default", "config": load_config("ucb").model_dump(mode="json")}
    validate(params, schema, raise_on_error=True)
    with pytest.raises(ValidationError, match="max_steps"):
        params["config"]["rl"]["max_steps"] = 0  # the field's range travels with the form
        validate(params, schema, raise_on_error=True)


def _schema_fields(schema: dict, definitions: dict, prefix: str = "") -> dict[str, dict]:
    fields = {}
    for name, spec in schema["properties"].items():
        if "$ref" in spec:
            section = definitions[spec["$ref"].split("/")[-1]]
            fields.update(_schema_fields(section, definitions, f"{prefix}{name}."))
        else:
            fields[f"{prefix}{name}"] = spec
    return fields


def test_every_config_field_is_an_empty_form_field_with_its_help_text_and_default():
    schema = parameter_schema(breadth_flows.pipeline.pipeline.fn).model_dump_for_openapi()
    definitions = schema["definitions"]
    fields = _schema_fields({"properties": {"config": schema["properties"]["config"]}},
                            definitions)
    help_text = {f"config.{key}": text for key, text in describe_keys(PipelineConfig)}
    assert set(fields) == set(help_text)
    assert all(spec["default"] is None for spec in fields.values())
    assert all(spec["description"].startswith(help_text[key]) for key, spec in fields.items())
    max_steps = fields["config.rl.max_steps"]
    assert max_steps["title"] == "Max Steps" and max_steps["description"].endswith("Default `100`.")
    assert {"type": "integer", "minimum": 1} in max_steps["anyOf"]
    assert fields["config.data.source"]["description"].endswith("Default `synthetic:arithmetic`.")


def test_the_form_offers_the_presets_as_a_drop_down_above_the_config():
    """One drop-down starting on `default`: it was a str/None toggle whose drop-down showed
    only after choosing "str"."""
    schema = parameter_schema(breadth_flows.pipeline.pipeline.fn).model_dump()
    field = schema["properties"]["preset"]
    assert next(iter(schema["properties"])) == "preset"
    assert field["enum"] == available_presets() and field["default"] == "default"
    assert "anyOf" not in field and "overrides it" in field["description"]


def test_a_form_left_at_the_default_preset_keeps_its_label():
    """The drop-down cannot be emptied: `default` chosen is the old "none chosen"."""
    assert config_from_form("default", _form(preset="study", seed=1)).preset == "study"


@pytest.mark.parametrize("flow", ["breadth_flows.pipeline:pipeline", "breadth_flows.grid_flow:grid"])
def test_every_parameter_of_a_deployed_flow_has_help_text_in_the_form(flow):
    """The nightly's one parameter, `study`, had none: its docstring had no `Args:`."""
    import importlib

    module, name = flow.split(":")
    schema = parameter_schema(getattr(importlib.import_module(module), name).fn).model_dump()
    assert schema["properties"]
    assert not [key for key, field in schema["properties"].items() if not field.get("description")]
