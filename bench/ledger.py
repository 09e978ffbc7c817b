"""One event into four views: the ledger against the same views fed directly.

Usage (from the repository root)::

    python bench/ledger.py                       # 30,000 events, N = 200,000 for the open
    python bench/ledger.py -e 100000 -n 1000000 --repeats 5

Write throughput, one seeded stream of increments (``--events`` of them,
``--players`` members, times one minute apart so the daily board rolls over
every 1,440 events), into four views: all-time (``Leaderboard``), weekly and
daily (``PeriodicLeaderboard``) and trending (``TopK``, k = 10):

* ``ledger``: ``Ledger.open(dir, fsync="everysec")`` with the four views,
  ``record(member, delta, t_ms=t, ranks=False)``: one check per view, one
  record, one append, four writes;
* ``ledger+ranks``: the same with ``ranks=True`` (the default: each exact
  view reads the rank before and after);
* ``memory``: the same four boards in memory, fed directly (four writes,
  nothing durable), the target being >= 0.7x of this;
* ``separate``: today's way, a durable board per view written one after
  another (``Leaderboard.open``, two ``PeriodicLeaderboard.open``, all
  ``fsync="everysec"``; ``TopK`` has no durable form, so it stays in
  memory here), the target being <= 1/2 of the ledger's time.

Open time: a ledger whose four views hold ``-n`` members each (one
snapshot per view, written by ``compact()``) against one durable board of
``-n`` members (``Leaderboard.open``), the target being <= 2x.

Each figure: one warm-up, then ``--repeats`` rounds of every contestant in
turn (interleaved, so load on a shared machine hits each alike); min /
median / max seconds, ratios of medians.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rankengine import Leaderboard, Ledger, PeriodicLeaderboard, TopK

T0_MS = 1_799_020_800_000  # 2027-01-04T00:00Z, a Monday
STEP_MS = 60_000


def stream(events: int, players: int, seed: int) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    return [
        (f"player:{rng.randrange(players)}", rng.randrange(1, 11), T0_MS + i * STEP_MS)
        for i in range(events)
    ]


def add_four(ledger: Ledger) -> None:
    ledger.add_view("alltime")
    ledger.add_view("weekly", "periodic", calendar="weekly")
    ledger.add_view("daily", "periodic", calendar="daily")
    ledger.add_view("trending", "topk", k=10)


def run_ledger(data: list[tuple[str, int, int]], ranks: bool) -> float:
    directory = tempfile.mkdtemp(prefix="bench-ledger-")
    try:
        ledger = Ledger.open(directory, fsync="everysec", compact_min_bytes=None)
        add_four(ledger)
        record = ledger.record
        gc.collect()
        start = time.perf_counter()
        for member, delta, t_ms in data:
            record(member, delta, t_ms=t_ms, ranks=ranks)
        elapsed = time.perf_counter() - start
        ledger.close()
        return elapsed
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run_memory(data: list[tuple[str, int, int]]) -> float:
    now = [T0_MS / 1000]
    clock = lambda: now[0]  # noqa: E731 -- the boards' clock: the event time
    alltime = Leaderboard()
    weekly = PeriodicLeaderboard("weekly", clock=clock)
    daily = PeriodicLeaderboard("daily", clock=clock)
    trending = TopK(k=10)
    gc.collect()
    start = time.perf_counter()
    for member, delta, t_ms in data:
        t = t_ms / 1000
        now[0] = t
        alltime.incr(member, delta)
        weekly.incr(member, delta, t=t)
        daily.incr(member, delta, t=t)
        trending.add(member, 1)
    return time.perf_counter() - start


def run_separate(data: list[tuple[str, int, int]]) -> float:
    directory = Path(tempfile.mkdtemp(prefix="bench-separate-"))
    now = [T0_MS / 1000]
    clock = lambda: now[0]  # noqa: E731 -- the boards' clock: the event time
    try:
        alltime = Leaderboard.open(directory / "alltime", fsync="everysec")
        weekly = PeriodicLeaderboard.open(directory / "weekly", "weekly", clock=clock)
        daily = PeriodicLeaderboard.open(directory / "daily", "daily", clock=clock)
        trending = TopK(k=10)
        gc.collect()
        start = time.perf_counter()
        for member, delta, t_ms in data:
            t = t_ms / 1000
            now[0] = t
            alltime.incr(member, delta)
            weekly.incr(member, delta, t=t)
            daily.incr(member, delta, t=t)
            trending.add(member, 1)
        elapsed = time.perf_counter() - start
        for board in (alltime, weekly, daily):
            board.close()
        return elapsed
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def build_open_fixtures(n: int, root: Path) -> tuple[Path, Path]:
    """A ledger with four views of ``n`` members each, and a board of ``n``."""
    rng = random.Random(3)
    scores = [rng.randrange(10**7) for _ in range(n)]
    ledger_dir, board_dir = root / "ledger", root / "board"
    with Ledger.open(ledger_dir, compact_min_bytes=None) as ledger:
        add_four(ledger)
        batch = 20_000
        for lo in range(0, n, batch):
            ledger.record_many(
                [
                    {"member": f"player:{i}", "value": scores[i], "t_ms": T0_MS + i}
                    for i in range(lo, min(n, lo + batch))
                ]
            )
        ledger.compact()
    with Leaderboard.open(board_dir, compact_min_bytes=None) as board:
        board.set_many({f"player:{i}": scores[i] for i in range(n)})
        board.compact()  # type: ignore[attr-defined]
    return ledger_dir, board_dir


def open_ledger(path: Path) -> float:
    gc.collect()
    start = time.perf_counter()
    ledger = Ledger.open(path, compact_min_bytes=None)
    elapsed = time.perf_counter() - start
    ledger.close()
    return elapsed


def open_board(path: Path) -> float:
    gc.collect()
    start = time.perf_counter()
    board = Leaderboard.open(path, compact_min_bytes=None)
    elapsed = time.perf_counter() - start
    board.close()  # type: ignore[attr-defined]
    return elapsed


def interleaved(
    steps: list[tuple[str, Callable[[], float]]], repeats: int
) -> dict[str, list[float]]:
    for _, step in steps:  # warm-up
        step()
    out: dict[str, list[float]] = {label: [] for label, _ in steps}
    for _ in range(repeats):
        for label, step in steps:
            out[label].append(step())
    return out


def show(times: dict[str, list[float]], per: int, unit: str) -> dict[str, float]:
    medians = {}
    for label, values in times.items():
        med = statistics.median(values)
        medians[label] = med
        rate = f"{per / med:>10,.0f} {unit}/s" if per else ""
        print(
            f"  {label:<14} min {min(values):8.3f}  median {med:8.3f}  max {max(values):8.3f} s"
            f"  {rate}"
        )
    return medians


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-e", "--events", type=int, default=30_000)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("-n", type=int, default=200_000, help="members for the open")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus (shared machine)")
    data = stream(args.events, args.players, args.seed)
    print(f"one event into four views: {args.events:,} increments over {args.players:,} players")
    writes = interleaved(
        [
            ("ledger", lambda: run_ledger(data, False)),
            ("ledger+ranks", lambda: run_ledger(data, True)),
            ("memory", lambda: run_memory(data)),
            ("separate", lambda: run_separate(data)),
        ],
        args.repeats,
    )
    med = show(writes, args.events, "events")
    print(
        f"  ledger / memory throughput:       {med['memory'] / med['ledger']:.2f}x (target >= 0.7)"
    )
    print(f"  ledger+ranks / memory throughput: {med['memory'] / med['ledger+ranks']:.2f}x")
    print(
        f"  ledger / separate throughput:     {med['separate'] / med['ledger']:.2f}x (target >= 2)"
    )
    root = Path(tempfile.mkdtemp(prefix="bench-open-"))
    try:
        print(f"open: a ledger with four views of {args.n:,} members vs one board of {args.n:,}")
        ledger_dir, board_dir = build_open_fixtures(args.n, root)
        opens = interleaved(
            [
                ("ledger open", lambda: open_ledger(ledger_dir)),
                ("board open", lambda: open_board(board_dir)),
            ],
            args.repeats,
        )
        med = show(opens, 0, "")
        ratio = med["ledger open"] / med["board open"]
        print(f"  ledger open / board open: {ratio:.2f}x (target <= 2)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
