"""The slowest call: latency percentiles under a fixed request rate.

Usage (from the repository root)::

    python bench/latency.py --quick                  # smoke run, about a minute
    python bench/latency.py                          # N = 1,000,000, every system
    python bench/latency.py --systems noop,rankengine-sortedlist-fsync-everysec \\
        --rates 0.5 --duration 60 --json docs/bench/latency.json
    python bench/plot.py --latency docs/bench/latency.json   # the percentile chart

Method (see ``docs/performance.md#latency-under-a-fixed-rate``):

* **Open loop.**  Operation ``i`` of a run at rate ``R`` is *scheduled* at
  ``start + i / R``; the harness waits for that moment (sleeping with the
  timer slack at 1 ns, then spinning the last ~40 us on a zero-timeout
  ``select``: either way it lets go of the GIL, as a server idle in its
  event loop does, so that background threads run), calls the system, and
  records
  ``end - scheduled``.  A stall is therefore charged to every operation it
  delayed, not only to the one that met it: this is the correction
  wrk2 and YCSB made for *coordinated omission* (a closed loop stops sending
  while it waits for a slow reply, and never measures the queue it caused).
* **HdrHistogram.**  Latencies are kept in nanoseconds and recorded after
  the run into an HdrHistogram bucketing (:class:`LatencyHistogram`: three
  significant digits, as ``wrk2`` and ``memtier_benchmark`` report); with
  ``--hdr`` the JSON carries each histogram in the standard compressed form
  (``HISTFAAA...``, decodable by any HdrHistogram library), through the
  ``hdrhistogram`` package (a ``[bench]`` extra).
* **Mix.**  :data:`MIX`: increments (of which :data:`NEW_SHARE` go to new
  players, so that new containers are made and the garbage collector runs
  as in a live game), rank, top 10 and around-me (10 above, 10 below);
  percentiles are reported per operation type and for all together.
* **Rates.**  The sorted-list board in memory runs first, closed loop, to
  find its *saturation* rate S (operations per second back to back); every
  system then runs at the same absolute rates, ``--rates`` fractions of S.
  ``--saturation-of SYSTEM`` takes S from another system instead (e.g.
  ``rankengine-sortedlist-fsync-everysec``: each rate is then that share of
  the durable board's own capacity); the JSON names it
  (``saturation_system``).
  A run whose lag passes :data:`MAX_LAG_S` is stopped and marked
  ``saturated`` (its latencies are then the queue, not the system).
* **One process per system**, fresh (the collector's state, ``gc.freeze()``
  and a fork's cost are per process), building the same seeded board.
* **Durable runs** (``-fsync-everysec``, ``-fsync-always``): at a third of
  each run a maintenance thread calls ``board.snapshot()``, and at two
  thirds (or once the snapshot has returned) it starts the board's own
  background compaction; both are in the JSON (``events``; a compaction
  still running when the run ends is not listed).  A suffix names the
  ``snapshot_mode`` (without one, the library's default): ``-slices``
  (``rankengine-sortedlist-fsync-everysec-slices``: read in slices in the
  serving process), ``-fork`` (a forked child writes both) or ``-replay``
  (a fresh process replays the log to build them).
* **The no-op system** runs the same loop with calls that do nothing: the
  machine's and the harness's own jitter, the floor no system can beat here.
* ``@freeze`` after a system name calls ``gc.freeze()`` once the board is
  loaded; ``@tick-freeze`` also calls it once a second from the loop (the
  collector advice in ``docs/performance.md``).

No wall-clock figure here is a pass/fail test.

JSON output (stable; ``bench/plot.py --latency`` reads it)::

    {"version": 1, "n": int, "duration_s": float, "mix": {kind: share},
     "new_share": float, "saturation_ops_per_s": float,
     "saturation_system": str | null, "rates": [float],
     "env": {...},
     "runs": [{"system": str, "gc": "as-is" | "freeze" | "tick-freeze",
               "rate": float, "achieved": float, "ops": int,
               "saturated": bool, "events": [{"what": str, "at_s": float,
               "took_ms": float}],
               "gc_full": {"count": int, "longest_ms": float},
               "latency": {kind: {"count": int, "p50_us": float,
                                   "p90_us": float, "p99_us": float,
                                   "p99.9_us": float, "p99.99_us": float,
                                   "max_us": float,
                                   "spectrum": [[percentile, us], ...],
                                   "hdr": str | null}}}],
     "skipped": [{"system": str, "why": str}]}

``kind`` is ``increment``, ``rank``, ``top10``, ``around`` or ``all``.
Percentiles are HdrHistogram's (the highest value equivalent to the bucket
the percentile falls in, within 0.1%); ``max_us`` is exact.
``saturation_ops_per_s`` is 0 and ``saturation_system`` null under
``--rate-abs`` (not measured).  With
``--thread-cpu`` a run also has ``"thread_cpu": {"summary": {thread:
{"total_ms", "max_ms", "max_at_s"}}, "samples": [[t_s, {thread: cpu_ms}]],
"main_switches": [[voluntary, involuntary]], "max_latency_ms": [float],
"backlog_service_us": [[median_us, count]]}``, a row per 100 ms (of the
clock for the first three, of the schedule for the last two; see
``bench/thread_cpu.py`` and :func:`backlog_service`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import random
import select
import subprocess
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hdr_histogram import LatencyHistogram
from thread_cpu import ThreadCPU, summarize

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

#: Operation kinds of the op list (their names are the JSON keys).
INCR, NEW, RANK, TOP, AROUND = range(5)
KIND_NAMES: dict[int, str] = {
    INCR: "increment",
    NEW: "increment",
    RANK: "rank",
    TOP: "top10",
    AROUND: "around",
}

#: The game-server mix: share of each operation (increments include the new
#: players, see NEW_SHARE).
MIX: dict[str, float] = {"increment": 0.8, "rank": 0.1, "top10": 0.05, "around": 0.05}

#: Share of the writes that add a new player (``incr`` of a member never
#: seen): new containers, so the collector runs as in a growing game.
NEW_SHARE = 0.2

#: Rows above and below the player in around-me; rows in a top-k.
AROUND_REACH = 10
TOP_K = 10

#: Scores start uniform in [0, SCORE_RANGE) (as in compare.py).
SCORE_RANGE = 1_000_000

#: Length of the pre-made op list, cycled through (a power of two: the loop
#: indexes it with a mask).  New players get fresh names in the loop.
OP_CYCLE = 1 << 17

#: A run whose lag (now minus the scheduled start) passes this is stopped
#: and marked saturated: the system cannot keep up with the rate.  (Long
#: enough that a stall of a few seconds, an old-style compaction at
#: N = 10**6, is measured whole and drains.)
MAX_LAG_S = 10.0

#: Waits longer than this sleep (then spin the rest on :func:`release_gil`),
#: leaving the GIL to background threads as a server idle in its event loop
#: does.  With the timer slack at 1 ns (:func:`tight_timer_slack`) a sleep
#: oversleeps by ~8 us at the median and ~60 us at the 99th percentile here,
#: hence the margin; shorter waits spin.
SLEEP_MIN_NS = 60_000
SLEEP_MARGIN_NS = 40_000

#: Closed-loop seconds that measure a system's saturation rate.
SATURATION_S = 3.0

#: Linux prctl option that sets the timer slack (linux/prctl.h).
PR_SET_TIMERSLACK = 29

DEFAULT_SYSTEMS: tuple[str, ...] = (
    "rankengine-sortedlist",
    "noop",
    "rankengine-skiplist",
    "rankengine-skiplist@freeze",
    "rankengine-sortedlist-fsync-everysec",
    "rankengine-sortedlist-fsync-always",
    "rankengine-skiplist-fsync-everysec@freeze",
    "rankengine-skiplist-fsync-always@freeze",
    "sortedcontainers-naive",
    "redis",
    "redis-hiredis",
)
GC_MODES = ("as-is", "freeze", "tick-freeze")


# ----------------------------------------------------------------------
# Inputs and schedule
# ----------------------------------------------------------------------
def make_ops(n: int, seed: int, count: int = OP_CYCLE) -> list[tuple[int, Any, Any]]:
    """A seeded op list of the :data:`MIX`; members are fresh strings."""
    rng = random.Random(seed * 1_000_003 + n)
    ops: list[tuple[int, Any, Any]] = []
    writes = MIX["increment"]
    rank_to = writes + MIX["rank"]
    top_to = rank_to + MIX["top10"]
    for _ in range(count):
        r = rng.random()
        if r < writes:
            kind = NEW if rng.random() < NEW_SHARE else INCR
            ops.append((kind, f"player:{rng.randrange(n)}", rng.randint(1, 100)))
        elif r < rank_to:
            ops.append((RANK, f"player:{rng.randrange(n)}", None))
        elif r < top_to:
            ops.append((TOP, TOP_K, None))
        else:
            ops.append((AROUND, f"player:{rng.randrange(n)}", AROUND_REACH))
    return ops


def tight_timer_slack() -> bool:
    """Set this process's timer slack to 1 ns (Linux ``prctl``), so that a
    short sleep ends when asked: the default 50 us slack makes even
    ``time.sleep(0)`` cost ~60 us.  False where it cannot be set."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def release_gil() -> None:
    """Let go of the GIL for a moment without giving up the CPU: a
    zero-timeout ``select`` (~1.7 us here).  ``time.sleep(0)`` costs ~60 us
    (the kernel's timer slack) and ``os.sched_yield()`` hands the core to
    whatever else is runnable on a shared machine, for milliseconds."""
    select.select([], [], [], 0)


def scheduled_ns(i: int, rate: float) -> int:
    """Offset of operation ``i`` from the run's start at ``rate`` per second.

    >>> [scheduled_ns(i, 4.0) for i in range(3)]
    [0, 250000000, 500000000]
    """
    return int(i * 1e9 / rate)


@dataclass
class Outcome:
    """What one open-loop run recorded."""

    latencies: array[int]  # ns from the scheduled start to the reply
    kinds: array[int]  # the op kind of each
    seconds: float  # wall time of the run
    saturated: bool
    events: list[dict[str, Any]] = field(default_factory=list)

    def histograms(self) -> dict[str, LatencyHistogram]:
        out = {name: LatencyHistogram() for name in (*MIX, "all")}
        for latency, kind in zip(self.latencies, self.kinds, strict=True):
            out[KIND_NAMES[kind]].record(latency)
            out["all"].record(latency)
        return out


def open_loop(
    call: Callable[[int, Any, Any], Any],
    ops: Sequence[tuple[int, Any, Any]],
    rate: float,
    count: int,
    *,
    clock: Callable[[], int] = time.perf_counter_ns,
    wait: Callable[[float], None] = time.sleep,
    spin: Callable[[], None] | None = None,
    tick: Callable[[float], None] | None = None,
    new_prefix: str = "new",
) -> Outcome:
    """Run ``count`` ops at ``rate`` per second, each from its scheduled start.

    ``call(kind, a, b)`` performs one op; ``ops`` is cycled through (its
    length a power of two); a NEW op names a fresh member
    ``<new_prefix>:<k>``.  ``tick(seconds_since_start)`` runs between ops
    once a second (the maintenance a game loop does: ``gc.freeze()``), its
    time charged to the ops it delays.  The run stops early, ``saturated``,
    once an op ends :data:`MAX_LAG_S` after its scheduled start.
    """
    mask = len(ops) - 1
    if len(ops) & mask:
        raise ValueError("the op list's length must be a power of two")
    if spin is None:
        spin = release_gil
    latencies = array("q", bytes(8 * count))
    kinds = array("b", bytes(count))
    max_lag = int(MAX_LAG_S * 1e9)
    interval = 1e9 / rate
    new = 0
    next_tick = 1.0
    start = clock() + 1_000_000  # 1 ms from now
    saturated = False
    done = count
    for i in range(count):
        due = start + int(i * interval)
        now = clock()
        if now < due:
            if due - now > SLEEP_MIN_NS:
                wait((due - now - SLEEP_MARGIN_NS) / 1e9)
            while clock() < due:
                spin()
        kind, a, b = ops[i & mask]
        if kind == NEW:
            new += 1
            a = f"{new_prefix}:{new}"
        call(kind, a, b)
        end = clock()
        latencies[i] = end - due
        kinds[i] = kind
        if end - due > max_lag:
            saturated, done = True, i + 1
            break
        if tick is not None and (due - start) / 1e9 >= next_tick:
            tick(next_tick)
            next_tick += 1.0
    seconds = (clock() - start) / 1e9
    return Outcome(latencies[:done], kinds[:done], seconds, saturated)


def closed_loop_rate(
    call: Callable[[int, Any, Any], Any],
    ops: Sequence[tuple[int, Any, Any]],
    seconds: float,
    *,
    new_prefix: str = "sat",
) -> float:
    """Operations per second back to back (the saturation rate)."""
    mask = len(ops) - 1
    done = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for j in range(1000):
            kind, a, b = ops[(done + j) & mask]
            if kind == NEW:
                a = f"{new_prefix}:{done + j}"
            call(kind, a, b)
        done += 1000
    return done / (time.perf_counter() - t0)


# ----------------------------------------------------------------------
# Systems (in the child process)
# ----------------------------------------------------------------------
def parse_system(spec: str) -> tuple[str, str]:
    """``name[@gc]`` -> ``(name, gc mode)``.

    >>> parse_system("rankengine-skiplist@freeze")
    ('rankengine-skiplist', 'freeze')
    >>> parse_system("redis")
    ('redis', 'as-is')
    """
    name, _, mode = spec.partition("@")
    mode = mode or "as-is"
    if mode not in GC_MODES:
        raise ValueError(f"{spec!r}: unknown gc mode {mode!r} (choose from {', '.join(GC_MODES)})")
    return name, mode


class NoOp:
    """The harness alone: every call returns at once."""

    name = "noop"

    def build(self, pairs: Sequence[tuple[str, int]]) -> None:
        self.kept = pairs  # hold as much as the others do, roughly

    def close(self) -> None:
        pass


def make_system(name: str, stack: contextlib.ExitStack) -> Any:
    """An empty system by name (Redis gets its own server)."""
    import peers

    if name == "noop":
        return NoOp()
    if "-fsync-" in name:
        import compare

        # (a "-slices", "-fork" or "-replay" suffix: that snapshot_mode; none:
        # the library's default)
        backend, policy = name.removeprefix("rankengine-").split("-fsync-")
        policy, _, mode = policy.partition("-")
        return compare.DurableRankEngine(backend, policy, mode)
    if name in peers.REDIS_SYSTEMS:
        server = stack.enter_context(peers.RedisServer())
        return peers.make_system(name, server)
    return peers.make_system(name, None)


def dispatcher(system: Any) -> Callable[[int, Any, Any], Any]:
    """One ``call(kind, a, b)`` for every system: the same branches for all."""
    if isinstance(system, NoOp):

        def noop(kind: int, a: Any, b: Any) -> None:
            if kind <= NEW:
                return
            if kind == RANK:
                return
            if kind == TOP:
                return
            return

        return noop
    incr, rank, top, around = system.incr, system.rank, system.top, system.around

    def call(kind: int, a: Any, b: Any) -> Any:
        if kind <= NEW:
            return incr(a, b)
        if kind == RANK:
            return rank(a)
        if kind == TOP:
            return top(a)
        return around(a, b, b)

    return call


class Maintenance(threading.Thread):
    """A durable board's ``snapshot()`` at a third of the run (from this
    thread, as a server's maintenance thread would call it), and the board's
    own background compaction started at two thirds (or as soon as the
    snapshot has returned, if later); both timed (``events``)."""

    def __init__(self, board: Any, seconds: float) -> None:
        super().__init__(name="latency-maintenance", daemon=True)
        self.board, self.seconds = board, seconds
        self.events: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.t0 = time.perf_counter()

    def _event(self, what: str, t: float) -> None:
        self.events.append(
            {
                "what": what,
                "at_s": round(t - self.t0, 3),
                "took_ms": round((time.perf_counter() - t) * 1e3, 1),
            }
        )

    def run(self) -> None:
        board = self.board
        if self.stop.wait(self.seconds / 3):
            return
        t = time.perf_counter()
        board.snapshot()
        self._event("snapshot", t)
        if self.stop.wait(max(self.t0 + 2 * self.seconds / 3 - time.perf_counter(), 0)):
            return
        # Bench-only reach into the board: make its automatic compaction due
        # now and start it the way a write that crosses the threshold does.
        board._compact_ratio = 0.0
        board._compact_min = board._compact_after = 0
        t = time.perf_counter()
        with board._lock:
            board._maybe_start_compaction(board._writer)
        started = board._compactor is not None
        board._compact_min = None  # once
        while started and not self.stop.wait(0.005):
            if board._compactor is None:
                self._event("compaction", t)
                return


#: An op that ended this late (ns) had the next one waiting: the next one's
#: start is the previous one's end, so its service time can be read off.
BACKLOG_NS: Final = 200_000


def backlog_service(lat: Sequence[int], rate: float, per: int) -> list[list[float]]:
    """Per ``per`` scheduled ops: ``[median us, count]`` of the service time of
    the ops that started as soon as the previous one ended (it ended late by
    more than :data:`BACKLOG_NS`): ``end[i] - end[i - 1]``, the op's own
    time plus the harness's, whatever else the thread waited for.  (Their
    mean over a backlog that builds and drains is the schedule's interval,
    whatever the ops cost: the median is the typical op's cost.)

    >>> backlog_service([0, 400_000, 410_000, 405_000, 406_000], 1e5, 5)
    [[11.0, 3]]
    """
    interval = 1e9 / rate
    out: list[list[float]] = []
    for j in range(0, len(lat), per):
        took = [
            lat[i] - lat[i - 1] + interval
            for i in range(max(j, 1), min(j + per, len(lat)))
            if lat[i - 1] > BACKLOG_NS
        ]
        took.sort()
        out.append([round(took[len(took) // 2] / 1e3, 2) if took else 0.0, len(took)])
    return out


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One system, every rate, in this (fresh) process; the JSON result."""
    name, mode = parse_system(args.child)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    if args.code:  # another checkout's rankengine package (--baseline)
        sys.path.insert(0, args.code)
    rng = random.Random(args.seed)
    pairs = [(f"player:{i}", rng.randrange(SCORE_RANGE)) for i in range(args.n)]
    ops = make_ops(args.n, args.seed)
    full: list[int] = []
    started = [0]

    def on_collection(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.perf_counter_ns()
            else:
                full.append(time.perf_counter_ns() - started[0])

    result: dict[str, Any] = {
        "system": name,
        "gc": mode,
        "runs": [],
        "timer_slack_1ns": tight_timer_slack(),
    }
    with contextlib.ExitStack() as stack:
        system = make_system(name, stack)
        stack.callback(system.close)
        system.build(pairs)
        del pairs
        call = dispatcher(system)
        # warm-up: every op kind, a few thousand times
        for op in ops[:5000]:
            call(*op)
        gc.collect()
        if mode != "as-is":
            gc.freeze()
        tick = (lambda _s: gc.freeze()) if mode == "tick-freeze" else None
        if args.saturation:
            result["saturation_ops_per_s"] = round(closed_loop_rate(call, ops, SATURATION_S), 1)
        board = getattr(system, "board", None)
        durable = hasattr(board, "snapshot")
        for k, rate in enumerate(args.rate):
            count = int(rate * args.duration)
            maintenance = None
            if durable:
                maintenance = Maintenance(board, args.duration)
                maintenance.start()
            full.clear()
            sampler = ThreadCPU() if args.thread_cpu else None
            if sampler is not None:
                sampler.start()
            gc.callbacks.append(on_collection)
            try:
                outcome = open_loop(call, ops, rate, count, tick=tick, new_prefix=f"new{k}")
            finally:
                gc.callbacks.remove(on_collection)
                if sampler is not None:
                    sampler.stop.set()
                    sampler.join()
            if maintenance is not None:
                maintenance.stop.set()
                maintenance.join()
                outcome.events = maintenance.events
            hist = outcome.histograms()
            result["runs"].append(
                {
                    "system": args.child + (" (baseline)" if args.code else ""),
                    "gc": mode,
                    "rate": round(rate, 1),
                    "achieved": round(len(outcome.latencies) / outcome.seconds, 1),
                    "ops": len(outcome.latencies),
                    "saturated": outcome.saturated,
                    "events": outcome.events,
                    "gc_full": {
                        "count": len(full),
                        "longest_ms": round(max(full, default=0) / 1e6, 1),
                    },
                    "latency": {
                        kind: h.summary(hdr=args.hdr) for kind, h in hist.items() if h.total
                    },
                }
            )
            if sampler is not None:
                per = int(rate * sampler.period)  # ops scheduled in a sampling period
                lat = outcome.latencies
                result["runs"][-1]["thread_cpu"] = {
                    "summary": summarize(sampler.samples),
                    "samples": sampler.samples,
                    "main_switches": sampler.switches,
                    "max_latency_ms": [
                        round(max(lat[j : j + per]) / 1e6, 2) for j in range(0, len(lat), per)
                    ],
                    "backlog_service_us": backlog_service(lat, rate, per),
                }
    return result


# ----------------------------------------------------------------------
# The parent: one child per system
# ----------------------------------------------------------------------
def run_child(
    spec: str,
    opts: argparse.Namespace,
    rates: Sequence[float],
    *,
    saturation: bool = False,
    code: str | None = None,
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        spec,
        "-n",
        str(opts.n),
        "--seed",
        str(opts.seed),
        "--duration",
        str(opts.duration),
    ]
    for rate in rates:
        cmd += ["--rate", repr(rate)]
    if opts.switch_interval:
        cmd += ["--switch-interval", repr(opts.switch_interval)]
    if opts.thread_cpu:
        cmd.append("--thread-cpu")
    if saturation:
        cmd.append("--saturation")
    if opts.hdr:
        cmd.append("--hdr")
    if code is not None:
        cmd += ["--code", code]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            proc.stderr.strip().splitlines()[-1]
            if proc.stderr.strip()
            else f"exit {proc.returncode}"
        )
    return dict(json.loads(proc.stdout))


def environment() -> dict[str, Any]:
    import msgpack
    import sortedcontainers

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "sortedcontainers": sortedcontainers.__version__,
        "msgpack": ".".join(map(str, msgpack.version)),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "switch_interval_s": sys.getswitchinterval(),
    }
    with contextlib.suppress(Exception):
        import redis

        env["redis_py"] = redis.__version__
    with contextlib.suppress(Exception):
        env["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=HERE.parent,
            check=True,
        ).stdout.strip()
    return env


def table(data: dict[str, Any], kind: str = "all") -> str:
    """Markdown table of one op kind: a row per system and rate."""
    lines = [
        "| system | rate/s | achieved | p50 | p90 | p99 | p99.9 | p99.99 | max | events |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for run in data["runs"]:
        lat = run["latency"].get(kind)
        if lat is None:
            continue
        events = ", ".join(f"{e['what']} {e['took_ms']:.0f} ms" for e in run["events"])
        if run["gc_full"]["count"]:
            events += (", " if events else "") + (
                f"{run['gc_full']['count']} full gc (longest {run['gc_full']['longest_ms']} ms)"
            )
        if run["saturated"]:
            events = "**saturated** " + events
        cells = [
            _us(lat[k]) for k in ("p50_us", "p90_us", "p99_us", "p99.9_us", "p99.99_us", "max_us")
        ]
        lines.append(
            f"| {run['system']} | {run['rate']:,.0f} | {run['achieved']:,.0f} | "
            + " | ".join(cells)
            + f" | {events} |"
        )
    return "\n".join(lines)


def _us(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:,.1f} ms"
    return f"{value:,.0f} us" if value >= 100 else f"{value:.1f} us"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000, help="members (default 10**6)")
    p.add_argument(
        "--systems",
        default=",".join(DEFAULT_SYSTEMS),
        help="comma-separated name[@as-is|@freeze|@tick-freeze]",
    )
    p.add_argument(
        "--rates",
        default="0.05,0.25,0.5,0.75",
        help="fractions of the saturation rate of --saturation-of's system",
    )
    p.add_argument(
        "--saturation-of",
        default="rankengine-sortedlist",
        metavar="SYSTEM",
        help="the system whose closed-loop rate sets the rates (default: "
        "rankengine-sortedlist, the sorted-list board in memory)",
    )
    p.add_argument("--duration", type=float, default=20.0, help="seconds per rate (default 20)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="smoke run: N=20,000, 2 s, few systems")
    p.add_argument("--json", help="write the results here")
    p.add_argument(
        "--baseline",
        metavar="DIR",
        help="also run each rankengine system with the rankengine package of the checkout "
        "in DIR (an older commit, from `git worktree add` or `git archive`), just before "
        "the current one: an A/B in one run, labelled '(baseline)'",
    )
    p.add_argument(
        "--hdr",
        action="store_true",
        help="put each histogram in the JSON in HdrHistogram's encoding (needs the "
        "hdrhistogram package; ~20 KB a histogram)",
    )
    p.add_argument(
        "--switch-interval",
        type=float,
        metavar="S",
        help="sys.setswitchinterval(S) in each system's process (default: Python's, 5 ms)",
    )
    p.add_argument(
        "--thread-cpu",
        action="store_true",
        help="sample each thread's CPU time every 100 ms (bench/thread_cpu.py) into the JSON",
    )
    p.add_argument(
        "--rate-abs",
        type=float,
        metavar="OPS",
        help="run at OPS operations a second instead of at fractions of a saturation "
        "measured first (--rates): the same rate for runs to compare",
    )
    p.add_argument("--code", help=argparse.SUPPRESS)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--rate", type=float, action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--saturation", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0
    if args.quick:
        args.n, args.duration = 20_000, 2.0
        if args.systems == p.get_default("systems"):
            args.systems = "rankengine-sortedlist,noop,rankengine-sortedlist-fsync-everysec,redis"
        if args.rates == p.get_default("rates"):
            args.rates = "0.1,0.5"
    specs = [s for s in args.systems.split(",") if s]
    for spec in [*specs, args.saturation_of]:
        parse_system(spec)  # a typo fails before anything runs
    fractions = [float(f) for f in args.rates.split(",")]
    data: dict[str, Any] = {
        "version": 1,
        "n": args.n,
        "duration_s": args.duration,
        "mix": MIX,
        "new_share": NEW_SHARE,
        "env": environment(),
        "runs": [],
        "skipped": [],
    }
    # 1. one system's saturation rate (the sorted-list board's unless
    # --saturation-of names another) sets every system's rates
    source: str | None = args.saturation_of
    if args.rate_abs:
        saturation, rates, source = 0.0, [args.rate_abs], None  # (0: not measured)
    else:
        print(f"N = {args.n:,}: saturation of {source} ...", file=sys.stderr)
        probe = run_child(args.saturation_of, args, [], saturation=True)
        saturation = float(probe["saturation_ops_per_s"])
        # (the system the probe itself reports having run)
        source = probe["system"] + ("" if probe["gc"] == "as-is" else f"@{probe['gc']}")
        rates = [round(saturation * f, 1) for f in fractions]
    data["saturation_ops_per_s"] = saturation
    data["saturation_system"] = source
    data["rates"] = rates
    print(f"  {saturation:,.0f} ops/s; rates {rates}", file=sys.stderr, flush=True)
    if args.baseline:
        data["baseline"] = str(args.baseline)
    jobs = []
    for spec in specs:
        if args.baseline and spec.startswith("rankengine-"):
            jobs.append((spec, str(Path(args.baseline).resolve())))
        jobs.append((spec, None))
    for spec, code in jobs:
        label = spec + (" (baseline)" if code else "")
        print(f"{label} ...", file=sys.stderr, flush=True)
        try:
            result = run_child(spec, args, rates, code=code)
        except RuntimeError as exc:
            data["skipped"].append({"system": label, "why": str(exc)})
            print(f"  skipped: {exc}", file=sys.stderr, flush=True)
            continue
        data["runs"] += result["runs"]
        for run in result["runs"]:
            lat = run["latency"]["all"]
            print(
                f"  {run['rate']:>9,.0f}/s  p50 {_us(lat['p50_us'])}  p99 {_us(lat['p99_us'])}  "
                f"p99.9 {_us(lat['p99.9_us'])}  max {_us(lat['max_us'])}"
                + ("  SATURATED" if run["saturated"] else ""),
                file=sys.stderr,
                flush=True,
            )
        if args.json:  # after each system: a run cut short keeps what it has
            Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
