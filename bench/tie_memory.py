"""Bytes per entry of a board, after a bulk load and after writes, by tracemalloc.

Usage (from the repository root)::

    python bench/tie_memory.py                        # sortedlist, N = 1,000,000
    python bench/tie_memory.py --backend skiplist --order asc -n 100000

For one seeded board of N members (``player:i``, integer scores uniform in
``[0, --span)``): the memory still allocated after ``set_many`` (the bulk
load), then after one ``incr`` of every member (in a shuffled order, by
1..100), divided by N, with the size of the board's tie map
(``member -> tie clock``) at each point.  Everything is traced, member
strings and scores included, as the ``memory`` workload of
``bench/compare.py`` does; the increments run under tracemalloc too, so
expect a few minutes at N = 10**6.

The tie map holds only members deep in a run of equal scores (see
``rankengine.index.protocol``); with scores this spread out it stays nearly empty
through the writes, where a board that kept every written member's clock
grew by 90-120 bytes per entry at N = 10**6 (``docs/performance-history.md``,
"a tie map only for members deep in a run").
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard

#: Integer scores in [0, SCORE_RANGE): mostly distinct at N = 10**6 (as in
#: bench/recovery.py and Redis's own benchmarks).
SCORE_RANGE = 10_000_000
#: Largest increment: small steps, as a game server makes.
MAX_STEP = 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    parser.add_argument("--backend", choices=["sortedlist", "skiplist"], default="sortedlist")
    parser.add_argument("--order", choices=["desc", "asc"], default="desc")
    parser.add_argument("--span", type=int, default=SCORE_RANGE, help="scores in [0, span)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n = args.n
    rng = random.Random(args.seed)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    pairs = [(f"player:{i}", rng.randrange(args.span)) for i in range(n)]
    board = Leaderboard(backend=args.backend, order=args.order)
    board.set_many(pairs)
    del pairs
    gc.collect()
    loaded = tracemalloc.get_traced_memory()[0] - base
    kept_after_load = len(board._tie)
    names = [f"player:{i}" for i in range(n)]
    rng.shuffle(names)
    started = time.perf_counter()
    for member in names:
        board.incr(member, rng.randint(1, MAX_STEP))
    seconds = time.perf_counter() - started
    del names
    gc.collect()
    written = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    print(
        f"{args.backend} {args.order} N={n} scores<{args.span}: "
        f"after the bulk load {loaded / n:.1f} B/entry (tie map {kept_after_load}), "
        f"after one incr of every member {written / n:.1f} B/entry "
        f"(tie map {len(board._tie)}; increments {seconds:.0f} s under tracemalloc)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
