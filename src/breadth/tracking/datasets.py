"""A run's data sets as MLflow dataset inputs: the train and eval files a run read, each with
its source, content hash and row count, shown in MLflow's Datasets column and run page.

Sent over MLflow's REST API (`runs/log-inputs`, `RunHandle.log_inputs`), as the JSON of its
`DatasetInput`: `mlflow.data.from_pandas` read the whole parquet into pandas and imported
mlflow (over a second) for what a manifest already states. The parent run showed
"Datasets: None".
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from breadth.tracking.names import SEPARATOR, short_source

# MLflow keeps a dataset digest in 36 characters.
DIGEST_CHARS = 16
SPLITS = ("train", "eval")


def dataset_inputs(
    source: str, eval_source: str | None, files: Mapping[str, Mapping[str, Any]],
    folder_uri: str, content_hash: str,
) -> list[dict[str, Any]]:
    """The DatasetInput JSON of each prepared split with rows: named `<source>·<split>`, its
    digest the file's sha256 (cut to MLflow's 36 characters), its source the file under
    `folder_uri` (e.g. `s3://bucket/datasets/<hash>`), its profile the row count; tagged
    with its context (`mlflow.data.context`: train or eval), the source spec it came from
    (`breadth.source`) and the prepared data set's content hash (`dataset.hash`).

    >>> files = {"train.parquet": {"sha256": "ab" * 32, "rows": 600},
    ...          "eval.parquet": {"sha256": "cd" * 32, "rows": 0}}
    >>> [entry] = dataset_inputs("synthetic:arithmetic", None, files, "s3://b/datasets/h", "h")
    >>> entry["dataset"]["name"], entry["dataset"]["profile"], entry["dataset"]["source"]
    ('arithmetic·train', '{"num_rows": 600}', '{"uri": "s3://b/datasets/h/train.parquet"}')
    """
    inputs = []
    for split in SPLITS:
        file = files.get(f"{split}.parquet")
        if not file or not file.get("rows"):  # eval_only trains nothing: no train set
            continue
        spec = eval_source if split == "eval" and eval_source else source
        uri = f"{folder_uri.rstrip('/')}/{split}.parquet"
        kind = urllib.parse.urlsplit(uri).scheme or "local"
        inputs.append({
            "tags": [{"key": "mlflow.data.context", "value": split},
                     {"key": "breadth.source", "value": spec},
                     {"key": "dataset.hash", "value": content_hash}],
            "dataset": {"name": f"{short_source(spec)}{SEPARATOR}{split}",
                        "digest": str(file["sha256"])[:DIGEST_CHARS],
                        "source_type": kind, "source": json.dumps({"uri": uri}),
                        "profile": json.dumps({"num_rows": int(file["rows"])})},
        })
    return inputs
