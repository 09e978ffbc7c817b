"""Pauses of a large in-memory board: what Python's garbage collector adds.

Usage (from the repository root)::

    python bench/pauses.py                    # N = 1,000,000, both backends
    python bench/pauses.py -n 100000 --writes 200000

CPython's cyclic garbage collector now and then makes a *full* collection,
which visits every container object the process holds.  A skip-list board
is a million containers (one list per node); a sorted-list board is a few
thousand block lists that hold a million references.  This measures, for
each backend, in a fresh process per line (the collector's state is
per process):

* ``full gc``: the time of one ``gc.collect()`` with the board loaded
  (median of three);
* a stream of ``--writes`` writes timed one by one, as a growing game sees
  them: 80% increments of a random player, 20% new players (new players
  make new containers, which is what drives the collector to a full
  collection); the median, the 99.9th percentile and the slowest write,
  and how many full collections the collector ran during the stream and
  the longest of them (timed by a ``gc.callbacks`` hook);

each with the collector as it is, and after ``gc.freeze()`` right after the
load (the board's objects then sit in a generation no collection visits;
objects made later are collected as usual).

No wall-clock figure here is a pass/fail test; see ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard

#: Share of the writes that add a new player (the rest increment one).
NEW_SHARE = 0.2


def measure(backend: str, n: int, writes: int, freeze: bool, seed: int) -> dict[str, Any]:
    """One line of the table, in this process."""
    rng = random.Random(seed)
    board = Leaderboard(backend=backend)  # type: ignore[arg-type]
    board.set_many((f"player:{i}", rng.randrange(1_000_000)) for i in range(n))
    gc.collect()
    if freeze:
        gc.freeze()
    full = []
    for _ in range(3):
        start = time.perf_counter()
        gc.collect()
        full.append(time.perf_counter() - start)
    ops = [
        (f"new:{i}", rng.randrange(1_000_000))
        if rng.random() < NEW_SHARE
        else (f"player:{rng.randrange(n)}", rng.randrange(1, 101))
        for i in range(writes)
    ]
    incr, put = board.incr, board.set
    full_pauses: list[int] = []
    started = [0]

    def on_collection(phase: str, info: dict[str, int]) -> None:
        """Times the collector's own full collections (gc.callbacks)."""
        if info["generation"] != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter_ns()
        else:
            full_pauses.append(time.perf_counter_ns() - started[0])

    gc.callbacks.append(on_collection)
    clock = time.perf_counter_ns
    times = []
    append = times.append
    for member, value in ops:
        start = clock()
        if member[0] == "n":
            put(member, value)
        else:
            incr(member, value)
        append(clock() - start)
    gc.callbacks.remove(on_collection)
    times.sort()
    return {
        "backend": backend,
        "freeze": freeze,
        "full_gc_ms": statistics.median(full) * 1e3,
        "median_us": times[len(times) // 2] / 1e3,
        "p999_us": times[int(len(times) * 0.999)] / 1e3,
        "max_ms": times[-1] / 1e6,
        "full_collections": len(full_pauses),
        "longest_full_ms": max(full_pauses, default=0) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    parser.add_argument(
        "--writes",
        type=int,
        default=1_500_000,
        help="writes timed one by one, per backend and gc.freeze() setting (default 1,500,000)",
    )
    parser.add_argument(
        "--backends",
        default="sortedlist,skiplist",
        help="comma-separated subset of sortedlist,skiplist (default both)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--one", nargs=2, metavar=("BACKEND", "FREEZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend not in ("sortedlist", "skiplist"):
            parser.error(
                f"--backends: unknown backend {backend!r} (choose from sortedlist,skiplist)"
            )
    if args.one:  # a child: one line, as JSON on stdout
        backend, freeze = args.one
        print(json.dumps(measure(backend, args.n, args.writes, freeze == "1", args.seed)))
        return
    print(f"N = {args.n:,}; {args.writes:,} writes, {NEW_SHARE:.0%} of them new players")
    print(
        f"{'backend':<11} {'gc.freeze()':<12} {'full gc':>9} {'median':>9} "
        f"{'99.9th':>9} {'slowest':>9} {'full collections, longest':>26}"
    )
    for backend in args.backends.split(","):
        for freeze in ("0", "1"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "-n",
                    str(args.n),
                    "--writes",
                    str(args.writes),
                    "--seed",
                    str(args.seed),
                    "--one",
                    backend,
                    freeze,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            r = json.loads(out)
            print(
                f"{backend:<11} {'after load' if r['freeze'] else 'no':<12} "
                f"{r['full_gc_ms']:>6.1f} ms {r['median_us']:>6.1f} us {r['p999_us']:>6.1f} us "
                f"{r['max_ms']:>6.1f} ms {r['full_collections']:>13}, "
                f"{r['longest_full_ms']:>6.1f} ms"
            )


if __name__ == "__main__":
    main()
