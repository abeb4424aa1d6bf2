"""Credentials for a stack that other machines can reach.

On one machine the local stack binds 127.0.0.1 and needs no login. Once a team shares it
(`BREADTH_BIND_ADDRESS` beyond loopback), anyone who reaches a port could read or delete every
run, trigger flows or use the GPUs, so every service then requires credentials and the stack
refuses to start without them:

- MLflow runs its basic-auth app; clients send `MLFLOW_TRACKING_USERNAME` / `_PASSWORD` (the
  names MLflow's own client reads, and breadth's REST client too).
- Prefect's server takes an API auth string; clients send `PREFECT_API_AUTH_STRING`.
- vLLM servers breadth starts take `--api-key`; clients send `VLLM_API_KEY` as a bearer token.
- S3 already needs its keys (`AWS_ACCESS_KEY_ID` / `_SECRET_ACCESS_KEY`).

The credentials come from the environment or from `<BREADTH_HOME>/auth.json` (mode 0600,
written by `breadth stack credentials`); `breadth env` prints them for every client and worker.
`BREADTH_STACK_AUTH=1` asks for the same on loopback (to try it, or on a multi-user host).
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

LOOPBACK_NAMES = frozenset({"localhost"})
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::"})

# The environment variables a client reads, in the order `breadth env` prints them.
CLIENT_VARIABLES = (
    "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "PREFECT_API_AUTH_STRING",
    "VLLM_API_KEY",
)


class CredentialsError(RuntimeError):
    """A shared stack has no credentials; the message says how to set them."""


def bind_address() -> str:
    """Where the local stack's servers listen: `BREADTH_BIND_ADDRESS`, 127.0.0.1 by default."""
    return os.environ.get("BREADTH_BIND_ADDRESS", "").strip() or "127.0.0.1"


def is_loopback(address: str) -> bool:
    """Whether `address` is reachable from this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost")
    (True, True, True)
    >>> is_loopback("0.0.0.0"), is_loopback("10.0.0.5"), is_loopback("gpu-box")
    (False, False, False)
    """
    if address in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # a host name other than localhost: assume others can reach it
        return False


def client_host(address: str) -> str:
    """The host a client on this machine dials for a server bound to `address` (a wildcard
    bind answers on loopback too).

    >>> client_host("0.0.0.0"), client_host("127.0.0.1"), client_host("10.0.0.5")
    ('127.0.0.1', '127.0.0.1', '10.0.0.5')
    """
    return "127.0.0.1" if address in WILDCARD_ADDRESSES or is_loopback(address) else address


def auth_required(address: str | None = None) -> bool:
    """Credentials are required when the stack binds beyond loopback, or when asked for."""
    asked = os.environ.get("BREADTH_STACK_AUTH", "").strip().lower() in {"1", "true", "yes"}
    return asked or not is_loopback(address or bind_address())


@dataclass(frozen=True)
class StackCredentials:
    mlflow_username: str
    mlflow_password: str
    prefect_auth_string: str  # "user:password", as Prefect's server and clients take it
    vllm_api_key: str
    mlflow_secret_key: str  # the MLflow auth app's CSRF key: static across restarts

    def client_env(self) -> dict[str, str]:
        """What every client and worker of the stack needs to be let in."""
        return dict(zip(CLIENT_VARIABLES, (
            self.mlflow_username, self.mlflow_password, self.prefect_auth_string,
            self.vllm_api_key)))


def credentials_path(home: Path) -> Path:
    return home / "auth.json"


def load_credentials(home: Path) -> StackCredentials | None:
    """The credentials from the environment when it sets all of them, else from the home's
    auth.json, else None. A partial environment is an error, not silently completed."""
    given = {name: os.environ.get(name, "") for name in CLIENT_VARIABLES}
    if all(given.values()):
        return StackCredentials(
            given["MLFLOW_TRACKING_USERNAME"], given["MLFLOW_TRACKING_PASSWORD"],
            given["PREFECT_API_AUTH_STRING"], given["VLLM_API_KEY"],
            os.environ.get("MLFLOW_FLASK_SERVER_SECRET_KEY") or _server_secret(home),
        )
    path = credentials_path(home)
    if any(given.values()):
        missing = ", ".join(name for name, value in given.items() if not value)
        raise CredentialsError(
            f"the environment sets only some of the stack's credentials: {missing} missing. "
            f"Set all of {', '.join(CLIENT_VARIABLES)}, or unset them and run "
            "`breadth stack credentials`."
        )
    if not path.exists():
        return None
    try:
        return StackCredentials(**json.loads(path.read_text()))
    except (ValueError, TypeError) as error:
        raise CredentialsError(
            f"{path} is not a credentials file breadth wrote ({error}). Move it away and run "
            "`breadth stack credentials` to write a new one."
        ) from error


def _server_secret(home: Path) -> str:
    """MLflow's CSRF key when the credentials come from the environment: random, kept in the
    home (mode 0600) so it survives a restart, and known to no client."""
    path = home / "mlflow_secret.key"
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process wrote it first: theirs is kept
            return path.read_text().strip()
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip()


def write_credentials(home: Path, username: str = "breadth") -> StackCredentials:
    """New random credentials in `<home>/auth.json`, created readable by its owner only. An
    existing file is kept (its credentials are returned): rotating them is a deliberate act of
    moving it away, since MLflow's user store keeps the first admin password it saw."""
    path = credentials_path(home)
    if path.exists():
        loaded = load_credentials(home)
        assert loaded is not None
        return loaded
    credentials = StackCredentials(
        mlflow_username=username, mlflow_password=secrets.token_urlsafe(24),
        prefect_auth_string=f"{username}:{secrets.token_urlsafe(24)}",
        vllm_api_key=secrets.token_urlsafe(32), mlflow_secret_key=secrets.token_hex(32),
    )
    home.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(asdict(credentials), handle)
    return credentials


def required_credentials(home: Path, address: str) -> StackCredentials:
    """The credentials a stack bound to `address` must run with; refuses, naming how to set
    them, when there are none."""
    credentials = load_credentials(home)
    if credentials is not None:
        return credentials
    why = (f"BREADTH_BIND_ADDRESS={address} lets other machines reach the stack"
           if not is_loopback(address) else "BREADTH_STACK_AUTH asks for credentials")
    raise CredentialsError(
        f"{why}, so MLflow, Prefect and vLLM must require credentials, and none are set; "
        "nothing was started. Run `breadth stack credentials` (writes new ones to "
        f"{credentials_path(home)}, readable by you only), or export all of "
        f"{', '.join(CLIENT_VARIABLES)}; then `breadth stack up` again, and run "
        '`eval "$(breadth env)"` in each client\'s and worker\'s shell.'
    )


def mlflow_auth_config(home: Path, credentials: StackCredentials) -> Path:
    """The ini file MLflow's basic-auth app reads (MLFLOW_AUTH_CONFIG_PATH): its user store in
    the home, and the admin it creates on first start (its password comes from the
    environment, MLFLOW_AUTH_ADMIN_PASSWORD, so it is never written here)."""
    path = home / "mlflow_auth.ini"
    path.write_text(
        "[mlflow]\n"
        "default_permission = READ\n"
        f"database_uri = sqlite:///{home / 'mlflow_auth.db'}\n"
        f"admin_username = {credentials.mlflow_username}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        "grant_default_workspace_access = false\n"
    )
    return path


def bearer_headers() -> dict[str, str]:
    """The header a vLLM client sends when the environment holds an API key."""
    key = os.environ.get("VLLM_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def prefect_auth_headers() -> dict[str, str]:
    """The header Prefect's own client sends for PREFECT_API_AUTH_STRING (basic auth), for the
    few calls breadth makes without it."""
    import base64

    auth = os.environ.get("PREFECT_API_AUTH_STRING")
    return {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
