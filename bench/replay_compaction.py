"""Records held back by a ledger's compaction, in-process against replayed.

Usage (from the repository root)::

    python bench/replay_compaction.py -n 100000 --repeats 2

Four views (all-time, weekly, daily, trending) hold ``-n`` players; an
``AsyncLedger`` (``fsync="always"``) records at ``--rate`` events a second
(one task per event, on schedule) while one compaction runs, made by the
write that crosses ``compact_min_bytes``.  Per run: the records that
waited for the compaction (held back), the compaction's wall time, the
replaying child's CPU time and peak memory, and the loop's max lag (a
1 ms timer).  The two ``snapshot_mode`` values alternate, in one process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import T0_MS, LagTimer, add_four  # (bench/ledger.py, beside this file)

from rankengine.ledger.aio import AsyncLedger


async def one_run(players: int, mode: str, rate: float, seconds: float) -> dict[str, Any]:
    """One compaction under ``mode`` while records go on; its figures."""
    directory = tempfile.mkdtemp(prefix="bench-replay-")
    try:
        aledger = await AsyncLedger.open(
            directory, fsync="always", compact_min_bytes=None, snapshot_mode=mode
        )
        ledger = aledger.ledger
        add_four(ledger)
        ledger.record_many([(f"player:{i}", 1) for i in range(players)])
        ledger._compact_min = ledger._files.active_bytes + 20_000  # (due ~300 events in)
        held = 0
        wait = aledger._after_compaction

        async def counted() -> None:
            nonlocal held
            if aledger._compaction is not None:
                held += 1
            await wait()

        aledger._after_compaction = counted  # type: ignore[method-assign]
        timer = LagTimer()
        timer.start()
        pending: set[asyncio.Task[Any]] = set()
        start, sent, total = time.perf_counter(), 0, int(rate * seconds)
        while sent < total or aledger._compaction is not None:
            due = min(total, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                task = asyncio.create_task(
                    aledger.arecord(f"player:{sent % players}", 1, t_ms=T0_MS + sent, ranks=False)
                )
                pending.add(task)
                task.add_done_callback(pending.discard)
                sent += 1
            await asyncio.sleep(0.001)
        await asyncio.gather(*pending)
        await timer.stop()
        report = ledger.last_compaction
        await aledger.aclose()
        return {
            "held": held,
            "kind": None if report is None else report.kind,
            "wall_ms": 0.0 if report is None else report.wall_s * 1000,
            "child_cpu_s": 0.0 if report is None else report.child_cpu_s,
            "child_mb": 0.0 if report is None else report.child_maxrss_kb / 1024,
            "lag_max_ms": max(timer.lags) * 1000,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=100_000, help="players (rows per view)")
    parser.add_argument("--rate", type=float, default=10_000.0, help="events a second")
    parser.add_argument("--seconds", type=float, default=1.0, help="events sent (at least)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus (shared machine), load average "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.n:,} players, four views, "
        f"{args.rate:,.0f} events/s, fsync always"
    )
    for _ in range(args.repeats):  # interleaved: the load hits each alike
        for mode in ("in-process", "replay"):
            f = asyncio.run(one_run(args.n, mode, args.rate, args.seconds))
            print(
                f"  {mode:<10} held back {f['held']:>5,} records; compaction {f['kind']} "
                f"{f['wall_ms']:,.0f} ms wall, child CPU {f['child_cpu_s']:.2f} s, "
                f"peak {f['child_mb']:.0f} MB; loop lag max {f['lag_max_ms']:.1f} ms"
            )
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
