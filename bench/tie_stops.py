"""The tie map's doublings: the CPU of the one insert that resizes it.

Usage (from the repository root)::

    python bench/tie_stops.py maps                     # dict against TieMap, 10^6 inserts
    python bench/tie_stops.py board                    # the latency mix, N = 10^6
    python bench/tie_stops.py board --code OTHER_CHECKOUT   # another commit's engine

``maps``: ``player:N`` strings inserted one at a time into a bare ``dict``
and into a :class:`~rankengine.board.tiemap.TieMap`, alternately round by
round in one process, each insert timed by the thread's CPU clock
(``time.thread_time_ns``, which the machine's load disturbs far less than
wall time).  An insert *resized* its map when ``sys.getsizeof`` of the
dict (or of the member's shard) changed; listed: the dict's doublings by
entries and CPU, the shards' longest, and every map's inserts over 100 us.

``board``: ``bench/latency.py``'s board (N members, seeded scores) and op
list (increments, 20% of them new players, rank, top 10, around-me), run
back to back in one process (no schedule: the calls' own CPU is what is
measured), each call's thread CPU time recorded, and the calls during
which the tie map (or one of its shards) resized.  Printed: calls over
100 us, 300 us and 1 ms, the maximum, and each resize of the tie map with
its size and the CPU of its call.  A board whose tie map is a plain dict
(a checkout from before the shards, ``--code``) is measured the same way.

No figure here is a pass/fail test; see ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Calls at least this long (thread CPU, ns) are counted apart.
THRESHOLDS_NS = (100_000, 300_000, 1_000_000)


def maps(args: argparse.Namespace) -> None:
    """Bare inserts into a dict and into a TieMap, rounds alternated."""
    sys.path.insert(0, str(ROOT))
    from rankengine.board.tiemap import TIE_SHARD_MASK, VACANT_SHARD, TieMap

    cpu = time.thread_time_ns
    sizeof = sys.getsizeof
    names = [f"player:{i}" for i in range(args.entries)]
    dict_stops: dict[int, list[float]] = {}
    shard_max: list[float] = []
    shard_stops: list[float] = []
    over: dict[str, list[int]] = {"dict": [], "TieMap": []}
    totals: dict[str, list[float]] = {"dict": [], "TieMap": []}
    for round_ in range(args.rounds):
        order = ("dict", "TieMap") if round_ % 2 == 0 else ("TieMap", "dict")
        for which in order:
            gc.collect()
            count = 0
            spent = 0
            if which == "dict":
                plain: dict[str, int] = {}
                size = sizeof(plain)
                for i, name in enumerate(names):
                    c0 = cpu()
                    plain[name] = -i
                    took = cpu() - c0
                    spent += took
                    if took >= THRESHOLDS_NS[0]:
                        count += 1
                    now = sizeof(plain)
                    if now != size:
                        size = now
                        if len(plain) > 10_000:
                            dict_stops.setdefault(len(plain), []).append(took / 1000)
                del plain
            else:
                ties = TieMap()
                shards = ties.shards
                sizes = [sizeof(s) for s in shards]
                longest = 0
                for i, name in enumerate(names):
                    number = hash(name) & TIE_SHARD_MASK
                    shard = shards[number]
                    c0 = cpu()
                    if shard is VACANT_SHARD:  # what the board's hot path does
                        ties[name] = -i
                    else:
                        shard[name] = -i
                    took = cpu() - c0
                    shard = shards[number]
                    spent += took
                    if took >= THRESHOLDS_NS[0]:
                        count += 1
                    now = sizeof(shard)
                    if now != sizes[number]:
                        sizes[number] = now
                        longest = max(longest, took)
                        if len(shard) > 2000:
                            shard_stops.append(took / 1000)
                shard_max.append(longest / 1000)
                del ties, shards
            over[which].append(count)
            totals[which].append(spent / len(names))
    print(f"{args.entries:,} inserts, {args.rounds} rounds alternated, load {_load()}")
    print("dict doublings (entries: CPU us of the insert, per round):")
    for entries, took in sorted(dict_stops.items()):
        print(f"  {entries:>9,}: " + ", ".join(f"{t:,.0f}" for t in took))
    if shard_stops:
        print(
            f"TieMap shard doublings past 2,000 entries: {len(shard_stops)}, "
            f"median {statistics.median(shard_stops):.1f} us, max {max(shard_stops):.1f} us"
        )
    print("TieMap longest doubling per round (us): " + ", ".join(f"{t:.1f}" for t in shard_max))
    for which in ("dict", "TieMap"):
        print(
            f"{which}: inserts >= 100 us per round {over[which]}; "
            f"mean CPU per insert {statistics.median(totals[which]):.0f} ns (median of rounds)"
        )


def board(args: argparse.Namespace) -> None:
    """The latency mix back to back; each call's CPU, the tie map's resizes."""
    sys.path.insert(0, str(HERE))
    import latency  # (puts this checkout on the path; --code goes before it)

    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    from rankengine import Leaderboard

    rng = random.Random(args.seed)
    built = Leaderboard(backend="sortedlist")
    built.set_many([(f"player:{i}", rng.randrange(latency.SCORE_RANGE)) for i in range(args.n)])
    ops = latency.make_ops(args.n, args.seed)
    incr, rank, top, around = built.incr, built.rank, built.top, built.around
    ties = built._tie  # bench-only reach: the tie map's sizes
    shards = getattr(ties, "shards", None)
    mask = len(shards) - 1 if shards is not None else 0
    sizeof = sys.getsizeof
    sizes = [sizeof(s) for s in shards] if shards is not None else [sizeof(ties)]
    for kind, a, b in ops[:5000]:  # warm-up, as bench/latency.py
        if kind <= latency.NEW:
            incr(a, b)
    gc.collect()
    cpu = time.thread_time_ns
    count = args.calls
    spent = [0] * count
    resizes: list[tuple[int, int, int]] = []  # (call, tie map entries, ns)
    cycle = len(ops) - 1
    new = 0
    for i in range(count):
        kind, a, b = ops[i & cycle]
        if kind == latency.NEW:
            new += 1
            a = f"tail:{new}"
        c0 = cpu()
        if kind <= latency.NEW:
            incr(a, b)
        elif kind == latency.RANK:
            rank(a)
        elif kind == latency.TOP:
            top(a)
        else:
            around(a, b, b)
        took = cpu() - c0
        spent[i] = took
        if kind <= latency.NEW:
            number = hash(a) & mask if shards is not None else 0
            held = shards[number] if shards is not None else ties
            now = sizeof(held)
            if now != sizes[number]:
                sizes[number] = now
                resizes.append((i, len(held), took))
    kept = len(built._tie)
    code = args.code or "this tree"
    kind_of_map = f"{len(shards)} shards" if shards is not None else "one dict"
    print(
        f"{code}: N={args.n:,}, {count:,} calls back to back, tie map ({kind_of_map}) "
        f"{kept:,} entries at the end, load {_load()}"
    )
    counts = ", ".join(
        f"> {t // 1000} us {sum(1 for s in spent if s > t):,}" for t in THRESHOLDS_NS
    )
    print(f"calls: {counts}; max {max(spent) / 1000:,.0f} us")
    big = [(i, n, t) for i, n, t in resizes if t >= args.show_ns]
    longest = max((t for *_, t in resizes), default=0) / 1000
    print(
        f"tie map resizes: {len(resizes):,}; longest {longest:,.1f} us;"
        f" {len(big)} of >= {args.show_ns / 1000:.0f} us:"
    )
    for i, entries, took in big:
        print(f"  call {i:>9,}: resized to {entries:>7,} entries, {took / 1000:,.1f} us CPU")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("maps", help="dict against TieMap, bare inserts")
    m.add_argument("--entries", type=int, default=1_000_000)
    m.add_argument("--rounds", type=int, default=4)
    b = sub.add_parser("board", help="the latency mix back to back")
    b.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    b.add_argument("--calls", type=int, default=1_680_000, help="calls (20 s at 84,000/s)")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--code", help="a checkout whose rankengine/ to measure instead")
    b.add_argument("--show-ns", type=int, default=100_000, help="list resizes this long or more")
    args = parser.parse_args(argv)
    maps(args) if args.what == "maps" else board(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
