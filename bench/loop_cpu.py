"""The event loop's own CPU under ``fsync="always"``: this tree against a ref.

Usage (from the repository root)::

    python bench/loop_cpu.py                          # against main, 10,000 events/s
    python bench/loop_cpu.py --ref 0934512 --rate 10000 --repeats 3

The open loop of ``bench/ledger.py`` (``run_open_loop``: one ``arecord``
task per event started on schedule, a four-view ledger, a 1 ms timer
measuring the loop's lag), about two seconds per run, for ``noop`` (the
timer and schedule alone), ``everysec`` and ``always``, on this tree's code
and on ``--ref``'s (``git archive``), each run in a fresh process, the
trees and policies taking turns so that the machine's load hits each
alike.  Per run:

* ``cpu``: the loop thread's CPU time over the run's wall time
  (``time.thread_time``), the figure the loop's headroom is made of;
* ``lag``: the timer's max and 99th percentile (the machine's own lag is
  the ``noop`` row's);
* ``ack``: each ``arecord``'s time from its call to its return (p50, p99):
  what the pace of the group commit costs a writer;
* counts per 1,000 events: fsyncs, the loop's wake-ups by the flusher
  (``_release`` runs scheduled from the flusher thread), and the loop
  thread's context switches (voluntary + involuntary, ``getrusage``).

An fsync's time is the machine's: on a disk shared with other work it
ranges from 0.3 ms to tens of ms within minutes, and with it the groups'
sizes.  ``--fsync-us N`` replaces ``fdatasync`` by a sleep of N us (which
lets go of the GIL, as the system call does) in both trees, so that the
comparison is of the code at one fsync time (0.3 ms: the quiet disk here).

The ``pace`` round isolates the pace: one process of this tree, the same
open loop under ``always`` with the face's pace set to 0 (fsyncs back to
back, as before it) and to ``LOOP_PACE_S`` in turn, ``--repeats`` pairs.

Then the closed round of issue 20's throughput target: ``--tasks`` tasks
record half of ``--events`` as fast as they can, under ``everysec`` and
``always``, on each tree in turn (wall time): always / everysec >= 0.5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import export_ref  # noqa: E402 -- bench/ledger.py, beside this file

#: What one run does, in a fresh interpreter whose path starts with a tree:
#: prints one JSON line of figures.
_RUN = r"""
import asyncio, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import rankengine
assert rankengine.__file__.startswith(sys.argv[1]), rankengine.__file__
sys.path.insert(1, sys.argv[2])
import ledger as bench
from rankengine.ledger.aio import AsyncLedger
kind, policy = sys.argv[3], sys.argv[4]
rate, events, tasks = float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
fsync_s = float(sys.argv[8]) / 1e6
if fsync_s:  # (a sleep lets go of the GIL as fdatasync does)
    import os
    os.fdatasync = lambda fd: time.sleep(fsync_s)
data = bench.stream(events, 10_000, 1)
acks, wakes = [], [0]
try:  # (the release of the awaits: the shared LoopAcks's, or the face's own before it)
    from rankengine.durable.loopacks import LoopAcks as Releases
except ImportError:
    Releases = AsyncLedger
arecord, release = AsyncLedger.arecord, Releases._release

async def timed(self, *args, **options):
    start = time.perf_counter()
    done = await arecord(self, *args, **options)
    acks.append(time.perf_counter() - start)
    return done

def counted(self):
    wakes[0] += 1
    release(self)

AsyncLedger.arecord, Releases._release = timed, counted
if kind == "pace":  # (pairs of runs, the face's pace 0 and LOOP_PACE_S in turn)
    from rankengine.durable.commit import LOOP_PACE_S
    init, paced = AsyncLedger.__init__, [0.0]

    def pacing(self, ledger):
        init(self, ledger)
        if self._group is not None:
            self._group._pace = paced[0]  # (set, not pace(): 0 must win here)

    AsyncLedger.__init__ = pacing
    data = data[: max(1000, min(len(data), int(rate * 2)))]
    runs = {0.0: [], LOOP_PACE_S: []}
    for _ in range(tasks):
        for pace in runs:
            paced[0] = pace
            before = resource.getrusage(resource.RUSAGE_THREAD)
            figures = asyncio.run(bench.run_open_loop(data, "always", rate))
            after = resource.getrusage(resource.RUSAGE_THREAD)
            figures["switches"] = (
                after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw
            )
            figures["events"] = len(data)
            runs[pace].append(figures)
    print(json.dumps({str(pace): figures for pace, figures in runs.items()}))
    raise SystemExit
if kind == "closed":
    elapsed, lag, fsyncs = asyncio.run(bench.run_async(data[: events // 2], policy, tasks))
    print(json.dumps({"rate": events // 2 / elapsed, "fsyncs": fsyncs}))
    raise SystemExit
data = data[: max(1000, min(len(data), int(rate * 2)))]
before = resource.getrusage(resource.RUSAGE_THREAD)
figures = asyncio.run(bench.run_open_loop(data, policy, rate))
after = resource.getrusage(resource.RUSAGE_THREAD)
acks.sort()
n = len(data)
figures.update(
    events=n,
    switches=(after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw),
    wakes=wakes[0],
    ack_p50_ms=acks[len(acks) // 2] * 1000 if acks else 0.0,
    ack_p99_ms=acks[int(len(acks) * 0.99)] * 1000 if acks else 0.0,
)
print(json.dumps(figures))
"""


def one_run(tree: str, kind: str, policy: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run in a fresh process importing ``tree``'s rankengine."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN,
            tree,
            str(Path(__file__).resolve().parent),
            kind,
            policy,
            str(args.rate),
            str(args.events),
            str(args.tasks),
            str(args.fsync_us),
        ],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": tree},
    )
    if done.returncode:
        raise SystemExit(f"{kind} {policy} with {tree} failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ref", default="main", help="git ref to compare with (default main)")
    parser.add_argument("--rate", type=float, default=10_000.0, help="events/s of the open loop")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks of the closed round")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--fsync-us",
        type=float,
        default=0.0,
        help="simulate each fdatasync by a sleep of this many us (0: the disk's own): "
        "the disk's speed, shared with the machine's other work, out of the comparison",
    )
    parser.add_argument("--skip", default="", help="rounds to skip: open,pace,closed")
    args = parser.parse_args(argv)
    skip = set(args.skip.split(","))
    load = os.getloadavg()
    print(f"{os.cpu_count()} cpus (shared), load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.fsync_us:
        print(f"fdatasync simulated: a sleep of {args.fsync_us:g} us")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this": str(ROOT), args.ref: export_ref(args.ref, os.path.join(tmp, "ref"))}
        if "open" not in skip:
            open_round(trees, args)
        if "pace" not in skip:
            pace_round(args)
        if "closed" not in skip:
            closed_round(trees, args)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


def open_round(trees: dict[str, str], args: argparse.Namespace) -> None:
    print(
        f"open loop, {args.rate:,.0f} events/s (about 2 s a run): the loop thread's CPU "
        "share; lag max, p99; ack p50, p99; per 1,000 events: fsyncs, flusher wake-ups of "
        "the loop, the loop thread's context switches"
    )
    runs = [("this", "noop")] + [(t, p) for p in ("everysec", "always") for t in trees]
    out: dict[tuple[str, str], list[dict[str, Any]]] = {run: [] for run in runs}
    for _ in range(args.repeats):
        for tree, policy in runs:
            out[tree, policy].append(one_run(trees[tree], "open", policy, args))
    for (tree, policy), figures in out.items():
        label = policy if policy == "noop" else f"{policy}@{tree}"
        print(f"  {label:<16} cpu {', '.join(format(f['cpu'], '.0%') for f in figures)}")
        print(
            f"  {'':<16} lag max {', '.join(format(f['max_ms'], '.1f') for f in figures)} ms, "
            f"p99 {', '.join(format(f['p99_ms'], '.2f') for f in figures)} ms"
        )
        if policy != "noop":

            def per_k(key: str, runs: list[dict[str, Any]] = figures) -> str:
                return ", ".join(format(f[key] * 1000 / f["events"], ".0f") for f in runs)

            print(
                f"  {'':<16} ack p50 {', '.join(format(f['ack_p50_ms'], '.2f') for f in figures)}"
                f" ms, p99 {', '.join(format(f['ack_p99_ms'], '.2f') for f in figures)} ms"
            )
            print(
                f"  {'':<16} fsyncs {per_k('fsyncs')}; wake-ups {per_k('wakes')}; "
                f"switches {per_k('switches')}"
            )
    for tree in trees:
        cpu = {p: statistics.median(f["cpu"] for f in out[tree, p]) for p in ("everysec", "always")}
        print(
            f"  {tree}: median loop CPU always {cpu['always']:.0%}, everysec {cpu['everysec']:.0%} "
            f"(noop {statistics.median(f['cpu'] for f in out['this', 'noop']):.0%})"
        )


def pace_round(args: argparse.Namespace) -> None:
    print(
        f"pace: this tree, one process, always at {args.rate:,.0f} events/s, the face's pace "
        f"0 and 1 ms in turn, {args.repeats} pairs"
    )
    pairs = {
        float(pace): figures
        for pace, figures in one_run(
            str(ROOT), "pace", "always", argparse.Namespace(**{**vars(args), "tasks": args.repeats})
        ).items()
    }
    for pace, figures in pairs.items():

        def per_k(key: str, runs: list[dict[str, Any]] = figures) -> str:
            return ", ".join(format(f[key] * 1000 / f["events"], ".0f") for f in runs)

        cpus = [f["cpu"] for f in figures]
        print(
            f"  pace {pace * 1000:g} ms: cpu {', '.join(format(c, '.0%') for c in cpus)} "
            f"(median {statistics.median(cpus):.0%})"
        )
        print(
            f"  {'':<11} lag max {', '.join(format(f['max_ms'], '.1f') for f in figures)} ms, "
            f"p99 {', '.join(format(f['p99_ms'], '.2f') for f in figures)} ms"
        )
        print(
            f"  {'':<11} per 1,000 events: fsyncs {per_k('fsyncs')}; switches {per_k('switches')}"
        )


def closed_round(trees: dict[str, str], args: argparse.Namespace) -> None:
    print(f"closed: {args.tasks:,} tasks, {args.events // 2:,} events, wall time")
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for tree, path in trees.items():
            for policy in ("everysec", "always"):
                figures = one_run(path, "closed", policy, args)
                rates.setdefault((tree, policy), []).append(figures["rate"])
    for tree in trees:
        every, always = rates[tree, "everysec"], rates[tree, "always"]
        print(
            f"  {tree:<8} everysec {', '.join(format(r, ',.0f') for r in every)}/s; always "
            f"{', '.join(format(r, ',.0f') for r in always)}/s; always / everysec "
            f"{statistics.median(always) / statistics.median(every):.2f}x (target >= 0.5)"
        )


if __name__ == "__main__":
    sys.exit(main())
