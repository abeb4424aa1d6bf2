"""Presets and `--set` overrides -> a validated `PipelineConfig`, and the errors that name the key.

A preset is YAML (read as YAML 1.1, as PyYAML does); each value is read as a `--set` value is,
and a known key refuses what YAML or pydantic would silently change (`_as_written`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from breadth.config.models import PipelineConfig, RewardConfig, reward_keys_registered_since
from breadth.display.suggestions import did_you_mean


class ConfigError(ValueError):
    """A config that cannot be used; the message names the key and the fix."""



def available_presets() -> list[str]:
    folder = resources.files("breadth") / "presets"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


MAX_PRESET_CHAIN = 16  # presets extending presets: deeper than this is a cycle in disguise


def preset_values(name: str, _chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """A preset's values as a nested dict, its `extends` chain merged in (a name or a YAML
    file), before any `--set` and before validation."""
    path = Path(name)
    if path.suffix in {".yaml", ".yml"}:
        text = _preset_file_text(path)
    else:
        if name not in available_presets() and ("/" in name or path.exists()):
            raise ConfigError(f"preset {name!r} is a path but not a .yaml or .yml file; give a "
                              f"preset file, or a preset name: {', '.join(available_presets())}.")
        if name not in available_presets():
            raise ConfigError(
                f"unknown preset {name!r}.{did_you_mean(name, available_presets())} Available "
                f"presets: {', '.join(available_presets())}. "
                "Pass one of these with --preset, or a path to a YAML file."
            )
        text = (resources.files("breadth") / "presets" / f"{name}.yaml").read_text()
    try:
        values = _read_preset_yaml(text, name) or {}
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or "malformed"
        raise ConfigError(f"preset file {name} is not valid YAML{at}: {problem}. Fix the "
                          "file, or start from `breadth config` output.") from None
    if not isinstance(values, dict):
        raise ConfigError(f"preset {name!r} must be a YAML mapping, got {type(values).__name__}")
    parent = values.pop("extends", None)
    if parent is not None:
        # `extends: study` starts from another preset, so a variant states only what differs.
        if not isinstance(parent, str):
            raise ConfigError(f"preset {name!r}: `extends` must name another preset or YAML "
                              f"file, got {parent!r}")
        if Path(parent).suffix in {".yaml", ".yml"} and path.suffix in {".yaml", ".yml"}:
            # A file names its parent file as it sits beside it, wherever the command runs;
            # resolved, so a cycle is seen however its paths are spelled (../a/x.yaml).
            parent = str((path.parent / Path(parent).expanduser()).resolve())
        chain = (*_chain, name)
        if parent in chain or len(chain) > MAX_PRESET_CHAIN:
            raise ConfigError(f"presets extend each other in a cycle: "
                              f"{' -> '.join([*chain, parent])}; remove one `extends`")
        return _merge(preset_values(parent, chain), values)
    return values


def _read_preset_yaml(text: str, name: str) -> Any:
    """A preset's YAML, each value read as a `--set` value is (see `_as_written`)."""
    return _read_yaml(text, lambda loader, node: _values_as_written(loader, node, "", name))


def _read_yaml(text: str, retag: Any) -> Any:
    """YAML text with `retag(loader, node)` run on its node tree before the values are made."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        retag(loader, node)
        try:
            return loader.construct_document(node)
        except _CONSTRUCT_ERRORS as error:
            # A value `retag` does not reach (a tagged mapping key, a whole document): a
            # YAML error, not a traceback.
            raise yaml.constructor.ConstructorError(
                None, None, f"a value YAML cannot read ({error}); quote it to keep it as text"
            ) from None
    finally:
        loader.dispose()


# What PyYAML's scalar constructors raise on a value its tag cannot make: `2024-13-45` (a
# date by its look) or `!!int x`, `!!bool x`, `!!timestamp x`, `!!int ""`.
_CONSTRUCT_ERRORS = (ValueError, TypeError, LookupError, AttributeError)
_STR_TAG = "tag:yaml.org,2002:str"
# The tags YAML gives a plain scalar that a text key reads as the characters written.
_NOT_TEXT_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "timestamp")}


def _values_as_written(loader: yaml.SafeLoader, node: yaml.Node, prefix: str, name: str,
                       known_keys: set[str] | None = None) -> None:
    """Walk a preset's sections and read the value of each key as written."""
    if not isinstance(node, yaml.MappingNode):
        return
    # The config's keys once a preset, not once a value: listing them walks every model.
    known_keys = set(_known_keys()) if known_keys is None else known_keys
    for key_node, value_node in node.value:
        key = f"{prefix}{key_node.value}"
        if isinstance(value_node, yaml.MappingNode):
            _values_as_written(loader, value_node, f"{key}.", name, known_keys)
        else:  # a misspelt key is only checked to be readable; validation suggests the right one
            _value_as_written(loader, value_node, key, name, known_keys)


def _value_as_written(loader: yaml.SafeLoader, node: yaml.Node, key: str,
                      preset: str | None = None, known_keys: set[str] | None = None) -> None:
    """Retag the scalars of a key's value (or of its list's items) as `_as_written` reads them,
    a text key's without making them; a refusal names the preset file and line (`preset`
    None: a --set value). `known_keys`: the config's keys (None: listed here)."""
    known = key in (_known_keys() if known_keys is None else known_keys)
    takes_text = known and _takes_text(key)
    for item in node.value if isinstance(node, yaml.SequenceNode) else [node]:
        # Quoted and block scalars are text already, unless tagged (`!!int "7"`).
        if not isinstance(item, yaml.ScalarNode) or item.tag == _STR_TAG:
            continue
        if takes_text:
            # The characters written, never made into a value: 3.10 stays "3.10", and
            # 2024-13-45 is no date to fail on.
            if item.tag in _NOT_TEXT_TAGS:
                item.tag = _STR_TAG
            continue
        try:
            value = _constructed(loader, item, key, known)
            if known and item.style is None:
                value = _as_written(key, item.value, value)
        except ConfigError as error:
            if preset is None:
                raise
            raise ConfigError(f"preset file {preset}, line {item.start_mark.line + 1}: "
                              f"{error}") from None
        if isinstance(value, str):
            item.tag = _STR_TAG


def _constructed(loader: yaml.SafeLoader, item: yaml.ScalarNode, key: str, known: bool) -> Any:
    """What YAML reads the scalar `item` as, by the tag it resolved or was given (the
    cache-free scalar constructors); a value the tag cannot make is a ConfigError saying
    what to write, not a traceback."""
    construct = loader.yaml_constructors.get(item.tag)
    if construct is None:
        return item.value
    try:
        return construct(loader, item)
    except _CONSTRUCT_ERRORS as error:
        why = f" ({error})" if isinstance(error, ValueError) else ""
        tag = item.tag.replace("tag:yaml.org,2002:", "!!")
        kind = _TAG_KINDS.get(tag, f"a {tag} value")
        if loader.resolve(yaml.ScalarNode, item.value, (True, False)) == item.tag:
            problem = f"{item.value} looks like {kind} to YAML but is not one{why}"
        else:  # tagged by hand: `!!int x`
            problem = f"{tag} {item.value} is not {kind}{why}"
        if not known:
            raise ConfigError(f"key {key}: {problem}; quote it to keep it as text") from None
        kinds = _kinds(key)
        text = ", or quote it to keep it as text" if str in kinds else ""
        raise ConfigError(f"config key {key}: {problem}; write {_wanted(kinds)}{text}") from None


_TAG_KINDS = {"!!timestamp": "a date", "!!int": "a whole number", "!!float": "a number",
              "!!bool": "a yes/no word"}


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        both_sections = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both_sections else value
    return merged


def _preset_file_text(path: Path) -> str:
    if not path.exists():
        raise ConfigError(f"preset file {path} does not exist. Check the path (relative to the "
                          f"current directory), or use a preset name: "
                          f"{', '.join(available_presets())}.")
    if not path.is_file():
        raise ConfigError(f"preset file {path} is a folder, not a YAML file.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"preset file {path} is not UTF-8 text (a binary file?); a preset is "
                          "a YAML mapping such as `rl: {max_steps: 4}`.") from None
    except OSError as error:
        raise ConfigError(f"preset file {path} cannot be read: {error.strerror}.") from None


def set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """Set `tree["a"]["b"] = value` for `dotted` "a.b", making the parents on the way."""
    node = tree
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"config key {dotted!r}: {part!r} is a value, not a section")
        node = child
    node[leaf] = value


def _known_keys() -> list[str]:
    return [key for key, _ in describe_keys()]


def describe_keys(model: type[BaseModel] = PipelineConfig, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, description) for every leaf field: the help behind `breadth config --keys`."""
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(describe_keys(annotation, f"{prefix}{name}."))
        else:
            rows.append((f"{prefix}{name}", field.description or ""))
    if model is RewardConfig:  # and the parameters of rewards registered since it was made
        rows.extend((f"{prefix}{key}", text) for key, _, text in reward_keys_registered_since())
    return rows


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` -> (key, the value as YAML reads it, by the rules a preset's values follow:
    see `_value_as_written`): `rl.max_steps=4` gives ("rl.max_steps", 4); a text key keeps the
    characters written.

    >>> parse_override("tracking.experiment=3.10")
    ('tracking.experiment', '3.10')
    """
    if "=" not in text:
        raise ConfigError(f"--set {text!r} is not key=value (e.g. --set rl.max_steps=4)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if key == "preset":
        # The field only labels the run (MLflow experiment and run name): setting it would
        # name the run after a preset whose values it does not use.
        raise ConfigError(f"--set {text!r}: `preset` is only a label, it loads nothing; use "
                          f"--preset {raw.strip()} to start from that preset.")
    if key not in _known_keys():
        raise ConfigError(
            f"unknown config key {key!r} in --set.{did_you_mean(key, _known_keys())} Run "
            "`breadth config --keys` for the list."
        )
    try:
        return key, _read_yaml(raw, lambda loader, node: _value_as_written(loader, node, key))
    except yaml.YAMLError:
        return key, raw
    except ConfigError as error:
        raise ConfigError(f"--set {text!r}: {error}") from None


# Numbers only YAML 1.1 (PyYAML) reads so: 010 is octal 8 (YAML 1.2 and most readers: 10) and
# 1:30 is base 60, 90.
_YAML_1_1_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_YAML_1_1_BASE_60 = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


def _as_written(key: str, written: str, value: Any) -> Any:
    """The value of a known key that is not text (a text key keeps the characters written:
    see `_value_as_written`) written as the plain YAML scalar `written`, which YAML read as
    `value`: the rule for a preset's values and a `--set` value alike.

    Such a key refuses what YAML or pydantic would silently change: a yes/no word (pydantic
    makes `on` 1) and a number in a form only YAML 1.1 reads (010 is 8, 1:30 is 90). A
    zero-padded number that reads the same either way (07, 00) is taken.

    >>> _as_written("seed", "07", 7)
    7
    >>> _as_written("seed", "010", 8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    breadth.config.reader.ConfigError: config key seed: 010 is an octal number in YAML, read as 8; ...
    """
    kinds = _kinds(key)
    if isinstance(value, bool) and bool not in kinds:
        raise ConfigError(f"config key {key}: {written} is a yes/no word in YAML, read as "
                          f"{str(value).lower()}; write {_wanted(kinds)}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Octal only where the digits say otherwise in decimal: 010 is 8 or 10, 07 is 7.
        if _YAML_1_1_OCTAL.fullmatch(written) and value != int(written.replace("_", "")):
            raise ConfigError(f"config key {key}: {written} is an octal number in YAML, read "
                              f"as {value}; write {value}, or {int(written.replace('_', ''))} "
                              "without the zero")
        if _YAML_1_1_BASE_60.fullmatch(written):
            raise ConfigError(f"config key {key}: {written} is a base-60 number in YAML, read "
                              f"as {value}; write the number meant (e.g. {value})")
    return value


def _wanted(kinds: set[Any]) -> str:
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}
    return " or ".join(name for kind, name in names.items() if kind in kinds) or "a value"


def _kinds(key: str) -> set[Any]:
    """The types a known dotted config key takes: a Literal's values count as their types."""
    model: Any = PipelineConfig
    *sections, leaf = key.split(".")
    for section in sections:
        model = model.model_fields[section].annotation
    if leaf not in model.model_fields:  # a reward parameter registered since the config was made
        param = next(p for k, p, _ in reward_keys_registered_since() if k == leaf)
        return {str} if param.choices else {param.kind}
    annotation = model.model_fields[leaf].annotation
    if get_origin(annotation) is Literal:
        return {type(choice) for choice in get_args(annotation)}
    return set(get_args(annotation)) or {annotation}


def _takes_text(key: str) -> bool:
    """Whether a known dotted config key holds text (maybe also None or a list), not a number."""
    kinds = _kinds(key)
    return str in kinds and not kinds & {bool, int, float}


PRESET_OR_SET = "the preset or the --set value"


def _describe(error: ValidationError, options: Mapping[str, str] | None = None,
              fallback: str = PRESET_OR_SET) -> str:
    """One line per invalid key, then what to fix. `options` (config key -> what set it, e.g.
    a grid's rl.reward.spec -> --reward, or an override's text) names that rather than
    `fallback` (the preset): a typo in `breadth grid --reward` was blamed on the preset."""
    options = options or {}
    lines, fixes = [], []
    for item in error.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(top level)"
        got = item.get("input")
        got_text = "" if isinstance(got, dict) else f" (got {got!r})"
        # A misspelt key in a preset file: suggest the key it was meant to be.
        hint = did_you_mean(key, _known_keys()) if item["type"] == "extra_forbidden" else ""
        source = f" (from {options[key]})" if key in options else ""
        lines.append(f"config key {key}{source}: {item['msg']}{got_text}{hint}")
        # A check across keys fails at their section (`rl`: passk's k against
        # rl.num_generations): an option that sets a key in that section may be the cause too.
        within = [option for k, option in options.items() if k.startswith(f"{key}.")]
        fixes.append(options[key] if key in options else " or ".join([*within, fallback]))
    # The key list helps with a misspelt or misplaced key, not with a value an option gave.
    keys_hint = ("; `breadth config --keys` lists every key"
                 if any(fallback in fix or "the override" in fix for fix in fixes) else "")
    return "invalid configuration:\n  " + "\n  ".join(lines) + (
        f"\nFix {' and '.join(dict.fromkeys(fixes))}{keys_hint}."
    )


def describe_options(error: ValidationError, options: dict[str, str]) -> str:
    """A validation error of a model built from command-line options, each line naming the
    option (`options`: field -> `--option`) instead of the field and its list index.

    >>> from breadth.study import GridConfig
    >>> try:
    ...     GridConfig(formats=["xml"])
    ... except ValidationError as error:
    ...     print(describe_options(error, {"formats": "--format"}))
    invalid options:
      --format: Input should be 'free_form' or 'mcq' (got 'xml')
    """
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        name = options.get(field) or ".".join(str(p) for p in item["loc"]) or "(options)"
        # A validator's own message already says what is wrong; pydantic prefixes its kind.
        message = item["msg"].removeprefix("Value error, ")
        got = item.get("input")
        got_text = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
        lines.append(f"{name}: {message}{got_text}")
    return "invalid options:\n  " + "\n  ".join(lines)


def load_config(
    preset: str = "default", overrides: list[str] | None = None,
    options: Mapping[str, str] | None = None,
) -> PipelineConfig:
    """Preset YAML + `key=value` overrides -> a validated PipelineConfig; an invalid key that
    `options` maps to a command-line option is blamed on that option (see `_describe`).

    >>> load_config("default", ["rl.max_steps=2"]).rl.max_steps
    2
    """
    values = preset_values(preset)
    values.setdefault("preset", Path(preset).stem)
    # An invalid key is blamed on what set it: an option, else its override, else the preset.
    blame: dict[str, str] = {}
    for text in overrides or []:
        key, value = parse_override(text)
        set_dotted(values, key, value)
        blame[key] = f"the override {text}"
    return validated(values, {**blame, **(options or {})}, fallback=f"the preset {preset}")


def validated(
    values: dict[str, Any], options: Mapping[str, str] | None = None,
    fallback: str = PRESET_OR_SET,
) -> PipelineConfig:
    """A nested dict of config values -> a PipelineConfig, or a ConfigError naming each key
    and what to fix (`_describe`)."""
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as error:
        raise ConfigError(_describe(error, options, fallback)) from None
