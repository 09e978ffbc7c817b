"""Replay speed: records per second when a durable board opens from its log.

Usage (from the repository root)::

    python bench/replay.py                         # this tree against main
    python bench/replay.py --records 400000 --players 100000 --repeats 3
    python bench/replay.py --baseline HEAD~3 --backend skiplist

The case of issue 20: a board that has logged ``--records`` increments over
``--players`` players (seeded; no snapshot yet, as before the first
compaction) is opened, which replays every record into an empty board.
The log is written once, by this tree (the format is the same in both).

``--kind ledger``: the same increments recorded into a one-view ledger
(``open_board(path, format="ledger")``, each ``incr`` one event), reopened
with ``open_board(path)``; ``--kind ledger-four``: into a ledger with the
four views of ``bench/ledger.py`` (all-time, weekly, daily, trending; one
event a minute of event time from a Monday, as there), reopened with
``Ledger.open(path)``.  A ledger's replay folds the plain boards' events
(:mod:`rankengine.ledger.fold`); the other views take them one by one.

Each open runs in a fresh process, so that the two versions share nothing:
this tree's ``rankengine`` and the ``--baseline`` ref's (read with ``git
archive`` into a temporary directory).  After one warm-up open each, the
versions take turns ``--repeats`` times (interleaved, so that the load of
a shared machine hits both alike).  Both trees are byte-compiled first
(``--no-compile`` leaves them as they are), so that no open pays for
compiling its modules, as none does in an installed package; and the
modules an open uses are imported before its clock starts (the durable
board's, and a ledger's: ~0.04 s, half of it the Redis view's), so that
the figure is the replay's, not the interpreter's start.  Each open reports its wall time, its
process CPU time (``cpu``: the opening process alone) and that plus its
child processes' (``cpu_all``: a replay split among processes,
:mod:`rankengine.durable.parallel`, does part of its work in children, so
this is the total work); records/s is ``records / seconds``, and the
ratio is new over old on the medians (the minimums are printed too).
CPU time is the steadier figure on a loaded machine; wall time is what a
user waits.  ``--procs N`` sets
``RANKENGINE_REPLAY_PROCS`` for the opens.  ``--json PATH`` writes the
figures.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: Increment sizes drawn from [1, MAX_DELTA]: many equal scores among 10^5
#: players, so tie order matters.
MAX_DELTA = 100

#: What one open runs, in a fresh interpreter whose path starts with a tree.
_OPEN = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import rankengine
from rankengine.durable.board import DurableLeaderboard
if sys.argv[4] != "board":  # (the ledger's modules, as the board's above: before the clock)
    import rankengine.ledger, rankengine.stores
assert rankengine.__file__.startswith(sys.argv[1]), rankengine.__file__
def children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
wall, cpu, kids = time.perf_counter(), time.process_time(), children()
kind = sys.argv[4]
if kind == "board":
    board = DurableLeaderboard(sys.argv[2], backend=sys.argv[3])
elif kind == "ledger":
    board = rankengine.open_board(sys.argv[2], backend=sys.argv[3])
else:
    board = rankengine.Ledger.open(sys.argv[2])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
kids = children() - kids
seq = board.ledger.last_seq if kind == "ledger" else board.last_seq
members = len(board["alltime"]) if kind == "ledger-four" else len(board)
print(json.dumps({"wall": wall, "cpu": cpu, "cpu_all": cpu + kids, "seq": seq, "members": members}))
board.close()
"""
#: The four-view ledger's event times (as bench/ledger.py): from a Monday,
#: one event a minute.
T0_MS = 1_799_020_800_000
STEP_MS = 60_000


def write_log(
    path: str, records: int, players: int, seed: int, backend: str, *, kind: str = "board"
) -> None:
    """The board's or ledger's directory: ``records`` increments, no snapshot."""
    sys.path.insert(0, str(ROOT))
    # (this tree, on the path now)
    from rankengine import Ledger, open_board
    from rankengine.durable.board import DurableLeaderboard

    rng = random.Random(seed)
    options: dict[str, Any] = {"fsync": "never", "compact_min_bytes": None}
    if kind == "ledger-four":
        with Ledger.open(path, **options) as ledger:
            ledger.add_view("alltime", backend=backend)
            ledger.add_view("weekly", "periodic", calendar="weekly", backend=backend)
            ledger.add_view("daily", "periodic", calendar="daily", backend=backend)
            ledger.add_view("trending", "topk", k=10)
            for i in range(records):
                member, delta = f"player:{rng.randrange(players)}", rng.randint(1, MAX_DELTA)
                ledger.record(member, delta, t_ms=T0_MS + i * STEP_MS)
        return
    if kind == "ledger":
        board: Any = open_board(path, format="ledger", backend=backend, **options)
    else:
        board = DurableLeaderboard(path, backend=backend, **options)
    with board:
        for _ in range(records):
            board.incr(f"player:{rng.randrange(players)}", rng.randint(1, MAX_DELTA))


def export_ref(ref: str, into: str) -> str:
    """``git archive ref`` unpacked into ``into``; returns the tree's path."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "rankengine"],
        check=True,
        capture_output=True,
    ).stdout
    tar_path = os.path.join(into, "ref.tar")
    Path(tar_path).write_bytes(data)
    tree = os.path.join(into, "tree")
    with tarfile.open(tar_path) as tar:
        tar.extractall(tree, filter="data")
    return tree


def open_once(
    tree: str, directory: str, backend: str, procs: str = "", kind: str = "board"
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _OPEN, tree, directory, backend, kind],
        check=False,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": tree,
            **({"RANKENGINE_REPLAY_PROCS": procs} if procs else {}),
        },
    )
    if done.returncode:
        raise SystemExit(f"the open with {tree} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=400_000)
    p.add_argument("--players", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=20)
    p.add_argument("--backend", default="sortedlist", choices=["sortedlist", "skiplist"])
    p.add_argument(
        "--kind",
        default="board",
        choices=["board", "ledger", "ledger-four"],
        help="a durable board's log, a one-view ledger's, or a four-view ledger's",
    )
    p.add_argument("--baseline", default="main", help="git ref to compare with ('' for none)")
    p.add_argument("--json", metavar="PATH", help="write the figures here")
    p.add_argument(
        "--no-compile",
        dest="compile",
        action="store_false",
        help="do not write the trees' .pyc files first (each open may then compile its modules)",
    )
    p.add_argument(
        "--procs",
        default="",
        help="RANKENGINE_REPLAY_PROCS for the opens ('' leaves it unset: the CPUs available)",
    )
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        directory = os.path.join(tmp, "board")
        print(
            f"writing {args.records:,} increments over {args.players:,} players ({args.kind}) ..."
        )
        write_log(directory, args.records, args.players, args.seed, args.backend, kind=args.kind)
        load_before = os.getloadavg()[0]
        trees = {"new": str(ROOT)}
        if args.baseline:
            trees = {f"old ({args.baseline})": export_ref(args.baseline, tmp), **trees}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for tree in trees.values():
            # Both trees' bytecode written before the opens, as an installed
            # package has it: an environment that sets PYTHONDONTWRITEBYTECODE
            # would otherwise have every open compile every module it
            # imports (measured ~0.15 s of CPU for a ledger's), and the tree
            # whose .pyc files happen to be there would win by that.
            if args.compile:
                compileall.compile_dir(os.path.join(tree, "rankengine"), quiet=1)
            open_once(tree, directory, args.backend, args.procs, args.kind)  # warm-up
        for _ in range(args.repeats):
            for name, tree in trees.items():
                run = open_once(tree, directory, args.backend, args.procs, args.kind)
                assert run["seq"] == args.records, run
                runs[name].append(run)
        shutil.rmtree(directory)
        load_after = os.getloadavg()[0]
    figures: dict[str, Any] = {}
    for name, done in runs.items():
        row: dict[str, Any] = {}
        for clock in ("wall", "cpu", "cpu_all"):
            secs = sorted(r.get(clock, r["cpu"]) for r in done)
            row[clock] = {
                "seconds": {"min": secs[0], "median": statistics.median(secs), "max": secs[-1]},
                "records_per_s": args.records / statistics.median(secs),
            }
        figures[name] = row
        print(
            f"{name:>16}: wall {row['wall']['seconds']['median']:.2f} s "
            f"({row['wall']['records_per_s']:>9,.0f} records/s), "
            f"cpu {row['cpu']['seconds']['median']:.2f} s "
            f"({row['cpu']['records_per_s']:>9,.0f} records/s), "
            f"cpu with children {row['cpu_all']['seconds']['median']:.2f} s; "
            f"min: wall {row['wall']['seconds']['min']:.2f} s, "
            f"cpu {row['cpu']['seconds']['min']:.2f} s, "
            f"with children {row['cpu_all']['seconds']['min']:.2f} s"
        )
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after")
    if len(figures) == 2:
        old, new = figures.values()
        for clock in ("wall", "cpu", "cpu_all"):
            ratio = new[clock]["records_per_s"] / old[clock]["records_per_s"]
            print(f"new / old ({clock}): {ratio:.2f}x")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"args": vars(args), "figures": figures, "load": [load_before, load_after]},
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
