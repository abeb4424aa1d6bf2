"""Which training process this is, how many there are, and an all-gather between them.

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


def wait_for_all_processes() -> None:
    """Return once every training process has called this (at once for one process)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def gather_objects(obj: Any) -> list[Any]:
    """Every process's `obj` (picklable), in rank order; `[obj]` when only one process runs.

    A collective: every process must call it, the same number of times, in the same order.

    >>> gather_objects({"p": ["4"]})
    [{'p': ['4']}]
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [obj]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj)
    return gathered
