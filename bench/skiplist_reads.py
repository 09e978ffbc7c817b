"""Where a skip-list read spends its time, beside the naive recipe.

Usage (from the repository root)::

    python bench/skiplist_reads.py               # N = 1,000,000
    python bench/skiplist_reads.py -n 100000 --calls 50000

One process, one board of N members (``player:i``, integer scores uniform
in [0, 10**6), as in ``bench/compare.py``), and ``--calls`` random calls per
figure; each figure is the best of ``--rounds`` rounds, in microseconds per
call.  It prints:

* ``rank`` and a page of 25 rows on the skip-list board, the sorted-list
  board and the naive ``sortedcontainers`` recipe;
* the parts of a skip-list read: the search (``SkipList.position_of``), the
  descent by spans to a page's first node, a bare level-0 walk of 25 nodes,
  and the same walk reading each node's score object;
* the same level-0 walk done by C (``itertools.accumulate`` with
  ``operator.getitem`` follows the links without running bytecode), over
  the whole list, beside the Python loop of ``SkipList.columns()``;
* a design not built: rank read from a member's node by climbing to the end
  of the list along each node's top link, which needs a member -> node map
  (see ``docs/performance.md``, "Where rankengine loses, and why").

The figures say what bounds the skip list at large N: reads of node and
score objects scattered in memory, not the interpreter.
"""

from __future__ import annotations

import argparse
import itertools
import operator
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sortedcontainers import SortedList

from rankengine import Leaderboard

#: Rows per page, as in ``bench/compare.py``.
PAGE = 25


def best_us(fn: Callable[[], object], calls: int, rounds: int) -> float:
    """Microseconds per call: the best of ``rounds`` timings of ``fn``."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def climb_to_end(x: Any) -> int:
    """Level-0 steps from node ``x`` to the end of the list.

    From each node take its highest link, summing spans: the links climb
    until the tallest node's top link ends the list.  Needs no key
    comparison, so no score object is read.
    """
    steps = 0
    while x is not None:
        f = len(x) - 2  # the top link's forward slot (its span is next)
        steps += x[f + 1]
        x = x[f]
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    parser.add_argument("--calls", type=int, default=100_000, help="calls per figure")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per figure (best kept)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n, calls, rounds = args.n, args.calls, args.rounds
    rng = random.Random(args.seed)
    pairs = [(f"player:{i}", rng.randrange(1_000_000)) for i in range(n)]
    skip = Leaderboard(backend="skiplist")
    skip.set_many(pairs)
    fast = Leaderboard(backend="sortedlist")
    fast.set_many(pairs)
    scores = dict(pairs)
    naive = SortedList((-s, m) for m, s in scores.items())
    index: Any = skip._index
    primary = skip._primary
    # fresh strings, as if from the network (equal to, not the same as, the board's)
    members = [f"player:{rng.randrange(n)}" for _ in range(calls)]
    pages = [rng.randrange(1, n // PAGE + 1) for _ in range(calls)]
    # a best-first board walks its ascending list backward from position n - lo
    firsts = [index._node_at(n - (p - 1) * PAGE) for p in pages]
    nodes = {x[2]: x for x in index._nodes()}

    def naive_rank() -> None:
        for m in members:
            naive.bisect_left((-scores[m], m))

    def naive_page() -> None:
        for p in pages:
            start = (p - 1) * PAGE
            [(m, -s) for s, m in naive.islice(start, start + PAGE)]

    def board_calls(method: Callable[..., object], *extra: object) -> Callable[[], None]:
        def run() -> None:
            for m in members:
                method(m, *extra)

        return run

    def board_pages(board: Leaderboard) -> Callable[[], None]:
        def run() -> None:
            page = board.page
            for p in pages:
                page(p, PAGE)

        return run

    def search() -> None:
        position_of = index.position_of
        for m in members:
            position_of(primary[m], m)

    def descent() -> None:
        node_at = index._node_at
        for p in pages:
            node_at(n - (p - 1) * PAGE)

    def walk() -> None:
        for first in firsts:
            x = first
            for _ in range(PAGE):
                x = x[3]

    def walk_reading_scores() -> None:
        for first in firsts:
            x = first
            for _ in range(PAGE):
                x[0]  # the read is the point: it touches the score object
                x = x[3]

    def climb() -> None:
        for m in members:
            climb_to_end(nodes[m])

    # the climb answers what the search answers
    for m in members[:1000]:
        x = nodes[m]
        assert n - 1 - climb_to_end(x) == index.position(x[0], x[1])

    print(f"N = {n:,}, {calls:,} calls per figure, best of {rounds}; us per call")
    rows = [
        ("rank, naive recipe", naive_rank),
        ("rank, sorted-list board", board_calls(fast.rank)),
        ("rank, skip-list board", board_calls(skip.rank)),
        ("  the search (SkipList.position_of)", search),
        ("  a climb from the node (not built)", climb),
        (f"page of {PAGE}, naive recipe", naive_page),
        (f"page of {PAGE}, sorted-list board", board_pages(fast)),
        (f"page of {PAGE}, skip-list board", board_pages(skip)),
        ("  descent by spans to its first node", descent),
        (f"  walk {PAGE} nodes, touching nothing else", walk),
        (f"  walk {PAGE} nodes, reading each score", walk_reading_scores),
    ]
    for label, fn in rows:
        print(f"{label:42s} {best_us(fn, calls, rounds):8.2f}")

    def c_walk() -> None:
        """columns(), with the walk that collects the nodes done by C."""
        walked = list(
            itertools.accumulate(
                itertools.repeat(4, n - 1), operator.getitem, initial=index.header[4]
            )
        )
        for slot in range(3):
            list(map(operator.itemgetter(slot), walked))

    print(f"\nthe whole level 0 (N = {n:,}), seconds")
    for label, whole in (
        ("SkipList.columns() (Python loop)", index.columns),
        ("the same, the walk done by C", c_walk),
    ):
        print(f"{label:42s} {best_us(whole, 1, rounds) / 1e6:8.3f}")


if __name__ == "__main__":
    main()
