"""Which training process this is, how many there are, an all-gather between them, and leaving
their process group at the end.

The GRPO workers are started by `breadth.training.launch` through `torch.distributed.run` or
`accelerate launch`, which set WORLD_SIZE and RANK; a process started any other way is a run of
one. Everything here is a no-op for one process, so the single-process path stays unchanged.
"""

from __future__ import annotations

import os
from typing import Any


def launched_world_size() -> int:
    """The number of training processes the launcher started (1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def process_rank() -> int:
    """This process's rank among them (0 without a launcher)."""
    return int(os.environ.get("RANK", "0"))


def _group_started() -> bool:
    """Whether this process has a default process group (a launcher's rank does)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def wait_for_all_processes() -> None:
    """Return once every training process has called this (at once for one process)."""
    import torch.distributed as dist

    if _group_started() and dist.get_world_size() > 1:
        dist.barrier()


def gather_objects(obj: Any) -> list[Any]:
    """Every process's `obj` (picklable), in rank order; `[obj]` when only one process runs.

    A collective: every process must call it, the same number of times, in the same order.

    >>> gather_objects({"p": ["4"]})
    [{'p': ['4']}]
    """
    import torch.distributed as dist

    if not _group_started() or dist.get_world_size() == 1:
        return [obj]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


def leave_process_group() -> None:
    """Destroy this process's default process group, if one was started; call it once training
    is done, near the end of the process.

    PyTorch's shutdown rule (the `destroy_process_group` docs): a process that exits with its
    group alive leaves gloo's worker threads to the interpreter's teardown, which can abort it
    ("terminate called without an active exception", SIGABRT; pytorch/pytorch#190489). A rank
    that did that after a finished GRPO run failed the whole stage (seen once in
    tests/integration/test_grpo_multiprocess_on_cpu.py, the run's 4 steps done). Measured on a
    2-core machine, torchrun with two gloo ranks that all_reduce once and exit: 17 of 80 runs
    aborted without leaving the group, 0 of 80 after leaving it (Fisher p = 6e-6; the #48 note of
    2026-11-30 has the script). Not collective for gloo; a no-op without a group.
    """
    import torch.distributed as dist

    if _group_started():
        dist.destroy_process_group()
