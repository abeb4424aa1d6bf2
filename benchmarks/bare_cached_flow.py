"""The raw engine's cached re-run: a bare Prefect flow of N tasks, each served from Prefect's
cache, run the way `breadth run` runs its flow (in this process, `in_process_run` settings,
the same Prefect server and result storage). bench_cached_rerun.py times it beside breadth.

Run: python benchmarks/bare_cached_flow.py N
"""

from __future__ import annotations

import sys

from breadth_flows.in_process import in_process_run
from prefect import flow, task


@task(cache_key_fn=lambda _context, parameters: f"bench-bare-{parameters['index']}",
      persist_result=True)
def cached_stage(index: int) -> dict[str, str]:
    return {"stage": f"stage-{index}", "local_path": f"/tmp/stage-{index}"}


@flow(name="bench-bare-cached")
def bare_cached(tasks: int) -> list[dict[str, str]]:
    return [cached_stage(index) for index in range(tasks)]


if __name__ == "__main__":
    with in_process_run():
        bare_cached(int(sys.argv[1]))
