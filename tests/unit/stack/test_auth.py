"""Credentials on a shared stack (breadth.stack.auth and its use in breadth.stack.local): pure logic,
no servers. tests/integration/test_stack_auth_on_stack.py checks the servers refuse and admit."""

from __future__ import annotations

import base64
import json
import stat
import subprocess
from pathlib import Path

import pytest

from breadth.stack import auth as stack_auth
from breadth.stack.local import LocalStack, StackError, StackSettings, services

CREDENTIAL_VARIABLES = (*stack_auth.CLIENT_VARIABLES, "BREADTH_BIND_ADDRESS", "BREADTH_STACK_AUTH",
                        "MLFLOW_FLASK_SERVER_SECRET_KEY")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_a_non_loopback_bind_without_credentials_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BREADTH_BIND_ADDRESS", "0.0.0.0")
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    with pytest.raises(StackError) as refused:
        LocalStack(StackSettings(home=tmp_path)).up()
    message = str(refused.value)
    assert "BREADTH_BIND_ADDRESS=0.0.0.0" in message
    assert "breadth stack credentials" in message and "nothing was started" in message
    assert started == []
    assert not (tmp_path / "run").exists()


def test_loopback_needs_no_credentials_and_gets_none(tmp_path: Path) -> None:
    settings = StackSettings(home=tmp_path)
    assert settings.auth() is None
    env = settings.client_env()
    assert not set(stack_auth.CLIENT_VARIABLES) & set(env)
    mlflow = next(s for s in services(settings) if s.name == "mlflow")
    assert "--app-name" not in mlflow.command(settings)
    assert "PREFECT_SERVER_API_AUTH_STRING" not in services(settings)[2].extra_env(settings)


def test_written_credentials_are_private_kept_and_reach_every_server_and_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = stack_auth.write_credentials(tmp_path)
    path = stack_auth.credentials_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stack_auth.write_credentials(tmp_path) == first  # kept, not rotated
    monkeypatch.setenv("BREADTH_BIND_ADDRESS", "0.0.0.0")
    settings = StackSettings(home=tmp_path)
    env = settings.client_env()
    assert env["MLFLOW_TRACKING_USERNAME"] == first.mlflow_username
    assert env["MLFLOW_TRACKING_PASSWORD"] == first.mlflow_password
    assert env["PREFECT_API_AUTH_STRING"] == first.prefect_auth_string
    assert env["VLLM_API_KEY"] == first.vllm_api_key
    assert env["MLFLOW_TRACKING_URI"].startswith("http://127.0.0.1:")  # a wildcard bind
    s3, mlflow, prefect = services(settings)
    command = mlflow.command(settings)
    assert command[command.index("--app-name") + 1] == "basic-auth"
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert "-ip.bind=0.0.0.0" in s3.command(settings)
    server = mlflow.extra_env(settings)
    assert server["MLFLOW_AUTH_ADMIN_PASSWORD"] == first.mlflow_password
    ini = Path(server["MLFLOW_AUTH_CONFIG_PATH"]).read_text()
    assert f"admin_username = {first.mlflow_username}" in ini
    assert first.mlflow_password not in ini  # the password stays out of the ini
    assert prefect.extra_env(settings)["PREFECT_SERVER_API_AUTH_STRING"] == first.prefect_auth_string


def test_credentials_from_the_environment_win_and_a_partial_set_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BREADTH_STACK_AUTH", "1")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ana")
    with pytest.raises(StackError, match="MLFLOW_TRACKING_PASSWORD, PREFECT_API_AUTH_STRING"):
        StackSettings(home=tmp_path).auth()
    for name, value in (("MLFLOW_TRACKING_PASSWORD", "pw"), ("PREFECT_API_AUTH_STRING", "ana:pw"),
                        ("VLLM_API_KEY", "key")):
        monkeypatch.setenv(name, value)
    credentials = StackSettings(home=tmp_path).auth()
    assert credentials is not None and credentials.mlflow_username == "ana"
    assert credentials.vllm_api_key == "key"


def test_a_damaged_credentials_file_names_itself(tmp_path: Path, monkeypatch) -> None:
    stack_auth.credentials_path(tmp_path).write_text(json.dumps({"user": "x"}))
    monkeypatch.setenv("BREADTH_STACK_AUTH", "1")
    with pytest.raises(StackError, match="auth.json is not a credentials file"):
        StackSettings(home=tmp_path).auth()


def test_clients_send_the_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    assert stack_auth.bearer_headers() == {} and stack_auth.prefect_auth_headers() == {}
    monkeypatch.setenv("VLLM_API_KEY", "k1")
    monkeypatch.setenv("PREFECT_API_AUTH_STRING", "ana:pw")
    assert stack_auth.bearer_headers() == {"Authorization": "Bearer k1"}
    sent = stack_auth.prefect_auth_headers()["Authorization"]
    assert base64.b64decode(sent.removeprefix("Basic ")) == b"ana:pw"


def test_env_refuses_a_shared_stack_without_credentials_and_prints_them_once_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from breadth.cli import app

    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    monkeypatch.setenv("BREADTH_BIND_ADDRESS", "10.0.0.5")
    for name in ("MLFLOW_TRACKING_URI", "PREFECT_API_URL", "BREADTH_S3_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)  # a live test stack's, exported in this process
    runner = CliRunner()
    refused = runner.invoke(app, ["env"])
    assert refused.exit_code == 2
    assert "breadth stack credentials" in refused.output
    written = runner.invoke(app, ["stack", "credentials"])
    assert written.exit_code == 0, written.output
    assert "auth.json" in written.output and "0600" in written.output
    printed = runner.invoke(app, ["env"])
    assert printed.exit_code == 0
    password = stack_auth.load_credentials(tmp_path).mlflow_password
    assert f"export MLFLOW_TRACKING_PASSWORD={password}" in printed.output
    assert "export MLFLOW_TRACKING_URI=http://10.0.0.5:" in printed.output  # dial the bound host



def test_a_partial_environment_is_refused_even_beside_a_credentials_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_auth.write_credentials(tmp_path)
    monkeypatch.setenv("BREADTH_STACK_AUTH", "1")
    monkeypatch.setenv("VLLM_API_KEY", "mine")
    with pytest.raises(StackError, match="MLFLOW_TRACKING_USERNAME"):
        StackSettings(home=tmp_path).auth()


def test_mlflows_secret_key_is_random_private_and_kept_not_derived_from_the_logins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("MLFLOW_TRACKING_USERNAME", "ana"), ("MLFLOW_TRACKING_PASSWORD", "pw"),
                        ("PREFECT_API_AUTH_STRING", "ana:pw"), ("VLLM_API_KEY", "key")):
        monkeypatch.setenv(name, value)
    first = stack_auth.load_credentials(tmp_path)
    assert first is not None and first.mlflow_secret_key == stack_auth.load_credentials(
        tmp_path).mlflow_secret_key
    key_file = tmp_path / "mlflow_secret.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first.mlflow_secret_key not in {"ana", "pw", "ana:pw", "key"}
    other_home = tmp_path / "other"
    assert stack_auth.load_credentials(other_home).mlflow_secret_key != first.mlflow_secret_key


def test_a_shared_stack_names_the_host_others_reach_to_browsers_and_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack_auth.write_credentials(tmp_path)
    monkeypatch.setenv("BREADTH_BIND_ADDRESS", "0.0.0.0")
    monkeypatch.setenv("BREADTH_PUBLIC_HOST", "gpu-box.lab")
    monkeypatch.delenv("MLFLOW_SERVER_ALLOWED_HOSTS", raising=False)
    settings = StackSettings(home=tmp_path)
    _, mlflow, prefect = services(settings)
    assert prefect.extra_env(settings)["PREFECT_UI_API_URL"] == (
        f"http://gpu-box.lab:{settings.prefect_port}/api")
    allowed = mlflow.extra_env(settings)["MLFLOW_SERVER_ALLOWED_HOSTS"].split(",")
    assert {"gpu-box.lab", f"gpu-box.lab:{settings.mlflow_port}", "127.0.0.1"} <= set(allowed)
    monkeypatch.setenv("MLFLOW_SERVER_ALLOWED_HOSTS", "only.me")  # the user's list is kept
    assert "MLFLOW_SERVER_ALLOWED_HOSTS" not in mlflow.extra_env(settings)
