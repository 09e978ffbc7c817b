"""rankengine side by side with its peers: one command, one process, interleaved.

Usage (from the repository root)::

    python bench/compare.py                       # every workload, N = 10**4, 10**5, 10**6
    python bench/compare.py --quick               # smoke check, under a minute
    python bench/compare.py --sizes 100000 --workloads mixed,rank --systems redis,sqlite
    python bench/compare.py --json results.json  # docs/bench holds the recorded runs

Method (see ``docs/performance.md``):

1. For each N (smallest first) and each workload, every available system is
   built once from the same seeded ``(member, score)`` pairs, and one seeded
   op list is made.
2. Warm-up: every system runs the same first ``--warmup`` ops; then the
   harness checks that all systems report the same top-10 scores and the
   same score for every member the warm-up named.
3. Calibration: a system too slow to run the whole op list within
   ``--budget`` seconds runs a prefix of it (never fewer than ``MIN_OPS``
   ops); the count is recorded in the JSON.  A pipelined system runs whole
   batches only (see :func:`slice_ops`).
4. ``--repeats`` timed rounds.  Each round is cut into ``SLICES`` slices and
   the systems take turns slice by slice (the first system rotates), so that
   noise from a shared machine hits every system alike.  The built boards are
   frozen out of the garbage collector (``gc.freeze()``); the collector stays
   enabled for new objects, as it is in an application.
5. Each system reports min/median/max ops per second over the rounds.

``memory`` builds each system alone under ``tracemalloc`` (bytes still
allocated after the build, member strings included, divided by N) or, for
Redis, the ``INFO memory`` ``used_memory`` delta, or, for SQLite, its page
count times page size.  ``recovery`` and ``durable-mixed`` use
:mod:`rankengine.durable.board` and are skipped with a note when it is missing.

JSON output (stable; other tools read it)::

    {"runs": [{"system": str, "workload": str, "n": int,
               "ops_per_s": {"min": float, "median": float, "max": float} | null,
               "bytes_per_entry": float | null,
               "ops": int, "repeats": int, "note": str | null}, ...],
     "env": {...}, "skipped": [{"system": ..., "workload": ..., "n": ..., "why": ...}],
     "targets": [{"workload": ..., "n": ..., "system": ..., "versus": ..., "ratio": ...,
                  "target": ">= 3.0", "met": bool}, ...]}

``ops_per_s`` is null for ``memory``; for ``bulk-load`` and ``recovery`` it is
members per second (N / seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import peers  # noqa: E402
from peers import AROUND, INCR, PAGE, RANK, TOP, Op, Pair, System, Unavailable  # noqa: E402

WORKLOADS: tuple[str, ...] = (
    "mixed",
    "increment",
    "rank",
    "top10",
    "around",
    "page",
    "bulk-load",
    "memory",
    "recovery",
    "durable-mixed",
)
DEFAULT_SIZES: tuple[int, ...] = (10_000, 100_000, 1_000_000)
#: ``--quick``: one small board, so that the smoke check stays under a minute
#: even on a busy machine.
QUICK_SIZE = 5_000

#: Scores start uniform in [0, SCORE_RANGE): about one member per score at
#: N = 10**6, so ties exist but are short.
SCORE_RANGE = 1_000_000

#: The fewest ops a calibrated (slow) system runs per round.
MIN_OPS = 100

#: Page size and around-me reach, as in the issue.
PAGE_SIZE = 25
AROUND_REACH = 10

#: Slices per timed round (see :meth:`Harness.run_ops`).
SLICES = 10

#: fsync=always costs a disk flush per write: that system runs at most this
#: many ops per round (a prefix of the same op list).
ALWAYS_MAX_OPS = 2_000


# ----------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------
def make_pairs(n: int, seed: int) -> list[Pair]:
    """N ``(member, score)`` pairs, the same for every system."""
    rng = random.Random(seed)
    return [(m, rng.randrange(SCORE_RANGE)) for m in peers.members(n)]


def make_ops(workload: str, n: int, count: int, seed: int) -> list[Op]:
    """A seeded op list.  Members are fresh string objects (as if they had
    arrived from the network), equal to but not identical with the ones the
    systems hold."""
    rng = random.Random(seed * 1_000_003 + n)
    pick = rng.randrange

    def player() -> str:
        return f"player:{pick(n)}"

    ops: list[Op] = []
    for _ in range(count):
        if workload in ("mixed", "durable-mixed"):
            r = rng.random()
            if r < 0.8:
                ops.append((INCR, player(), rng.randint(1, 100)))
            elif r < 0.9:
                ops.append((TOP, 10, None))
            else:
                ops.append((RANK, player(), None))
        elif workload == "increment":
            ops.append((INCR, player(), rng.randint(1, 100)))
        elif workload == "rank":
            ops.append((RANK, player(), None))
        elif workload == "top10":
            ops.append((TOP, 10, None))
        elif workload == "around":
            ops.append((AROUND, player(), AROUND_REACH))
        elif workload == "page":
            ops.append((PAGE, pick(-(-n // PAGE_SIZE)) + 1, PAGE_SIZE))
        else:
            raise ValueError(workload)
    return ops


def touched_members(ops: Sequence[Op]) -> list[str]:
    """The members an op list names (increments, ranks, around-me), sorted."""
    return sorted({a for kind, a, _ in ops if kind in (INCR, RANK, AROUND)})


def slice_ops(ops: Sequence[Op], count: int, slices: int, batch: int = 1) -> list[Sequence[Op]]:
    """``ops[:count]`` cut into ``slices`` consecutive slices, each made of
    whole batches of ``batch`` ops: a pipelined system never sends a short
    batch (the tail of ``count`` that does not fill a batch is dropped).
    A ``count`` below one batch is cut as it is."""
    if count < batch:
        batch = 1
    units = count // batch
    return [
        ops[batch * (units * j // slices) : batch * (units * (j + 1) // slices)]
        for j in range(slices)
    ]


# ----------------------------------------------------------------------
# Durable boards (rankengine.durable.board), optional
# ----------------------------------------------------------------------
def durable_available() -> str | None:
    """None when :mod:`rankengine.durable.board` can be used, else the reason."""
    try:
        import rankengine.durable.board  # noqa: F401
    except ImportError as exc:
        return f"rankengine.durable.board is not available ({exc})"
    return None


class DurableRankEngine(System):
    """A durable board (``Leaderboard.open``) with one fsync policy."""

    unsupported = frozenset()

    def __init__(self, backend: str, fsync: str, snapshot_mode: str = "") -> None:
        from rankengine import Leaderboard

        suffix = f"-{snapshot_mode}" if snapshot_mode else ""
        self.name = f"rankengine-{backend}-fsync-{fsync}{suffix}"  # type: ignore[misc]
        self.dir = tempfile.mkdtemp(prefix="rankengine-bench-durable-")
        # (snapshot_mode only when asked: the library's default otherwise, and
        # an older checkout's board lacks the option)
        options = {"snapshot_mode": snapshot_mode} if snapshot_mode else {}
        self.board = Leaderboard.open(self.dir, fsync=fsync, backend=backend, **options)
        self.incr = self.board.incr  # type: ignore[method-assign]
        self.rank = self.board.rank  # type: ignore[method-assign]
        self.top = self.board.top  # type: ignore[method-assign]
        self.around = self.board.around  # type: ignore[method-assign]
        self.page = self.board.page  # type: ignore[method-assign]

    def build(self, pairs: Sequence[Pair]) -> None:
        self.board.set_many(pairs)
        self.board.snapshot()  # start from a snapshot, as a long-running server would

    def top_scores(self, k: int) -> list[float]:
        return [float(e.score) for e in self.board.top(k)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        return [None if (s := self.board.score(m)) is None else float(s) for m in members]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.board.close()  # type: ignore[attr-defined]
        shutil.rmtree(self.dir, ignore_errors=True)


# ----------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------
@dataclass
class Run:
    system: str
    workload: str
    n: int
    seconds: list[float] = field(default_factory=list)
    ops: int = 0  # ops (or members) per round
    bytes_per_entry: float | None = None
    note: str | None = None

    def rates(self) -> list[float]:
        return [self.ops / s for s in self.seconds if s > 0]

    def as_json(self) -> dict[str, Any]:
        rates = self.rates()
        return {
            "system": self.system,
            "workload": self.workload,
            "n": self.n,
            "ops_per_s": (
                {
                    "min": round(min(rates), 1),
                    "median": round(statistics.median(rates), 1),
                    "max": round(max(rates), 1),
                }
                if rates
                else None
            ),
            "bytes_per_entry": (
                None if self.bytes_per_entry is None else round(self.bytes_per_entry, 1)
            ),
            "ops": self.ops,
            "repeats": len(self.seconds),
            "note": self.note,
        }


@dataclass
class Options:
    sizes: list[int]
    workloads: list[str]
    systems: list[str]
    repeats: int
    warmup: int
    ops: int
    budget: float
    seed: int
    verbose: bool = True


class Harness:
    """Runs the workloads and collects :class:`Run` rows and skip notes."""

    def __init__(self, opts: Options, server: peers.RedisServer | None, redis_note: str) -> None:
        self.opts = opts
        self.server = server
        self.redis_note = redis_note
        self.runs: list[Run] = []
        self.skipped: list[dict[str, Any]] = []
        self._pairs: dict[int, list[Pair]] = {}
        self.started = time.perf_counter()

    # -- helpers -------------------------------------------------------
    def log(self, msg: str) -> None:
        if self.opts.verbose:
            print(msg, file=sys.stderr, flush=True)

    def skip(self, system: str, workload: str, n: int, why: str) -> None:
        self.skipped.append({"system": system, "workload": workload, "n": n, "why": why})
        self.log(f"  skip {system}: {why}")

    def pairs(self, n: int) -> list[Pair]:
        if n not in self._pairs:
            self._pairs = {n: make_pairs(n, self.opts.seed)}  # keep one size alive
        return self._pairs[n]

    def systems_for(self, workload: str, n: int) -> Iterator[tuple[str, Callable[[], System]]]:
        """(name, factory) of each wanted system that can run ``workload``."""
        for name in self.opts.systems:
            if name in peers.REDIS_SYSTEMS and self.server is None:
                self.skip(name, workload, n, self.redis_note)
                continue
            cls = peers.system_class(name)
            if workload in cls.unsupported:
                continue
            yield name, lambda name=name: peers.make_system(name, self.server)

    def open_systems(self, workload: str, n: int) -> list[System]:
        pairs = self.pairs(n)
        built: list[System] = []
        for name, factory in self.systems_for(workload, n):
            try:
                system = factory()
            except Unavailable as exc:
                self.skip(name, workload, n, str(exc))
                continue
            t0 = time.perf_counter()
            system.build(pairs)
            self.log(f"  built {name} in {time.perf_counter() - t0:.1f}s")
            built.append(system)
        return built

    def cross_check(
        self, systems: Sequence[System], when: str, members: Sequence[str] = ()
    ) -> None:
        """Every system must report the same top-10 scores, and the same
        score for each of ``members`` (the members the ops touched: an
        increment that went wrong rarely reaches the top 10)."""
        if len(systems) < 2:
            return
        first = systems[0]
        expected = first.top_scores(10)
        expected_members = first.scores_of(members)
        for system in systems[1:]:
            got = system.top_scores(10)
            if got != expected:
                raise AssertionError(
                    f"{when}: {system.name} top-10 scores {got} != {first.name} {expected}"
                )
            got_members = system.scores_of(members)
            for member, mine, theirs in zip(members, got_members, expected_members, strict=True):
                if mine != theirs:
                    raise AssertionError(
                        f"{when}: {system.name} scores {member!r} {mine} != {first.name} {theirs}"
                    )

    # -- timed op-list workloads ---------------------------------------
    def run_ops(self, workload: str, n: int, systems: list[System], ops: list[Op]) -> None:
        opts = self.opts
        warm, rest = ops[: opts.warmup], ops[opts.warmup :]
        counts: dict[str, int] = {}
        runners = {s.name: s.runner(workload) for s in systems}
        for system in systems:
            gc.collect()
            t0 = time.perf_counter()
            runners[system.name](warm)
            dt = time.perf_counter() - t0
            rate = len(warm) / dt if dt > 0 and warm else float("inf")
            limit = len(rest)
            if system.name.endswith("fsync-always"):
                limit = min(limit, ALWAYS_MAX_OPS)
            count = max(min(limit, int(rate * opts.budget)), min(MIN_OPS, limit))
            if count >= system.batch:  # whole batches only (see slice_ops)
                count -= count % system.batch
            counts[system.name] = count
        self.cross_check(systems, f"{workload} N={n} after warm-up", touched_members(warm))
        # The boards are long-lived: move them out of the collector's sight,
        # so that a full collection triggered by one system does not walk the
        # other systems' millions of objects.  New objects are collected as
        # usual.
        gc.collect()
        gc.freeze()
        results = {s.name: Run(s.name, workload, n, ops=counts[s.name]) for s in systems}
        for run in results.values():
            if run.ops < len(rest):
                run.note = f"ran the first {run.ops} of {len(rest)} ops per round (time budget)"
        # Each round is cut into SLICES slices, and the systems take turns
        # slice by slice, so a burst of load from elsewhere on the machine
        # lands on every system instead of on whichever ran then.
        slices = {s.name: slice_ops(rest, counts[s.name], SLICES, s.batch) for s in systems}
        for rnd in range(opts.repeats):
            gc.collect()
            spent = dict.fromkeys(counts, 0.0)
            for j in range(SLICES):
                shift = (rnd + j) % len(systems)
                for system in systems[shift:] + systems[:shift]:
                    chunk = slices[system.name][j]
                    run_ops = runners[system.name]
                    t0 = time.perf_counter()
                    run_ops(chunk)
                    spent[system.name] += time.perf_counter() - t0
            for name, seconds in spent.items():
                results[name].seconds.append(seconds)
        gc.unfreeze()
        for system in systems:
            self.runs.append(results[system.name])
            self.log(f"  {system.name:28} {_fmt_rates(results[system.name])}")

    def workload_ops(self, workload: str, n: int) -> None:
        systems = self.open_systems(workload, n)
        try:
            ops = make_ops(workload, n, self.opts.warmup + self.opts.ops, self.opts.seed)
            self.cross_check(systems, f"{workload} N={n} after build")
            self.run_ops(workload, n, systems, ops)
        finally:
            for system in systems:
                system.close()

    # -- bulk load -----------------------------------------------------
    def workload_bulk_load(self, n: int) -> None:
        pairs = self.pairs(n)
        names = [name for name, _ in self.systems_for("bulk-load", n)]
        results: dict[str, Run] = {}
        warm = pairs[:1000]  # round 0 warms each system up on a small board
        for rnd in range(self.opts.repeats + 1):
            shift = rnd % max(len(names), 1)
            for name in names[shift:] + names[:shift]:
                if name in {
                    s["system"]
                    for s in self.skipped
                    if s["n"] == n and s["workload"] == "bulk-load"
                }:
                    continue
                try:
                    system = peers.make_system(name, self.server)
                except Unavailable as exc:
                    self.skip(name, "bulk-load", n, str(exc))
                    continue
                gc.collect()
                t0 = time.perf_counter()
                system.build(pairs if rnd else warm)
                dt = time.perf_counter() - t0
                system.close()
                del system
                if rnd:
                    results.setdefault(name, Run(name, "bulk-load", n, ops=n)).seconds.append(dt)
        for name in names:
            if name in results:
                self.runs.append(results[name])
                self.log(f"  {name:28} {_fmt_rates(results[name])}")

    # -- memory --------------------------------------------------------
    def workload_memory(self, n: int) -> None:
        seed = self.opts.seed
        for name, factory in self.systems_for("memory", n):
            try:
                system = factory()
            except Unavailable as exc:
                self.skip(name, "memory", n, str(exc))
                continue
            gc.collect()
            if isinstance(system, peers.Redis):
                before = system.server.used_memory()
                system.build(make_pairs(n, seed))
                used = system.server.used_memory() - before
                note = "INFO memory used_memory delta"
            elif isinstance(system, peers.SQLite):
                system.build(make_pairs(n, seed))
                used = system.database_bytes()
                note = "page_count * page_size (table, primary key and score index)"
            else:
                tracemalloc.start()
                base = tracemalloc.get_traced_memory()[0]
                fresh = make_pairs(n, seed)  # member strings allocated under tracing
                system.build(fresh)
                del fresh
                gc.collect()
                used = tracemalloc.get_traced_memory()[0] - base
                tracemalloc.stop()
                note = "tracemalloc, member strings and scores included"
            system.close()
            del system
            run = Run(name, "memory", n, ops=0, bytes_per_entry=used / n, note=note)
            self.runs.append(run)
            self.log(f"  {name:28} {used / n:8.1f} bytes/entry")

    # -- recovery ------------------------------------------------------
    def workload_recovery(self, n: int) -> None:
        pairs = self.pairs(n)
        why = durable_available()
        timers: dict[str, Callable[[], float]] = {}
        cleanups: list[Callable[[], None]] = []
        for name, factory in self.systems_for("recovery", n):
            if name.startswith("rankengine-"):
                if why is not None:
                    self.skip(name, "recovery", n, why)
                    continue
                backend = name.removeprefix("rankengine-")
                timers[name] = self._durable_timer(backend, pairs, cleanups)
            else:
                try:
                    system = factory()
                except Unavailable as exc:
                    self.skip(name, "recovery", n, str(exc))
                    continue
                if not isinstance(system, peers.Redis):
                    continue
                system.build(pairs)
                timers[name] = system.reload_seconds
                cleanups.append(system.close)
        try:
            results = {name: Run(name, "recovery", n, ops=n) for name in timers}
            names = list(timers)
            for rnd in range(self.opts.repeats + 1):
                shift = rnd % max(len(names), 1)
                for name in names[shift:] + names[:shift]:
                    gc.collect()
                    dt = timers[name]()
                    if rnd:
                        results[name].seconds.append(dt)
            for name in names:
                results[name].note = (
                    "DEBUG RELOAD (RDB save + load)"
                    if name == "redis"
                    else "snapshot save + load (Leaderboard.open)"
                )
                self.runs.append(results[name])
                self.log(f"  {name:28} {_fmt_rates(results[name])}")
        finally:
            for cleanup in cleanups:
                cleanup()

    def _durable_timer(
        self, backend: str, pairs: list[Pair], cleanups: list[Callable[[], None]]
    ) -> Callable[[], float]:
        from rankengine import Leaderboard

        directory = tempfile.mkdtemp(prefix="rankengine-bench-recovery-")
        cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
        state = {"board": Leaderboard.open(directory, fsync="never", backend=backend)}
        state["board"].set_many(pairs)

        touch = pairs[0][0]

        def timer() -> float:
            board = state["board"]
            # One logged change first (untimed): a snapshot of an unchanged
            # board is a no-op, and every round must write all N members.
            board.incr(touch, 1)
            t0 = time.perf_counter()
            board.snapshot()
            board.close()
            state["board"] = Leaderboard.open(directory, fsync="never", backend=backend)
            return time.perf_counter() - t0

        def close() -> None:
            state["board"].close()  # the board current at the end, not this one

        cleanups.insert(0, close)
        return timer

    # -- durable mixed -------------------------------------------------
    def workload_durable_mixed(self, n: int) -> None:
        why = durable_available()
        backends = [  # the in-process boards only: rankengine-redis has its own durability
            name.removeprefix("rankengine-")
            for name in self.opts.systems
            if name.startswith("rankengine-") and name in peers.PYTHON_SYSTEMS
        ]
        if why is not None:
            for backend in backends:
                self.skip(f"rankengine-{backend}-fsync-*", "durable-mixed", n, why)
            return
        pairs = self.pairs(n)
        systems: list[System] = []
        with contextlib.ExitStack() as servers:
            for backend in backends:
                memory = peers.make_system(f"rankengine-{backend}", None)
                systems.append(memory)
                for fsync in ("everysec", "always"):
                    systems.append(DurableRankEngine(backend, fsync))
            if "redis" in self.opts.systems and self.server is not None:
                # Redis with an append-only file under the same two policies,
                # each in its own server so that the fsyncs do not mix.
                systems.append(peers.Redis(self.server))
                for fsync in ("everysec", "always"):
                    server = servers.enter_context(peers.RedisServer(appendfsync=fsync))
                    systems.append(peers.RedisAOF(server))
            try:
                self._durable_mixed(n, pairs, systems)
            finally:
                for system in systems:
                    system.close()

    def _durable_mixed(self, n: int, pairs: list[Pair], systems: list[System]) -> None:
        for system in systems:
            system.build(pairs)
        ops = make_ops("durable-mixed", n, self.opts.warmup + self.opts.ops, self.opts.seed)
        self.run_ops("durable-mixed", n, systems, ops)

    # -- driver --------------------------------------------------------
    def run_all(self, after_each: Callable[[], None] | None = None) -> None:
        """Every workload at the smallest N first, then the next N: a run cut
        short still has complete results for the smaller sizes.
        ``after_each`` is called after every (N, workload) group."""
        for n in self.opts.sizes:
            for workload in self.opts.workloads:
                self.log(f"{workload} N={n:,}  (t={time.perf_counter() - self.started:.0f}s)")
                if self.server is not None:
                    self.server.client().flushall()
                if workload == "bulk-load":
                    self.workload_bulk_load(n)
                elif workload == "memory":
                    self.workload_memory(n)
                elif workload == "recovery":
                    self.workload_recovery(n)
                elif workload == "durable-mixed":
                    self.workload_durable_mixed(n)
                else:
                    self.workload_ops(workload, n)
                gc.collect()
                if after_each is not None:
                    after_each()


# ----------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------
def _fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.1f}"


def _fmt_rates(run: Run) -> str:
    if run.bytes_per_entry is not None:
        return f"{run.bytes_per_entry:.1f} B/entry"
    rates = run.rates()
    if not rates:
        return "-"
    return (
        f"median {_fmt_rate(statistics.median(rates)):>7}/s  "
        f"(min {_fmt_rate(min(rates))}, max {_fmt_rate(max(rates))}, {run.ops} ops x "
        f"{len(rates)})"
    )


#: The system each workload's ratio column divides by: the naive recipe,
#: except where the target names another peer.
BASELINES: dict[str, tuple[str, ...]] = {
    "memory": ("redis", "sortedcontainers-naive"),
    "recovery": ("redis",),
    "durable-mixed": ("rankengine-sortedlist", "rankengine-skiplist", "redis"),
}
DEFAULT_BASELINE = ("sortedcontainers-naive",)


def _baseline(workload: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    for name in BASELINES.get(workload, DEFAULT_BASELINE):
        for row in rows:
            if row["system"] == name:
                return row
    return None


def table(runs: Sequence[dict[str, Any]]) -> str:
    """A plain-text table: one block per (workload, N), with a ratio column."""
    lines: list[str] = []
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["workload"], run["n"]), []).append(run)
    for (workload, n), rows in groups.items():
        base_row = _baseline(workload, rows)
        vs = f"vs {base_row['system']}" if base_row else ""
        lines.append(f"\n{workload}  N={n:,}")
        if workload == "memory":
            base = base_row["bytes_per_entry"] if base_row else None
            lines.append(f"{'system':36} {'bytes/entry':>12}   {vs}")
            for r in rows:
                b = r["bytes_per_entry"]
                ratio = f"{b / base:.2f}x" if base else ""
                lines.append(f"{r['system']:36} {b:12.1f}   {ratio}")
            continue
        unit = "members/s" if workload in ("bulk-load", "recovery") else "ops/s"
        lines.append(f"{'system':36} {'median':>9} {'min':>9} {'max':>9}   {vs}  ({unit})")
        base = None
        if base_row and base_row["ops_per_s"]:
            base = base_row["ops_per_s"]["median"]
        for r in rows:
            rate = r["ops_per_s"]
            if rate is None:
                continue
            ratio = f"{rate['median'] / base:.2f}x" if base else ""
            lines.append(
                f"{r['system']:36} {_fmt_rate(rate['median']):>9} {_fmt_rate(rate['min']):>9} "
                f"{_fmt_rate(rate['max']):>9}   {ratio}"
            )
    return "\n".join(lines)


# ----------------------------------------------------------------------
# Targets (from the issue), checked on the largest N of a run
# ----------------------------------------------------------------------
RE_BACKENDS = ("rankengine-sortedlist", "rankengine-skiplist")

#: (workload, numerator, denominator, bound): the ratio of median ops/s
#: (bytes per entry for memory) must be >= bound, or <= bound for memory.
#: A numerator of "best" is the faster rankengine backend.
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("mixed", "best", "sortedcontainers-naive", 3.0),
    ("mixed", "best", "redis", 10.0),
    ("mixed", "best", "redis-pipelined", 2.0),
    # the Redis board's guarantees over the raw sorted set (issue 26)
    *(
        (workload, "rankengine-redis", "redis", 0.8)
        for workload in ("mixed", "rank", "top10", "around")
    ),
    *(
        (workload, "rankengine-redis-pipelined", "redis-pipelined", 0.8)
        for workload in ("mixed", "rank", "top10", "around")
    ),
    ("mixed", "rankengine-skiplist", "pyskiplist", 4.0),
    ("mixed", "rankengine-skiplist", "sortedcontainers-naive", 0.5),
    *(
        (workload, backend, "sortedcontainers-naive", 1.0)
        for workload in ("rank", "top10", "around", "page")
        for backend in RE_BACKENDS
    ),
    ("memory", "rankengine-sortedlist", "redis", 1.4),
    ("memory", "rankengine-skiplist", "redis", 2.0),
    *(("recovery", backend, "redis", 1.0) for backend in RE_BACKENDS),
    *(("durable-mixed", f"{backend}-fsync-everysec", backend, 0.7) for backend in RE_BACKENDS),
)


def check_targets(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target's ratio at the largest N where both sides were measured."""
    value: dict[tuple[str, str, int], float] = {}
    for r in runs:
        if r["workload"] == "memory":
            if r["bytes_per_entry"] is not None:
                value[r["workload"], r["system"], r["n"]] = r["bytes_per_entry"]
        elif r["ops_per_s"] is not None:
            value[r["workload"], r["system"], r["n"]] = r["ops_per_s"]["median"]
    out: list[dict[str, Any]] = []
    for workload, num, den, bound in TARGETS:
        sizes = sorted({n for (w, _, n) in value if w == workload}, reverse=True)
        for n in sizes:
            nums = [num] if num != "best" else list(RE_BACKENDS)
            got = [(value[workload, x, n], x) for x in nums if (workload, x, n) in value]
            if not got or (workload, den, n) not in value:
                continue
            top, system = max(got)
            ratio = top / value[workload, den, n]
            upper = workload == "memory"
            out.append(
                {
                    "workload": workload,
                    "n": n,
                    "system": system,
                    "versus": den,
                    "ratio": round(ratio, 3),
                    "target": f"{'<=' if upper else '>='} {bound}",
                    "met": ratio <= bound if upper else ratio >= bound,
                }
            )
            break
    return out


def targets_table(targets: Sequence[dict[str, Any]]) -> str:
    lines = [f"\n{'target':80} {'ratio':>7} {'goal':>7}"]
    for t in targets:
        what = f"{t['workload']} N={t['n']:,}: {t['system']} / {t['versus']}"
        mark = "met" if t["met"] else "MISSED"
        lines.append(f"{what:80} {t['ratio']:7.2f} {t['target']:>7}  {mark}")
    return "\n".join(lines)


def _public_args(argv: list[str]) -> list[str]:
    """The command line as recorded: an absolute ``--json`` path (private to
    the machine that ran it) is shown by file name only."""

    def shown(path: str) -> str:
        return Path(path).name if Path(path).is_absolute() else path

    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--json":
            out += [arg, shown(next(args, ""))]
        elif arg.startswith("--json="):
            out.append("--json=" + shown(arg.split("=", 1)[1]))
        else:
            out.append(arg)
    return out


def environment(opts: Options, server: peers.RedisServer | None, argv: list[str]) -> dict[str, Any]:
    def version(module: str) -> str | None:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return None

    commit = None
    with contextlib.suppress(Exception):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    dirty = None
    with contextlib.suppress(Exception):
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "rankengine"],
                cwd=HERE.parent,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    cpu = platform.processor() or None
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    load = None
    with contextlib.suppress(OSError):
        load = [round(x, 2) for x in os.getloadavg()]  # 1, 5 and 15 minute averages
    return {
        "command": "python bench/compare.py " + " ".join(_public_args(argv)),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),  # the start
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load,
        "rankengine_commit": commit,
        "rankengine_uncommitted_changes": dirty,
        "sortedcontainers": version("sortedcontainers"),
        "pyskiplist": version("pyskiplist"),
        "redis_py": version("redis"),
        "hiredis": version("hiredis"),
        "redis_server": getattr(server, "version", None),
        "sqlite": sqlite3.sqlite_version,
        "sizes": opts.sizes,
        "repeats": opts.repeats,
        "warmup_ops": opts.warmup,
        "ops": opts.ops,
        "budget_s": opts.budget,
        "seed": opts.seed,
    }


def _whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _sizes(text: str) -> list[int]:
    """An argparse type: comma-separated N values, each at least 1."""
    return [_whole(1)(x.strip()) for x in text.split(",") if x.strip()]


def _seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def parse_args(argv: list[str]) -> tuple[Options, str | None]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke check: N=5000, few ops")
    p.add_argument(
        "--sizes", type=_sizes, help="comma-separated N values (default 10000,100000,1000000)"
    )
    p.add_argument("--workloads", help=f"comma-separated subset of {','.join(WORKLOADS)}")
    p.add_argument("--systems", help=f"comma-separated subset of {','.join(peers.ALL_SYSTEMS)}")
    p.add_argument("--repeats", type=_whole(1), help="timed rounds per system (default 5)")
    p.add_argument("--warmup", type=_whole(0), help="warm-up ops per system (default 300)")
    p.add_argument("--ops", type=_whole(1), help="ops per round (default 100000)")
    p.add_argument("--budget", type=_seconds, help="seconds per round before a slow system is cut")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--json", metavar="PATH", help="write machine-readable results here")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    quick = args.quick

    def csv(text: str | None, default: Sequence[str], known: Sequence[str], what: str) -> list[str]:
        if not text:
            return list(default)
        items = [x.strip() for x in text.split(",") if x.strip()]
        for item in items:
            if item not in known:
                p.error(f"unknown {what} {item!r}; known: {', '.join(known)}")
        return items

    sizes = args.sizes or ([QUICK_SIZE] if quick else list(DEFAULT_SIZES))
    opts = Options(
        sizes=sizes,
        workloads=csv(args.workloads, WORKLOADS, WORKLOADS, "workload"),
        systems=csv(args.systems, peers.ALL_SYSTEMS, peers.ALL_SYSTEMS, "system"),
        repeats=args.repeats if args.repeats is not None else (3 if quick else 5),
        warmup=args.warmup if args.warmup is not None else (100 if quick else 300),
        ops=args.ops if args.ops is not None else (2_000 if quick else 100_000),
        budget=args.budget if args.budget is not None else (0.04 if quick else 1.0),
        seed=args.seed,
        verbose=not args.quiet,
    )
    return opts, args.json


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the ExitStack: servers are stopped


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    opts, json_path = parse_args(argv)
    started = time.perf_counter()
    wants_redis = any(s in peers.REDIS_SYSTEMS for s in opts.systems)
    with contextlib.ExitStack() as stack:
        server: peers.RedisServer | None = None
        note = ""
        if wants_redis:
            try:
                server = stack.enter_context(peers.RedisServer())
            except Unavailable as exc:
                note = str(exc)
                print(f"note: Redis peers skipped: {note}", file=sys.stderr)
        harness = Harness(opts, server, note)

        # Taken before the run: the code measured is the code at the start.
        env_at_start = environment(opts, server, argv)

        def results(complete: bool) -> dict[str, Any]:
            env = dict(env_at_start)
            with contextlib.suppress(OSError):
                env["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
            env["elapsed_s"] = round(time.perf_counter() - started, 1)
            env["complete"] = complete
            rows = [run.as_json() for run in harness.runs]
            return {
                "runs": rows,
                "env": env,
                "skipped": harness.skipped,
                "targets": check_targets(rows),
            }

        def save(complete: bool = False) -> dict[str, Any]:
            out = results(complete)
            if json_path:  # rewritten after every group: a cut-short run keeps its results
                Path(json_path).parent.mkdir(parents=True, exist_ok=True)
                Path(json_path).write_text(json.dumps(out, indent=1) + "\n")
            return out

        harness.run_all(after_each=save)
        out = save(complete=True)
    print(table(out["runs"]))
    if out["targets"]:
        print(targets_table(out["targets"]))
    notes = {(s["system"], s["why"]) for s in harness.skipped}
    for system, why in sorted(notes):
        print(f"note: skipped {system}: {why}")
    print(f"\n{out['env']['elapsed_s']} s, {out['env']['command']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
