"""The Prefect run form of the pipeline flow: `PipelineConfigForm`, every `PipelineConfig` field
optional and empty, and `config_from_form`, which lays the fields filled in over a preset.

Generated from `PipelineConfig`, so there is still one set of configs: a field's title, type,
range and help text are its config field's.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from breadth.config.models import PipelineConfig, Section, flatten_keys
from breadth.config.reader import ConfigError, preset_values, set_dotted, validated


def _form_of(model: type[BaseModel], validators: dict[str, Any] | None = None) -> type[BaseModel]:
    """`model` as the Prefect run form shows it: every value field optional and empty (None)
    by default, with its help text, type and range; every section a nested form.

    Why empty rather than the default: the form submits every field, so a field holding the
    default preset's value could not be told from one left alone, and setting a field back to
    that value over another preset did nothing.
    """
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            section = _form_of(annotation)
            fields[name] = (section, Field(default_factory=section, title=field.title))
            continue
        # The metadata is the range (ge, le, ...): the server checks it before the run starts.
        typed = Annotated[(annotation, *field.metadata)] if field.metadata else annotation
        default = field.get_default(call_default_factory=True)
        # The form no longer shows the default as the field's value: the help text says it.
        text = default if isinstance(default, str) else json.dumps(default)
        shown = "" if default is None else f" Default `{text}`."
        fields[name] = (typed | None, Field(None, title=field.title,
                                            description=f"{field.description}{shown}"))
    # A section that takes keys beyond its fields (rl.reward: the parameters of rewards
    # registered after the config was made) passes them on to the config, which checks them.
    base = _OpenSection if model.model_config.get("extra") == "allow" else Section
    return create_model(f"{model.__name__}Form", __base__=base, __module__=__name__,
                        __doc__=model.__doc__, __validators__=validators, **fields)


class _OpenSection(Section):
    model_config = ConfigDict(extra="allow")


def _whole_config(cls: type[BaseModel], data: Any) -> Any:
    # `breadth run` and a grid's in-process cells pass a whole PipelineConfig to the flow.
    return data.model_dump(mode="json") if isinstance(data, PipelineConfig) else data


# The pipeline flow's `config` parameter, rendered by the Prefect UI as the run form.
PipelineConfigForm = _form_of(
    PipelineConfig, {"whole_config": model_validator(mode="before")(classmethod(_whole_config))}
)


# The run form's preset when none is chosen: its drop-down starts on it.
DEFAULT_PRESET = "default"


def config_from_form(preset: str | None, form: BaseModel) -> PipelineConfig:
    """The preset's values (None = `default`), then every field filled in `form` (not None),
    whatever its value: how the Prefect run form chooses a preset and overrides it.

    A whole config (`_is_whole`: as `breadth run` and a grid's cells give it) runs as it is,
    its empty fields included, when the preset is left at `default` (the form's drop-down
    cannot be emptied). With another preset it is refused: it would override every one of
    that preset's values. A field whose empty value means something (`data.num_eval`: the
    synthetic default) cannot be emptied over a preset that sets it: left empty, it takes the
    preset's.

    >>> form = PipelineConfigForm.model_validate({"seed": 3, "rl": {"entropy_coef": 0.0}})
    >>> config = config_from_form("entropy", form)  # entropy sets rl.entropy_coef=0.01
    >>> config.preset, config.seed, config.rl.entropy_coef, config.rl.epsilon_high
    ('entropy', 3, 0.0, 0.28)
    """
    given = flatten_keys(form.model_dump(mode="json", exclude_none=True))
    chosen = preset or DEFAULT_PRESET
    if _is_whole(given):
        if chosen != DEFAULT_PRESET:
            raise ConfigError(
                f"preset={preset!r} with a whole config: `config` fills every field, so it "
                f"would replace all of the preset's values and run {given['preset']!r}'s "
                f"under the name {preset!r}. A run form registered before its fields became "
                "empty sends every field (run `breadth deploy` again to refresh it), and so do "
                "parameters copied from an older flow run. Fix: leave `preset` at `default` to "
                "run `config` as it is, or send only the `config` fields you change."
            )
        # Straight from the form, empty fields included: none may take the default preset's.
        return validated(form.model_dump(mode="json"))
    values = preset_values(chosen)
    for key, value in given.items():
        set_dotted(values, key, value)
    # The chosen preset names the run, as `breadth run --preset` does; the form's label only
    # when the preset is left at `default` (a grid cell's `study`).
    keep_label = chosen == DEFAULT_PRESET and "preset" in given
    values["preset"] = given["preset"] if keep_label else Path(chosen).stem
    return validated(values)


def _is_whole(filled: dict[str, Any]) -> bool:
    """Whether a form's filled fields ({dotted key: value}) make a whole config: every key
    whose default is not None is filled. The run form sends only what the user filled in;
    `breadth run`, a grid's cells, and a form registered before its fields became empty
    (pre-filled with every default) send every field."""
    return _keys_with_a_default() <= filled.keys()


@functools.cache
def _keys_with_a_default() -> frozenset[str]:
    defaults = flatten_keys(PipelineConfig().model_dump(mode="json"))
    return frozenset(key for key, value in defaults.items() if value is not None)
