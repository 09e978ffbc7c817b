"""The tail-causes harness (``bench/tail_causes.py``): its attribution, on a
made-up trace (no board, no clock), and its instrumentation's undo.  No
wall-clock figure is asserted."""

from __future__ import annotations

import argparse
import sys
from array import array
from pathlib import Path

from sortedcontainers import SortedList

import rankengine  # noqa: F401  (the report names the package's checkout)
from rankengine.index.sortedlist import SortedListIndex

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import latency  # noqa: E402
import tail_causes  # noqa: E402

US = 1_000


def trace_with_one_stall(cpu_share: float) -> tail_causes.Trace:
    """1,000 increments 10 us apart, each 2 us long, but call 500 takes
    300 us (a tree rebuild inside it, CPU ``cpu_share`` of it): the 29 calls
    after it are made late, behind it; call 900 is made 200 us late with
    nothing before it (the harness woke late)."""
    count = 1000
    due = array("q", [i * 10 * US for i in range(count)])
    start = array("q", due)
    end = array("q", [d + 2 * US for d in due])
    cpu = array("q", [2 * US] * count)
    end[500] = start[500] + 300 * US
    cpu[500] = int(300 * US * cpu_share)
    for i in range(501, count):
        if due[i] >= end[i - 1]:
            break
        start[i] = end[i - 1]
        end[i] = start[i] + 2 * US
    start[900] = due[900] + 200 * US
    end[900] = start[900] + 2 * US
    recorder = tail_causes.Recorder()
    recorder.events.append(("tree rebuild", start[500] + 10 * US, start[500] + 290 * US))
    kinds = array("b", [latency.INCR] * count)
    faults = array("q", [0] * count)  # (no page faults: --faults off)
    return tail_causes.Trace(due, start, end, cpu, kinds, count, recorder, set(), faults)


def args() -> argparse.Namespace:
    return argparse.Namespace(
        n=1000,
        freeze=False,
        cpu=True,
        show=3,
        code=None,
        durable=None,  # (the in-memory board: no durable windows)
        compaction=True,
        snapshot_mode=None,
        faults=False,
    )


def test_queued_calls_are_charged_to_the_stall_that_queued_them() -> None:
    report = tail_causes.analyse(args(), 200_000.0, 100_000.0, 0.01, trace_with_one_stall(1.0))
    causes = report["causes_at_p99"]
    assert causes["ops"] == 10  # the stalled call and the nine queued longest behind it
    assert causes["share"] == {"tree rebuild": 1.0}
    assert report["slowest_calls"][0]["cause"] == "tree rebuild"
    assert report["events"]["tree rebuild"]["count"] == 1
    late = report["causes_at_p99.9"]
    assert set(late["share"]) == {"tree rebuild"}


def test_a_preempted_call_and_a_late_wake_up_are_named() -> None:
    report = tail_causes.analyse(args(), 200_000.0, 100_000.0, 0.01, trace_with_one_stall(0.2))
    assert report["slowest_calls"][0]["cause"].startswith("preempted")
    trace = trace_with_one_stall(1.0)
    trace.end[500] = trace.start[500] + 2 * US  # no stall: only the late wake-up is slow
    trace.cpu[500] = 2 * US
    for i in range(501, 531):
        trace.start[i] = trace.due[i]
        trace.end[i] = trace.start[i] + 2 * US
    report = tail_causes.analyse(args(), 200_000.0, 100_000.0, 0.01, trace)
    assert report["causes_at_p99.9"]["share"] == {
        "between calls (harness, late wake-up, preemption)": 1.0
    }


def test_instrumentation_is_undone() -> None:
    before = (SortedList._build_index, SortedListIndex._split, SortedListIndex._merge)
    recorder = tail_causes.Recorder()
    with tail_causes.instrumented(recorder):
        index = SortedListIndex(load=4)
        for k in range(40):
            index.insert(k, 0, k)
        index.position(20, 0)
    assert (SortedList._build_index, SortedListIndex._split, SortedListIndex._merge) == before
    assert {what for what, _, _ in recorder.events} >= {"block split"}
