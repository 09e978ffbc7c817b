"""How long a snapshot of a live durable board holds the board's lock.

Usage (from the repository root)::

    python bench/snapshot_holds.py                       # N = 1,000,000, sorted list
    python bench/snapshot_holds.py -n 200000 --backend skiplist --freeze
    python bench/snapshot_holds.py --code OLD_CHECKOUT   # the same, another commit's engine
    python bench/snapshot_holds.py --mode fork           # a forked child writes it
    python bench/snapshot_holds.py --mode replay         # a fresh process replays the log

Builds a durable board (``fsync="everysec"``) of N members, starts a thread
that increments random players (20 writes, then a 1 ms sleep), and calls
``snapshot()`` from another thread.  The board's lock is wrapped so that
every hold by the snapshot's thread is timed; it prints their count,
median, 99th percentile, the longest three, their total and the hold that
rotates the log (the one in which the board's log writer changes: the last
slice and the switch; before rotation.py, also the fsyncs, the new segment
and the manifest write), and the full
collections Python's collector made meanwhile (a collection that runs
while the snapshot's thread holds the lock lengthens that hold), and the
writer's longest calls while the snapshot ran (its waits for the lock and
for the interpreter lock).  With ``--mode fork`` (``snapshot_mode="fork"``)
it also prints how long ``fork()`` took and the parent's resident memory;
with ``--mode replay`` the snapshot is built by a fresh process that
replays the log (``snapshot_mode="replay"``).

The lock is not the only thing a writer waits for: the interpreter lock is
another.  The snapshot's thread lets go of it between units of work (the
``let_go`` of ``rankengine.durable.sliced``); ``--units`` times each unit from one let-go to the
next in that thread's CPU time (an upper bound of how long it held the
interpreter lock: a ``write()`` or an ``fsync`` in the unit runs without
it) and prints the longest with where they ended, and the longest young
and full collections of any thread while the snapshot ran, in CPU time.

No wall-clock figure here is a pass/fail test; see ``docs/durability.md``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

#: The snapshot runs on a thread of this name; only its holds are timed.
SNAPSHOT_THREAD = "snapshot"


class TimedLock:
    """A board lock (an ``RLock``) whose outermost holds by the snapshot's
    thread are timed."""

    def __init__(self, lock: Any, board: Any = None) -> None:
        self.lock = lock
        #: the board, whose writer a hold that rotates the log replaces
        self.board = board
        self.writer: Any = None
        #: (wall, CPU) seconds of the holds in which the log's writer changed
        self.rotations: list[tuple[float, float]] = []
        self.depth = 0
        self.since = 0.0
        self.holds: list[float] = []
        #: the same holds in the snapshot thread's CPU time (what the load
        #: of a shared machine disturbs far less than the wall clock)
        self.cpu: list[float] = []
        self.cpu_since = 0.0
        #: the collector's time on the snapshot's thread so far, and per hold
        self.gc_total = 0.0
        self.gc_since = 0.0
        self.gc: list[float] = []
        #: where each hold began (``--where``): the snapshot's frames
        self.where: list[str] = []
        self.trace = False
        self._at = ""

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        got = bool(self.lock.acquire(*args, **kwargs))
        if got and threading.current_thread().name == SNAPSHOT_THREAD:
            self.depth += 1
            if self.depth == 1:
                if self.trace:
                    frames = traceback.extract_stack(limit=4)[:-1]
                    self._at = " < ".join(f"{f.name}:{f.lineno}" for f in reversed(frames))
                self.since = time.perf_counter()
                self.cpu_since = time.thread_time()
                self.gc_since = self.gc_total
                self.writer = getattr(self.board, "_writer", None)
        return got

    def release(self) -> None:
        if threading.current_thread().name == SNAPSHOT_THREAD:
            self.depth -= 1
            if self.depth == 0:
                self.holds.append(time.perf_counter() - self.since)
                self.cpu.append(time.thread_time() - self.cpu_since)
                self.gc.append(self.gc_total - self.gc_since)
                self.where.append(self._at)
                if getattr(self.board, "_writer", None) is not self.writer:
                    self.rotations.append((self.holds[-1], self.cpu[-1]))
        self.lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lock, name)


def _has_modes() -> bool:
    """Does this checkout's durable board take ``snapshot_mode``?"""
    durable = importlib.import_module("rankengine.durable.board")
    return "snapshot_mode" in inspect.signature(durable.DurableLeaderboard).parameters


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--backend", default="sortedlist", choices=("sortedlist", "skiplist"))
    p.add_argument("--freeze", action="store_true", help="gc.freeze() once the board is loaded")
    p.add_argument("--code", help="import rankengine from this checkout instead")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--mode", default="slices", choices=("slices", "fork", "replay"), help="snapshot_mode"
    )
    p.add_argument(
        "--where", action="store_true", help="print where the five longest holds were taken"
    )
    p.add_argument(
        "--units",
        action="store_true",
        help="time the snapshot thread's units of work between two lets-go of the GIL",
    )
    args = p.parse_args()
    sys.path.insert(0, args.code or str(Path(__file__).resolve().parent.parent))
    from rankengine import Leaderboard

    rng = random.Random(args.seed)
    directory = tempfile.mkdtemp(prefix="rankengine-holds-")
    try:
        board: Any = Leaderboard.open(
            directory,
            fsync="everysec",
            backend=args.backend,
            compact_min_bytes=None,
            # (an older checkout lacks the option: it only makes slices)
            **({"snapshot_mode": args.mode} if _has_modes() else {}),
        )
        forks: list[float] = []
        durable = sys.modules["rankengine.durable.board"]
        if args.mode == "fork":
            fork_snapshot = durable.fork_snapshot

            def timed_fork(*a: Any) -> int:
                t = time.perf_counter()
                try:
                    return int(fork_snapshot(*a))
                finally:
                    forks.append(time.perf_counter() - t)

            durable.fork_snapshot = timed_fork  # bench-only: time the fork
        board.set_many((f"player:{i}", rng.randrange(1_000_000)) for i in range(args.n))
        board.snapshot()
        gc.collect()
        if args.freeze:
            gc.freeze()
        full: list[tuple[float, str]] = []
        started = [0.0]

        young = [0.0]
        units = UnitTimer()
        if args.units:
            sliced = sys.modules["rankengine.durable.sliced"]
            units.let_go_of_gil = getattr(sliced, "let_go", None) or durable._let_go
            if hasattr(sliced, "let_go"):
                sliced.let_go = units.let_go  # bench-only: time the units between lets-go
            else:  # (an engine before the pacing: the board's own)
                durable._let_go = units.let_go
        collections: list[tuple[float, int, str]] = []  # (CPU s, generation, thread)
        gc_cpu = [0.0]

        def on_collection(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                gc_cpu[0] = time.thread_time()
            else:
                collections.append(
                    (
                        time.thread_time() - gc_cpu[0],
                        info["generation"],
                        threading.current_thread().name,
                    )
                )
            if threading.current_thread().name == SNAPSHOT_THREAD:
                if phase == "start":
                    young[0] = time.perf_counter()
                else:
                    timed.gc_total += time.perf_counter() - young[0]
            if info["generation"] == 2:
                if phase == "start":
                    started[0] = time.perf_counter()
                else:
                    took = time.perf_counter() - started[0]
                    full.append((took, threading.current_thread().name))

        timed = TimedLock(board._lock, board)
        timed.trace = args.where
        board._lock = timed  # bench-only: time the snapshot's holds
        stop = threading.Event()
        calls: list[float] = []  # the writer's calls while the snapshot runs
        during = threading.Event()

        def writer() -> None:
            i = 0
            clock = time.perf_counter
            while not stop.is_set():
                t = clock()
                board.incr(f"player:{rng.randrange(args.n)}", 1)
                if during.is_set():
                    calls.append(clock() - t)
                i += 1
                if i % 20 == 0:
                    time.sleep(0.001)

        writing = threading.Thread(target=writer, name="writer")
        writing.start()
        time.sleep(0.5)
        gc.callbacks.append(on_collection)
        t0 = time.perf_counter()
        snapping = threading.Thread(target=units.run(board.snapshot), name=SNAPSHOT_THREAD)
        during.set()
        snapping.start()
        snapping.join()
        during.clear()
        took = time.perf_counter() - t0
        rss = _rss_mb()
        gc.callbacks.remove(on_collection)
        stop.set()
        writing.join()
        board._lock = timed.lock
        board.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    # the hold in which the log's writer changed: the last slice with the
    # log's rotation (before it was let go of in slices, also its fsyncs and
    # the manifest write)
    rotation, rotation_cpu = timed.rotations[-1] if timed.rotations else (0.0, 0.0)
    holds = sorted(timed.holds)
    print(
        f"{args.backend} N={args.n:,}{' (frozen)' if args.freeze else ''}: snapshot {took:.2f} s; "
        f"{len(holds)} lock holds: median {holds[len(holds) // 2] * 1e3:.2f} ms, "
        f"99th percentile {holds[int(len(holds) * 0.99)] * 1e3:.2f} ms, "
        f"longest {', '.join(f'{h * 1e3:.1f}' for h in holds[-3:])} ms, "
        f"total {sum(holds):.2f} s, the one with the log's rotation {rotation * 1e3:.1f} ms "
        f"({rotation_cpu * 1e3:.1f} ms CPU); "
        "full collections meanwhile: "
        + (", ".join(f"{t * 1e3:.0f} ms ({who})" for t, who in full) or "none")
    )
    cpu = sorted(timed.cpu)
    print(
        f"  CPU time of the holds: median {cpu[len(cpu) // 2] * 1e3:.2f} ms, "
        f"99th percentile {cpu[int(len(cpu) * 0.99)] * 1e3:.2f} ms, "
        f"longest {', '.join(f'{h * 1e3:.1f}' for h in cpu[-3:])} ms, "
        f"total {sum(cpu):.2f} s; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    calls.sort()
    print(
        f"  mode {args.mode}: the writer's {len(calls)} calls meanwhile: "
        f"99.9th percentile {calls[int(len(calls) * 0.999)] * 1e3:.2f} ms, "
        f"longest {', '.join(f'{c * 1e3:.1f}' for c in calls[-3:])} ms"
        + (f"; fork() {forks[0] * 1e3:.1f} ms at RSS {rss:.0f} MB" if forks else "")
    )
    if args.units:
        units.report(collections)
    if args.where:
        rows = list(zip(timed.cpu, timed.holds, timed.gc, timed.where, strict=True))
        by_cpu = sorted(rows, key=lambda r: -r[0])
        by_wall = sorted(rows, key=lambda r: -r[1])
        for title, top in (("longest by wall clock", by_wall), ("longest by CPU time", by_cpu)):
            print(f"  {title} (CPU ms, wall ms, of which the collector ms, where):")
            for c, hold, collector, at in top[:5]:
                print(f"  {c * 1e3:8.2f} {hold * 1e3:8.2f} {collector * 1e3:8.2f}  {at}")


class UnitTimer:
    """The snapshot thread's units of work between two calls of the board's
    ``let_go`` (where it lets go of the GIL), in that thread's CPU time."""

    def __init__(self) -> None:
        self.let_go_of_gil: Any = None
        #: (CPU s, wall s, where the unit ended)
        self.units: list[tuple[float, float, str]] = []
        self.cpu = self.wall = 0.0

    def run(self, target: Any) -> Any:
        def timed() -> None:
            self.cpu, self.wall = time.thread_time(), time.perf_counter()
            target()
            self._end("the end of the snapshot")

        return timed

    def _end(self, where: str) -> None:
        self.units.append((time.thread_time() - self.cpu, time.perf_counter() - self.wall, where))

    def let_go(self, *args: Any) -> None:
        if threading.current_thread().name == SNAPSHOT_THREAD:
            frames, f = [], sys._getframe(1)
            while f is not None and len(frames) < 3:
                frames.append(f"{Path(f.f_code.co_filename).name}:{f.f_lineno}")
                f = f.f_back
            self._end(" < ".join(frames))
            self.let_go_of_gil(*args)
            self.cpu, self.wall = time.thread_time(), time.perf_counter()
        else:
            self.let_go_of_gil(*args)

    def report(self, collections: list[tuple[float, int, str]]) -> None:
        cpu = sorted(u[0] for u in self.units)
        if not cpu:
            print("  units: none timed")
            return
        print(
            f"  the snapshot thread's {len(cpu)} units between lets-go of the GIL, CPU: "
            f"median {cpu[len(cpu) // 2] * 1e3:.2f} ms, 99th percentile "
            f"{cpu[int(len(cpu) * 0.99)] * 1e3:.2f} ms, longest "
            f"{', '.join(f'{c * 1e3:.1f}' for c in cpu[-3:])} ms; over 2 ms: "
            f"{sum(c > 0.002 for c in cpu)}"
        )
        for generation in (0, 1, 2):
            mine = sorted((c, who) for c, g, who in collections if g == generation)
            if mine:
                c, who = mine[-1]
                print(
                    f"  generation-{generation} collections meanwhile: {len(mine)}, "
                    f"longest {c * 1e3:.1f} ms of CPU ({who})"
                )
        print("  the longest units (CPU ms, wall ms, where each ended):")
        for c, wall, where in sorted(self.units, key=lambda u: -u[0])[:5]:
            print(f"  {c * 1e3:8.2f} {wall * 1e3:8.2f}  {where}")


def _rss_mb() -> float:
    """This process's resident memory in MB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


if __name__ == "__main__":
    main()
