"""`breadth config --rewards`: a table for the terminal, the README's markdown on request."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from breadth import cli
from breadth.rewards.registry import REWARDS, reward_table_markdown


@pytest.fixture
def runner():
    return CliRunner()


def test_rewards_print_a_table_without_markdown(runner):
    result = runner.invoke(cli.app, ["config", "--rewards"])
    assert result.exit_code == 0, result.output
    assert "<br>" not in result.output and "|---" not in result.output
    assert "`" not in result.output  # code spans are coloured, not back-quoted
    assert "┃ reward" in result.output
    for name, entry in REWARDS.items():
        assert f"│ {name} " in result.output
        for param in entry.params:  # every parameter's config key, on one line
            assert f"rl.reward.{entry.config_key(param)}" in result.output


def test_rewards_markdown_is_the_readme_table(runner):
    result = runner.invoke(cli.app, ["config", "--rewards", "--markdown"])
    assert result.exit_code == 0, result.output
    assert result.output == reward_table_markdown() + "\n"


def test_markdown_without_rewards_is_refused(runner):
    result = runner.invoke(cli.app, ["config", "--markdown"])
    assert result.exit_code == 2
    assert "--markdown goes with --rewards" in result.output
