"""asyncio and durable writes: throughput per fsync policy, and the loop's lag.

Usage (from the repository root)::

    python bench/asyncio_bench.py                      # the defaults below
    python bench/asyncio_bench.py --tasks 1000 --events 20000 --rate 10000 --seconds 3
    python bench/asyncio_bench.py --json out.json

Two measurements, each with a loop-lag timer running beside the work (a
task that sleeps 1 ms and records how late it wakes: the longest time the
loop could not run anything):

1. **Throughput**: ``--tasks`` concurrent tasks share ``--events``
   increments over 10,000 players on an :class:`rankengine.aio.AsyncLeaderboard`,
   one run per policy, the policies taking turns ``--repeats`` times:
   ``everysec`` and ``always`` (group commit), and, for reference, the
   synchronous board called straight from the loop under ``always`` (each
   call blocks the loop for its own fsync; fewer events).  Reported:
   events/s (median), the loop's max lag, and the fsyncs made.
2. **Fixed rate**: ``--rate`` events a second for ``--seconds`` under
   ``always``, issued on a schedule (a task per event, started every
   millisecond in small groups), as a game server records them.  Reported:
   the loop's max and p99 lag, and each write's time to acknowledgement
   (p50/p99/max).

``--writer`` picks how the active segment is appended to: ``map`` (a copy
into a memory map, this tree's writer under every policy), ``write`` (a
``write()`` system call, the writer ``always`` used before) or ``both``: the
two take turns in every repeat and at the fixed rate, an A/B in one run.
The fixed rate also reports ``blocked``: the loop's time inside the writes'
synchronous part (the check, the index update, the append).

Targets (issue 20): ``always`` >= 0.5x the ``everysec`` throughput with
1,000 tasks; the loop's max lag <= 5 ms at 10,000 events/s.  On a shared
machine the lag includes the scheduler's own hiccups: the report says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rankengine.durable.board as durable_board  # (this tree, on the path now)
from rankengine.aio import AsyncLeaderboard
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.eventlog import ACTIVE_WRITER, SegmentWriter

PLAYERS = 10_000
#: The segment writers ``--writer`` chooses between.
WRITERS: dict[str, type[SegmentWriter]] = {"map": ACTIVE_WRITER, "write": SegmentWriter}
#: The lag timer's period.
TICK_S = 0.001


class LagTimer:
    """A task that sleeps :data:`TICK_S` and records how late it wakes."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK_S)
            self.lags.append(max(0.0, time.perf_counter() - start - TICK_S))

    def __enter__(self) -> LagTimer:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    def max_ms(self) -> float:
        return 1000 * max(self.lags, default=0.0)

    def p99_ms(self) -> float:
        if len(self.lags) < 2:
            return self.max_ms()
        return 1000 * statistics.quantiles(self.lags, n=100)[98]


async def throughput(policy: str, tasks: int, events: int, seed: int) -> dict[str, Any]:
    """``events`` increments from ``tasks`` tasks on a fresh board."""
    rng = random.Random(seed)
    members = [f"player:{rng.randrange(PLAYERS)}" for _ in range(events)]
    with tempfile.TemporaryDirectory() as tmp:
        board = await AsyncLeaderboard.open(tmp, fsync=policy, compact_min_bytes=None)
        share = events // tasks

        async def worker(i: int) -> None:
            for member in members[i * share : (i + 1) * share]:
                await board.incr(member, 1)

        with LagTimer() as lag:
            await asyncio.sleep(0.01)  # (the timer's first tick)
            start = time.perf_counter()
            await asyncio.gather(*(worker(i) for i in range(tasks)))
            elapsed = time.perf_counter() - start
        group = board.board.group_commit
        syncs = group.syncs if group is not None else None
        assert board.last_seq == share * tasks
        await board.close()
    return {
        "events_per_s": share * tasks / elapsed,
        "max_lag_ms": lag.max_ms(),
        "fsyncs": syncs,
    }


async def blocking(events: int, seed: int) -> dict[str, Any]:
    """The synchronous board called from the loop under ``always``."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        board = DurableLeaderboard(tmp, fsync="always", compact_min_bytes=None)
        with LagTimer() as lag:
            await asyncio.sleep(0.01)
            start = time.perf_counter()
            for _ in range(events):
                board.incr(f"player:{rng.randrange(PLAYERS)}", 1)
                await asyncio.sleep(0)  # (let the timer run between writes)
            elapsed = time.perf_counter() - start
        board.close()
    return {"events_per_s": events / elapsed, "max_lag_ms": lag.max_ms(), "fsyncs": events}


async def fixed_rate(rate: int, seconds: float, seed: int) -> dict[str, Any]:
    """``rate`` events a second under ``always``, on a schedule."""
    rng = random.Random(seed)
    per_tick = max(1, round(rate * TICK_S))
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        board = await AsyncLeaderboard.open(tmp, fsync="always", compact_min_bytes=None)

        async def record(member: str) -> None:
            start = time.perf_counter()
            await board.incr(member, 1)
            latencies.append(time.perf_counter() - start)

        inner = board.board.write_deferred
        blocked = [0.0]

        def timed(name: str, /, *args: Any, **kwargs: Any) -> tuple[Any, int]:
            # the write's synchronous part, on the loop
            began = time.perf_counter()
            try:
                return inner(name, *args, **kwargs)
            finally:
                blocked[0] += time.perf_counter() - began

        board.board.write_deferred = timed  # type: ignore[method-assign]
        pending: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()
        with LagTimer() as lag:
            await asyncio.sleep(0.01)
            start = time.perf_counter()
            ticks = int(seconds / TICK_S)
            for tick in range(ticks):
                for _ in range(per_tick):
                    task = loop.create_task(record(f"player:{rng.randrange(PLAYERS)}"))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                # sleep until the next tick's scheduled start
                delay = start + (tick + 1) * TICK_S - time.perf_counter()
                await asyncio.sleep(max(0.0, delay))
            await asyncio.gather(*pending)
            elapsed = time.perf_counter() - start
        group = board.board.group_commit
        assert group is not None
        syncs = group.syncs
        await board.close()
    latencies.sort()
    count = len(latencies)
    return {
        "events": count,
        "events_per_s": count / elapsed,
        "max_lag_ms": lag.max_ms(),
        "p99_lag_ms": lag.p99_ms(),
        "ack_ms": {
            "p50": 1000 * latencies[count // 2],
            "p99": 1000 * latencies[min(count - 1, int(count * 0.99))],
            "max": 1000 * latencies[-1],
        },
        "fsyncs": syncs,
        "blocked_s": blocked[0],
        "blocked_share": blocked[0] / elapsed,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Every writer chosen, taking turns within each repeat."""
    writers = list(WRITERS) if args.writer == "both" else [args.writer]
    return {"writers": dict(zip(writers, await _interleaved(args, writers), strict=True))}


async def _interleaved(args: argparse.Namespace, writers: list[str]) -> list[dict[str, Any]]:
    runs: list[dict[str, list[dict[str, Any]]]] = [
        {"everysec": [], "always": [], "blocking": []} for _ in writers
    ]
    rates: list[list[dict[str, Any]]] = [[] for _ in writers]
    for repeat in range(args.repeats):
        for n, writer in enumerate(writers):
            with _writer(writer):
                for policy in ("everysec", "always"):
                    runs[n][policy].append(
                        await throughput(policy, args.tasks, args.events, repeat)
                    )
                runs[n]["blocking"].append(await blocking(args.blocking_events, repeat))
        for n, writer in enumerate(writers):
            with _writer(writer):
                rates[n].append(await fixed_rate(args.rate, args.seconds, 7 + repeat))
    results = []
    for n in range(len(writers)):
        rows: dict[str, Any] = {}
        for name, done in runs[n].items():
            speeds = sorted(r["events_per_s"] for r in done)
            rows[name] = {
                "events_per_s": {
                    "min": speeds[0],
                    "median": statistics.median(speeds),
                    "max": speeds[-1],
                },
                "max_lag_ms": max(r["max_lag_ms"] for r in done),
                "fsyncs": [r["fsyncs"] for r in done],
            }
        always, everysec = rows["always"], rows["everysec"]
        ratio = always["events_per_s"]["median"] / everysec["events_per_s"]["median"]
        results.append({"throughput": rows, "always_over_everysec": ratio, "fixed_rate": rates[n]})
    return results


class _writer:
    """Boards opened inside append with the writer named ``name``."""

    def __init__(self, name: str) -> None:
        self.cls = WRITERS[name]

    def __enter__(self) -> None:
        self.saved = durable_board.ACTIVE_WRITER
        durable_board.ACTIVE_WRITER = self.cls  # type: ignore[misc]

    def __exit__(self, *exc: object) -> None:
        durable_board.ACTIVE_WRITER = self.saved  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--blocking-events", type=int, default=500)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rate", type=int, default=10_000)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--writer", choices=["map", "write", "both"], default="map")
    args = p.parse_args(argv)
    result = asyncio.run(main_async(args))
    print(f"cpus: {os.cpu_count()} (shared: other work on the machine shows in the lag)")
    labels = {
        "everysec": "async, everysec",
        "always": "async, always (group commit)",
        "blocking": "sync call on the loop, always",
    }
    for writer, done in result["writers"].items():
        print(
            f"writer {writer}: throughput, {args.tasks} tasks, {args.events:,} increments "
            f"(median of {args.repeats}):"
        )
        for name, row in done["throughput"].items():
            print(
                f"  {labels[name]:>30}: {row['events_per_s']['median']:>9,.0f} events/s  "
                f"max loop lag {row['max_lag_ms']:6.1f} ms  fsyncs {row['fsyncs']}"
            )
        print(f"  always / everysec: {done['always_over_everysec']:.2f}x (target >= 0.5)")
        for rate in done["fixed_rate"]:
            print(
                f"  fixed rate {args.rate:,}/s for {args.seconds} s under always: "
                f"{rate['events_per_s']:,.0f} events/s, loop lag max {rate['max_lag_ms']:.1f} ms "
                f"(target <= 5), p99 {rate['p99_lag_ms']:.2f} ms; writes held the loop "
                f"{rate['blocked_s']:.3f} s ({100 * rate['blocked_share']:.1f}%); acknowledged "
                f"in p50 {rate['ack_ms']['p50']:.1f} / p99 {rate['ack_ms']['p99']:.1f} / "
                f"max {rate['ack_ms']['max']:.1f} ms; {rate['fsyncs']} fsyncs"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), **result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
