"""The S3 object store: content-addressed datasets, run checkpoints and rollouts.

Uploads verify size and checksum after writing, and a key is never overwritten with different
bytes: immutable keys (datasets) stay immutable, and a re-run that produces the same bytes is a
no-op.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ObjectStoreError(RuntimeError):
    """S3 cannot be reached or refused an operation; the message names the endpoint and fix."""


class ObjectConflict(ObjectStoreError):
    """A key already holds different bytes: no retry can fix that."""

    permanent = True


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class ObjectStore:
    endpoint: str
    bucket: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ObjectStore:
        env = os.environ if env is None else env
        missing = [
            name
            for name in ("BREADTH_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
            if not env.get(name)
        ]
        if missing:
            raise ObjectStoreError(
                f"S3 is not configured: {', '.join(missing)} not set. Run `breadth stack up` "
                "(it prints the values) or export them for your S3 service."
            )
        return cls(
            endpoint=env["BREADTH_S3_ENDPOINT"],
            bucket=env.get("BREADTH_S3_BUCKET", "breadth"),
            access_key=env["AWS_ACCESS_KEY_ID"],
            secret_key=env["AWS_SECRET_ACCESS_KEY"],
            region=env.get("AWS_DEFAULT_REGION", "us-east-1"),
        )

    @property
    def client(self) -> Any:
        if not hasattr(self, "_client"):
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                region_name=self.region,
                # s3v4 + path style: what SeaweedFS and MinIO expect; few retries so that a
                # stopped service is reported in seconds, not minutes.
                config=Config(
                    signature_version="s3v4",
                    s3={"addressing_style": "path"},
                    retries={"max_attempts": 2, "mode": "standard"},
                    connect_timeout=5,
                    read_timeout=60,
                ),
            )
        return self._client

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError, EndpointConnectionError

        try:
            return fn(**kwargs)
        except EndpointConnectionError as error:
            raise ObjectStoreError(
                f"S3 at {self.endpoint} does not answer ({what}): {error}. Start it with "
                "`breadth stack up`, or point BREADTH_S3_ENDPOINT at a running S3 service."
            ) from None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "?")
            raise ObjectStoreError(
                f"S3 at {self.endpoint} refused {what} (code {code}): {error}. Check the bucket "
                f"{self.bucket!r} and the keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY."
            ) from None

    def ensure_bucket(self) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError:
            self._call("create_bucket", self.client.create_bucket, Bucket=self.bucket)

    def head(self, key: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        try:
            return self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                return None
            raise

    def upload_file(self, path: Path, key: str) -> str:
        """Upload `path` to `key` and verify it; returns the s3:// URI.

        Same bytes already there: nothing is written. Different bytes there: refused.
        """
        path = Path(path)
        checksum = sha256_file(path)
        size = path.stat().st_size
        existing = self._call("head_object", self.head, key=key)
        if existing is not None:
            if existing.get("Metadata", {}).get("sha256") == checksum:
                return self.uri(key)
            raise ObjectConflict(
                f"s3://{self.bucket}/{key} already holds different bytes; keys are never "
                "overwritten. Write under a new key (a new run or content hash)."
            )
        self._call(
            f"upload of {key}",
            self.client.upload_file,
            Filename=str(path),
            Bucket=self.bucket,
            Key=key,
            ExtraArgs={"Metadata": {"sha256": checksum}},
        )
        written = self._call("head_object", self.head, key=key)
        if written is None or written["ContentLength"] != size:
            raise ObjectStoreError(f"upload of {key} did not verify: size mismatch")
        if written.get("Metadata", {}).get("sha256") != checksum:
            raise ObjectStoreError(f"upload of {key} did not verify: checksum mismatch")
        return self.uri(key)

    def upload_dir(self, folder: Path, prefix: str, workers: int = 8) -> list[str]:
        """Upload every file under `folder` (verified, like `upload_file`), several at a time:
        a checkpoint is a dozen small files whose round trips otherwise add up."""
        from concurrent.futures import ThreadPoolExecutor

        folder = Path(folder)
        files = [path for path in sorted(folder.rglob("*")) if path.is_file()]
        keys = [f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}" for path in files]
        _ = self.client  # create the (thread-safe) client once, before the threads share it
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self.upload_file, files, keys))

    def download_dir(self, prefix: str, folder: Path) -> list[Path]:
        """Every object under `prefix/` into `folder` (keys relative to the prefix).

        An empty prefix is refused: it would copy the whole bucket into one stage's folder.
        """
        prefix = prefix.strip("/")
        if not prefix:
            raise ObjectStoreError(
                f"refusing to download an empty S3 prefix into {folder}: that is every object in "
                f"bucket {self.bucket!r}. The stage result names no S3 copy; re-run that stage "
                "on this worker instead."
            )
        paths = []
        for key in self.list(prefix + "/"):
            paths.append(self.download_file(key, Path(folder) / key[len(prefix) + 1 :]))
        return paths

    def download_file(self, key: str, target: Path) -> Path:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        self._call(f"download of {key}", self.client.download_file,
                   Bucket=self.bucket, Key=key, Filename=str(target))
        return Path(target)

    def delete_folder(self, prefix: str) -> int:
        """Delete every object under `prefix/` (never an empty prefix); returns how many."""
        prefix = prefix.strip("/")
        if not prefix:
            raise ObjectStoreError("refusing to delete an empty S3 prefix (the whole bucket)")
        keys = self.list(prefix + "/")
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            self._call(f"deletion under {prefix}", self.client.delete_objects,
                       Bucket=self.bucket, Delete={"Objects": batch})
        return len(keys)

    def missing_or_different(
        self, folder: Path, prefix: str, known: Mapping[str, Mapping[str, Any]] | None = None
    ) -> list[str]:
        """Files of `folder` not in S3 under `prefix` with the same size and sha256 (names).

        `known` maps file names to their already verified {size, sha256} (a checkpoint's
        completion marker), which saves hashing gigabytes of weights a second time.
        """
        folder = Path(folder)
        wrong = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            name = path.relative_to(folder).as_posix()
            expected = (known or {}).get(name) or {"size": path.stat().st_size,
                                                   "sha256": sha256_file(path)}
            found = self._call("head_object", self.head, key=f"{prefix.rstrip('/')}/{name}")
            if (found is None or found["ContentLength"] != expected["size"]
                    or found.get("Metadata", {}).get("sha256") != expected["sha256"]):
                wrong.append(name)
        return wrong

    def list(self, prefix: str = "") -> list[str]:
        keys: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        pages = self._call("list_objects_v2", lambda: list(
            paginator.paginate(Bucket=self.bucket, Prefix=prefix)))
        for page in pages:
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(keys)

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"
