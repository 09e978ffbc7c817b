"""What the slowest calls were doing: the sorted-list board's tail, by cause.

Usage (from the repository root)::

    python bench/tail_causes.py                          # N = 10**6, 0.5 S, 20 s
    python bench/tail_causes.py --durable everysec       # the durable board, with
                                                         # a snapshot and a compaction
    python bench/tail_causes.py --durable everysec --no-compaction --faults
    python bench/tail_causes.py -n 1000000 --fraction 0.1 --duration 20
    python bench/tail_causes.py --code OLD_CHECKOUT      # another commit's engine
    python bench/tail_causes.py --json causes.json

The same open loop, mix and board as ``bench/latency.py`` (its functions are
imported: op list, schedule, HdrHistogram bucketing), with the board's own
events recorded as they happen:

* each operation's scheduled start, the moment the harness called the board,
  and the reply: its latency splits into **queueing** (called late, behind an
  earlier slow call or a late wake-up) and **service** (the call itself), and
  the call's thread CPU time tells work from preemption (``--no-cpu`` skips
  that clock, ~0.5 us a call);
* every garbage collection (``gc.callbacks``: generation and duration);
* the sorted-list index's structural events, timed by wrapping them (bench
  only): block splits and merges, the positional tree's rebuilds
  (``SortedList._build_index``: an index before the block lengths array
  never builds it) and the block offsets' recomputations (``_fill``);
* resizes of the board's member maps (their ``sys.getsizeof`` changed
  during the call; of a tie map in shards, the shard of the call's member);
* with ``--faults``, each call's page faults (``getrusage`` of the thread,
  ~1 us a call): a call with a fault and no other cause is named for it.

``--durable POLICY`` measures a durable board (``Leaderboard.open``, the
library's default ``snapshot_mode`` unless ``--snapshot-mode``) with
``bench/latency.py``'s maintenance thread: a snapshot at a third of the run
and a compaction at two thirds (``--no-compaction``: neither, and no
automatic compaction either: the steady state).  The durable machinery is
timed too (bench-only wrappers): each compaction as a whole, its presync,
the rotation's switch (under the lock) and its fsyncs, the replaying
child's run, the manifest and directory fsyncs, the everysec thread's
fsyncs and the mapped segment's growth (``_remap``).  *Windows* then
report the latency of the ops whose span (scheduled start to reply)
overlaps each kind of event, and of the ops outside all of them.

Attribution: every slow operation is charged to the longest single delay of
its *busy period* (the run of calls, each started late, that led up to it):
one call's service, or a gap outside any call (the harness's sleep
overshooting, the process preempted between calls).  A call is then named by
what overlapped it: a collection (by generation) or a tree rebuild when that
took at least half of it, else "preempted" when its CPU time was under half
its wall time, else its own work (by op kind, with the new-member and
split cases apart).  The shares of the ops at or above p99 and p99.9 are
reported per cause.

The saturation rate S is measured in the same process (closed loop, same
mix, 3 s) unless ``--saturation`` gives it.  No figure here is a pass/fail
test; see ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: Calls shorter than this are never looked at one by one (ns).
SLOW_NS = 20_000

#: A cause must cover at least this share of a call to be named for it.
COVER = 0.5

#: Calls that used at least this much CPU are charged to causes apart
#: (preemption cannot make them: a loaded machine's view of the board's own
#: costs); issue 23's margin over the floor's p99.9.
CPU_HEAVY_NS = 100_000


class Recorder:
    """Timestamped intervals ``(what, start_ns, end_ns)`` of the board's events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, int]] = []
        self._gc_start = 0

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._gc_start = now
        else:
            self.events.append((f"gc gen{info['generation']}", self._gc_start, now))

    def wrap(self, owner: Any, name: str, label: str) -> Callable[[], None]:
        """Time every call of ``owner.name``; returns the undo."""
        original = owner.__dict__[name]
        events = self.events
        clock = time.perf_counter_ns

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return original(*args, **kwargs)
            finally:
                events.append((label, t0, clock()))

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)


@contextmanager
def instrumented(recorder: Recorder) -> Iterator[None]:
    """The index's structural events and the collector, recorded (bench only)."""
    from sortedcontainers import SortedList

    from rankengine.index import sortedlist

    # Where the offsets are recomputed: BlockOffsets._fill, or in a checkout
    # from before it (--code), SortedListIndex._rebuild_offsets.
    owners = sortedlist.SortedListIndex.__mro__
    recompute = "_fill" if any("_fill" in o.__dict__ for o in owners) else "_rebuild_offsets"
    offsets = next(o for o in owners if recompute in o.__dict__)
    undo = [
        recorder.wrap(SortedList, "_build_index", "tree rebuild"),
        recorder.wrap(sortedlist.SortedListIndex, "_split", "block split"),
        recorder.wrap(sortedlist.SortedListIndex, "_merge", "block merge"),
        recorder.wrap(offsets, recompute, "offsets rebuild"),
    ]
    gc.callbacks.append(recorder.on_gc)
    try:
        yield
    finally:
        gc.callbacks.remove(recorder.on_gc)
        for step in undo:
            step()


#: Labels of the durable board's events (the windows reported apart).
DURABLE_EVENTS = (
    "compaction (whole)",
    "presync",
    "rotation switch",
    "rotation fsyncs",
    "replay child",
    "manifest write",
    "dir fsync",
    "everysec fsync",
    "segment remap",
)


@contextmanager
def durable_instrumented(recorder: Recorder) -> Iterator[None]:
    """The durable board's machinery timed (bench only); names an older
    checkout lacks are skipped."""
    from rankengine.durable import board as board_module
    from rankengine.durable import eventlog

    cls = board_module.DurableLeaderboard
    targets = [
        (cls, "_compact", "compaction (whole)"),
        (cls, "_presync", "presync"),
        (cls, "_background_sync", "everysec fsync"),
        (board_module, "switch_segment", "rotation switch"),
        (board_module, "finish_rotation", "rotation fsyncs"),
        (board_module, "replay_snapshot", "replay child"),
        (board_module, "write_manifest", "manifest write"),
        (board_module, "fsync_dir", "dir fsync"),
        (eventlog.MappedSegmentWriter, "_remap", "segment remap"),
    ]
    undo = [recorder.wrap(o, n, label) for o, n, label in targets if n in o.__dict__]
    try:
        yield
    finally:
        for step in undo:
            step()


def open_board(args: argparse.Namespace, stack: ExitStack) -> Any:
    """The board measured: in memory, or durable in a temporary directory."""
    from rankengine import Leaderboard

    if not args.durable:
        return Leaderboard(backend="sortedlist")
    options: dict[str, Any] = {}
    if args.snapshot_mode:
        options["snapshot_mode"] = args.snapshot_mode
    if not args.compaction:
        options["compact_min_bytes"] = None  # the steady state: no compaction at all
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="tail-causes-"))
    board = Leaderboard.open(directory, fsync=args.durable, backend="sortedlist", **options)
    stack.callback(board.close)
    return board


def run(args: argparse.Namespace) -> dict[str, Any]:
    import latency  # first: it puts this checkout on the path, --code goes before it

    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    with ExitStack() as stack:
        board = open_board(args, stack)
        rng = random.Random(args.seed)
        board.set_many([(f"player:{i}", rng.randrange(latency.SCORE_RANGE)) for i in range(args.n)])
        if args.durable:
            board.snapshot()  # start from a snapshot, as bench/latency.py does
        return measure(args, board, stack)
    raise AssertionError("unreachable")  # (mypy: the with block returns)


def measure(args: argparse.Namespace, board: Any, stack: ExitStack) -> dict[str, Any]:
    """The open loop on ``board``, recorded; the analysed report."""
    import latency

    ops = latency.make_ops(args.n, args.seed)
    incr, rank, top, around = board.incr, board.rank, board.top, board.around

    def call(kind: int, a: Any, b: Any) -> Any:
        if kind <= latency.NEW:
            return incr(a, b)
        if kind == latency.RANK:
            return rank(a)
        if kind == latency.TOP:
            return top(a)
        return around(a, b, b)

    for op in ops[:5000]:
        call(*op)
    gc.collect()
    if args.freeze:
        gc.freeze()
    saturation = args.saturation or latency.closed_loop_rate(call, ops, latency.SATURATION_S)
    rate = saturation * args.fraction
    count = int(rate * args.duration)
    latency.tight_timer_slack()

    # bench-only reach: the member maps' sizes (a tie map in shards, by shard)
    shards = getattr(board._tie, "shards", None)
    maps = [board._primary, board._tie] if shards is None else [board._primary]
    shard_sizes = [sys.getsizeof(m) for m in shards or ()]
    shard_mask = len(shard_sizes) - 1
    due_a = array("q", bytes(8 * count))
    start_a = array("q", bytes(8 * count))
    end_a = array("q", bytes(8 * count))
    cpu_a = array("q", bytes(8 * count))
    faults_a = array("q", bytes(8 * count))
    kind_a = array("b", bytes(count))
    resized: list[int] = []
    recorder = Recorder()
    clock = time.perf_counter_ns
    cpu_clock = time.thread_time_ns if args.cpu else (lambda: 0)
    usage = resource.getrusage
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    faults = args.faults
    spin = latency.release_gil
    sizes = [sys.getsizeof(m) for m in maps]
    mask = len(ops) - 1
    interval = 1e9 / rate
    new = 0
    maintenance = None
    stack.enter_context(instrumented(recorder))
    if args.durable:
        stack.enter_context(durable_instrumented(recorder))
        if args.compaction:
            maintenance = latency.Maintenance(board, args.duration)
            maintenance.start()
    t0 = clock() + 1_000_000
    for i in range(count):
        due = t0 + int(i * interval)
        now = clock()
        if now < due:
            if due - now > latency.SLEEP_MIN_NS:
                time.sleep((due - now - latency.SLEEP_MARGIN_NS) / 1e9)
            while clock() < due:
                spin()
        kind, a, b = ops[i & mask]
        if kind == latency.NEW:
            new += 1
            a = f"tail:{new}"
        f0 = usage(who).ru_minflt if faults else 0
        c0 = cpu_clock()
        s = clock()
        call(kind, a, b)
        e = clock()
        cpu_a[i] = cpu_clock() - c0
        if faults:
            faults_a[i] = usage(who).ru_minflt - f0
        due_a[i], start_a[i], end_a[i], kind_a[i] = due, s, e, kind
        if kind <= latency.NEW:
            now_sizes = [sys.getsizeof(m) for m in maps]
            grew = now_sizes != sizes
            if shards is not None:
                number = hash(a) & shard_mask
                now = sys.getsizeof(shards[number])
                grew = grew or now != shard_sizes[number]
                shard_sizes[number] = now
            if grew:
                resized.append(i)
                sizes = now_sizes
        if e - due > latency.MAX_LAG_S * 1e9:
            count = i + 1
            break
    seconds = (clock() - t0) / 1e9
    if maintenance is not None:
        maintenance.stop.set()
        maintenance.join()
    trace = Trace(due_a, start_a, end_a, cpu_a, kind_a, count, recorder, set(resized), faults_a)
    return analyse(args, saturation, rate, seconds, trace)


def overlap(
    events: list[tuple[str, int, int]], starts: list[int], lo: int, hi: int, reach: int = 10**9
) -> Counter[str]:
    """Nanoseconds of each event kind inside ``[lo, hi]`` (events sorted by
    start; none lasts longer than ``reach`` ns)."""
    import bisect

    out: Counter[str] = Counter()
    k = bisect.bisect_left(starts, lo - reach)
    while k < len(events) and events[k][1] <= hi:
        what, a, b = events[k]
        if b > lo:
            out[what] += min(b, hi) - max(a, lo)
        k += 1
    return out


@dataclass
class Trace:
    """What the loop recorded: per call (ns) and the events beside."""

    due: array[int]  # scheduled start
    start: array[int]  # the call made
    end: array[int]  # the reply
    cpu: array[int]  # the call's thread CPU time
    kinds: array[int]
    count: int
    recorder: Recorder
    resized: set[int]  # calls during which a member map resized
    faults: array[int]  # the call's minor page faults (with --faults)


def analyse(
    args: argparse.Namespace, saturation: float, rate: float, seconds: float, trace: Trace
) -> dict[str, Any]:
    import hdr_histogram
    import latency

    due, start, end, cpu = trace.due, trace.start, trace.end, trace.cpu
    kinds, count, recorder, resized = trace.kinds, trace.count, trace.recorder, trace.resized

    events = sorted(recorder.events, key=lambda e: e[1])
    starts = [e[1] for e in events]
    reach = max((b - a for _, a, b in events), default=0) + 1
    latencies = [end[i] - due[i] for i in range(count)]
    hist: dict[str, hdr_histogram.LatencyHistogram] = defaultdict(hdr_histogram.LatencyHistogram)
    service: dict[str, hdr_histogram.LatencyHistogram] = defaultdict(hdr_histogram.LatencyHistogram)
    on_cpu: dict[str, hdr_histogram.LatencyHistogram] = defaultdict(hdr_histogram.LatencyHistogram)
    for i in range(count):
        name = latency.KIND_NAMES[kinds[i]]
        if kinds[i] == latency.NEW:
            name = "increment (new)"
        hist[name].record(latencies[i])
        hist["all"].record(latencies[i])
        service[name].record(end[i] - start[i])
        service["all"].record(end[i] - start[i])
        on_cpu[name].record(max(cpu[i], 0))
        on_cpu["all"].record(max(cpu[i], 0))

    cache: dict[int, str] = {}

    def name_call(i: int) -> str:
        if i in cache:
            return cache[i]
        wall = end[i] - start[i]
        inside = overlap(events, starts, start[i], end[i], reach)
        kind = latency.KIND_NAMES[kinds[i]] + (" (new)" if kinds[i] == latency.NEW else "")
        what = ""
        for cause, ns in inside.most_common():
            if ns >= COVER * wall:
                what = cause
                break
        if args.cpu and cpu[i] < COVER * wall:
            what = "preempted (CPU < half the wall time)" + (f", in {what}" if what else "")
        if not what and trace.faults[i]:
            what = f"{kind}: page fault ({trace.faults[i]})"
        if not what:
            extra = [c for c in ("block split", "block merge", "tree rebuild") if c in inside]
            if i in resized:
                extra.append("map resize")
            what = f"{kind}: own work" + (f" ({', '.join(extra)})" if extra else "")
        cache[i] = what
        return what

    # Busy periods: the longest delay since the last call that started on time.
    culprit = [0] * count  # >= 0: a call; -1 - i: the gap before call i
    worst = -1
    worst_ns = -1
    prev_end = 0
    for i in range(count):
        if start[i] - due[i] <= 0 or due[i] >= prev_end:  # on time: a new period
            worst, worst_ns = -1, -1
        gap = start[i] - max(due[i], prev_end)
        if gap > worst_ns:
            worst, worst_ns = -1 - i, gap
        s = end[i] - start[i]
        if s > worst_ns:
            worst, worst_ns = i, s
        culprit[i] = worst
        prev_end = end[i]

    def cause_of(i: int) -> str:
        c = culprit[i]
        if c < 0:
            return "between calls (harness, late wake-up, preemption)"
        return name_call(c)

    report: dict[str, Any] = {
        "n": args.n,
        "code": str(Path(sys.modules["rankengine"].__file__ or "").parent.parent.name),
        "freeze": args.freeze,
        "durable": args.durable,
        "compaction": args.compaction,
        "saturation_ops_per_s": round(saturation),
        "rate": round(rate),
        "achieved": round(count / seconds),
        "load_average": list(os.getloadavg()),
        "latency": {k: h.summary() | {"spectrum": None} for k, h in sorted(hist.items())},
        "service": {k: h.summary() | {"spectrum": None} for k, h in sorted(service.items())},
        "cpu": {k: h.summary() | {"spectrum": None} for k, h in sorted(on_cpu.items())},
    }
    for label, p in (("p99", 99.0), ("p99.9", 99.9)):
        cut = hist["all"].value_at(p)
        above = [i for i in range(count) if latencies[i] >= cut]
        shares = Counter(cause_of(i) for i in above)
        report[f"causes_at_{label}"] = {
            "threshold_us": round(cut / 1e3, 1),
            "ops": len(above),
            "share": {k: round(v / len(above), 3) for k, v in shares.most_common()},
        }
    per_event: dict[str, list[int]] = defaultdict(list)
    for what, a, b in events:
        per_event[what].append(b - a)
    report["events"] = {
        what: {
            "count": len(ds),
            "per_s": round(len(ds) / seconds, 1),
            "median_us": round(statistics.median(ds) / 1e3, 1),
            "max_us": round(max(ds) / 1e3, 1),
            "total_ms": round(sum(ds) / 1e6, 1),
        }
        for what, ds in sorted(per_event.items())
    }
    heavy: dict[str, list[int]] = defaultdict(list)
    for i in range(count):
        if cpu[i] >= CPU_HEAVY_NS:
            inside = overlap(events, starts, start[i], end[i], reach)
            kind = latency.KIND_NAMES[kinds[i]]
            cause = (
                inside.most_common(1)[0][0]
                if inside
                else f"{kind}: page fault"
                if trace.faults[i]
                else f"{kind}: own work"
            )
            heavy[cause].append(cpu[i])
    report["cpu_heavy_calls"] = {
        "threshold_us": CPU_HEAVY_NS / 1e3,
        "per_cause": {
            c: {"calls": len(v), "cpu_ms": round(sum(v) / 1e6, 1), "max_us": round(max(v) / 1e3)}
            for c, v in sorted(heavy.items(), key=lambda kv: -sum(kv[1]))
        },
    }
    t_zero = due[0] if count else 0
    report["cpu_heaviest_calls"] = [
        {
            "at_s": round((start[i] - t_zero) / 1e9, 3),
            "kind": latency.KIND_NAMES[kinds[i]],
            "cpu_us": round(cpu[i] / 1e3),
            "service_us": round((end[i] - start[i]) / 1e3),
            "faults": trace.faults[i],
            "overlapping": sorted(overlap(events, starts, start[i], end[i], reach)),
        }
        for i in sorted(range(count), key=lambda i: -cpu[i])[: args.show]
    ]
    report["windows"] = windows(latencies, trace, events, hist["all"].value_at(99.9))
    report["per_second"] = per_second(latencies, due, count, hist["all"].value_at(99.9))
    report["map_resizes"] = [round((end[i] - start[i]) / 1e3, 1) for i in sorted(resized)]
    slow = sorted(
        (i for i in range(count) if end[i] - start[i] > SLOW_NS),
        key=lambda i: start[i] - end[i],
    )[: args.show]
    report["slowest_calls"] = [
        {
            "kind": latency.KIND_NAMES[kinds[i]],
            "service_us": round((end[i] - start[i]) / 1e3, 1),
            "cpu_us": round(cpu[i] / 1e3, 1),
            "queued_us": round((start[i] - due[i]) / 1e3, 1),
            "cause": name_call(i),
        }
        for i in slow
    ]
    return report


def windows(
    latencies: list[int], trace: Trace, events: list[tuple[str, int, int]], cut: int
) -> dict[str, dict[str, Any]]:
    """Latency of the ops whose span ``[due, end]`` overlaps an event of
    each durable kind, and of the ops outside all of them; each group's
    share of the ops at or above ``cut`` (the run's p99.9)."""
    import bisect

    import hdr_histogram

    due, end, count = trace.due, trace.end, trace.count
    hit: dict[str, set[int]] = defaultdict(set)
    order = range(count)  # (due starts rise with i)
    dues = due[:count]

    longest = max((end[i] - due[i] for i in range(count)), default=0)
    for what, a, b in events:
        if what not in DURABLE_EVENTS:
            continue
        # ops with due <= b and end >= a: due in [a - longest, b]
        k = bisect.bisect_left(dues, a - longest)
        while k < len(order) and dues[k] <= b:
            i = order[k]
            if end[i] >= a:
                hit[what].add(i)
            k += 1
    inside = set().union(*hit.values()) if hit else set()
    groups = {what: hit[what] for what in DURABLE_EVENTS if what in hit}
    groups["outside every window"] = set(range(count)) - inside
    slow = sum(1 for x in latencies if x >= cut) or 1
    out: dict[str, dict[str, Any]] = {}
    for what, members in groups.items():
        h, on_cpu = hdr_histogram.LatencyHistogram(), hdr_histogram.LatencyHistogram()
        for i in members:
            h.record(latencies[i])
            on_cpu.record(max(trace.cpu[i], 0))
        if not h.total:
            continue
        summary, cpu = h.summary(), on_cpu.summary()
        out[what] = {
            "ops": h.total,
            "events": sum(1 for e in events if e[0] == what),
            "p99_us": summary["p99_us"],
            "p99.9_us": summary["p99.9_us"],
            "max_us": summary["max_us"],
            "cpu_p50_us": cpu["p50_us"],
            "cpu_p99_us": cpu["p99_us"],
            "cpu_p99.9_us": cpu["p99.9_us"],
            # this window's share of the run's ops at or above its p99.9
            "of_p99.9_ops": round(sum(1 for i in members if latencies[i] >= cut) / slow, 3),
        }
    return out


def per_second(latencies: list[int], due: array[int], count: int, cut: int) -> list[list[Any]]:
    """Per second of the run: ops, ops at or above the run's p99.9, max (us)."""
    if not count:
        return []
    t0 = due[0]
    rows: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for i in range(count):
        row = rows[(due[i] - t0) // 10**9]
        row[0] += 1
        row[1] += latencies[i] >= cut
        row[2] = max(row[2], latencies[i])
    return [[s, r[0], r[1], round(r[2] / 1e3, 1)] for s, r in sorted(rows.items())]


def show(report: dict[str, Any]) -> str:
    lines = [
        f"N = {report['n']:,} ({report['code']}{', frozen' if report['freeze'] else ''}"
        f"{', durable ' + report['durable'] if report['durable'] else ''}"
        f"{'' if report['compaction'] else ', no compaction'}): "
        f"S = {report['saturation_ops_per_s']:,}/s, rate {report['rate']:,}/s, "
        f"achieved {report['achieved']:,}/s, load average {report['load_average']}",
        "",
        f"{'latency (us)':<18}{'p50':>11}{'p99':>11}{'p99.9':>11}{'max':>11}"
        f"   {'service p99':>11}{'p99.9':>11}{'max':>11}",
    ]
    for kind, lat in report["latency"].items():
        srv = report["service"][kind]
        lines.append(
            f"{kind:<18}{lat['p50_us']:>11}{lat['p99_us']:>11}{lat['p99.9_us']:>11}"
            f"{lat['max_us']:>11}   {srv['p99_us']:>11}{srv['p99.9_us']:>11}{srv['max_us']:>11}"
        )
    if any(report["cpu"]["all"][k] for k in ("p99_us", "max_us")):
        lines.append(f"\n{'CPU time (us)':<18}{'p50':>11}{'p99':>11}{'p99.9':>11}{'max':>11}")
        for kind, c in report["cpu"].items():
            lines.append(
                f"{kind:<18}{c['p50_us']:>11}{c['p99_us']:>11}{c['p99.9_us']:>11}{c['max_us']:>11}"
            )
    for label in ("p99", "p99.9"):
        c = report[f"causes_at_{label}"]
        lines.append(f"\nops at or above {label} ({c['threshold_us']} us, {c['ops']} ops):")
        lines += [f"  {share:6.1%}  {cause}" for cause, share in c["share"].items()]
    lines.append("\nevents: count, per s, median, max, total")
    for what, e in report["events"].items():
        lines.append(
            f"  {what:<16}{e['count']:>7}{e['per_s']:>9}{e['median_us']:>9} us"
            f"{e['max_us']:>9} us{e['total_ms']:>9} ms"
        )
    h = report["cpu_heavy_calls"]
    lines.append(f"\ncalls with CPU >= {h['threshold_us']:.0f} us, by what overlapped them:")
    for c, v in h["per_cause"].items():
        lines.append(f"  {c:<34}{v['calls']:>6} calls{v['cpu_ms']:>9} ms CPU  max {v['max_us']} us")
    lines.append("\nheaviest calls by CPU (at s, kind, cpu, service, faults, overlapping):")
    for c in report["cpu_heaviest_calls"]:
        lines.append(
            f"  {c['at_s']:>8} {c['kind']:<10}{c['cpu_us']:>7} us{c['service_us']:>8} us"
            f"{c['faults']:>5}  {', '.join(c['overlapping'])}"
        )
    if report["windows"]:
        lines.append("\nops overlapping each window: ops, events, p99, p99.9, max (us),")
        lines.append("  the window's share of the run's ops >= its p99.9; CPU p50, p99, p99.9 (us)")
        for what, w in report["windows"].items():
            lines.append(
                f"  {what:<22}{w['ops']:>8}{w['events']:>6}{w['p99_us']:>10}{w['p99.9_us']:>10}"
                f"{w['max_us']:>10}{w['of_p99.9_ops']:>8.1%}"
                f"{w['cpu_p50_us']:>8}{w['cpu_p99_us']:>8}{w['cpu_p99.9_us']:>8}"
            )
    lines.append("\nper second: ops, ops >= p99.9, max us")
    lines.append("  " + "  ".join(f"{s}:{n}/{k}/{m:.0f}" for s, n, k, m in report["per_second"]))
    lines.append(f"member-map resizes (service us): {report['map_resizes']}")
    lines.append("\nslowest calls (service, cpu, queued, cause):")
    for c in report["slowest_calls"]:
        lines.append(
            f"  {c['kind']:<10}{c['service_us']:>9} us{c['cpu_us']:>9} us"
            f"{c['queued_us']:>9} us  {c['cause']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--fraction", type=float, default=0.5, help="of the saturation rate S")
    p.add_argument("--saturation", type=float, help="S in ops/s (default: measured here)")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--freeze", action="store_true", help="gc.freeze() after the load")
    p.add_argument("--no-cpu", dest="cpu", action="store_false", help="skip the CPU clock")
    p.add_argument("--show", type=int, default=15, help="slowest calls listed")
    p.add_argument("--code", help="a checkout whose rankengine package to measure")
    p.add_argument("--json", help="write the report here")
    p.add_argument(
        "--durable", choices=("everysec", "always"), help="a durable board with this fsync policy"
    )
    p.add_argument("--snapshot-mode", help="the durable board's snapshot_mode (default: its own)")
    p.add_argument(
        "--no-compaction",
        dest="compaction",
        action="store_false",
        help="durable: no snapshot or compaction in the run (the steady state)",
    )
    p.add_argument("--faults", action="store_true", help="count each call's page faults")
    args = p.parse_args(argv)
    report = run(args)
    print(show(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
