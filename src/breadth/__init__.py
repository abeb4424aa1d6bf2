"""breadth: post-training research on diversity."""

import os

__version__ = "0.1.0"

# Torch's OpenMP threads spin while they wait for each other. When another process holds one
# of the 2 cores, a tiny model's hundreds of short parallel regions per step each wait for a
# descheduled thread: SFT ran 2-5x slower (benchmarks/bench_torch_threads.py). Passive waiting
# is the robust choice on a shared machine, and not free on an idle one: there it measured
# 1.2-1.6x slower than spinning (2026-11-23; libgomp's bounded spin, GOMP_SPINCOUNT=300000,
# behaves like spinning both ways). A dedicated machine can export OMP_WAIT_POLICY=ACTIVE.
# Set before torch loads OpenMP; an explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
