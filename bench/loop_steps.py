"""The event loop's steps: how long the loop is kept from running anything else.

A 1 ms timer's overshoot (the lag round of ``bench/ledger.py``) mixes the
library's work with the machine's: on a shared machine the timer alone
wakes up tens of milliseconds late.  This measures the loop itself.
:class:`StepLoop` is an ``asyncio.SelectorEventLoop`` (bench only: run a
coroutine on it with ``asyncio.Runner(loop_factory=StepLoop)``) whose
selector's ``select`` is wrapped, so that a **step** is what the loop does
from one return of ``select`` to its next call: the I/O events and due
timers handled, then every callback ready -- one ``_run_once`` turn with
its wait left out (the next turn's timeout computation, a few heap
operations, is counted at the end of the step before it).  While one step
runs, nothing else on the loop can.  Each step is timed three ways:

* its **CPU** time on the loop's thread (``time.thread_time``): the work
  itself, the library's and the bench's, whatever the machine's load;
* its **wall** time (``time.perf_counter``);
* its wall time off the CPU, in two parts: runnable but **waiting for a
  CPU** (the run delay of ``/proc/thread-self/schedstat``: the machine's
  share) and **off otherwise** (the rest of wall - CPU: waiting for the
  interpreter lock held by another thread of the process, for I/O or a
  page fault).

What ran in a step is noted by hooks, by name (the value a count or ms):

* ``events``: records made in the step (the ledger's sequence number);
* ``released``: awaits the acknowledgement ended (``LoopAcks._release``,
  at most ``ACK_BATCH`` a turn; their tasks resume in the next step);
* ``compaction start``: the write that handed a compaction to its worker
  thread; ``compaction``: a compaction ran on that thread during the step;
* ``gcN``: a collection of generation N on the loop's thread (ms of its
  CPU); ``gcN elsewhere``: one on another thread (holding the interpreter
  lock; that thread's CPU).

Notes from other threads land in the step in progress when they are made
(approximate; one made while the loop waits in ``select`` is dropped).

Keys of :meth:`Steps.figures` (added to each lag-round run's dict; ms
unless named otherwise): ``steps`` (how many), ``step_cpu_s`` (their CPU
time in all, s), ``step_cpu_max_ms`` and ``step_cpu_max_wall_ms`` (the
longest step in CPU time, and its wall time), ``step_cpu_p99_ms`` and
``step_cpu_p999_ms`` (percentiles of the steps' CPU), ``steps_over_ms``
(how many took more than :data:`TARGET_MS` of CPU), ``step_wall_max_ms``
with its ``step_wall_max_cpu_ms`` and ``step_wall_max_queued_ms`` (the
longest step in wall time, its CPU and its wait for a CPU), and
``step_top`` / ``step_top_wall`` (the :data:`TOP` longest steps by CPU and
by wall: ``cpu_ms``, ``wall_ms``, ``queued_ms``, ``off_ms`` (off the CPU
otherwise), ``at_s`` (seconds into the recording) and ``what`` (the notes)).

A step runs every callback ready, so its length is the application's
concurrency times the pieces of work in it.  The pieces the library runs
on the loop are timed one by one (CPU; :meth:`Steps.timed`): ``record``
(each ``Ledger.record`` call: an ``arecord``'s synchronous part),
``release`` (each ``_release`` call) and ``gc0`` / ``gc1`` / ``gc2`` (each
collection on the loop's thread), with keys ``{piece}_calls``,
``{piece}_cpu_max_ms`` and ``{piece}_cpu_p999_ms``.

Between two steps the loop waits in ``select``; a wait that returns later
than its timeout (rounded up to the millisecond, as epoll waits) delays a
due timer by as much, with no step of ours running: the machine's timer and
scheduler.  ``wait_over_max_ms`` is the longest such overshoot, with
``wait_over_max_queued_ms`` (its part waiting for a CPU) and
``wait_over_p99_ms``.  A timer's lag is at most one wait's overshoot plus
the steps run before it.

What the measuring costs: two CPU clock reads, two wall clock reads and one
read of the schedstat file a step, two where the step was off the CPU
for :data:`OFF_CPU_SPLIT_S` or more (on a loaded 2-core virtual machine a
CPU clock read took 2.1-2.4 us and a schedstat read 3-6 us), and two CPU
clock reads a piece: ~13 us a step and ~5 us an event.  Alternated with
the plain loop (medians of 5 runs each, load 1.8-2.0), the loop's CPU per
event at 10,000 events/s went from 65 to 88 us under ``everysec`` and from
76 to 89 us under ``always``, at 2,000/s under ``always`` from 144 to 174
us (a tick a millisecond is a step of its own).  ``bench/ledger.py
--no-steps`` runs the lag round without it.

Runtime complexity: O(1) a step, O(S log S) for the figures of S steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import math
import os
import threading
import time
from array import array
from collections.abc import Callable
from typing import Any

__all__ = ["OFF_CPU_SPLIT_S", "TARGET_MS", "TOP", "StepLoop", "Steps", "describe", "watch_ledger"]

#: Issue 20's bound on the loop's pause at 10,000 events/s (ms): the steps
#: longer than this in CPU time are counted.
TARGET_MS = 5.0
#: The longest steps kept with what ran in them: enough to see whether the
#: top is one cause repeated or several.
TOP = 5
#: A step off the CPU for less than this (s) is not split into waiting for
#: a CPU and off otherwise: a schedstat read a step saved (~3-6 us here), and
#: the wait that follows takes that step's wait for a CPU, this much at most.
OFF_CPU_SPLIT_S = 0.0002
#: Where Linux keeps a thread's CPU time, run delay and time slices.
SCHEDSTAT = "/proc/thread-self/schedstat"

Clock = Callable[[], float]


def _run_delay() -> tuple[Clock, Callable[[], None]]:
    """A clock of the calling thread's wait for a CPU so far (s), from the
    file opened once (a ``pread`` a call), and what closes it; a clock of
    0.0 where the file does not exist."""
    try:
        fd = os.open(SCHEDSTAT, os.O_RDONLY)
    except OSError:
        return (lambda: 0.0), (lambda: None)
    pread = os.pread
    return (lambda: int(pread(fd, 64, 0).split()[1]) * 1e-9), (lambda: os.close(fd))


class Steps:
    """The steps of one loop, recorded between :meth:`start` and
    :meth:`stop`; :meth:`begin` and :meth:`end` bound each (called by
    :class:`StepLoop` around its selector's wait).  The clocks are
    injectable (tests); by default ``perf_counter``, ``thread_time`` and
    the thread's run delay, read on the loop's thread.  ``collections``:
    note the collector's runs (``gc.callbacks``).

    Runtime complexity: O(log TOP) a step
    """

    def __init__(
        self,
        *,
        wall: Clock = time.perf_counter,
        cpu: Clock = time.thread_time,
        queued: Clock | None = None,
        keep: int = TOP,
        collections: bool = True,
    ) -> None:
        self._wall, self._cpu, self._queued_clock = wall, cpu, queued
        self._collections = collections
        self._close_delay: Callable[[], None] = lambda: None
        self._queued: Clock = queued or (lambda: 0.0)
        self._keep = keep
        self.recording = False
        #: names of chores running on other threads: noted in each step they overlap
        self.elsewhere: set[str] = set()
        #: (name, read): a count read at each step's bounds, its change noted
        self.counters: list[tuple[str, Callable[[], int]]] = []
        self._thread = threading.get_ident()
        #: the CPU time (s) of each call of a piece of the loop's work, by name
        self.pieces: dict[str, array[float]] = {}
        self._reset()

    def _reset(self) -> None:
        self.cpu, self.wall, self.queued = array("d"), array("d"), array("d")
        self._top: list[tuple[float, int, dict[str, Any]]] = []
        self._top_wall: list[tuple[float, int, dict[str, Any]]] = []
        self._open = False
        self._tags: dict[str, float] | None = None
        self._counts: list[int] = []
        self._t = self._c = self._q = self._t0 = 0.0
        self._gc_start: tuple[float, int] | None = None
        for cpus in self.pieces.values():
            del cpus[:]
        #: the previous step's end (wall, run delay): the wait's start
        self._ended: tuple[float, float] | None = None
        #: each wait's overshoot (s); the longest, its wait for a CPU, its timeout
        self.over = array("d")
        self.over_max = (0.0, 0.0, 0.0)

    def start(self) -> None:
        """Record from the loop's next step on (call it on the loop's thread)."""
        self._reset()
        self._thread = threading.get_ident()
        if self._queued_clock is None:
            self._queued, self._close_delay = _run_delay()
        if self._collections:
            gc.callbacks.append(self._collected)
        self._t0 = self._wall()
        self.recording = True

    def stop(self) -> None:
        """Stop recording (the step in progress is left out)."""
        self.recording = False
        self._open = False
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._collected)
        self._close_delay()
        self._close_delay: Callable[[], None] = lambda: None
        if self._queued_clock is None:
            self._queued = lambda: 0.0

    def begin(self, timeout: float | None = None) -> None:
        """A step starts: the selector returned from a wait of at most
        ``timeout`` seconds (None: no bound), the wait's overshoot kept."""
        if not self.recording:
            return
        self._open = True
        self._tags = None
        if self.counters:
            self._counts = [read() for _, read in self.counters]
        # (the wall clock read first: its interval holds the others')
        t = self._t = self._wall()
        q = self._q = self._queued()
        self._c = self._cpu()
        if self._ended is not None and timeout is not None:
            # (epoll waits whole milliseconds, rounded up: the wait it was asked for)
            asked = math.ceil(timeout * 1e3) * 1e-3 if timeout > 0 else 0.0
            over = t - self._ended[0] - asked
            self.over.append(over)
            if over > self.over_max[0]:
                self.over_max = (over, q - self._ended[1], timeout)

    def end(self) -> None:
        """The step in progress ends (the selector is called): keep its times."""
        if not self._open:
            return
        cpu = self._cpu() - self._c
        now = self._wall()
        wall = now - self._t
        if wall - cpu > OFF_CPU_SPLIT_S:
            q = self._queued()
            queued = q - self._q
        else:  # (not split: the wait after it takes its wait for a CPU, if any)
            q, queued = self._q, 0.0
        self._ended = (now, q)
        self._open = False
        if self.counters:
            for (name, read), before in zip(self.counters, self._counts, strict=True):
                if read() != before:
                    self.note(name, read() - before, always=True)
        if self.elsewhere:
            for name in tuple(self.elsewhere):
                self.note(name, always=True)
        self.cpu.append(cpu)
        self.wall.append(wall)
        self.queued.append(queued)
        top, top_wall, n = self._top, self._top_wall, len(self.cpu)
        if len(top) < self._keep or cpu > top[0][0]:
            self._push(top, cpu, n, wall, queued)
        if len(top_wall) < self._keep or wall > top_wall[0][0]:
            self._push(top_wall, wall, n, wall, queued)

    def _push(
        self,
        heap: list[tuple[float, int, dict[str, Any]]],
        key: float,
        n: int,
        wall: float,
        queued: float,
    ) -> None:
        cpu = self.cpu[-1]
        step = {
            "cpu_ms": cpu * 1000,
            "wall_ms": wall * 1000,
            "queued_ms": queued * 1000,
            "off_ms": max(0.0, wall - cpu - queued) * 1000,
            "at_s": self._t - self._t0,
            "what": dict(self._tags or {}),
        }
        if len(heap) < self._keep:
            heapq.heappush(heap, (key, n, step))
        else:
            heapq.heapreplace(heap, (key, n, step))

    def note(self, name: str, amount: float = 1.0, *, always: bool = False) -> None:
        """Add ``amount`` to ``name`` in the step in progress (from any
        thread; dropped between steps unless ``always``)."""
        if not (self._open or always):
            return
        tags = self._tags
        if tags is None:
            tags = self._tags = {}
        tags[name] = tags.get(name, 0.0) + amount

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        """``gc.callbacks``: note each collection in the step it ran in."""
        if phase == "start":
            self._gc_start = (self._cpu(), threading.get_ident())
            return
        started, self._gc_start = self._gc_start, None
        if started is None:
            return
        cpu = self._cpu() - started[0]
        if started[1] == self._thread:
            self.note(f"gc{info['generation']}", cpu * 1000)
            self.pieces.setdefault(f"gc{info['generation']}", array("d")).append(cpu)
        else:
            self.note(f"gc{info['generation']} elsewhere", cpu * 1000)

    def timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, its calls' CPU time kept as piece ``name`` while
        recording (a piece of the loop's work: the longest is the least a
        step holding it takes)."""
        cpus = self.pieces.setdefault(name, array("d"))
        clock = self._cpu

        def run(*args: Any, **options: Any) -> Any:
            if not self.recording:
                return function(*args, **options)
            start = clock()
            try:
                return function(*args, **options)
            finally:
                cpus.append(clock() - start)

        return run

    def figures(self) -> dict[str, Any]:
        """The recorded steps' figures (the keys are in the module docstring)."""
        cpu, over = sorted(self.cpu), sorted(self.over)
        n = len(cpu)

        def at(q: float) -> float:
            return cpu[min(n - 1, int(n * q))] * 1000 if n else 0.0

        top = [step for _, _, step in sorted(self._top, reverse=True)]
        top_wall = [step for _, _, step in sorted(self._top_wall, reverse=True)]
        longest = top[0] if top else {"cpu_ms": 0.0, "wall_ms": 0.0}
        widest = top_wall[0] if top_wall else {"wall_ms": 0.0, "cpu_ms": 0.0, "queued_ms": 0.0}
        return {
            "steps": n,
            "step_cpu_s": sum(cpu),
            "step_cpu_max_ms": longest["cpu_ms"],
            "step_cpu_max_wall_ms": longest["wall_ms"],
            "step_cpu_p99_ms": at(0.99),
            "step_cpu_p999_ms": at(0.999),
            "steps_over_ms": sum(1 for c in cpu if c * 1000 > TARGET_MS),
            "step_wall_max_ms": widest["wall_ms"],
            "step_wall_max_cpu_ms": widest["cpu_ms"],
            "step_wall_max_queued_ms": widest["queued_ms"],
            "wait_over_max_ms": self.over_max[0] * 1000,
            "wait_over_max_queued_ms": self.over_max[1] * 1000,
            "wait_over_p99_ms": over[min(len(over) - 1, int(len(over) * 0.99))] * 1000
            if over
            else 0.0,
            **{
                f"{name}_{key}": value
                for name, cpus in sorted(self.pieces.items())
                for key, value in _piece(cpus).items()
            },
            "step_top": top,
            "step_top_wall": top_wall,
        }


def _piece(cpus: array[float]) -> dict[str, float]:
    ordered = sorted(cpus)
    n = len(ordered)
    return {
        "calls": n,
        "cpu_max_ms": ordered[-1] * 1000 if n else 0.0,
        "cpu_p999_ms": ordered[min(n - 1, int(n * 0.999))] * 1000 if n else 0.0,
    }


class StepLoop(asyncio.SelectorEventLoop):
    """A selector event loop that times its steps (:class:`Steps`, as
    ``loop.steps``); recording starts with ``loop.steps.start()``."""

    def __init__(self, steps: Steps | None = None) -> None:
        super().__init__()
        self.steps = steps = Steps() if steps is None else steps
        select = self._selector.select  # type: ignore[attr-defined]

        def timed_select(timeout: float | None = None) -> Any:
            steps.end()
            try:
                return select(timeout)
            finally:
                steps.begin(timeout)

        self._selector.select = timed_select  # type: ignore[attr-defined]


def watch_ledger(steps: Steps, aledger: Any) -> None:
    """Note in ``steps`` what an ``AsyncLedger`` does in each step: the
    events recorded, the awaits released, a compaction handed off and
    running (bench-only wrappers on the instance)."""
    ledger = aledger.ledger
    steps.counters.append(("events", lambda: ledger.last_seq))
    ledger.record = steps.timed("record", ledger.record)
    acks = getattr(aledger, "_acks", None)
    if acks is not None:  # (the shared LoopAcks: its release, watched by its class)
        _watch_release(steps, acks)
    elif hasattr(aledger, "_release"):  # (a face with a release of its own, before it)
        release, waiting = steps.timed("release", aledger._release), aledger._waiting

        def released() -> None:
            before = len(waiting)
            release()
            steps.note("released", before - len(waiting))

        aledger._release = released
    handoff = ledger.compact_elsewhere

    def handed() -> bool:
        done = bool(handoff())
        if done:
            steps.note("compaction start")
        return done

    ledger.compact_elsewhere = handed
    compact = ledger.compact

    def compacting(**options: Any) -> Any:
        steps.elsewhere.add("compaction")
        try:
            return compact(**options)
        finally:
            steps.elsewhere.discard("compaction")

    ledger.compact = compacting


#: The LoopAcks watched, by id: their Steps and timed release.  (The class
#: has slots, so its release is wrapped on the class, once, and the
#: wrapper serves the watched instances; any other runs as it is.)
_WATCHED: dict[int, tuple[Any, Steps, Any]] = {}


def _watch_release(steps: Steps, acks: Any) -> None:
    cls = type(acks)
    plain = getattr(cls, "_plain_release", None)
    if plain is None:
        plain = cls._release

        def release(self: Any) -> None:
            watched = _WATCHED.get(id(self))
            if watched is None or watched[0] is not self:
                plain(self)
                return
            _, on, timed = watched
            before = len(self._waiting)
            timed(self)
            on.note("released", before - len(self._waiting))

        cls._plain_release = plain
        cls._release = release
    _WATCHED[id(acks)] = (acks, steps, steps.timed("release", plain))


def _what(step: dict[str, Any]) -> str:
    notes = [
        f"{name} {value:.1f} ms" if name.startswith("gc") else f"{name} {value:.0f}"
        for name, value in sorted(step["what"].items())
    ]
    return ", ".join(notes) or "nothing noted"


def describe(runs: list[dict[str, Any]]) -> list[str]:
    """Lines of the lag round's report on the steps of ``runs`` (one
    figure per run, comma-separated; the longest steps of the run with the
    longest, by CPU and by wall)."""
    if not runs or "steps" not in runs[0]:
        return []

    def each(key: str, form: str = ".1f") -> str:
        return ", ".join(format(f.get(key, 0.0), form) for f in runs)

    worst = max(runs, key=lambda f: f["step_cpu_max_ms"])
    widest = max(runs, key=lambda f: f["step_wall_max_ms"])
    lines = [
        f"steps: CPU max {each('step_cpu_max_ms')} ms (wall {each('step_cpu_max_wall_ms')}), "
        f"p99 {each('step_cpu_p99_ms', '.2f')}, p99.9 {each('step_cpu_p999_ms', '.2f')} ms; "
        f"over {TARGET_MS:g} ms {each('steps_over_ms', '.0f')} of {each('steps', ',.0f')}",
        f"wall max {each('step_wall_max_ms')} ms (CPU {each('step_wall_max_cpu_ms')}, "
        f"waiting for a CPU {each('step_wall_max_queued_ms')})",
        f"waits past their timeout: max {each('wait_over_max_ms')} ms (waiting for a CPU "
        f"{each('wait_over_max_queued_ms')}), p99 {each('wait_over_p99_ms', '.2f')} ms",
    ]
    pieces = [
        f"{name} {each(name + '_cpu_max_ms', '.2f')}"
        for name in ("record", "release", "gc0", "gc1", "gc2")
        if any(f.get(name + "_calls") for f in runs)
    ]
    if pieces:
        lines.append("pieces, CPU max ms: " + "; ".join(pieces))
    for step in worst["step_top"][:3]:
        lines.append(f"  CPU {step['cpu_ms']:.1f} ms, wall {step['wall_ms']:.1f}: {_what(step)}")
    step = widest["step_top_wall"][0]
    lines.append(
        f"  widest: wall {step['wall_ms']:.1f} ms = CPU {step['cpu_ms']:.1f} + waiting for a "
        f"CPU {step['queued_ms']:.1f} + off otherwise {step['off_ms']:.1f}: {_what(step)}"
    )
    return lines
