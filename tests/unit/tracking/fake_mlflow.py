"""A tiny in-process HTTP server that answers like MLflow's REST API, for the REST client's unit
tests: it keeps experiments, runs, tags, params, metrics and uploaded artifacts in memory,
records every request, and can be told to fail the next requests with given statuses. It also
answers what readers use: metric histories, artifact listings and proxied artifact downloads."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

PAGE = 2  # a small page size, so paging is exercised with a handful of objects


class FakeMlflow:
    def __init__(self) -> None:
        self.experiments: dict[str, str] = {"0": "Default"}
        self.experiment_tags: dict[str, dict[str, str]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.artifacts: dict[str, tuple[bytes, str]] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        self.bodies: list[dict[str, Any]] = []  # every POST's JSON body, in order
        self.failures: list[tuple[int, dict[str, str]]] = []  # next answers: status, body
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake.requests.append((method, self.path, dict(self.headers)))
                status, answer = fake.handle(method, self.path, raw, dict(self.headers))
                # An artifact download answers the file's bytes; everything else JSON.
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_PUT(self) -> None:
                self._answer("PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for the loop's next poll: at the default 0.5 s, half a second per test.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                       daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- the API -----------------------------------------------------------------------------

    def handle(self, method: str, target: str, raw: bytes, headers: dict) -> tuple[int, Any]:
        if self.failures:
            return self.failures.pop(0)
        path, _, query = target.partition("?")
        args = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
        body = json.loads(raw) if raw and method == "POST" else {}
        if method == "POST":
            self.bodies.append(body)
        if method == "PUT" and path.startswith("/api/2.0/mlflow-artifacts/artifacts/"):
            key = urllib.parse.unquote(path.removeprefix("/api/2.0/mlflow-artifacts/artifacts/"))
            self.artifacts[key] = (raw, headers.get("Content-Type", ""))
            return 200, {}
        if method == "GET" and path.startswith("/api/2.0/mlflow-artifacts/artifacts/"):
            key = urllib.parse.unquote(path.removeprefix("/api/2.0/mlflow-artifacts/artifacts/"))
            if key not in self.artifacts:
                return 404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": f"no {key}"}
            return 200, self.artifacts[key][0]
        if path == "/health":
            return 200, {}
        route = path.removeprefix("/api/2.0/mlflow")
        if route == "/experiments/get-by-name":
            for eid, name in self.experiments.items():
                if name == args["experiment_name"]:
                    return 200, {"experiment": {"experiment_id": eid, "name": name}}
            return 404, {"error_code": "RESOURCE_DOES_NOT_EXIST",
                         "message": f"Could not find experiment with name '{args['experiment_name']}'"}
        if route == "/experiments/create":
            eid = str(len(self.experiments))
            self.experiments[eid] = body["name"]
            self.experiment_tags[eid] = {t["key"]: t["value"] for t in body.get("tags", [])}
            return 200, {"experiment_id": eid}
        if route == "/experiments/set-experiment-tag":
            self.experiment_tags.setdefault(body["experiment_id"], {})[body["key"]] = body["value"]
            return 200, {}
        if route == "/runs/log-inputs":
            self.runs[body["run_id"]].setdefault("inputs", {"dataset_inputs": []})[
                "dataset_inputs"].extend(body["datasets"])
            return 200, {}
        if route == "/experiments/search":
            items = [{"experiment_id": e, "name": n} for e, n in self.experiments.items()]
            return 200, self._page(items, body, "experiments")
        if route == "/runs/create":
            run_id = f"run{len(self.runs):029d}"
            self.runs[run_id] = {
                "info": {"run_id": run_id, "experiment_id": body["experiment_id"],
                         "run_name": body.get("run_name", ""), "status": "RUNNING",
                         "artifact_uri": f"mlflow-artifacts:/{body['experiment_id']}/{run_id}/artifacts"},
                "data": {"tags": list(body.get("tags", [])), "params": [], "metrics": []},
            }
            return 200, {"run": self.runs[run_id]}
        if route == "/runs/get":
            if args["run_id"] not in self.runs:
                return 404, {"error_code": "RESOURCE_DOES_NOT_EXIST",
                             "message": f"Run with id={args['run_id']} not found"}
            return 200, {"run": self.runs[args["run_id"]]}
        if route == "/runs/search":
            status = body.get("filter", "").removeprefix("attributes.status = ").strip("'")
            found = [r for r in self.runs.values()
                     if r["info"]["experiment_id"] in body["experiment_ids"]
                     and (not status or r["info"]["status"] == status)]
            return 200, self._page(found, body, "runs")
        if route == "/runs/log-batch":
            data = self.runs[body["run_id"]]["data"]
            for kind in ("tags", "params", "metrics"):
                data[kind].extend(body.get(kind, []))
            return 200, {}
        if route == "/metrics/get-history":
            found = [m for m in self.runs[args["run_id"]]["data"]["metrics"]
                     if m["key"] == args["metric_key"]]
            return 200, self._page(found, args, "metrics")
        if route == "/artifacts/list":
            return 200, self._page(self._listing(args["run_id"], args.get("path", "")), args, "files")
        if route == "/runs/set-tag":
            self.runs[body["run_id"]]["data"]["tags"].append(
                {"key": body["key"], "value": body["value"]})
            return 200, {}
        if route == "/runs/update":
            self.runs[body["run_id"]]["info"].update(status=body["status"], end_time=body["end_time"])
            return 200, {"run_info": self.runs[body["run_id"]]["info"]}
        return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": f"no {method} {path}"}

    def _page(self, items: list, body: dict, key: str) -> dict:
        start = int(body.get("page_token") or 0)
        answer: dict[str, Any] = {key: items[start : start + PAGE]}
        if start + PAGE < len(items):
            answer["next_page_token"] = str(start + PAGE)
        return answer

    def _listing(self, run_id: str, path: str) -> list[dict[str, Any]]:
        """The entries directly under `path` of the run's artifacts, as MLflow lists them."""
        info = self.runs[run_id]["info"]
        root = info["artifact_uri"].removeprefix("mlflow-artifacts:/") + "/"
        under = f"{path.strip('/')}/" if path.strip("/") else ""
        entries: dict[str, bool] = {}  # path relative to the run's root -> is a folder
        for key in sorted(self.artifacts):
            if key.startswith(root + under):
                first, _, deeper = key.removeprefix(root + under).partition("/")
                entries[under + first] = bool(deeper)
        return [{"path": p, "is_dir": d} for p, d in entries.items()]

    def tags(self, run_id: str) -> dict[str, str]:
        return {t["key"]: t["value"] for t in self.runs[run_id]["data"]["tags"]}
