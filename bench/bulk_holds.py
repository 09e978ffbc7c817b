"""How long the O(N) calls outside a snapshot hold their board: a batch
that rebuilds the index, a sliding window's refresh, a period's close.

Usage (from the repository root)::

    python bench/bulk_holds.py                      # N = 1,000,000, both backends
    python bench/bulk_holds.py -n 200000 --backend skiplist
    python bench/bulk_holds.py --code OLD_CHECKOUT  # the same, another commit's engine

Each case is one call that holds the board's lock (or the timed board's)
from start to end, so its duration *is* the hold: a write or read on
another thread waits that long.  Printed per case: wall-clock and CPU
time (the thread's; a shared machine's load lengthens the first far more
than the second), and the load average.  ``gc.freeze()`` follows every
load, as docs/performance.md advises.

* ``rebuild``: ``set_many`` of 0.4 N new scores for existing members on a
  board of N (past ``BULK_REBUILD_FRACTION``: the index is rebuilt).
* ``batch 1%``: ``set_many`` of 0.01 N (one insert each, no rebuild).
* ``window first refresh``: a 2-hour sliding window whose hour holds N
  members, refreshed for the first time (every member recomputed).
* ``window 1% refresh``: 0.01 N of them written again, refreshed.
* ``window slide-out``: two hours later, every member slides out.
* ``period close``: a daily board of N members; a day later, ``tick()``
  closes the period and drops it (``keep=0``), then the same with
  ``archive=`` (the period written to a file first).

No wall-clock figure here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

#: The clock of the timed boards starts here: 2026-11-30T00:00Z, a Monday.
START: float = 1_796_000_000.0 - 1_796_000_000.0 % 86_400


def timed(label: str, call: Callable[[], Any]) -> None:
    """Run ``call`` once; print its wall-clock and CPU time."""
    gc.freeze()
    wall, cpu = time.perf_counter(), time.thread_time()
    call()
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  {label:<24} wall {wall * 1e3:9.1f} ms   CPU {cpu * 1e3:9.1f} ms   load {load}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--backend", choices=("sortedlist", "skiplist"), action="append")
    p.add_argument("--code", help="import rankengine from this checkout instead")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    sys.path.insert(0, args.code or str(Path(__file__).resolve().parent.parent))

    names = [f"player:{i}" for i in range(args.n)]
    rng = random.Random(args.seed)
    for backend in args.backend or ["sortedlist", "skiplist"]:
        print(f"{backend} N={args.n:,}")
        one_backend(backend, names, rng)


def one_backend(backend: str, names: list[str], rng: random.Random) -> None:
    """Every case on one backend (the engine imported by ``main``)."""
    from rankengine import Leaderboard, PeriodicLeaderboard, SlidingWindowLeaderboard

    n = len(names)
    board: Any = Leaderboard(backend=backend)
    board.set_many((m, rng.randrange(1_000_000)) for m in names)
    batch = [(names[rng.randrange(n)], rng.randrange(1_000_000)) for _ in range(n * 2 // 5)]
    timed("rebuild (0.4 N)", partial(board.set_many, batch))
    small = [(names[rng.randrange(n)], rng.randrange(1_000_000)) for _ in range(n // 100)]
    timed("batch 1% (no rebuild)", partial(board.set_many, small))
    del board, batch
    gc.unfreeze()
    gc.collect()

    now = [START]
    window: Any = SlidingWindowLeaderboard("hourly", 2, clock=lambda: now[0], backend=backend)
    window.set_many((m, rng.randrange(1_000)) for m in names)
    timed("window first refresh", window.refresh)
    window.set_many((names[rng.randrange(n)], 1) for _ in range(n // 100))
    timed("window 1% refresh", window.refresh)
    now[0] += 3 * 3600
    timed("window slide-out", window.refresh)
    del window
    gc.unfreeze()
    gc.collect()

    for archive in (None, tempfile.mkdtemp(prefix="rankengine-bulk-")):
        now[0] = START
        daily: Any = PeriodicLeaderboard(
            "daily", keep=0, clock=lambda: now[0], archive=archive, backend=backend
        )
        daily.set_many((m, rng.randrange(1_000)) for m in names)
        now[0] += 86_400
        timed("period close" + (" + archive" if archive else ""), daily.tick)
        del daily
        if archive:
            shutil.rmtree(archive, ignore_errors=True)
        gc.unfreeze()
        gc.collect()


if __name__ == "__main__":
    main()
