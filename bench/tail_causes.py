"""What the slowest calls were doing: the in-memory sorted-list board's tail, by cause.

Usage (from the repository root)::

    python bench/tail_causes.py                          # N = 10**6, 0.5 S, 20 s
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
  (``SortedList._build_index``) and the block offsets' rebuilds;
* resizes of the board's member maps (their ``sys.getsizeof`` changed
  during the call).

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
import statistics
import sys
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: Calls shorter than this are never looked at one by one (ns).
SLOW_NS = 20_000

#: A cause must cover at least this share of a call to be named for it.
COVER = 0.5


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

    undo = [
        recorder.wrap(SortedList, "_build_index", "tree rebuild"),
        recorder.wrap(sortedlist.SortedListIndex, "_split", "block split"),
        recorder.wrap(sortedlist.SortedListIndex, "_merge", "block merge"),
        recorder.wrap(sortedlist.SortedListIndex, "_rebuild_offsets", "offsets rebuild"),
    ]
    gc.callbacks.append(recorder.on_gc)
    try:
        yield
    finally:
        gc.callbacks.remove(recorder.on_gc)
        for step in undo:
            step()


def run(args: argparse.Namespace) -> dict[str, Any]:
    import latency  # first: it puts this checkout on the path, --code goes before it

    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    from rankengine import Leaderboard

    rng = random.Random(args.seed)
    board = Leaderboard(backend="sortedlist")
    board.set_many([(f"player:{i}", rng.randrange(latency.SCORE_RANGE)) for i in range(args.n)])
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

    maps = [board._primary, board._tie]  # bench-only reach: the member maps' sizes
    due_a = array("q", bytes(8 * count))
    start_a = array("q", bytes(8 * count))
    end_a = array("q", bytes(8 * count))
    cpu_a = array("q", bytes(8 * count))
    kind_a = array("b", bytes(count))
    resized: list[int] = []
    recorder = Recorder()
    clock = time.perf_counter_ns
    cpu_clock = time.thread_time_ns if args.cpu else (lambda: 0)
    spin = latency.release_gil
    sizes = [sys.getsizeof(m) for m in maps]
    mask = len(ops) - 1
    interval = 1e9 / rate
    new = 0
    with instrumented(recorder):
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
            c0 = cpu_clock()
            s = clock()
            call(kind, a, b)
            e = clock()
            cpu_a[i] = cpu_clock() - c0
            due_a[i], start_a[i], end_a[i], kind_a[i] = due, s, e, kind
            if kind <= latency.NEW:
                now_sizes = [sys.getsizeof(m) for m in maps]
                if now_sizes != sizes:
                    resized.append(i)
                    sizes = now_sizes
            if e - due > latency.MAX_LAG_S * 1e9:
                count = i + 1
                break
    seconds = (clock() - t0) / 1e9
    trace = Trace(due_a, start_a, end_a, cpu_a, kind_a, count, recorder, set(resized))
    return analyse(args, saturation, rate, seconds, trace)


def overlap(
    events: list[tuple[str, int, int]], starts: list[int], lo: int, hi: int
) -> Counter[str]:
    """Nanoseconds of each event kind inside ``[lo, hi]`` (events sorted by start)."""
    import bisect

    out: Counter[str] = Counter()
    k = bisect.bisect_left(starts, lo - 10**9)  # no event here lasts a second
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


def analyse(
    args: argparse.Namespace, saturation: float, rate: float, seconds: float, trace: Trace
) -> dict[str, Any]:
    import latency

    due, start, end, cpu = trace.due, trace.start, trace.end, trace.cpu
    kinds, count, recorder, resized = trace.kinds, trace.count, trace.recorder, trace.resized

    events = sorted(recorder.events, key=lambda e: e[1])
    starts = [e[1] for e in events]
    latencies = [end[i] - due[i] for i in range(count)]
    hist: dict[str, latency.LatencyHistogram] = defaultdict(latency.LatencyHistogram)
    service: dict[str, latency.LatencyHistogram] = defaultdict(latency.LatencyHistogram)
    on_cpu: dict[str, latency.LatencyHistogram] = defaultdict(latency.LatencyHistogram)
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
        inside = overlap(events, starts, start[i], end[i])
        kind = latency.KIND_NAMES[kinds[i]] + (" (new)" if kinds[i] == latency.NEW else "")
        what = ""
        for cause, ns in inside.most_common():
            if ns >= COVER * wall:
                what = cause
                break
        if args.cpu and cpu[i] < COVER * wall:
            what = "preempted (CPU < half the wall time)" + (f", in {what}" if what else "")
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


def show(report: dict[str, Any]) -> str:
    lines = [
        f"N = {report['n']:,} ({report['code']}{', frozen' if report['freeze'] else ''}): "
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
    args = p.parse_args(argv)
    report = run(args)
    print(show(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
