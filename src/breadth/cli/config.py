"""`breadth config` and `breadth presets`: what a run would use, before anything runs."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from breadth.cli.output import console, fail
from breadth.config import ConfigError, PipelineConfig, load_config

app = typer.Typer()


def complete_preset(incomplete: str) -> list[str]:
    """Shell completion of --preset: the preset names (a path falls back to file completion)."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.config import available_presets

    return [name for name in available_presets() if name.startswith(incomplete)]


def load_or_fail(preset: str, overrides: list[str] | None) -> PipelineConfig:
    """The validated config, or the config error as the command's one-paragraph failure."""
    try:
        return load_config(preset, overrides or [])
    except ConfigError as error:
        fail(str(error))


@app.command()
def presets() -> None:
    """The presets, each with the first sentence of its description."""
    from importlib import resources

    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.config import available_presets

    for name in available_presets():
        text = (resources.files("breadth") / "presets" / f"{name}.yaml").read_text()
        console.print(f"{name:<12} {first_sentence(text)}", highlight=False, markup=False)


def first_sentence(preset_text: str) -> str:
    """The first sentence of a preset file's opening comment, however many lines it spans.

    >>> first_sentence("# A hub model on GSM8K, for a GPU (or local\\n# copies: set X). More.\\nseed: 0")
    'A hub model on GSM8K, for a GPU (or local copies: set X).'
    >>> first_sentence("# Pass@k advantages (Chen et al.\\n# 2025). Next.")
    'Pass@k advantages (Chen et al. 2025).'
    """
    comment = []
    for line in preset_text.splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("# ").strip())
    text = " ".join(part for part in comment if part)
    end = re.search(r"\.\s(?=[A-Z])", text)  # not "et al. 2025"
    return text if end is None else text[: end.start() + 1]


@app.command()
def config(
    preset: Annotated[str, typer.Option(help="Preset name or YAML path.",
                                        autocompletion=complete_preset)] = "default",
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value override.")] = None,
    keys: Annotated[bool, typer.Option(
        help="List every config key with its value in --preset (after --set) and its help.")] = False,
    rewards: Annotated[
        bool, typer.Option(help="Print the reward terms and their parameters, as a table.")
    ] = False,
    markdown: Annotated[bool, typer.Option(
        help="With --rewards: the table as markdown (the README's, `<br>` between parameters).",
    )] = False,
) -> None:
    """Print the resolved config (validated), every key with its description, or the rewards."""
    if markdown and not rewards:
        fail("--markdown goes with --rewards (`breadth config --rewards --markdown`)")
    if rewards:
        # Imported on use: `breadth --help` and the other commands do not load it.
        from breadth.rewards.registry import reward_table_markdown

        if markdown:
            console.print(reward_table_markdown(), highlight=False, markup=False)
        else:
            print_rewards()
        return
    if keys:
        # Imported on use: `breadth --help` and the other commands do not load it.
        from breadth.config import describe_keys

        values = load_or_fail(preset, set_).flat()
        for key, description in describe_keys():
            value = values.get(key)
            shown = "" if key not in values else " = " + ("(empty)" if value is None else repr(value))
            console.print(f"[bold]{key}[/]{shown}  {description}", highlight=False, markup=True)
        return
    import yaml

    console.print(yaml.safe_dump(load_or_fail(preset, set_).model_dump(mode="json"),
                                 sort_keys=False))


def print_rewards() -> None:
    """The reward terms as a terminal table: one parameter a line, code in colour (the
    markdown's backticks and `<br>` are for a renderer, not a terminal)."""
    # Imported on use, to keep the CLI's start fast (breadth --help loads every command module).
    from rich.table import Column, Table
    from rich.text import Text

    from breadth.rewards.registry import REWARDS, param_text

    table = Table(Column("reward", no_wrap=True), Column("what it gives", ratio=2),
                  Column("parameters (config key = default)", ratio=3),
                  show_lines=True)
    for entry in REWARDS.values():
        gives = _code(entry.help)
        if entry.not_in_training:
            gives.append("\nNot in training: ", style="bold").append_text(
                _code(entry.not_in_training))
        lines = [_code(param_text(entry, p)) for p in entry.params]
        for line, param in zip(lines, entry.params, strict=True):
            line.stylize("bold", 0, len(param.name))  # the name starts each line
        params = Text("\n").join(lines)
        table.add_row(Text(entry.name, style="bold cyan"), gives, params or Text("-"))
    # Room for the help texts; a pipe gets the same width, not 80 columns.
    Console(width=max(console.width, 120)).print(table)


def _code(text: str) -> Text:
    """Markdown's `code` spans as coloured text without the backticks.

    >>> _code("`ucb` = `c*b`").spans
    [Span(0, 3, 'cyan'), Span(6, 9, 'cyan')]
    """
    from rich.text import Text

    out = Text()
    for i, part in enumerate(text.split("`")):
        out.append(part, style="cyan" if i % 2 else "")
    return out
