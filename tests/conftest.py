"""Shared fixtures. Integration tests start the real stack (SeaweedFS, MLflow, Prefect) on free
ports under a temporary home, once per session, and stop it at the end."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import resource
import shutil
import socket
import sqlite3
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from breadth.models import gguf as gguf_conversion
from breadth.stack.local import WEED_GRPC_PORT_OFFSET

PORT_VARIABLES = (
    "BREADTH_S3_PORT", "BREADTH_MLFLOW_PORT", "BREADTH_PREFECT_PORT",
    "BREADTH_WEED_MASTER_PORT", "BREADTH_WEED_VOLUME_PORT", "BREADTH_WEED_FILER_PORT",
)
# No hub in tests. The hub libraries read these once, when first imported, so they are set
# before any test imports one: a test that set them after `datasets` was imported by another
# waited 23 s for its network retries to give up.
os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"

# Variables that would point the tests at someone else's services.
EXTERNAL_VARIABLES = ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT",
                      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# A test stack's ports. weed mini also listens on each of its HTTP ports + WEED_GRPC_PORT_OFFSET
# (gRPC; see breadth.stack.local._weed_extra_ports), which picking a free port does not reserve, and a
# stack whose twin is taken fails to start (every test of that xdist worker then errs). So each
# port is drawn with its twin below the kernel's ephemeral range (where no outgoing connection or
# free_port() takes them), from a band of its own per xdist worker (no two workers draw the
# same), both checked free, and never handed out twice in a session.
LOWEST_STACK_PORT = 10_000  # clear of the well-known and common service ports
PORT_BAND = 2_000
_handed_out: set[int] = set()


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def stack_port() -> int:
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    ephemeral_low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    bands = (ephemeral_low - WEED_GRPC_PORT_OFFSET - LOWEST_STACK_PORT) // PORT_BAND
    if bands < 1:  # an ephemeral range too low to keep twins below it: the kernel's choice
        return free_port()
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    start = LOWEST_STACK_PORT + (worker % bands) * PORT_BAND
    candidates = list(range(start, start + PORT_BAND))
    random.Random(os.getpid()).shuffle(candidates)  # two sessions at once rarely meet
    for port in candidates:
        if {port, port + WEED_GRPC_PORT_OFFSET}.isdisjoint(_handed_out) and _bindable(port) \
                and _bindable(port + WEED_GRPC_PORT_OFFSET):
            _handed_out.update((port, port + WEED_GRPC_PORT_OFFSET))
            return port
    raise RuntimeError(f"no free port with a free twin (+{WEED_GRPC_PORT_OFFSET}) in {start}-"
                       f"{start + PORT_BAND - 1}: stop the test stacks left running")


# Prefect's first start on a new sqlite database runs its schema migrations (about 30 CPU s on
# the loaded 2-core machine, 13 on a migrated one). A test stack's Prefect starts from a copy of
# a database that a first start left, taken right after it answered (only the schema version and
# Prefect's block types in it), and kept in pytest's cache under Prefect's version, which fixes
# the migrations: a new version migrates afresh and keeps its own copy. Block types are
# registered again at each start (Prefect keys that memo by the database's path), so one a new
# collection brings is added to a copy too.
PREFECT_DB = "prefect.db"


@contextlib.contextmanager
def _prefect_db_from_template(home: Path, templates: Path | None) -> Iterator[None]:
    """Around a stack's start under `home`: put a copy of the template database where its
    Prefect reads it, or, where there is none yet, make it from this start's database once the
    stack is up. Two xdist workers starting at once take turns (a lock): the second copies
    what the first made instead of migrating too. Without `templates`, or with a database named
    in the environment (e.g. Postgres), nothing is done."""
    if templates is None or os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL"):
        yield
        return
    template, database = templates / PREFECT_DB, home / "prefect" / PREFECT_DB
    with (templates / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if template.exists():
            fcntl.flock(lock, fcntl.LOCK_UN)
            database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copyfile(template, database)
            yield
            return
        yield  # the stack starts on a new database, holding the lock
        made = templates / f".{PREFECT_DB}.{os.getpid()}"
        # sqlite's backup: a consistent copy of a database its server has open (WAL included).
        with contextlib.closing(sqlite3.connect(database)) as source, \
                contextlib.closing(sqlite3.connect(made)) as copy:
            source.backup(copy)
        os.replace(made, template)


@contextlib.contextmanager
def running_local_stack(home: Path, server_env: dict[str, str] | None = None,
                        prefect_db_templates: Path | None = None) -> Iterator[dict[str, str]]:
    """The real local stack on free ports under `home`, its servers started with `server_env`
    added to the environment (e.g. a Postgres database); yields the client environment (already
    exported) and restores the environment after. With `prefect_db_templates` (the
    `prefect_db_templates` fixture), Prefect starts from a copy of a migrated database."""
    from breadth.stack.local import LocalStack, StackSettings

    server_env = server_env or {}
    saved = {name: os.environ.get(name) for name in (*PORT_VARIABLES, *EXTERNAL_VARIABLES,
                                                     *server_env, "BREADTH_HOME")}
    for name in EXTERNAL_VARIABLES:
        os.environ.pop(name, None)
    for name in PORT_VARIABLES:
        os.environ[name] = str(stack_port())
    os.environ["BREADTH_HOME"] = str(home)
    os.environ.update(server_env)
    # 300 s, not 120: on a loaded 2-core machine with two xdist workers starting stacks at once,
    # Prefect's first start (its database migrations) has taken over 120 s.
    stack = LocalStack(StackSettings(home=Path(home)), start_timeout_s=300)
    try:
        with _prefect_db_from_template(Path(home), prefect_db_templates):
            stack.up()
        env = stack.settings.client_env()
        os.environ.update(env)
        yield env
    finally:
        stack.down(grace_s=5)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def prefect_db_templates(request: pytest.FixtureRequest) -> Path | None:
    """The folder of the migrated Prefect database test stacks copy (`PREFECT_DB`'s reason):
    in pytest's cache, named for Prefect's version; other versions' folders are removed.
    Without pytest's cache (-p no:cacheprovider): None, each stack migrates its own."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        return None
    root = cache.mkdir("breadth-prefect-db")
    name = f"prefect-{metadata.version('prefect')}"
    for stale in root.iterdir():
        if stale.name != name:
            shutil.rmtree(stale, ignore_errors=True)
    (root / name).mkdir(exist_ok=True)
    return root / name


@pytest.fixture(scope="session")
def live_stack(tmp_path_factory: pytest.TempPathFactory,
               prefect_db_templates: Path | None) -> Iterator[dict[str, str]]:
    """The real local stack on free ports; yields the client environment (already exported)."""
    with running_local_stack(tmp_path_factory.mktemp("breadth-home"),
                             prefect_db_templates=prefect_db_templates) as env:
        yield env


# torch on one OpenMP thread, for the tests that run a real model (SmolLM2-135M) or train one:
# the suite runs two xdist workers on two cores, and a torch process with two threads in each
# oversubscribes them, where OpenMP's waiting threads spin. Measured on this 2-core machine busy
# with other work (load 6-10), generate (16 x 16 tokens) plus one backward pass of SmolLM2:
# 1 thread 14-16 CPU s in 40-56 s, 2 threads 64-77 CPU s in 194-349 s (two runs each; the
# script is in the commit that added this). For a subprocess's environment; `one_torch_thread`
# for the test process's own torch.
ONE_TORCH_THREAD = {"OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """This process's torch on one thread for the module (ONE_TORCH_THREAD's reason)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# What a converted GGUF folder depends on besides the file (which keys the folder itself): the
# conversion's code and the libraries that read and write the weights.
_GGUF_CONVERSION_INPUTS = ("transformers", "gguf", "torch", "safetensors")


@pytest.fixture(scope="session")
def gguf_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache of converted GGUF models ($BREADTH_GGUF_CACHE) shared by the tests of a run and by
    later runs in this checkout: converting SmolLM2-135M costs 55-145 CPU s, and each test
    converted it again in its own home. Under pytest's cache folder, in a subfolder named for the
    conversion's inputs (breadth/models/gguf.py and its libraries' versions), so a change to either
    converts afresh and is tested; the other subfolders (~540 MB each) are removed. The cold path
    (hash key, provenance, a corrupt file refused) is tested on a tiny GGUF
    (tests/unit/models/test_gguf.py). Without pytest's cache (-p no:cacheprovider): a session
    folder."""
    inputs = hashlib.sha256(Path(gguf_conversion.__file__).read_bytes())
    for package in _GGUF_CONVERSION_INPUTS:
        try:
            inputs.update(f"{package}=={metadata.version(package)}".encode())
        except metadata.PackageNotFoundError:
            inputs.update(f"{package} absent".encode())
    cache = getattr(request.config, "cache", None)
    if cache is None:
        return tmp_path_factory.mktemp("gguf-cache")
    root = cache.mkdir("breadth-gguf")
    for stale in root.iterdir():
        if stale.name != inputs.hexdigest()[:16]:
            shutil.rmtree(stale, ignore_errors=True)
    folder = root / inputs.hexdigest()[:16]
    folder.mkdir(exist_ok=True)
    return folder


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that need the vLLM environment (`vllm_env`, installed under a lock by the
    first that asks, ~80 s with uv; one module today, test_vllm_backend_on_cpu.py, whose tests
    share its two servers): the first goes out before all others, as its chain is the suite's
    longest, and the rest after the other real-stack modules, when the environment is there,
    with the short unit modules still to fill in behind them. Next to each other in collection
    order, one worker waited 330 s on the other's install. The rest keep their order (the
    Makefile's --no-loadscope-reorder hands modules out in it)."""
    vllm_modules = list(dict.fromkeys(item.nodeid.split("::")[0] for item in items
                                      if "vllm_env" in getattr(item, "fixturenames", ())))

    def rank(item: pytest.Item) -> int:
        module = item.nodeid.split("::")[0]
        if module in vllm_modules:
            return 0 if module == vllm_modules[0] else 2
        return 3 if module.startswith("tests/unit/") else 1

    items.sort(key=rank)  # stable: the order within each rank stays


def pytest_configure(config: pytest.Config) -> None:
    """Tests set the terminal width they mean (COLUMNS) themselves. A pytest-xdist worker starts
    with COLUMNS=80 and LINES=24 in its environment, and the CLI's console, made when
    breadth.cli is first imported, would keep that width for the whole session."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)



# BREADTH_TEST_CPU_LOG=PATH: each test session (each xdist worker) appends, per test module, the
# CPU seconds it spent in pytest's own process and in the child processes it waited for (the
# servers, workers and CLIs it started and stopped), and its wall seconds, as JSON lines.
# `make test` is CPU-bound on 2 cores, so its time follows CPU work, not a module's wall time
# (docs/guide/testing.md, "Where the suite's time goes"). Daemons it did not wait for (a stack
# started detached) are not counted.
_CPU_LOG = os.environ.get("BREADTH_TEST_CPU_LOG")
_module_cost: dict[str, list[float]] = {}


def _cpu_seconds() -> tuple[float, float]:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if not _CPU_LOG:
        yield
        return
    (own, children), wall = _cpu_seconds(), time.monotonic()
    yield
    (own_after, children_after) = _cpu_seconds()
    cost = _module_cost.setdefault(item.nodeid.split("::")[0], [0.0, 0.0, 0.0])
    cost[0] += own_after - own
    cost[1] += children_after - children
    cost[2] += time.monotonic() - wall


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _CPU_LOG and _module_cost:
        with open(_CPU_LOG, "a") as log:
            log.writelines(json.dumps({"module": module, "cpu_s": round(own, 2),
                                       "children_cpu_s": round(children, 2),
                                       "wall_s": round(wall, 2)}) + "\n"
                           for module, (own, children, wall) in _module_cost.items())
