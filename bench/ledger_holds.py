"""How long a replayed compaction holds an AsyncLedger's records back, by hold.

Usage (from the repository root; put another copy of rankengine first on
``PYTHONPATH`` to measure it, and alternate the two)::

    python bench/ledger_holds.py --repeats 2

A replayed compaction holds records back twice (``rankengine/ledger/aio.py``):
from the write that asks for it until its switch to a new segment is made
(the *switch* hold), and while it names the child's snapshots (the *naming*
hold: until the records are let go, which is the compaction's end where
the naming writes the manifest under the lock, the end of its in-memory
half where it writes the manifest after it).  This times each, by
wrapping the asyncio face's hooks, in
``bench/ledger.py``'s lag round (four views, 10,000 players, one task per
event at ``--rate``, a compaction at 1 MiB), under ``fsync="always"`` and
``"everysec"``; and prints the records held back per run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import run_open_loop, stream  # (bench/ledger.py, beside this file)

from rankengine.ledger import compaction
from rankengine.ledger.aio import AsyncLedger

#: The compaction threshold of bench/ledger.py's lag round.
COMPACT_BYTES = 1 << 20


def watch(holds: dict[str, list[float]]) -> None:
    """Wrap AsyncLedger's hooks so that each hold's wall time (ms) lands in
    ``holds["switch"]`` and ``holds["naming"]``, and the naming's hold of
    the ledger's lock (``compaction._name``) in ``holds["naming lock"]``."""
    began: dict[str, float] = {}
    soon, let_through = AsyncLedger._compact_soon, AsyncLedger._let_through
    naming, compact = AsyncLedger._hold_for_naming, AsyncLedger._compact

    def timed_soon(self: AsyncLedger) -> bool:
        asked = soon(self)
        if asked:
            began["switch"] = time.perf_counter()
        return asked

    def timed_let_through(self: AsyncLedger) -> None:
        for name in ("switch", "naming"):  # (the naming's: once it names in memory)
            if name in began:
                holds[name].append((time.perf_counter() - began.pop(name)) * 1000)
                break
        let_through(self)

    def timed_naming(self: AsyncLedger) -> None:
        began["naming"] = time.perf_counter()
        naming(self)

    async def timed_compact(self: AsyncLedger, kind: str) -> None:
        try:
            await compact(self, kind)
        finally:
            if "naming" in began:
                holds["naming"].append((time.perf_counter() - began.pop("naming")) * 1000)

    def timed_name(*args: Any, **kwargs: Any) -> Any:
        began_name = time.perf_counter()
        try:
            return name_under_lock(*args, **kwargs)
        finally:
            holds["naming lock"].append((time.perf_counter() - began_name) * 1000)

    name_under_lock = compaction._name
    compaction._name = timed_name
    AsyncLedger._compact_soon = timed_soon  # type: ignore[method-assign]
    AsyncLedger._let_through = timed_let_through  # type: ignore[method-assign]
    AsyncLedger._hold_for_naming = timed_naming  # type: ignore[method-assign]
    AsyncLedger._compact = timed_compact  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-e", "--events", type=int, default=20_000)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=10_000.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    holds: dict[str, list[float]] = {"switch": [], "naming": [], "naming lock": []}
    held: dict[str, list[int]] = {"always": [], "everysec": []}
    watch(holds)
    data = stream(args.events, args.players, 1)
    for _ in range(args.repeats):
        for policy, counts in held.items():
            with asyncio.Runner() as runner:
                figures: dict[str, Any] = runner.run(
                    run_open_loop(
                        data, policy, args.rate, setting="default", compact_bytes=COMPACT_BYTES
                    )
                )
            counts.append(int(figures["held"]))
    for name, times in holds.items():
        print(f"  {name} hold  {', '.join(f'{ms:.1f}' for ms in times)} ms")
    for policy, counts in held.items():
        print(f"  {policy:<9} held back {', '.join(map(str, counts))} records")
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
