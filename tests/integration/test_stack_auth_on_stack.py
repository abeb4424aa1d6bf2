"""A stack started with credentials refuses requests without them and admits breadth's clients
with them: MLflow (basic-auth app), Prefect (API auth string) and S3 (signed requests). vLLM's
API key: tests/integration/test_vllm_backend_on_cpu.py."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from breadth.stack import auth as stack_auth
from tests.conftest import running_local_stack

pytestmark = pytest.mark.integration


def _status(url: str, headers: dict[str, str] | None = None, body: dict | None = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={
        "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _basic(user_password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(user_password.encode()).decode()}


def test_each_service_refuses_without_credentials_and_admits_with_them(
    tmp_path: Path, prefect_db_templates: Path | None
) -> None:
    credentials = stack_auth.write_credentials(tmp_path)
    try:
        with running_local_stack(tmp_path, {"BREADTH_STACK_AUTH": "1"},
                                 prefect_db_templates) as env:
            mlflow = env["MLFLOW_TRACKING_URI"] + "/api/2.0/mlflow/experiments/search"
            login = f"{credentials.mlflow_username}:{credentials.mlflow_password}"
            assert _status(mlflow, body={"max_results": 1}) == 401
            assert _status(mlflow, _basic("breadth:wrong"), {"max_results": 1}) == 401
            assert _status(mlflow, _basic(login), {"max_results": 1}) == 200

            prefect = env["PREFECT_API_URL"] + "/flows/filter"
            assert _status(prefect, body={}) == 401
            assert _status(prefect, _basic(credentials.prefect_auth_string), {}) == 200

            s3 = env["BREADTH_S3_ENDPOINT"] + f"/{env['BREADTH_S3_BUCKET']}"
            assert _status(s3) == 403  # unsigned

            # breadth's own clients, reading the credentials from the environment.
            from breadth.stack.auth import prefect_auth_headers
            from breadth.tracking.objects import ObjectStore
            from breadth.tracking.rest import MlflowRest

            client = MlflowRest(env["MLFLOW_TRACKING_URI"])
            experiment = client.create_experiment("auth-check")
            assert client.experiment_id("auth-check") == experiment
            assert _status(prefect, prefect_auth_headers(), {}) == 200
            ObjectStore.from_env(env=env).ensure_bucket()
    finally:
        for name in stack_auth.CLIENT_VARIABLES:
            os.environ.pop(name, None)

