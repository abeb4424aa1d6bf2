"""A model source checked before the stack starts: a GGUF file that is not GGUF or not a causal
LM, and a model too large for this machine's memory, each refused naming model.name_or_path
and the fix (`breadth.preflight.checks`). The conversion itself: tests/unit/models/test_gguf.py."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest
from typer.testing import CliRunner

from breadth.cli import app
from breadth.config import ConfigError
from breadth.config.reader import load_config
from breadth.preflight.checks import check_fit, check_local_paths
from tests.unit.models.test_gguf import write_tiny_gguf

SMALL_DATA = ["data.num_train=8", "data.num_eval=4", "evaluation.search_budget=0"]


def config_with(model: str | Path, *more: str):
    return load_config("default", [f"model.name_or_path={model}", *SMALL_DATA, *more])


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path / "home"))


def test_a_file_that_is_not_gguf_is_refused_by_the_path_check(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("not a model")
    with pytest.raises(ConfigError, match=r"model\.name_or_path=.*model\.gguf") as error:
        check_local_paths(config_with(fake))
    assert "GGUF" in str(error.value)


def test_the_cli_refuses_it_before_anything_starts(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_text("not a model")
    result = CliRunner().invoke(app, ["run", "--dry-run", "--set",
                                      f"model.name_or_path={fake}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "model.name_or_path=" in result.output
    assert "Traceback" not in result.output


def test_a_gguf_that_is_no_causal_lm_is_refused_by_the_fit_check(tmp_path):
    bert = write_tiny_gguf(tmp_path / "bert.gguf", architecture="bert")
    check_local_paths(config_with(bert))  # the file itself is fine
    with pytest.raises(ConfigError, match="cannot read this architecture") as error:
        check_fit(config_with(bert), offline=True)
    assert f"model.name_or_path={bert}" in str(error.value)
    assert not list((tmp_path / "home").rglob("*.safetensors")), "nothing may be converted"


def test_a_model_too_large_for_the_memory_is_refused_by_the_fit_check(tmp_path, monkeypatch):
    import psutil

    tiny = write_tiny_gguf(tmp_path / "tiny.gguf")
    check_fit(config_with(tiny, "model.chat_template=off"), offline=True)  # fits as it is
    memory = namedtuple("memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: memory(available=1024))
    with pytest.raises(ConfigError, match=r"GiB of memory .* available") as error:
        check_fit(config_with(tiny, "model.chat_template=off", "seed=1"), offline=True)
    assert f"model.name_or_path={tiny}" in str(error.value)
