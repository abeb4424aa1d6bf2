"""One progress display for every long stage: a tqdm bar with its ETA on the terminal, and a
log line at every tenth of the work, with the same ETA, for logs that are not terminals (a
Prefect flow run's log in the UI, a worker's log file).

The log lines go to the `breadth.display.progress` logger; what shows them (a terminal handler,
Prefect's run logger) is the application's choice, as for every `breadth.*` logger.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Self

from breadth.display.grid_progress import duration

log = logging.getLogger("breadth.display.progress")

LOG_EVERY = 0.1
"""A log line each time this share of the total is done (and one at the end)."""


class StageBar:
    """Progress of `total` units of one stage: `update(n)` as they are done, `close()` at
    the end (or use it as a context manager).

    `total` may be an upper bound (search stops a problem once it is solved): the bar then
    ends below it and the ETA is an upper bound too. `show=False`: no bar and no log lines
    (a script's inner loop).

    >>> with StageBar("search sft", total=100, unit="sample", show=False) as bar:
    ...     bar.update(40)
    ...     print(bar.line())  # doctest: +ELLIPSIS
    search sft: 40/100 samples (40%), ...
    """

    def __init__(self, stage: str, total: int, unit: str, *, initial: int = 0,
                 show: bool = True) -> None:
        from tqdm.auto import tqdm

        self.stage, self.total, self.unit, self.show = stage, max(int(total), 0), unit, show
        self.done = self.start_done = int(initial)
        self.started = time.monotonic()
        self.next_log = self._next_mark(self.done)
        # A worker's log is a file, not a terminal: a redraw every 10 s, not ten a second.
        interactive = sys.stderr.isatty()
        self.bar: Any = tqdm(total=self.total, initial=self.done, desc=stage, unit=unit,
                             dynamic_ncols=True, disable=not show,
                             mininterval=0.1 if interactive else 10.0)

    def update(self, n: int) -> None:
        if n <= 0:
            return
        self.done += n
        self.bar.update(n)
        if self.show and self.total and self.done >= self.next_log:
            log.info(self.line())
            self.next_log = self._next_mark(self.done)

    def set_postfix(self, figures: dict[str, str]) -> None:
        self.bar.set_postfix(figures, refresh=False)

    def eta_seconds(self) -> float | None:
        """Time left at the pace so far (None before any unit is done)."""
        done = self.done - self.start_done  # a resumed stage's earlier units took no time here
        if done <= 0:
            return None
        return max(self.total - self.done, 0) * (time.monotonic() - self.started) / done

    def line(self) -> str:
        """`<stage>: done/total units (share), elapsed, ETA` as the log shows it."""
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        eta = self.eta_seconds()
        left = "ETA unknown" if eta is None else f"ETA {duration(eta)}"
        return (f"{self.stage}: {self.done:,}/{self.total:,} {self.unit}s{share}, "
                f"{duration(time.monotonic() - self.started)} elapsed, {left}")

    def close(self) -> None:
        if self.bar is None:
            return
        self.bar.close()
        self.bar = None
        if self.show:
            log.info(f"{self.stage}: finished, {self.done:,} {self.unit}s in "
                     f"{duration(time.monotonic() - self.started)}")

    def _next_mark(self, done: int) -> int:
        step = max(1, int(self.total * LOG_EVERY))
        return (done // step + 1) * step

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
