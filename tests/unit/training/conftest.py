"""Fixtures shared by the training tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def group_of_one(tmp_path):
    """A real gloo process group of one process, as torch.distributed.run starts per rank."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    yield
    if dist.is_initialized():
        dist.destroy_process_group()
