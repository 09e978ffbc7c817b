"""The event loop's longest pause while a ledger does its O(N) chores, A/B.

Usage (from the repository root)::

    python bench/loop_stalls.py                     # N = 100,000, against main
    python bench/loop_stalls.py -n 1000000 --ref main --repeats 3

``AsyncLedger.arecord`` runs the ledger's write on the loop's thread.  Most
writes take tens of microseconds; a few do O(N) work, and each of those
stalls every task of the server for as long.  Each case below builds a
ledger whose views hold ``-n`` members, then records a few events from a
coroutine while a 1 ms timer measures how late the loop wakes (its max
lag, ms), once on this tree's code and once on ``--ref``'s (extracted with
``git archive``), each in a fresh process, interleaved:

* ``noop``: the timer alone, no ledger: the machine's own lag;
* ``compaction``: four views (all-time, weekly, daily, trending) and a
  ``compact_min_bytes`` crossed a few events in: the snapshots of every
  view, the segment switch and their fsyncs (``fsync="always"``);
* ``period-drop``: a weekly view; the events of two week ends, the second
  of which drops the period the first one kept as the last (its board of
  N members is freed);
* ``preload``: a weekly view whose last week (N members) is closed,
  reopened with ``AsyncLedger.open`` (this tree: the closed week is loaded
  on a background thread; ``main`` before it: on its first read), then the
  events, and "last week's top 10" read from the loop 0.3 s in.

Last run (2 cores shared with other work; the load average is printed
with the figures): see docs/asyncio.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import export_ref  # (bench/ledger.py, beside this file)

CASES = ("noop", "compaction", "period-drop", "preload")

#: What one case runs, in a fresh interpreter whose path starts with a tree.
_CASE = r"""
import asyncio, gc, os, shutil, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
import rankengine
assert rankengine.__file__.startswith(sys.argv[1]), rankengine.__file__
sys.path.insert(1, sys.argv[2])
import ledger as bench
from rankengine.ledger.aio import AsyncLedger
case, n = sys.argv[3], int(sys.argv[4])
WEEK = 7 * 86_400_000

async def main():
    directory = tempfile.mkdtemp(prefix="bench-stalls-")
    try:
        aledger = None
        if case != "noop":
            aledger = await AsyncLedger.open(directory, fsync="always", compact_min_bytes=None)
            ledger = aledger.ledger
            if case == "compaction":
                bench.add_four(ledger)
            else:
                ledger.add_view("weekly", "periodic", calendar="weekly")
            rows = [
                {"member": f"player:{i}", "value": i, "t_ms": bench.T0_MS + i} for i in range(n)
            ]
            for lo in range(0, n, 20_000):
                ledger.record_many(rows[lo : lo + 20_000])
            del rows
            if case == "compaction":
                ledger._compact_min = ledger._files.active_bytes + 3_000
            else:
                await aledger.arecord("x", 1, t_ms=bench.T0_MS + WEEK)  # week 0 kept as the last
            if case == "preload":  # reopened: week 0 closed, unloaded by the open
                ledger.compact()
                await aledger.aclose()
                del aledger, ledger
                gc.collect()
                aledger = await AsyncLedger.open(directory, fsync="always", compact_min_bytes=None)
        gc.collect()
        timer = bench.LagTimer()
        timer.start()
        await asyncio.sleep(0.05)
        lags = timer.lags
        lags.clear()
        for k in range(300):  # ~1 s of events, 2 ms apart
            if aledger is not None:
                t = bench.T0_MS + n + k if case == "compaction" else bench.T0_MS + 2 * WEEK + k
                t = bench.T0_MS + WEEK + 1 + k if case == "preload" else t
                await aledger.arecord(f"player:{k}", 1, t_ms=t, ranks=False)
                if case == "preload" and k == 150:  # last week's top 10
                    weekly = aledger["weekly"]
                    assert len(weekly.top(10, period=weekly.periods()[0])) == 10
            await asyncio.sleep(0.002)
        await asyncio.sleep(0.3)  # (what a worker thread still does)
        await timer.stop()
        if aledger is not None:
            await aledger.aclose()
        print(max(lags) * 1000)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

asyncio.run(main())
"""


def run_case(tree: str, case: str, n: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _CASE, tree, str(Path(__file__).resolve().parent), case, str(n)],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": tree},
    )
    if done.returncode:
        raise SystemExit(f"case {case} with {tree} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=100_000, help="members per view")
    parser.add_argument("--ref", default="main", help="git ref to compare with ('' for none)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args(argv)
    root = str(Path(__file__).resolve().parent.parent)
    load = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus (shared machine), "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; N = {args.n:,}; "
        "the loop's max lag, ms, per run"
    )
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("this tree", root)]
        if args.ref:
            trees.append((args.ref, export_ref(args.ref, tmp)))
        cases = [case for case in args.cases.split(",") if case]
        lags: dict[tuple[str, str], list[float]] = {
            (case, label): [] for case in cases for label, _ in trees
        }
        for _ in range(args.repeats):  # interleaved: the load hits each alike
            for case in cases:
                for label, tree in trees:
                    lags[case, label].append(run_case(tree, case, args.n))
    for (case, label), values in lags.items():
        print(f"  {case:<12} {label:<10} {', '.join(format(v, '.1f') for v in values)}")
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
