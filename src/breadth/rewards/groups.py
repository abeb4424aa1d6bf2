"""Split a reward batch into the groups of completions that share one prompt.

TRL repeats each prompt `num_generations` times in a row and computes advantages by position
(`rewards.view(-1, num_generations)`), so a group is a contiguous run of rows with one
`problem_id`. Each process scores only its own slice of the generation batch: when that slice
is not a multiple of `num_generations`, a group is cut in two and every group-level reward
(UCB, repetition, DARLING, pass@k, vector) would silently compute on half a group. This module
makes that case fail loudly instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

GROUP_FIX = (
    "Diversity rewards need whole groups: the generation batch per process must be a multiple "
    "of num_generations (per_device_train_batch_size * steps_per_generation, or the eval batch "
    "size, divisible by num_generations / num_generations_eval), and each group's rows must be "
    "contiguous, as TRL lays them out."
)


class IncompleteGroupError(ValueError):
    """A reward batch whose groups are cut or interleaved; the message names the problem_id."""


class RowGroup(NamedTuple):
    """One group: the rows `start:stop` of the batch, all for `problem_id`."""

    problem_id: Hashable
    start: int
    stop: int

    @property
    def rows(self) -> slice:
        return slice(self.start, self.stop)

    @property
    def size(self) -> int:
        return self.stop - self.start


def _runs(problem_ids: Sequence[Hashable]) -> list[RowGroup]:
    runs: list[RowGroup] = []
    start = 0
    for i in range(1, len(problem_ids) + 1):
        if i == len(problem_ids) or problem_ids[i] != problem_ids[start]:
            runs.append(RowGroup(problem_ids[start], start, i))
            start = i
    return runs


def group_rows(problem_ids: Sequence[Hashable], group_size: int | None = None) -> list[RowGroup]:
    """Group a batch by `problem_id` and check that every group is complete.

    With `group_size` (TRL's `num_generations`), every contiguous run of one problem_id must be
    a multiple of it; a run of two or more groups (the same problem sampled twice in a batch)
    is split into groups of `group_size`, as TRL's positional advantages do. Without it, each
    problem_id must form one contiguous run and all runs must have the same size.

    Raises IncompleteGroupError naming the problem_id, the sizes seen and the fix.

    >>> [(g.problem_id, g.start, g.stop) for g in group_rows(["a", "a", "b", "b"], 2)]
    [('a', 0, 2), ('b', 2, 4)]
    >>> [g.size for g in group_rows(["a", "a", "a", "a"], 2)]  # the same problem twice
    [2, 2]
    """
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be >= 1 (num_generations), got {group_size}")
    runs = _runs(problem_ids)
    sizes_seen = sorted({run.size for run in runs})
    if group_size is not None:
        groups: list[RowGroup] = []
        for run in runs:
            if run.size % group_size:
                raise IncompleteGroupError(
                    f"reward group for problem_id {run.problem_id!r} has {run.size} completion(s), "
                    f"expected a multiple of num_generations={group_size} (group sizes in this "
                    f"batch: {sizes_seen}). {GROUP_FIX}"
                )
            for start in range(run.start, run.stop, group_size):
                groups.append(RowGroup(run.problem_id, start, start + group_size))
        return groups
    first_run: dict[Hashable, RowGroup] = {}
    for run in runs:
        if run.problem_id in first_run:
            raise IncompleteGroupError(
                f"rows of problem_id {run.problem_id!r} are not contiguous (rows "
                f"{first_run[run.problem_id].start}.. and {run.start}..; group sizes in this "
                f"batch: {sizes_seen}). {GROUP_FIX} Pass num_generations to tell repeated "
                "problems apart from a broken layout."
            )
        first_run[run.problem_id] = run
    if len(sizes_seen) > 1:
        # Name the first group whose size differs from the most common one: that is the cut one.
        sizes = [run.size for run in runs]
        usual = max(sizes_seen, key=lambda size: (sizes.count(size), size))
        odd = next(run for run in runs if run.size != usual)
        raise IncompleteGroupError(
            f"reward group for problem_id {odd.problem_id!r} has {odd.size} completion(s), but "
            f"most groups in this batch have {usual} (sizes seen: {sizes_seen}). {GROUP_FIX}"
        )
    return runs
