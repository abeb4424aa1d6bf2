"""breadth.training.distributed: a run of one needs no process group; a process that had one
leaves it before it exits (PyTorch's shutdown rule, see `leave_process_group`)."""

from __future__ import annotations

import torch.distributed as dist

from breadth.training import distributed


def test_without_a_group_leaving_does_nothing():
    assert not dist.is_initialized()
    distributed.leave_process_group()
    assert not dist.is_initialized()


def test_a_process_leaves_its_group(group_of_one):
    assert dist.is_initialized()
    distributed.leave_process_group()
    assert not dist.is_initialized()
