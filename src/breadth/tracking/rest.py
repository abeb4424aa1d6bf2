"""The MLflow calls a pipeline run makes, over MLflow's REST API with the standard library.

`import mlflow` costs 1.3-1.7 s (it pulls in pandas, fastapi, mlflow.genai ...), more than a
whole cached `breadth run` should take, while a run only needs a dozen JSON endpoints. This
client speaks them directly: experiments get-by-name / create / search, runs create /
get / search / log-batch / update / set-tag, metric histories, artifact listings, and proxied
artifact upload and download (`mlflow-artifacts:` URIs, the stack's `mlflow server
--serve-artifacts`). `breadth.tracking.clients.tracking_client`
picks it for http(s) tracking URIs whose auth it speaks, and the `mlflow` package otherwise.

It behaves like `MlflowClient` where the pipeline relies on it: credentials from the URI's
user:password or MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN, MLflow's retry policy for refused
connections and 408/429/5xx answers (MLFLOW_HTTP_REQUEST_MAX_RETRIES, _BACKOFF_FACTOR,
_TIMEOUT), and errors that name the endpoint and MLflow's own message.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import random
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from breadth.tracking.records import ArtifactFile, MetricPoint, RunRecord  # also imported from here
from breadth.tracking.sdk import SdkTracking  # imports mlflow only when one is made

API = "/api/2.0/mlflow"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts"
# What MLflow's own client retries (mlflow.utils.request_utils): the server may come back.
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
UPLOAD_THREADS = 4
# The fix an error names, for a server that refuses our credentials or does not answer.
CREDENTIALS_FIX = ("Set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or "
                   "MLFLOW_TRACKING_TOKEN, to credentials this server accepts.")
UNREACHABLE_FIX = ("Start it with `breadth stack up`, or set MLFLOW_TRACKING_URI to a running "
                   "MLflow server.")


class MlflowRequestError(RuntimeError):
    """MLflow answered a request with an error: the message names the endpoint and MLflow's
    error code and message, and for 401/403 the settings that carry credentials. 4xx answers
    are `permanent` (retrying the same request cannot help; `with_retries` in
    `breadth.tracking.uploads` gives up on them at once)."""

    def __init__(self, method: str, endpoint: str, status: int, body: bytes):
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and ("error_code" in answer or "message" in answer):
            what = f"{answer.get('error_code', '')}: {answer.get('message', '')}"
        else:
            what = body.decode(errors="replace")[:500] or "(empty answer)"
        if status in (401, 403):
            what = f"{what.rstrip('.')}. {CREDENTIALS_FIX}"
        super().__init__(f"MLflow {method} {endpoint} failed with HTTP {status}: {what}")
        self.status = status
        self.error_code = answer.get("error_code", "") if isinstance(answer, dict) else ""
        self.permanent = 400 <= status < 500 and status not in TRANSIENT_STATUS


def quoted(value: str, what: str) -> str:
    """`value` as a string literal in an MLflow filter string (`search_runs`)."""
    # MLflow filter strings have no escape for quotes; refuse rather than mis-parse.
    if "'" in value or "\\" in value:
        raise ValueError(f"{what} {value!r} contains a quote or backslash; MLflow cannot search it")
    return f"'{value}'"


def _pairs(items: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in items]


class MlflowRest:
    """An MLflow tracking server over HTTP; thread-safe (one connection per request)."""

    def __init__(self, uri: str, *, sleep: Callable[[float], None] = time.sleep):
        self.uri = uri
        parts = urllib.parse.urlsplit(uri.rstrip("/"))
        host = parts.netloc.rsplit("@", 1)[-1]
        self.base = urllib.parse.urlunsplit(parts._replace(netloc=host))
        self.headers = {"User-Agent": "breadth"}
        user = os.environ.get("MLFLOW_TRACKING_USERNAME") or urllib.parse.unquote(parts.username or "")
        password = os.environ.get("MLFLOW_TRACKING_PASSWORD") or urllib.parse.unquote(parts.password or "")
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        if user and password:  # MLflow's order: basic auth first, then a bearer token
            basic = base64.standard_b64encode(f"{user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {basic}"
        elif token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.retries = int(os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "7"))
        self.backoff = float(os.environ.get("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "2"))
        self.timeout = float(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "120"))
        self.ssl = _ssl_context()
        self.sleep = sleep

    # -- transport ---------------------------------------------------------------------------

    def request(self, method: str, endpoint: str, *, body: Any = None, query: dict | None = None,
                data: bytes | None = None, content_type: str = "application/json",
                base: str | None = None, raw: bool = False) -> Any:
        """Send one request to `endpoint` on `base` (default: the tracking server), retried as
        MLflow's client retries; returns the decoded JSON, or the answer's bytes if `raw`."""
        server = base or self.base
        url = server + endpoint
        if query:
            url += "?" + urllib.parse.urlencode(query)
        if body is not None:
            data = json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": content_type}
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout, context=self.ssl) as answer:
                    content = answer.read()
                if raw:
                    return content
                return json.loads(content) if content.strip() else {}
            except urllib.error.HTTPError as error:
                failure: Exception = MlflowRequestError(method, endpoint, error.code, error.read())
                if error.code not in TRANSIENT_STATUS:
                    raise failure from None
            except OSError as error:  # URLError included
                reason = getattr(error, "reason", error)
                failure = ConnectionError(f"MLflow at {server} did not answer {method} {endpoint}: "
                                          f"{reason}. {UNREACHABLE_FIX}")
            if attempt < self.retries:  # urllib3's backoff, as MLflow configures it
                self.sleep(min(self.backoff * 2**attempt, 120) + random.random())
        raise failure

    def health(self, timeout_s: float = 5) -> None:
        """GET /health once, no retries: raises OSError (URLError, HTTPError) unless it is up."""
        request = urllib.request.Request(self.base + "/health", headers=self.headers)
        with urllib.request.urlopen(request, timeout=timeout_s, context=self.ssl):
            return

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, API + path, **kwargs)

    # -- experiments -------------------------------------------------------------------------

    def experiment_id(self, name: str) -> str | None:
        try:
            found = self.api("GET", "/experiments/get-by-name", query={"experiment_name": name})
        except MlflowRequestError as error:
            if error.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        return found["experiment"]["experiment_id"]

    def create_experiment(self, name: str, tags: dict[str, str] | None = None) -> str:
        body = {"name": name, "tags": _pairs(list((tags or {}).items()))}
        return self.api("POST", "/experiments/create", body=body)["experiment_id"]

    def set_experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        self.api("POST", "/experiments/set-experiment-tag",
                 body={"experiment_id": experiment_id, "key": key, "value": value})

    def experiment_ids(self) -> list[str]:
        """Every experiment, deleted ones included (their runs may still be RUNNING)."""
        return [e["experiment_id"] for e in self._pages(
            "/experiments/search", "experiments", {"view_type": "ALL", "max_results": 1000})]

    def experiment_names(self) -> dict[str, str]:
        """{id: name} of the active (not deleted) experiments."""
        return {e["experiment_id"]: e["name"] for e in self._pages(
            "/experiments/search", "experiments", {"max_results": 1000})}

    # -- runs --------------------------------------------------------------------------------

    def create_run(self, experiment_id: str, run_name: str, tags: dict[str, str]) -> RunRecord:
        body = {"experiment_id": experiment_id, "run_name": run_name,
                "user_id": tags.get("mlflow.user", "unknown"), "start_time": _now_ms(),
                "tags": _pairs(list(tags.items()))}
        return RunRecord.from_json(self.api("POST", "/runs/create", body=body)["run"])

    def get_run(self, run_id: str) -> RunRecord:
        return RunRecord.from_json(self.api("GET", "/runs/get", query={"run_id": run_id})["run"])

    def search_runs(self, experiment_ids: list[str], filter_string: str,
                    max_results: int | None = 5000,
                    order_by: Sequence[str] = ()) -> list[RunRecord]:
        """Active (not deleted) runs matching `filter_string`, as `MlflowClient.search_runs`;
        every one of them when `max_results` is None."""
        body = {"experiment_ids": experiment_ids, "filter": filter_string,
                "run_view_type": "ACTIVE_ONLY", "max_results": min(max_results or 1000, 1000),
                "order_by": list(order_by)}
        found = []
        for run in self._pages("/runs/search", "runs", body):
            found.append(RunRecord.from_json(run))
            if max_results is not None and len(found) >= max_results:
                break
        return found

    def metric_history(self, run_id: str, key: str) -> list[MetricPoint]:
        """Every value logged for metric `key` of the run, in the order the server keeps."""
        return [MetricPoint(int(m.get("step", 0)), float(m["value"]), int(m.get("timestamp", 0)))
                for m in self._pages("/metrics/get-history", "metrics",
                                     {"run_id": run_id, "metric_key": key}, method="GET")]

    def log_batch(self, run_id: str, *, metrics: Sequence[tuple[str, float, int, int]] = (),
                  params: Sequence[tuple[str, str]] = (),
                  tags: Sequence[tuple[str, str]] = ()) -> None:
        """One log-batch request (MLflow's limits: 1000 metrics, 100 params, 100 tags)."""
        body = {"run_id": run_id, "params": _pairs(params), "tags": _pairs(tags),
                "metrics": [{"key": k, "value": v, "timestamp": t, "step": s}
                            for k, v, t, s in metrics]}
        self.api("POST", "/runs/log-batch", body=body)

    def log_inputs(self, run_id: str, datasets: Sequence[dict[str, Any]]) -> None:
        """Dataset inputs of the run, each as the JSON of MLflow's `DatasetInput` (`{"tags":
        [...], "dataset": {name, digest, source_type, source, profile}}`)."""
        self.api("POST", "/runs/log-inputs", body={"run_id": run_id, "datasets": list(datasets)})

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.api("POST", "/runs/set-tag", body={"run_id": run_id, "key": key, "value": value})

    def set_terminated(self, run_id: str, status: str = "FINISHED") -> None:
        self.api("POST", "/runs/update",
                 body={"run_id": run_id, "status": status, "end_time": _now_ms()})

    # -- artifacts ---------------------------------------------------------------------------

    def artifact_folder(self, artifact_uri: str) -> tuple[str, str] | None:
        """(server, endpoint) of the folder behind a proxied (`mlflow-artifacts:`) artifact
        URI; None for any other store (s3://, file:), which only the `mlflow` package writes."""
        parts = urllib.parse.urlsplit(artifact_uri)
        if parts.scheme != "mlflow-artifacts":
            return None
        base = self.base
        if parts.netloc:  # mlflow-artifacts://host:port/...: that host, our scheme
            base = f"{urllib.parse.urlsplit(self.base).scheme}://{parts.netloc}"
        return base, ARTIFACTS_API + urllib.parse.quote(parts.path.rstrip("/"))

    def log_artifact(self, run_id: str, local: Path, artifact_path: str | None = None) -> None:
        """Upload a file or a folder's files to the run's artifacts: over REST when the server
        proxies them (`mlflow-artifacts:`), else with the `mlflow` package (s3://, file:)."""
        if not self.upload(self.get_run(run_id).artifact_uri, Path(local), artifact_path):
            SdkTracking(self.uri).log_artifact(run_id, Path(local), artifact_path)

    def list_artifacts(self, run_id: str, path: str = "") -> list[ArtifactFile]:
        """The files and folders directly under `path` of the run's artifacts (any store the
        server can read: it lists them itself)."""
        query = {"run_id": run_id, **({"path": path} if path else {})}
        return [ArtifactFile(f["path"], bool(f.get("is_dir")))
                for f in self._pages("/artifacts/list", "files", query, method="GET")]

    def download_artifacts(self, run_id: str, path: str, destination: Path) -> Path:
        """Download the artifact file or folder `path` into `destination`, keeping its path
        (as `MlflowClient.download_artifacts`); returns the local file or folder. Over REST when
        the server proxies the run's artifacts, else with the `mlflow` package."""
        folder = self.artifact_folder(self.get_run(run_id).artifact_uri)
        if folder is None:
            return SdkTracking(self.uri).download_artifacts(run_id, path, destination)
        base, endpoint = folder
        path = path.strip("/")
        # A folder is a path with entries under it, as MLflow decides; else a file.
        files = list(self._files_under(run_id, path)) or [path]

        def get(relative: str) -> None:
            target = Path(destination) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.request("GET", f"{endpoint}/{urllib.parse.quote(relative)}",
                                            base=base, raw=True))

        _a_few_at_a_time(get, files)
        return Path(destination) / path

    def _files_under(self, run_id: str, path: str) -> Iterator[str]:
        for entry in self.list_artifacts(run_id, path):
            if entry.is_dir:
                yield from self._files_under(run_id, entry.path)
            else:
                yield entry.path

    def upload(self, artifact_uri: str, local: Path, artifact_path: str | None = None) -> bool:
        """PUT a file, or a folder's files, under `artifact_path` of a proxied artifact folder;
        False (nothing sent) when the run's artifacts are not proxied by the server."""
        folder = self.artifact_folder(artifact_uri)
        if folder is None:
            return False
        base, endpoint = folder

        def put(item: tuple[Path, str]) -> None:
            file, relative = item
            kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            self.request("PUT", f"{endpoint}/{urllib.parse.quote(relative)}", base=base,
                         data=file.read_bytes(), content_type=kind)

        _a_few_at_a_time(put, list(_files(Path(local), artifact_path)))
        return True

    def _pages(self, path: str, key: str, params: dict[str, Any],
               method: str = "POST") -> Iterator[dict[str, Any]]:
        """Every item under `key` of every page: `params` go as the JSON body of a POST, as
        the query of a GET."""
        token = None
        while True:
            page = {**params, **({"page_token": token} if token else {})}
            answer = self.api(method, path, **({"body": page} if method == "POST" else {"query": page}))
            yield from answer.get(key, [])
            token = answer.get("next_page_token")
            if not token:
                return


def _a_few_at_a_time(transfer: Callable[[Any], None], items: list[Any]) -> None:
    """`transfer` each item, UPLOAD_THREADS at a time (each waits on the server's own transfer
    to or from the artifact store); raises the first failure."""
    with ThreadPoolExecutor(max_workers=max(1, min(UPLOAD_THREADS, len(items)))) as pool:
        list(pool.map(transfer, items))


def _files(local: Path, artifact_path: str | None) -> Iterator[tuple[Path, str]]:
    """(file, its artifact path): a file goes under `artifact_path`, a folder's files keep
    their layout under it (as `MlflowClient.log_artifact(s)` lays them out)."""
    prefix = f"{artifact_path.strip('/')}/" if artifact_path else ""
    if not local.is_dir():
        yield local, prefix + local.name
        return
    for file in sorted(p for p in local.rglob("*") if p.is_file()):
        yield file, prefix + file.relative_to(local).as_posix()


def _now_ms() -> int:
    return int(time.time() * 1000)


def _ssl_context() -> ssl.SSLContext | None:
    """MLflow's TLS settings: MLFLOW_TRACKING_INSECURE_TLS, MLFLOW_TRACKING_SERVER_CERT_PATH."""
    if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        return ssl._create_unverified_context()
    if os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH"):
        return ssl.create_default_context(cafile=os.environ["MLFLOW_TRACKING_SERVER_CERT_PATH"])
    return None
