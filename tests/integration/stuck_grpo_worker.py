"""A GRPO worker that fails or hangs, for the launcher's failure tests: rank 1 exits with
status 3 when STUCK_WORKER_MODE=fail (rank 0 waits to be stopped); every rank sleeps when
STUCK_WORKER_MODE=hang. Writes its pid to `<out>/pid.rank<R>` first, so the test can check
that no worker outlives the launcher. Rank 1 fails only once rank 0 has written its pid: on a
loaded machine rank 0 may start later, and the launcher would stop it before it existed (the
test would then have no running worker to check)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    rank = int(os.environ["RANK"])
    out_dir = Path(job["out_dir"])
    written = out_dir / f".pid.rank{rank}"
    written.write_text(str(os.getpid()))
    written.rename(out_dir / f"pid.rank{rank}")  # whole, or not there: the test reads it
    if os.environ.get("STUCK_WORKER_MODE") == "fail" and rank == 1:
        deadline = time.monotonic() + 120
        while not (out_dir / "pid.rank0").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        print("rank 1 gives up", flush=True)
        raise SystemExit(3)
    time.sleep(600)


if __name__ == "__main__":
    main()
