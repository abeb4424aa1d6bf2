"""Which MLflow client a run uses: the REST client (no `import mlflow`) where it can, else the
`mlflow` package behind the same few methods.

The REST client (`breadth.tracking.rest`) covers an http(s) server with no auth or with
basic / bearer auth - the local stack and the usual team server. Everything else - a local
store (`sqlite:`; `file:` and folders with MLFLOW_ALLOW_FILE_STORE=true), Databricks, or auth
the REST client does not speak (MLFLOW_TRACKING_AUTH plugins, AWS SigV4, client certificates,
~/.mlflow/credentials) - goes through `MlflowClient`, which costs its import but works exactly
as before.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Any

from breadth.tracking.rest import MlflowRest
from breadth.tracking.sdk import SdkTracking

# Auth that only the `mlflow` package implements.
SDK_ONLY_SETTINGS = ("MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_CLIENT_CERT_PATH")


def speaks_rest(uri: str) -> bool:
    """True when the REST client can talk to `uri` as `MlflowClient` would."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return False
    if any(os.environ.get(name) for name in SDK_ONLY_SETTINGS):
        return False
    if os.environ.get("MLFLOW_TRACKING_AWS_SIGV4", "").lower() == "true":
        return False
    has_credentials = parts.username or os.environ.get("MLFLOW_TRACKING_USERNAME") or \
        os.environ.get("MLFLOW_TRACKING_TOKEN")
    # Without them, MLflow reads ~/.mlflow/credentials (a file only it parses).
    return bool(has_credentials) or not (Path.home() / ".mlflow" / "credentials").exists()


def tracking_client(uri: str) -> Any:
    """A client with `MlflowRest`'s run methods for `uri` (`MlflowRest` or `SdkTracking`)."""
    return MlflowRest(uri) if speaks_rest(uri) else SdkTracking(uri)
