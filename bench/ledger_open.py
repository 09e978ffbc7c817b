"""Opening a ledger with four views against opening one board (issue 20's
open target: <= 2x at N = 1,000,000).

Usage (from the repository root)::

    python bench/ledger_open.py -n 1000000                 # this tree against main
    python bench/ledger_open.py -n 200000 --case distinct --baseline ''

The fixtures are written once, by this tree (the formats are the same in
both): a ledger with ``bench/ledger.py``'s four views -- all-time, weekly,
daily (``PeriodicLeaderboard``) and trending (``TopK``, k = 10) -- one
snapshot per view (``compact()``), and one durable board of ``-n`` members
(``Leaderboard.open``, one snapshot).

``--case same`` is ``bench/ledger.py``'s open round: one event per member,
all in one day, so the three exact views hold the same ``-n`` rows (a
young ledger; the case the open's sharing of identical snapshot chunks
serves).  ``--case distinct``: every member scores in the previous week,
earlier this week and today, with different values, so the three exact
views hold ``-n`` members each in three different orders (and the daily
and weekly views keep their previous period too): nothing to share, the
ledger reads and loads about three boards' worth.

Each open runs in a fresh process (this tree's ``rankengine`` and the
``--baseline`` ref's, read with ``git archive``), one warm-up each, then
``--repeats`` rounds taking turns (interleaved, for a shared machine).
The figure is CPU time (``time.process_time()``), the steadier one on a
loaded machine; the ratio is the ledger's median over the board's.  With
a baseline, each round's open of this tree over the baseline's (run back
to back) is also printed, for the ledger and the board: its median moves
less with the load than the medians do.

``--breakdown`` also opens the ledger ``--repeats`` times with this tree
and times where each open's CPU goes: per view, reading and checking its
snapshot files, building each loaded board's member -> score map (one
``dict(zip())``, built by the bench before the board's load and handed to
it: the same work, timed apart), and the rest of the load (the order
check, the tie map, the index), or a board's load from an earlier view's
load of the same rows (``_restore_loaded``: the maps copied, the index
built); then the ledger's other work.  The
minimum of each part over the rounds is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from replay import export_ref  # noqa: E402 - bench/ is not a package

DAY_MS = 86_400_000
T0_MS = 1_799_020_800_000  # 2027-01-04T00:00Z, a Monday (as bench/ledger.py)
BATCH = 20_000
#: When each member scores, by case.
CASE_TIMES = {"same": [T0_MS], "distinct": [T0_MS - 3 * DAY_MS, T0_MS + DAY_MS, T0_MS + 2 * DAY_MS]}

#: What one open runs, in a fresh interpreter whose path starts with a tree.
_OPEN = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import rankengine
from rankengine import Leaderboard, Ledger
assert rankengine.__file__.startswith(sys.argv[1]), rankengine.__file__
gc.collect()
cpu = time.process_time()
if sys.argv[3] == "ledger":
    opened = Ledger.open(sys.argv[2], compact_min_bytes=None)
else:
    opened = Leaderboard.open(sys.argv[2], compact_min_bytes=None)
cpu = time.process_time() - cpu
opened.close()
print(json.dumps({"cpu": cpu}))
"""


def build(n: int, case: str, root: Path) -> tuple[Path, Path]:
    """The ledger and the board directories (this tree's rankengine)."""
    sys.path.insert(0, str(ROOT))
    from rankengine import Leaderboard, Ledger  # (this tree, on the path now)

    rng = random.Random(3)
    # "distinct": the previous week, earlier this week, today
    times = CASE_TIMES[case]
    ledger_dir, board_dir = root / "ledger", root / "board"
    totals = [0] * n
    with Ledger.open(ledger_dir, compact_min_bytes=None) as ledger:
        ledger.add_view("alltime")
        ledger.add_view("weekly", "periodic", calendar="weekly")
        ledger.add_view("daily", "periodic", calendar="daily")
        ledger.add_view("trending", "topk", k=10)
        for day, t_ms in enumerate(times):
            for lo in range(0, n, BATCH):
                events = []
                for i in range(lo, min(n, lo + BATCH)):
                    value = rng.randrange(10**7)
                    totals[i] += value
                    events.append({"member": f"player:{i}", "value": value, "t_ms": t_ms + day + i})
                ledger.record_many(events)
        ledger.compact()
    with Leaderboard.open(board_dir, compact_min_bytes=None) as board:
        board.set_many({f"player:{i}": totals[i] for i in range(n)})
        board.compact()  # type: ignore[attr-defined]
    return ledger_dir, board_dir


def open_once(tree: str, directory: Path, what: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _OPEN, tree, str(directory), what],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": tree},
    )
    if done.returncode:
        raise SystemExit(f"the {what} open with {tree} failed:\n{done.stderr}")
    return float(json.loads(done.stdout)["cpu"])


#: One ledger open timed by parts (``--breakdown``), in a fresh interpreter.
_BREAKDOWN = """
import gc, json, sys, time
from collections import defaultdict
sys.path.insert(0, sys.argv[1])
from rankengine import Ledger
from rankengine.board import bulk
from rankengine.ledger import front, storage
assert front.__file__.startswith(sys.argv[1]), front.__file__
parts = defaultdict(float)
where = ["?"]
extra = [0.0]
read_parts = storage.LedgerFiles.read_parts
def timed_read(self, view, *args, **kwargs):
    where[0] = view
    cpu = time.process_time()
    try:
        return read_parts(self, view, *args, **kwargs)
    finally:
        parts[view + ": read and check its snapshot files"] += time.process_time() - cpu
restore = bulk.BulkLoad._restore_columns
def timed_restore(self, members, scores, clocks, metas, clock, *, by_member=None, negated=False):
    cpu = time.process_time()
    if by_member is None and self._codec.columns is None:
        listed = scores.tolist() if hasattr(scores, "tolist") else scores
        extra[0] += time.process_time() - cpu  # (the load makes this list again)
        cpu = time.process_time()
        by_member = dict(zip(members, listed, strict=True))
        parts[where[0] + ": member map, dict(zip())"] += time.process_time() - cpu
        cpu = time.process_time()
    try:
        return restore(self, members, scores, clocks, metas, clock, by_member=by_member,
                       negated=negated)
    finally:
        parts[where[0] + ": rest of the board's load"] += time.process_time() - cpu
restore_loaded = getattr(bulk.BulkLoad, "_restore_loaded", None)
def timed_restore_loaded(self, *args, **kwargs):
    cpu = time.process_time()
    try:
        return restore_loaded(self, *args, **kwargs)
    finally:
        parts[where[0] + ": the load of an earlier view's same rows"] += time.process_time() - cpu
storage.LedgerFiles.read_parts = timed_read
bulk.BulkLoad._restore_columns = timed_restore
if restore_loaded is not None:
    bulk.BulkLoad._restore_loaded = timed_restore_loaded
gc.collect()
cpu = time.process_time()
opened = Ledger.open(sys.argv[2], compact_min_bytes=None)
cpu = time.process_time() - cpu - extra[0]
opened.close()
parts["the ledger's other work"] = cpu - sum(parts.values())
parts["total"] = cpu
print(json.dumps(parts))
"""


def breakdown(tree: str, directory: Path, repeats: int) -> None:
    """Print where a ledger open's CPU goes (min over ``repeats`` opens)."""
    best: dict[str, float] = {}
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", _BREAKDOWN, tree, str(directory)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": tree},
        )
        for part, cpu in json.loads(done.stdout).items():
            best[part] = min(cpu, best.get(part, cpu))
    print(f"where the ledger's open goes (this tree, min of {repeats}, CPU):")
    for part, cpu in best.items():
        print(f"  {part:<52} {cpu:6.3f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200_000, help="members")
    p.add_argument("--case", default="same", choices=["same", "distinct"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline", default="main", help="git ref to compare with ('' for none)")
    p.add_argument(
        "--fixtures",
        default="",
        help="keep the fixtures in this directory and reuse them when they are there "
        "(one per -n and --case; default: written to a temporary directory each run)",
    )
    p.add_argument(
        "--breakdown", action="store_true", help="also time the ledger open's parts (this tree)"
    )
    args = p.parse_args(argv)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus (shared machine), "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    root = Path(tempfile.mkdtemp(prefix="bench-ledger-open-"))
    try:
        kept = Path(args.fixtures) / f"{args.case}-{args.n}" if args.fixtures else None
        if kept is not None and (kept / "done").exists():
            print(f"reusing the fixtures in {kept}")
            ledger_dir, board_dir = kept / "ledger", kept / "board"
        else:
            print(f"writing the fixtures: N = {args.n:,}, case {args.case} ...")
            if kept is not None:
                shutil.rmtree(kept, ignore_errors=True)
                kept.mkdir(parents=True)
            ledger_dir, board_dir = build(args.n, args.case, kept or root)
            if kept is not None:
                (kept / "done").touch()
        trees = {"new": str(ROOT)}
        if args.baseline:
            trees = {f"old ({args.baseline})": export_ref(args.baseline, str(root)), **trees}
        steps = [
            (f"{name} {what}", tree, directory, what)
            for name, tree in trees.items()
            for what, directory in (("ledger", ledger_dir), ("board", board_dir))
        ]
        for _, tree, directory, what in steps:  # warm-up: the OS cache, the .pyc files
            open_once(tree, directory, what)
        runs: dict[str, list[float]] = {label: [] for label, *_ in steps}
        for _ in range(args.repeats):
            for label, tree, directory, what in steps:
                runs[label].append(open_once(tree, directory, what))
        if args.breakdown:
            breakdown(str(ROOT), ledger_dir, args.repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    medians: dict[str, Any] = {}
    for label, values in runs.items():
        medians[label] = statistics.median(values)
        print(
            f"  {label:<18} min {min(values):7.3f}  median {medians[label]:7.3f}  "
            f"max {max(values):7.3f} s (CPU)"
        )
    for name in trees:
        ratio = medians[f"{name} ledger"] / medians[f"{name} board"]
        print(f"  {name}: ledger open / board open {ratio:.2f}x (target <= 2)")
    if len(trees) == 2:
        # Paired: each round's two opens ran back to back, so their ratio
        # moves less with the machine's load than either median does.
        old = next(iter(trees))
        for what in ("ledger", "board"):
            paired = [
                new / before
                for new, before in zip(runs[f"new {what}"], runs[f"{old} {what}"], strict=True)
            ]
            print(
                f"  {what}: new / old per round: median {statistics.median(paired):.3f} "
                f"(min {min(paired):.3f}, max {max(paired):.3f})"
            )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
