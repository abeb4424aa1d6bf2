"""The local stack: S3 (SeaweedFS `weed mini`), an MLflow server and a Prefect server.

All three bind 127.0.0.1 (or BREADTH_BIND_ADDRESS, and then require credentials: see
stack/auth.py), keep state and logs under `.breadth/`, and are managed through pid files so that `up` is idempotent (a running, healthy service is reused; a stale pid file is
detected and replaced) and `down` stops exactly the processes it started. A service whose URL
is given in the environment (PREFECT_API_URL, MLFLOW_TRACKING_URI, BREADTH_S3_ENDPOINT) is
treated as external: it is health-checked, never started or stopped.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from breadth.display.urls import scheme_hint, without_userinfo  # also imported from here
from breadth.stack.auth import (
    WILDCARD_ADDRESSES,
    CredentialsError,
    StackCredentials,
    auth_required,
    bind_address,
    client_host,
    is_loopback,
    mlflow_auth_config,
    required_credentials,
)
from breadth.stack.processes import (
    ancestry,
    listening_pids,
    pid_alive,
    stop_process_group,
    working_directory,
)
from breadth.tracking.objects import ObjectStore
from breadth.tracking.reconcile import FlowRuns, reconcile_stale_runs

# How a URL names this machine's own loopback interface, where the stack's servers listen.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class StackError(RuntimeError):
    """A service cannot be started or reached; the message names it and the fix."""


def _env_port(variable: str, default: int) -> int:
    raw = os.environ.get(variable)
    if raw is None:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise StackError(f"{variable}={raw!r} is not a port number (1-65535)")
    return int(raw)


@dataclass(frozen=True)
class StackSettings:
    """Where the stack lives and which ports it uses (each overridable by environment)."""

    home: Path = field(default_factory=lambda: Path(os.environ.get("BREADTH_HOME", ".breadth")))
    s3_port: int = field(default_factory=lambda: _env_port("BREADTH_S3_PORT", 8333))
    mlflow_port: int = field(default_factory=lambda: _env_port("BREADTH_MLFLOW_PORT", 5000))
    prefect_port: int = field(default_factory=lambda: _env_port("BREADTH_PREFECT_PORT", 4200))
    # weed mini also runs a master, a volume server and a filer; their ports must be free too.
    weed_master_port: int = field(
        default_factory=lambda: _env_port("BREADTH_WEED_MASTER_PORT", 9333)
    )
    weed_volume_port: int = field(
        default_factory=lambda: _env_port("BREADTH_WEED_VOLUME_PORT", 8080)
    )
    weed_filer_port: int = field(default_factory=lambda: _env_port("BREADTH_WEED_FILER_PORT", 8888))
    bucket: str = field(default_factory=lambda: os.environ.get("BREADTH_S3_BUCKET", "breadth"))
    # Beyond loopback (a team's shared stack), every service requires credentials (stack_auth).
    bind: str = field(default_factory=bind_address)

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home).resolve())

    @property
    def host(self) -> str:
        """The host this machine's clients dial for the stack's servers."""
        return client_host(self.bind)

    @property
    def public_host(self) -> str:
        """The host other machines (and their browsers) reach the stack at: BREADTH_PUBLIC_HOST,
        else the bound address, else (a wildcard bind) this machine's name."""
        if os.environ.get("BREADTH_PUBLIC_HOST"):
            return os.environ["BREADTH_PUBLIC_HOST"]
        return socket.gethostname() if self.bind in WILDCARD_ADDRESSES else self.host

    @property
    def s3_url(self) -> str:
        return os.environ.get("BREADTH_S3_ENDPOINT") or f"http://{self.host}:{self.s3_port}"

    @property
    def mlflow_url(self) -> str:
        return os.environ.get("MLFLOW_TRACKING_URI") or f"http://{self.host}:{self.mlflow_port}"

    @property
    def prefect_api_url(self) -> str:
        return os.environ.get("PREFECT_API_URL") or f"http://{self.host}:{self.prefect_port}/api"

    @property
    def auth_required(self) -> bool:
        return auth_required(self.bind)

    def auth(self) -> StackCredentials | None:
        """The credentials the servers require, or None on an open loopback stack. A stack
        that needs them and has none is refused here, before anything starts."""
        if not self.auth_required:
            return None
        try:
            return required_credentials(self.home, self.bind)
        except CredentialsError as error:
            raise StackError(str(error)) from None

    @property
    def prefect_ui_url(self) -> str:
        return self.prefect_api_url.removesuffix("/api")

    @property
    def result_storage(self) -> Path:
        """Where Prefect persists task results: a stage's cached result is the file named by its
        cache key."""
        return Path(os.environ.get("PREFECT_LOCAL_STORAGE_PATH") or self.home / "prefect" / "storage")

    @property
    def credentials_file(self) -> Path:
        """The local stack's S3 keys, generated once (used when the environment has none)."""
        return self.home / "credentials.json"

    def credentials(self) -> dict[str, str]:
        """S3 keys: from the environment when set, else generated once for the local stack."""
        if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
            return {
                "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
                "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
            }
        path = self.credentials_file
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            keys = {
                "AWS_ACCESS_KEY_ID": "breadth" + secrets.token_hex(6),
                "AWS_SECRET_ACCESS_KEY": secrets.token_urlsafe(30),
            }
            _create_private(path, json.dumps(keys))
        return json.loads(path.read_text())

    def client_env(self) -> dict[str, str]:
        """What a client of this stack (the pipeline, a worker, a test) needs in its environment."""
        credentials = self.auth()
        return {
            **(credentials.client_env() if credentials else {}),
            **{name: os.environ.get(name, value) for name, value in QUIET_LIBRARIES.items()},
            **self.credentials(),
            "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            "BREADTH_S3_ENDPOINT": self.s3_url,
            "BREADTH_S3_BUCKET": self.bucket,
            "MLFLOW_TRACKING_URI": self.mlflow_url,
            "PREFECT_API_URL": self.prefect_api_url,
            "PREFECT_HOME": str(self.home / "prefect"),
            "PREFECT_LOCAL_STORAGE_PATH": str(self.result_storage),
            "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_URL": self.prefect_ui_url,
        }


# What the pipeline's libraries print besides breadth's one bar per stage: their own bars for
# each model load and save and data set map, and MLflow's link for every stage's run (the
# pipeline prints the parent run's). Off unless the caller's environment sets them.
QUIET_LIBRARIES = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' bars follow huggingface_hub's switch
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}


def _create_private(path: Path, text: str) -> None:
    """Create `path` holding `text`, readable by its owner only from the first byte (never
    world-readable, even briefly). If another process created it first, theirs is kept."""
    staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            os.link(staging, path)  # atomic, and fails rather than replace a file in use
        except FileExistsError:
            pass
    finally:
        staging.unlink(missing_ok=True)


@dataclass(frozen=True)
class Service:
    name: str
    port: int
    url: str
    external_env: str  # the environment variable that makes this service external
    command: Callable[[StackSettings], list[str]]
    extra_env: Callable[[StackSettings], dict[str, str]]
    healthy: Callable[[StackSettings], bool]
    extra_ports: tuple[int, ...] = ()
    stop_grace_s: float = 30.0

    def is_external(self) -> bool:
        return bool(os.environ.get(self.external_env))

    def url_is_local(self) -> bool:
        """Whether `url` names this stack's own server, however it is spelled: a loopback host
        (127.0.0.1, localhost, ::1) and this service's port, with any credentials or path.

        >>> s3 = Service("s3", 8333, "http://localhost:8333/", "BREADTH_S3_ENDPOINT",
        ...              lambda _: [], lambda _: {}, lambda _: True)
        >>> s3.url_is_local()
        True
        >>> Service("s3", 8333, "http://10.0.0.5:8333", "", lambda _: [], lambda _: {},
        ...         lambda _: True).url_is_local()
        False
        """
        parts = urllib.parse.urlsplit(self.url)
        try:
            port = parts.port
        except ValueError:  # not a port number: not ours
            return False
        return parts.hostname in LOOPBACK_HOSTS and port == self.port


def _http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status < 500
    except urllib.error.HTTPError as error:
        return error.code < 500
    except (OSError, ValueError):
        return False


def _s3_healthy(settings: StackSettings) -> bool:
    # Any HTTP answer from the S3 port (403 for an unsigned request) means the gateway is up.
    return _http_ok(settings.s3_url + "/")


def _bin(name: str) -> str:
    # Services come from the same environment as this interpreter (the project's venv).
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def _weed_command(s: StackSettings) -> list[str]:
    return [
        _bin("weed"), "mini", f"-dir={s.home / 's3'}", f"-ip={s.host}", f"-ip.bind={s.bind}",
        f"-s3.port={s.s3_port}", f"-master.port={s.weed_master_port}",
        f"-volume.port={s.weed_volume_port}", f"-filer.port={s.weed_filer_port}",
        "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
    ]


def _mlflow_command(s: StackSettings) -> list[str]:
    # A database given in MLFLOW_BACKEND_STORE_URI (e.g. Postgres) is read by `mlflow server`
    # from the environment, so its password stays off the command line.
    store = [] if os.environ.get("MLFLOW_BACKEND_STORE_URI") else [
        "--backend-store-uri", f"sqlite:///{s.home / 'mlflow.db'}"]
    auth = ["--app-name", "basic-auth"] if s.auth_required else []
    return [
        _bin("mlflow"), "server", *store, *auth,
        "--artifacts-destination", f"s3://{s.bucket}/mlflow",
        "--serve-artifacts", "--host", s.bind, "--port", str(s.mlflow_port),
        "--workers", "1",
    ]


def _prefect_command(s: StackSettings) -> list[str]:
    return [_bin("prefect"), "server", "start", "--host", s.bind, "--port", str(s.prefect_port)]


def _mlflow_env(s: StackSettings) -> dict[str, str]:
    credentials = s.auth()
    auth = {} if credentials is None else {
        "MLFLOW_AUTH_CONFIG_PATH": str(mlflow_auth_config(s.home, credentials)),
        # Creates the admin on the first start only; never written to the ini.
        "MLFLOW_AUTH_ADMIN_PASSWORD": credentials.mlflow_password,
        "MLFLOW_FLASK_SERVER_SECRET_KEY": credentials.mlflow_secret_key,
    }
    # MLflow (>= 3.5) refuses Host headers it does not know: a shared stack names the host
    # other machines dial, unless the environment already lists the allowed hosts.
    hosts = {} if is_loopback(s.bind) or os.environ.get("MLFLOW_SERVER_ALLOWED_HOSTS") else {
        "MLFLOW_SERVER_ALLOWED_HOSTS": ",".join(
            f"{host}{port}" for host in dict.fromkeys((s.public_host, s.host, "localhost"))
            for port in ("", f":{s.mlflow_port}"))}
    return {
        **s.credentials(),
        **auth,
        **hosts,
        "MLFLOW_S3_ENDPOINT_URL": s.s3_url,
        # The job runner's worker processes cost ~1.4 GiB and nothing here uses them.
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }


def _prefect_env(s: StackSettings) -> dict[str, str]:
    home = s.home / "prefect"
    credentials = s.auth()
    auth = {} if credentials is None else {
        "PREFECT_SERVER_API_AUTH_STRING": credentials.prefect_auth_string}
    return {
        **auth,
        "PREFECT_HOME": str(home),
        # A database given in the environment (e.g. Postgres) is kept.
        "PREFECT_API_DATABASE_CONNECTION_URL": os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL")
        or f"sqlite+aiosqlite:///{home / 'prefect.db'}",
        "PREFECT_SERVER_API_HOST": s.bind,
        "PREFECT_SERVER_API_PORT": str(s.prefect_port),
        # Where browsers call the API: on a shared stack, the host other machines reach.
        "PREFECT_UI_API_URL": f"http://{s.public_host}:{s.prefect_port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }


# weed mini serves each of its servers' gRPC on that server's HTTP port + this.
WEED_GRPC_PORT_OFFSET = 10_000


def _weed_extra_ports(s: StackSettings) -> tuple[int, ...]:
    """weed mini's other listeners: master, volume and filer, and each server's gRPC port
    (its HTTP port + WEED_GRPC_PORT_OFFSET) — a second stack on nearby ports collides on those."""
    http = (s.weed_master_port, s.weed_volume_port, s.weed_filer_port)
    grpc = tuple(port + WEED_GRPC_PORT_OFFSET for port in (s.s3_port, *http)
                 if port + WEED_GRPC_PORT_OFFSET < 65536)
    return http + grpc


def services(settings: StackSettings) -> list[Service]:
    """The stack in start order: S3 first (MLflow stores artifacts there)."""
    s = settings
    return [
        Service(
            "s3", s.s3_port, s.s3_url, "BREADTH_S3_ENDPOINT", _weed_command,
            lambda st: st.credentials(), _s3_healthy,
            extra_ports=_weed_extra_ports(s),
        ),
        Service(
            "mlflow", s.mlflow_port, s.mlflow_url, "MLFLOW_TRACKING_URI", _mlflow_command,
            _mlflow_env, lambda st: _http_ok(st.mlflow_url + "/health"),
        ),
        Service(
            "prefect", s.prefect_port, s.prefect_ui_url, "PREFECT_API_URL", _prefect_command,
            _prefect_env, lambda st: _http_ok(st.prefect_api_url + "/health"),
        ),
    ]


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def started_from(service: str, port: int) -> Path | None:
    """The BREADTH_HOME of the stack whose `service` listens on `port`, or None when that cannot
    be told (another user's process, a server started by hand).

    A stack starts each server in its home (the working directory) and writes its pid to
    `run/<service>.pid` there, so the listener, or the process it descends from (MLflow's
    uvicorn under `mlflow server`), whose working directory holds a pid file naming it is that
    stack's. Nothing is guessed from command lines or paths.
    """
    homes = set()
    for pid in listening_pids(port):
        for process in ancestry(pid):
            home = working_directory(process)
            try:
                if home and (home / "run" / f"{service}.pid").read_text().strip() == str(process):
                    homes.add(home)
                    break
            except OSError:
                continue
    return homes.pop() if len(homes) == 1 else None


class LocalStack:
    """Start, stop and inspect the local services. Safe to call `up` repeatedly.

    `flow_runs` makes the Prefect client that `reconcile` crashes dead flow runs with
    (`breadth_tasks.dead_runs.PrefectFlowRuns`, which the CLI gives); without it, `reconcile`
    closes MLflow runs only (this library imports no Prefect)."""

    def __init__(self, settings: StackSettings | None = None, start_timeout_s: float = 120.0,
                 flow_runs: Callable[[str], FlowRuns] | None = None):
        self.settings = settings or StackSettings()
        self.start_timeout_s = start_timeout_s
        self.flow_runs = flow_runs
        self.logs = self.settings.home / "logs"

    def _pid_file(self, service: Service) -> Path:
        return self.settings.home / "run" / f"{service.name}.pid"

    def _read_pid(self, service: Service) -> int | None:
        path = self._pid_file(service)
        if not path.exists():
            return None
        try:
            pid = int(path.read_text().strip())
        except ValueError:
            pid = -1
        if pid > 0 and pid_alive(pid):
            return pid
        path.unlink()  # stale: the process it names is gone
        return None

    def _serving_pid(self, service: Service) -> int | None:
        """The pid of this stack's server for `service` when it is the one clients use: its pid
        file is live and the environment names no other server. After `eval "$(breadth env)"`
        the environment names this very server (`url_is_local`), which keeps it ours."""
        pid = self._read_pid(service)
        if pid is not None and (not service.is_external() or service.url_is_local()):
            return pid
        return None

    def _uses_external(self, service: Service, healthy: bool) -> bool:
        """Whether clients use a server this stack did not start (when `_serving_pid` finds
        none of ours): the environment names one elsewhere, or names this stack's own address
        while another process answers there. Nothing answering at this stack's own address (a
        shell after `eval "$(breadth env)"`, then `stack down` or a reboot) is this stack's
        server, stopped: `up` starts it."""
        return service.is_external() and (healthy or not service.url_is_local())

    def log_path(self, service: str) -> Path:
        """Where a service this stack starts writes its stdout and stderr."""
        return self.logs / f"{service}.log"

    def status(self, started: Collection[str] = ()) -> list[dict[str, Any]]:
        """One row per service: name, url, state, pid, healthy and who manages it ("local":
        started by this stack; "external": its URL came from the environment; "other": a
        server answers at this stack's own address, but this BREADTH_HOME has no pid file for
        it, e.g. the stack of another directory's `.breadth`, the default home being relative;
        its state names that home when `started_from` can tell it).

        A live server this stack started is "local" unless the environment points clients at
        another one (`_serving_pid`, the rule `up` follows); then the row is "external" and
        says that the local one runs unused. `started` names the services the caller has just
        started, so their state says so.
        """
        rows = []
        for service in services(self.settings):
            healthy = service.healthy(self.settings)
            pid = self._serving_pid(service)
            if pid is not None:
                managed = "local"
                word = "started" if service.name in started else "running"
                state = f"{word} (pid {pid})" if healthy else f"starting or unhealthy (pid {pid})"
            elif self._uses_external(service, healthy):
                managed = "external"
                hint = scheme_hint(without_userinfo(service.url))
                state = "external, healthy" if healthy else (
                    f"external, NOT answering.{hint}" if hint else "external, NOT answering")
                unused = self._read_pid(service)
                if unused is not None:
                    state += (f"; this stack's own server (pid {unused}) runs unused: unset "
                              f"{service.external_env} to use it, or `breadth stack down`")
            elif healthy:
                # Called "stopped" before, beside a server clients were using. `up` cannot start
                # one here (the port is taken) and `down` here cannot stop it.
                managed = "other"
                other = started_from(service.name, service.port)
                origin = (f"started from BREADTH_HOME={other}" if other else
                          "another BREADTH_HOME's stack, or started by hand")
                state = (f"answering, but not started from BREADTH_HOME={self.settings.home} "
                         f"({origin})")
            else:
                managed, state = "local", "stopped"
            rows.append({"service": service.name, "url": without_userinfo(service.url),
                         "state": state, "pid": pid, "healthy": healthy, "managed": managed})
        return rows

    def up(self, only: list[str] | None = None, reconcile: bool = True) -> dict[str, str]:
        """Start what is not running; what was done per service: "started", "running" (was
        already) or "external" (checked, not started). Then, for the whole stack, close what
        killed runs left open (`reconcile`)."""
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.settings.auth()  # a shared stack without credentials is refused before any start
        chosen = [service for service in services(self.settings)
                  if not only or service.name in only]
        # All are launched before any is waited for: the servers import and migrate at once
        # (MLflow ~13 s, Prefect ~20 s one after the other on 2 cores; none needs another to
        # start).
        launched = {service.name: self._launch(service) for service in chosen}
        for service in chosen:
            pid = launched[service.name][1]
            if pid is not None:
                self._wait_healthy(service, pid)
        actions = {name: action for name, (action, _) in launched.items()}
        # The bucket (and the credentials) are checked when S3 is new to this stack; a server
        # it started earlier got its bucket then. Skipping it keeps boto3's import (~0.2 s) off
        # a cached re-run.
        if actions.get("s3", "running") != "running":
            self._ensure_bucket()
        if reconcile and not only:
            self.reconcile()
        return actions

    def to_start(self) -> list[Service]:
        """The services `up` would start now: none of this stack's servers serves them and the
        environment names no other (as `_launch` decides; the health probe only for a named
        server at this stack's own address). Lets a caller say what it waits for first."""
        def starts(service: Service) -> bool:
            if self._serving_pid(service) is not None:
                return False
            # Elsewhere than this stack's address, a named server's health changes nothing.
            healthy = (service.is_external() and service.url_is_local()
                       and service.healthy(self.settings))
            return not self._uses_external(service, healthy)

        return [service for service in services(self.settings) if starts(service)]

    def reconcile(self) -> list[str]:
        """Close the MLflow runs and Prefect flow runs that killed processes left open."""

        env = self.settings.client_env()
        try:
            return reconcile_stale_runs(env["MLFLOW_TRACKING_URI"], env.get("PREFECT_API_URL"),
                                        flow_runs=self.flow_runs)
        except Exception as error:  # noqa: BLE001 - the stack is up; reconciling is a courtesy
            note = f"could not reconcile stale runs: {error}"
            logging.getLogger("breadth.reconcile").warning(note)
            return [note]

    def _launch(self, service: Service) -> tuple[str, int | None]:
        """What `up` does for `service` ("started", "running" or "external"), and the pid of
        the server whose health `up` then waits for (None: an external one, checked here)."""
        pid = self._serving_pid(service)
        # Ours even when the environment names it (a shell after `eval "$(breadth env)"`, a
        # worker): it is running, not external, so S3's bucket is not checked again.
        if pid is not None:
            return "running", pid
        healthy = service.is_external() and service.healthy(self.settings)  # probe named ones only
        if self._uses_external(service, healthy):
            if not healthy:
                raise StackError(
                    f"{service.name} at {without_userinfo(service.url)} (from "
                    f"${service.external_env}) does not answer."
                    f"{scheme_hint(without_userinfo(service.url))} Start that service, or unset "
                    f"{service.external_env} to let `breadth stack up` run a local one."
                )
            return "external", None
        for port in (service.port, *service.extra_ports):
            if _port_in_use(port):
                # What holds the port may be this very service, run by another home's stack.
                if port == service.port and service.healthy(self.settings):
                    raise self._taken_by_another_stack(service)
                raise StackError(
                    f"cannot start {service.name}: port {port} on 127.0.0.1 is already in use by "
                    "another process (not one this stack started). Stop that process, or move "
                    f"breadth's {service.name} to a free port with "
                    f"BREADTH_{service.name.upper()}_PORT=<port> (weed's internal ports: "
                    "BREADTH_WEED_MASTER_PORT / _VOLUME_PORT / _FILER_PORT; each also uses its "
                    f"port + {WEED_GRPC_PORT_OFFSET} for gRPC)."
                )
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.settings.home / "run").mkdir(parents=True, exist_ok=True)
        if service.name == "s3":
            (self.settings.home / "s3").mkdir(parents=True, exist_ok=True)
        log = open(self.log_path(service.name), "ab")  # noqa: SIM115 - owned by the child
        env = {**os.environ, **service.extra_env(self.settings)}
        # A new session: `down` can stop the service and every worker it forked as one group.
        process = subprocess.Popen(
            service.command(self.settings), stdout=log, stderr=subprocess.STDOUT, env=env,
            cwd=self.settings.home, start_new_session=True,
        )
        self._pid_file(service).write_text(str(process.pid))
        return "started", process.pid

    def _taken_by_another_stack(self, service: Service) -> StackError:
        """The error for `service`'s port held by a server that passes its health probe, yet
        not one this BREADTH_HOME started: most likely the stack of another home (the default
        one, `.breadth`, is relative to the directory `breadth` runs in). Names that home when
        its pid file shows it, and the three ways out."""
        name, port, url = service.name, service.port, without_userinfo(service.url)
        other = started_from(name, port)
        if other is None:
            # The probe takes any HTTP answer below 500 (S3's is a 403), so another web
            # server passes it too (macOS's AirPlay answers on port 5000).
            origin = ("most likely the stack of another BREADTH_HOME (the default, .breadth, is "
                      "relative to the directory `breadth` runs in), else a server started by "
                      "hand or another program answering HTTP there")
            use = ("run `breadth stack up` / `breadth stack down` with that stack's "
                   "BREADTH_HOME (or from its directory), or point this shell's clients at it "
                   'with `eval "$(breadth env)"` run there')
        else:
            origin = f"it was started from BREADTH_HOME={other} (its pid file there names it)"
            home = f"BREADTH_HOME={shlex.quote(str(other))}"
            use = (f"run `{home} breadth stack up` / `{home} breadth stack down`, or point this "
                   f'shell\'s clients at it with `eval "$({home} breadth env)"`')
        return StackError(
            f"cannot start {name}: port {port} on 127.0.0.1 is taken by a server that answers "
            f"{name}'s health check at {url}, but BREADTH_HOME={self.settings.home} did not "
            f"start it: {origin}. To use that stack, {use}. To run this one beside it, move it "
            f"to free ports with BREADTH_{name.upper()}_PORT=<port> (a second stack needs its "
            "own BREADTH_S3_PORT, BREADTH_MLFLOW_PORT, BREADTH_PREFECT_PORT and weed's "
            "BREADTH_WEED_MASTER_PORT / _VOLUME_PORT / _FILER_PORT)."
        )

    def _wait_healthy(self, service: Service, pid: int) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if service.healthy(self.settings):
                return
            if not pid_alive(pid):
                break
            time.sleep(0.5)
        log = self.log_path(service.name)
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
        raise StackError(
            f"{service.name} did not become healthy at {service.url} within "
            f"{self.start_timeout_s:.0f}s (pid {pid}). Last lines of {log}:\n{tail}\n"
            "Fix the cause above, then `breadth stack down && breadth stack up`."
        )

    def _ensure_bucket(self) -> None:

        ObjectStore.from_env(env=self.settings.client_env()).ensure_bucket()

    def down(self, grace_s: float | None = None) -> None:
        # Only pid files decide: they exist for exactly the processes this stack started, even
        # when the environment now points clients at them (which makes them look external).
        for service in reversed(services(self.settings)):
            pid = self._read_pid(service)
            if pid is None:
                continue
            stop_process_group(pid, service.stop_grace_s if grace_s is None else grace_s)
            self._pid_file(service).unlink(missing_ok=True)
