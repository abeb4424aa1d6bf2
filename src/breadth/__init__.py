"""breadth: post-training research on diversity."""

import os

__version__ = "0.1.0"

# Torch's OpenMP threads spin while they wait for each other. When another process holds one
# of the 2 cores, a tiny model's hundreds of short parallel regions per step each wait for a
# descheduled thread: SFT ran 3-5x slower (benchmarks/bench_torch_threads.py). Passive waiting
# keeps most of the second thread's gain on an idle machine. Set before torch loads OpenMP; an
# explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
