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

* ``0.4 N picks``: ``set_many`` of 0.4 N new scores for members picked
  at random on a board of N: ~0.33 N distinct members, just under
  ``BULK_REBUILD_FRACTION`` (k >= 0.25 (N + k)), so applied write by write.
* ``rebuild``: ``set_many`` of 0.4 N new scores for 0.4 N distinct
  members (past ``BULK_REBUILD_FRACTION``: the index is rebuilt).
* ``incr_many 0.1 N``: ``incr_many`` of 0.1 N distinct members.
* ``batch 1%``: ``set_many`` of 0.01 N (one insert each, no rebuild).
  During each batch another thread increments one member and reads its
  rank every millisecond; ``hold`` and ``waited`` are printed as for the
  window below (a batch staged beside the board, ``board/staged.py``,
  holds the lock in short pieces; before, a batch held it throughout).
* ``window first refresh``: a 2-hour sliding window whose hour holds N
  members, refreshed for the first time (every member recomputed).
* ``window 1% refresh``: 0.01 N of them written again, refreshed.
* ``window slide-out``: two hours later, every member slides out.
  During each window call another thread writes one member and reads it
  back every millisecond; ``hold`` and ``waited`` are printed as for the
  period close below (the window's lock; an engine from before the
  refresh in slices holds it for the whole call).
* ``period close``: a daily board of N members; a day later, ``tick()``
  closes the period and drops it (``keep=0``), then the same with
  ``archive=`` (the period written to a file first).  Here the call is
  not the hold (the archive is written after the lock is released), so
  two more figures are printed: ``hold``, the longest the periodic
  board's lock was held, and ``waited``, the longest gap between two
  takes of that lock by another thread that takes it every millisecond
  (so ~1 ms at best): the lock's hold and the interpreter's global lock
  (a long C call, such as freeing a board, stops other threads too).

``--only period`` (or ``bulk``, ``window``; repeatable) runs only those cases.

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
import threading
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


class HoldTimer:
    """Wraps a re-entrant lock and records its longest outermost hold."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.depth = 0  # changed by the owner only
        self.since = 0.0
        self.longest = 0.0

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        got: bool = self.lock.acquire(*args, **kwargs)
        if got:
            self.depth += 1
            if self.depth == 1:
                self.since = time.perf_counter()
        return got

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.longest = max(self.longest, time.perf_counter() - self.since)
        self.lock.release()

    def __enter__(self) -> HoldTimer:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold_timer(owner: Any) -> HoldTimer:
    """Wrap ``owner._lock`` (or, when that is the lock that runs work after
    its release, the re-entrant lock inside it) in a :class:`HoldTimer`."""
    outer = owner._lock
    if hasattr(outer, "_after"):  # the lock that writes archives after its release
        timer = outer._lock = HoldTimer(outer._lock)
    else:  # a plain RLock (an engine from before that)
        timer = owner._lock = HoldTimer(outer)
    return timer


def timed_probed(
    label: str, call: Callable[[], Any], timer: HoldTimer, op: Callable[[], Any]
) -> None:
    """``timed(label, call)`` while another thread runs ``op`` every
    millisecond; then print the longest hold ``timer`` saw and the longest
    gap between two ends of ``op`` (the probe's wait: the lock's hold and
    any stall of the interpreter, a long C call, alike)."""
    stop = threading.Event()
    waited = [0.0]

    def probe() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            op()
            # from the end of the last call to the end of this one: a stall
            # of the interpreter (a long C call) counts as well as the lock
            done = time.perf_counter()
            waited[0] = max(waited[0], done - last)
            last = done
            time.sleep(0.001)

    reader = threading.Thread(target=probe, daemon=True)
    reader.start()
    time.sleep(0.05)
    timer.longest = waited[0] = 0.0
    timed(label, call)
    stop.set()
    reader.join()
    print(f"  {'':<24} hold {timer.longest * 1e3:9.1f} ms   waited {waited[0] * 1e3:7.1f} ms")


def timed_close(label: str, daily: Any, now: list[float]) -> None:
    """Move ``now`` a day on and ``timed(label, daily.tick)``, plus the longest hold of the periodic
    board's lock and the longest wait of a read on another thread."""
    timer = hold_timer(daily)

    def take() -> None:
        with daily._lock:  # a read's wait, without advancing (tick closes)
            pass

    now[0] += 86_400
    timed_probed(label, daily.tick, timer, take)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--backend", choices=("sortedlist", "skiplist"), action="append")
    p.add_argument("--code", help="import rankengine from this checkout instead")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", choices=("bulk", "window", "period"), action="append")
    args = p.parse_args()
    sys.path.insert(0, args.code or str(Path(__file__).resolve().parent.parent))

    names = [f"player:{i}" for i in range(args.n)]
    rng = random.Random(args.seed)
    for backend in args.backend or ["sortedlist", "skiplist"]:
        print(f"{backend} N={args.n:,}")
        one_backend(backend, names, rng, set(args.only or ("bulk", "window", "period")))


def one_backend(backend: str, names: list[str], rng: random.Random, cases: set[str]) -> None:
    """Every case on one backend (the engine imported by ``main``)."""
    from rankengine import Leaderboard, PeriodicLeaderboard, SlidingWindowLeaderboard

    if "bulk" in cases:
        bulk_cases(Leaderboard, backend, names, rng)
    if "window" in cases:
        window_cases(SlidingWindowLeaderboard, backend, names, rng)
    if "period" in cases:
        period_cases(PeriodicLeaderboard, backend, names, rng)


def bulk_cases(Leaderboard: Any, backend: str, names: list[str], rng: random.Random) -> None:
    n = len(names)
    board: Any = Leaderboard(backend=backend)
    board.set_many((m, rng.randrange(1_000_000)) for m in names)
    batch = [(names[rng.randrange(n)], rng.randrange(1_000_000)) for _ in range(n * 2 // 5)]
    timer = hold_timer(board)
    probed = names[0]

    def serve(b: Any = board) -> None:  # another player's write, and a read of the board
        b.incr(probed, 1)
        b.rank(probed)

    timed_probed("0.4 N picks (0.33 N distinct)", partial(board.set_many, batch), timer, serve)
    distinct = [(m, rng.randrange(1_000_000)) for m in rng.sample(names, n * 2 // 5)]
    timed_probed("rebuild (0.4 N distinct)", partial(board.set_many, distinct), timer, serve)
    steps = [(m, rng.randrange(1, 100)) for m in rng.sample(names, n // 10)]
    timed_probed("incr_many 0.1 N", partial(board.incr_many, steps), timer, serve)
    small = [(names[rng.randrange(n)], rng.randrange(1_000_000)) for _ in range(n // 100)]
    timed_probed("batch 1% (no rebuild)", partial(board.set_many, small), timer, serve)
    board._check()
    del board, batch, distinct, steps, serve, timer
    gc.unfreeze()
    gc.collect()


def window_cases(Window: Any, backend: str, names: list[str], rng: random.Random) -> None:
    n = len(names)
    now = [START]
    window: Any = Window("hourly", 2, clock=lambda: now[0], backend=backend)
    window.set_many((m, rng.randrange(1_000)) for m in names)
    timer = hold_timer(window)
    probed = names[0]

    def serve(w: Any = window) -> None:  # another player's write, and a read of the window
        w.incr(probed, 1)
        w.score(probed)

    timed_probed("window first refresh", window.refresh, timer, serve)
    window.set_many((names[rng.randrange(n)], 1) for _ in range(n // 100))
    timed_probed("window 1% refresh", window.refresh, timer, serve)
    now[0] += 3 * 3600
    timed_probed("window slide-out", window.refresh, timer, serve)
    del window, serve, timer
    gc.unfreeze()
    gc.collect()


def period_cases(Periodic: Any, backend: str, names: list[str], rng: random.Random) -> None:
    now = [START]
    for archive in (None, tempfile.mkdtemp(prefix="rankengine-bulk-")):
        now[0] = START
        daily: Any = Periodic(
            "daily", keep=0, clock=lambda: now[0], archive=archive, backend=backend
        )
        daily.set_many((m, rng.randrange(1_000)) for m in names)
        timed_close("period close" + (" + archive" if archive else ""), daily, now)
        del daily
        if archive:
            shutil.rmtree(archive, ignore_errors=True)
        gc.unfreeze()
        gc.collect()


if __name__ == "__main__":
    main()
