"""What opening and closing a durable board costs (the seal is one manifest write).

Usage (from the repository root)::

    python bench/open_close.py                 # N = 100,000, 3 rounds
    python bench/open_close.py -n 1000000 --rounds 5

Puts a board of N members in place (a bulk load, a snapshot, then 2,000
logged increments after it: setup, not timed), then for each round times
``Leaderboard.open`` with ``fsync="everysec"``, a ``close()`` after one
write (the seal: one manifest write, two fsyncs) and a ``close()`` of a
board opened and closed without a write (nothing to seal).  Prints min and
median milliseconds of each, and which rankengine it imported, so that two
checkouts can be run in turn (interleaved, as A/B runs on a shared machine
should be) and compared line by line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import rankengine
from rankengine import Leaderboard

#: Logged increments after the snapshot: an open replays them.
TAIL_RECORDS = 2_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="members (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default %(default)s)")
    args = parser.parse_args()
    directory = tempfile.mkdtemp()
    try:
        with Leaderboard.open(directory, fsync="never", compact_min_bytes=None) as board:
            board.set_many({f"p{i}": i for i in range(args.n)})
            board.compact()  # type: ignore[attr-defined]
            for i in range(TAIL_RECORDS):
                board.incr(f"p{i}", 1)
        opens, closes, idle = [], [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            board = Leaderboard.open(directory, fsync="everysec")
            t1 = time.perf_counter()
            board.incr("p1", 1)
            t2 = time.perf_counter()
            board.close()  # type: ignore[attr-defined]
            t3 = time.perf_counter()
            board = Leaderboard.open(directory, fsync="everysec")
            t4 = time.perf_counter()
            board.close()  # type: ignore[attr-defined]
            t5 = time.perf_counter()
            opens.append(t1 - t0)
            closes.append(t3 - t2)
            idle.append(t5 - t4)
    finally:
        shutil.rmtree(directory)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} ms (min {min(values) * 1000:.1f})"

    print(
        f"{os.path.dirname(rankengine.__file__)}  N={args.n}  open {ms(opens)}  "
        f"close after a write {ms(closes)}  close without writes {ms(idle)}"
    )


if __name__ == "__main__":
    main()
