"""Trending now: tumbling windows of top-k, a sliding view, and a partitioned pipeline.

Three pieces, each built on :class:`~rankengine.trending.topk.TopK`:

:class:`PartitionedTopK`
    ``P`` partitions, each a :class:`TopK`; keys are routed to partitions by
    a deterministic hash, so each key is counted by exactly one partition.
    Events are pre-aggregated in one buffer and handed to the partitions in
    batches, either in this process or in worker processes
    (:mod:`multiprocessing`) running the same code.  A snapshot merges the
    partitions with :func:`~rankengine.trending.topk.merge_topk`: sketches summed,
    the union of all local candidates re-queried.

:class:`TumblingWindows`
    Cuts the stream into fixed, non-overlapping windows of event time
    ``[origin + i * length, origin + (i + 1) * length)``.  When an event of
    a later window arrives (or :meth:`TumblingWindows.advance` is called),
    the open window is *published* (its top-k frozen in a :class:`Window`)
    and a fresh one starts.  The last ``keep`` published windows are kept;
    :meth:`TumblingWindows.sliding` merges the last few into a "last N
    windows" view.

Late events: an event whose time falls in a window that was already
published is *dropped* and counted in :attr:`TumblingWindows.late_events`;
published windows never change.  Windows skipped with no events are
published as empty windows (at most ``keep`` of them, however long the gap).

::

    time ──►  |  window 0  |  window 1  |  window 2  |  window 3 (open) |
    published:   top-k #0     top-k #1     (empty)      ← events go here
    late event for window 1 ──► dropped, late_events += 1
    sliding(2) = merge(window 2, window 1)
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Final, Protocol

from rankengine.board.core import _check_flag
from rankengine.trending.hashing import Key, check_count_map, check_key, count_keys, make_indexer
from rankengine.trending.sketch import check_positive
from rankengine.trending.topk import TopItem, TopK, merge_topk

ROUTE_SEED: Final = 0x7472656E64696E67
"""Seed of the partition-routing hash ("trending" in ASCII): it must differ
from sketch seeds, or a partition would see only keys of a few columns."""

FLUSH_EVENTS: Final = 100_000
"""Buffered events before a flush to the partitions: large enough that the
buffer pre-aggregates hot keys (a Zipf(1.1) batch of 100k has ~24k distinct
keys), small enough to bound the buffer's memory."""

DEFAULT_KEEP: Final = 12
"""Published windows kept: one hour of 5-minute windows."""


class WindowSource(Protocol):
    """What :class:`TumblingWindows` needs from the structure it fills.

    :class:`LocalSource` (one tracker) and :class:`PartitionedTopK` provide it.
    A source may also have an int ``limit``, the most events one window can
    count: a batch past it is then refused before a window is published.
    Its trackers hold at most ``capacity`` candidates (an int attribute, or
    else ``snapshot().capacity``): a window can report no more keys, so
    :class:`TumblingWindows` refuses a larger ``k``.

    >>> source: WindowSource = LocalSource(TopK(k=1, width=8, depth=1))
    """

    def add(self, key: Key, n: int = 1) -> object:
        """Count one key."""

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        """Count pre-aggregated keys."""

    def snapshot(self) -> TopK:
        """The current window's state as a (merged) tracker."""

    def roll(self) -> TopK:
        """Return the current window's state and start an empty one."""


class LocalSource:
    """A single :class:`TopK` as a :class:`WindowSource`.

    >>> src = LocalSource(TopK(k=2, width=64, depth=2))
    >>> src.add_counts({"a": 2})
    >>> src.roll().total, src.snapshot().total
    (2, 0)
    """

    __slots__ = ("tracker",)

    def __init__(self, tracker: TopK) -> None:
        """Wrap ``tracker`` (it becomes the first window's tracker, frozen once published).

        Runtime complexity: O(1)
        """
        self.tracker = tracker

    @property
    def limit(self) -> int:
        """The most events one window can count (the tracker's counter limit).

        Runtime complexity: O(1)

        >>> LocalSource(TopK(k=1, width=8, depth=1)).limit == 2**32 - 1
        True
        """
        return int(self.tracker._limit)

    @property
    def capacity(self) -> int:
        """The most candidates a window's tracker holds (and reports).

        Runtime complexity: O(1)

        >>> LocalSource(TopK(k=2, width=8, depth=1)).capacity
        18
        """
        return self.tracker.capacity

    def add(self, key: Key, n: int = 1) -> object:
        """Count ``n`` occurrences of ``key``; return the evicted candidate, if any.

        Runtime complexity: as :meth:`TopK.add`

        >>> LocalSource(TopK(k=1, width=8, depth=1)).add("a") is None
        True
        """
        return self.tracker.add(key, n)

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        """Count pre-aggregated keys.

        Runtime complexity: as :meth:`TopK.add_counts`

        >>> src = LocalSource(TopK(k=1, width=8, depth=1))
        >>> src.add_counts({"a": 3})
        >>> src.tracker.total
        3
        """
        self.tracker.add_counts(counts)

    def snapshot(self) -> TopK:
        """The live tracker (not a copy).

        Runtime complexity: O(1)

        >>> tracker = TopK(k=1, width=8, depth=1)
        >>> LocalSource(tracker).snapshot() is tracker
        True
        """
        return self.tracker

    def roll(self) -> TopK:
        """Return the tracker and replace it with an empty one.

        Runtime complexity: O(width * depth)

        >>> tracker = TopK(k=1, width=8, depth=1)
        >>> src = LocalSource(tracker)
        >>> src.roll() is tracker, src.tracker is tracker
        (True, False)
        """
        tracker, self.tracker = self.tracker, self.tracker.empty_like()
        return tracker

    def _check(self) -> None:
        """Assert the tracker's invariants."""
        self.tracker._check()


# -- partitioned pipeline --------------------------------------------------------


def _serve(conn: Connection, config: dict[str, Any]) -> None:
    """Worker process main loop: one partition's :class:`TopK`, driven by messages.

    Messages are ``(op, payload)``: ``counts`` (a dict, no reply),
    ``snapshot`` and ``roll`` (reply: the tracker's bytes; ``roll`` then
    starts an empty tracker) and ``stop``.  An error is sent back as
    ``("error", text)``: at once when a request fails (the parent is
    waiting for its reply), else on the next request.
    """
    tracker = TopK(**config)
    failure: str | None = None
    while True:
        try:
            op, payload = conn.recv()
        except EOFError:  # the parent closed its end, or died: nothing left to serve
            break
        try:
            if op == "counts":
                tracker.add_counts(payload)
                continue
            if op == "stop":
                break
            if failure is not None:
                conn.send(("error", failure))
                failure = None
            elif op == "snapshot":
                conn.send(("ok", tracker.to_bytes()))
            elif op == "roll":
                conn.send(("ok", tracker.to_bytes()))
                tracker = tracker.empty_like()
            else:  # pragma: no cover - protocol error
                conn.send(("error", f"unknown op {op!r}"))
        except Exception as exc:  # reported to the parent
            failure = f"{type(exc).__name__}: {exc}"
            if op != "counts":  # a request: its reply is awaited now
                conn.send(("error", failure))
                failure = None
    conn.close()


class PartitionedTopK:
    """``P`` top-k partitions behind a hash router, merged on demand.

    >>> with PartitionedTopK(4, k=2, width=64, depth=2) as pipe:
    ...     pipe.add_many("mississippi")
    ...     [(item.key, item.count) for item in pipe.snapshot().top()]
    [('i', 4), ('s', 4)]
    """

    __slots__ = (
        "_buffer",
        "_buffered",
        "_conns",
        "_parts",
        "_pid",
        "_procs",
        "_route",
        "_stopped",
        "_totals",
        "config",
        "flush_events",
        "limit",
        "partitions",
    )

    def __init__(
        self,
        partitions: int,
        k: int = 10,
        *,
        processes: bool = False,
        mp_context: str = "spawn",
        flush_events: int = FLUSH_EVENTS,
        route_seed: int = ROUTE_SEED,
        **tracker_options: Any,
    ) -> None:
        """Start ``partitions`` trackers (in worker processes if ``processes``).

        Runtime complexity: O(P * width * depth), plus process start-up

        :param partitions: number of partitions P >= 1
        :param k: top-k size of each partition and of the merge
        :param processes: run each partition in its own process
        :param mp_context: :mod:`multiprocessing` start method for workers
        :param flush_events: buffered events that trigger a flush
        :param route_seed: seed of the routing hash
        :param tracker_options: further :class:`TopK` options (width, depth, ...)
        """
        check_positive(partitions, "partitions")
        check_positive(flush_events, "flush_events")
        processes = _check_flag(processes, "processes")  # "no" started workers
        template = TopK(k, **tracker_options)
        self.config = template.config()
        self.partitions = partitions
        self.flush_events = flush_events
        self.limit = template._limit
        self._route = make_indexer(route_seed, 1, partitions)
        self._buffer: dict[Key, int] = {}
        self._buffered = 0
        self._totals = [0] * partitions
        self._parts: list[TopK] = []
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        #: close() stopped the worker processes (in-process, close is a no-op)
        self._stopped = False
        #: the process that started the workers (see __del__)
        self._pid = os.getpid()
        if not processes:
            self._parts = [TopK(**self.config) for _ in range(partitions)]
            return
        ctx: Any = multiprocessing.get_context(mp_context)
        try:
            for _ in range(partitions):
                parent, child = ctx.Pipe()
                self._conns.append(parent)
                try:
                    proc = ctx.Process(target=_serve, args=(child, self.config), daemon=True)
                    proc.start()
                finally:
                    child.close()
                self._procs.append(proc)
        except BaseException:
            self.close()  # (the workers started already: stopped, not left behind)
            raise

    @property
    def processes(self) -> bool:
        """Whether partitions run in worker processes.

        Runtime complexity: O(1)

        >>> PartitionedTopK(2, k=1, width=8, depth=1).processes
        False
        """
        return bool(self._procs)

    @property
    def capacity(self) -> int:
        """The most candidates a merged tracker holds (and reports).

        Runtime complexity: O(1)

        >>> PartitionedTopK(2, k=2, width=8, depth=1).capacity
        18
        """
        return int(self.config["capacity"])

    def owner(self, key: Key) -> int:
        """The partition that counts ``key``.

        Runtime complexity: O(len(key))

        >>> pipe = PartitionedTopK(8, k=1, width=16, depth=1)
        >>> pipe.owner("spam") == PartitionedTopK(8, k=1, width=16, depth=1).owner("spam")
        True
        """
        return self._route(key)[0]

    # -- ingestion ----------------------------------------------------------------

    def add(self, key: Key, n: int = 1) -> None:
        """Buffer ``n`` occurrences of ``key`` (flushed every ``flush_events``).

        Runtime complexity: O(1) amortised (O(len(key)) for an ``int`` check)

        >>> pipe = PartitionedTopK(2, k=1, width=16, depth=1)
        >>> pipe.add("a", 0)
        Traceback (most recent call last):
        ...
        ValueError: n must be a positive int, got 0

        :param key: a supported key
        :param n: positive count
        """
        if type(n) is not int or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        t = type(key)
        if t is not str and t is not bytes:
            check_key(key)
        self._reserve(n)
        buffer = self._buffer
        buffer[key] = buffer.get(key, 0) + n
        self._buffered += n
        if self._buffered >= self.flush_events:
            self.flush()

    def add_many(self, keys: Iterable[Key]) -> None:
        """Buffer one occurrence of each key (validated first: on error nothing changes).

        Runtime complexity: O(n)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add_many(["a", "b", "a"])
        >>> pipe.snapshot().top()
        [TopItem(key='a', count=2, error=0)]

        :param keys: iterable of keys
        """
        self.add_counts(count_keys(keys))

    def add_counts(self, counts: Mapping[Key, int]) -> None:
        """Buffer pre-aggregated counts (validated first: on error nothing changes).

        Runtime complexity: O(d) for d keys

        >>> pipe = PartitionedTopK(2, k=1, width=16, depth=1)
        >>> pipe.add_counts({"a": 1, 2.5: 1})
        Traceback (most recent call last):
        ...
        TypeError: unsupported key type float: keys must be str, bytes or int

        :param counts: mapping key -> positive int
        """
        check_count_map(counts)
        for key, n in counts.items():
            if type(n) is not int or n < 1:
                raise ValueError(f"count of {key!r} must be a positive int, got {n!r}")
        self._reserve(sum(counts.values()))
        buffer = self._buffer
        if not buffer:
            buffer.update(counts)
        else:
            get = buffer.get
            for key, n in counts.items():
                buffer[key] = get(key, 0) + n
        self._buffered += sum(counts.values())
        if self._buffered >= self.flush_events:
            self.flush()

    def _reserve(self, n: int) -> None:
        """Raise OverflowError (changing nothing) if ``n`` more events pass the limit.

        The limit applies to all partitions together (no partition can then
        pass its own counter limit, wherever the keys are routed).
        """
        self._check_open()
        if sum(self._totals) + self._buffered + n > self.limit:
            raise OverflowError(
                f"the pipeline would count {sum(self._totals) + self._buffered + n} events "
                f"in one window, past the counter limit {self.limit}: use "
                "counter_bits=64 or shorter windows"
            )

    def _check_open(self) -> None:
        """Raise ``ValueError`` (changing nothing) once :meth:`close` has
        stopped the worker processes: nothing is left to count with."""
        if self._stopped:
            raise ValueError("this PartitionedTopK is closed: its worker processes have stopped")

    def _send(self, p: int, message: tuple[str, Any]) -> None:
        """Send ``message`` to partition ``p``'s worker (see :meth:`_dead`)."""
        try:
            self._conns[p].send(message)
        except (OSError, EOFError) as exc:
            raise self._dead(p) from exc

    def _recv(self, p: int) -> Any:
        """Partition ``p``'s reply (see :meth:`_dead`)."""
        try:
            return self._conns[p].recv()
        except (OSError, EOFError) as exc:
            raise self._dead(p) from exc

    def _dead(self, p: int) -> RuntimeError:
        """The error for a worker whose pipe broke: it has exited, and its
        counts with it, so no later answer of this pipeline can be right."""
        proc = self._procs[p]
        proc.join(timeout=1)
        return RuntimeError(
            f"partition {p}'s worker process has stopped (exit code {proc.exitcode}) "
            "and its counts are lost: close() this pipeline and start a new one.  "
            "With the spawn start method each worker imports the main script again: "
            "start the pipeline under if __name__ == '__main__':"
        )

    def flush(self) -> None:
        """Route the buffered counts to their partitions.

        Each distinct key is hashed once per flush.

        Runtime complexity: O(d * depth) for d distinct buffered keys

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a", 2); pipe.flush()
        >>> sum(t.total for t in pipe.partition_trackers())
        2
        """
        if not self._buffer:
            return
        self._check_open()
        route = self._route
        groups: list[dict[Key, int]] = [{} for _ in range(self.partitions)]
        for key, n in self._buffer.items():
            groups[route(key)[0]][key] = n
        sums = [sum(group.values()) for group in groups]
        for p, group in enumerate(groups):
            if not group:
                continue
            self._totals[p] += sums[p]
            if self._conns:
                self._send(p, ("counts", group))
            else:
                self._parts[p].add_counts(group)
        self._buffer = {}
        self._buffered = 0

    # -- results ------------------------------------------------------------------

    def _collect(self, op: str) -> list[TopK]:
        """Flush, then fetch every partition's tracker (``roll`` also resets them)."""
        self._check_open()
        self.flush()
        if not self._conns:
            parts = self._parts
            if op == "roll":
                self._parts = [part.empty_like() for part in parts]
        else:
            for p in range(self.partitions):
                self._send(p, (op, None))
            # Read every reply before raising: one left in its pipe would be
            # taken for the answer to the next request.
            replies = [self._recv(p) for p in range(self.partitions)]
            for p, (status, payload) in enumerate(replies):
                if status != "ok":
                    raise RuntimeError(f"partition {p} failed: {payload}")
            parts = [TopK.from_bytes(payload) for _, payload in replies]
        if op == "roll":
            self._totals = [0] * self.partitions
        return parts

    def partition_trackers(self) -> list[TopK]:
        """Each partition's tracker (copies when partitions are processes).

        Runtime complexity: O(P * width * depth)

        >>> [t.total for t in PartitionedTopK(2, k=1, width=8, depth=1).partition_trackers()]
        [0, 0]
        """
        return self._collect("snapshot")

    def merge(self, parts: list[TopK]) -> TopK:
        """Merge partition trackers: each key's count from its owner partition.

        ``parts`` must be this pipeline's (or one routed the same way): one
        tracker per partition, in order; anything else raises
        :class:`ValueError`.

        Runtime complexity: as :func:`~rankengine.trending.topk.merge_topk`

        >>> pipe = PartitionedTopK(3, k=1, width=8, depth=1)
        >>> pipe.add("a", 4)
        >>> pipe.merge(pipe.partition_trackers()).top()
        [TopItem(key='a', count=4, error=0)]
        >>> pipe.merge(pipe.partition_trackers()[:2])
        Traceback (most recent call last):
        ...
        ValueError: 2 trackers for 3 partitions: merge takes one tracker per partition

        :param parts: one tracker per partition, in partition order
        :return: a new tracker
        """
        if len(parts) != self.partitions:
            raise ValueError(
                f"{len(parts)} trackers for {self.partitions} partitions: "
                "merge takes one tracker per partition"
            )
        return merge_topk(parts, owner=self.owner)

    def snapshot(self) -> TopK:
        """The merged tracker of everything since the last :meth:`roll`.

        Runtime complexity: O(P * width * depth + P * k' * depth)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a")
        >>> pipe.snapshot().total, pipe.snapshot().total
        (1, 1)
        """
        return self.merge(self._collect("snapshot"))

    def roll(self) -> TopK:
        """The merged tracker, and every partition starts empty.

        Runtime complexity: O(P * width * depth + P * k' * depth)

        >>> pipe = PartitionedTopK(2, k=1, width=8, depth=1)
        >>> pipe.add("a")
        >>> pipe.roll().total, pipe.snapshot().total
        (1, 0)
        """
        return self.merge(self._collect("roll"))

    def close(self) -> None:
        """Stop the worker processes (a no-op in-process).

        Runtime complexity: O(P)

        >>> PartitionedTopK(2, k=1, width=8, depth=1).close()
        """
        for conn in self._conns:
            try:
                conn.send(("stop", None))
            except OSError:  # the worker is gone already
                pass
            finally:
                conn.close()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():  # pragma: no cover - stuck worker
                proc.terminate()
                proc.join()  # (reaped: no zombie left behind)
        self._stopped = self._stopped or bool(self._procs)
        self._conns = []
        self._procs = []

    def __del__(self) -> None:
        """A process pipeline dropped without :meth:`close`: warn, as an
        unclosed file does, and tell its workers to stop (without waiting
        for them: this may run inside the garbage collector).  Under the
        fork start method the end of the pipe alone would not stop them:
        each worker holds a copy of the parent's end.

        Runtime complexity: O(P)
        """
        conns = getattr(self, "_conns", None)
        if not conns:
            return  # closed, in-process, or never started
        if self._pid != os.getpid():
            return  # a forked child's copy: the workers are its parent's
        self._conns = []
        try:
            warnings.warn(
                f"a PartitionedTopK with {len(conns)} worker processes was never closed",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )
        finally:  # (under -W error the warning raises: stop them all the same)
            for conn in conns:
                with contextlib.suppress(Exception):
                    conn.send(("stop", None))
                with contextlib.suppress(Exception):
                    conn.close()

    def __enter__(self) -> PartitionedTopK:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        """Assert every invariant of the router and (in-process) partitions."""
        try:
            # The buffer counts exactly what it says it holds.
            assert self._buffered == sum(self._buffer.values())
            assert all(n >= 1 for n in self._buffer.values())
            assert len(self._totals) == self.partitions
            if self._parts:
                assert len(self._parts) == self.partitions
                for p, part in enumerate(self._parts):
                    part._check()
                    # Each partition counted what was routed to it, only its keys.
                    assert part.total == self._totals[p], (p, part.total, self._totals[p])
                    assert all(self.owner(key) == p for key in part._cands), p
        except AssertionError:
            print(f"PartitionedTopK(partitions={self.partitions}, buffered={self._buffered})")
            raise


# -- tumbling windows ------------------------------------------------------------


def _finite(x: float) -> bool:
    """Whether ``x`` is finite as a float (an int too large for a float is not)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


@dataclass(frozen=True)
class Window:
    """One published window: ``[start, end)`` of event time and its top-k.

    ``tracker`` is the window's full (merged) tracker, kept for sliding
    views; it is None for an empty window.  A published window's tracker is
    frozen (:meth:`TopK.freeze`): reads and merges work, writes raise
    :class:`TypeError`, so a published window never changes.

    >>> Window(index=3, start=30.0, end=40.0, total=0, top=(), tracker=None).end
    40.0
    """

    index: int
    start: float
    end: float
    total: int
    top: tuple[TopItem, ...]
    tracker: TopK | None


class TumblingWindows:
    """Top-k per tumbling window of event time; keeps the last ``keep`` windows.

    >>> clock = iter([]).__next__  # not used: every event carries its time
    >>> tw = TumblingWindows(60.0, k=2, width=64, depth=2, clock=clock)
    >>> tw.add("a", ts=5.0); tw.add("a", ts=10.0); tw.add("b", ts=70.0)
    >>> [(w.index, [(i.key, i.count) for i in w.top]) for w in tw.windows()]
    [(0, [('a', 2)])]
    >>> tw.add("c", ts=30.0)  # window 0 is published: a late event
    >>> tw.late_events
    1
    """

    __slots__ = (
        "_published",
        "_source",
        "clock",
        "current",
        "k",
        "keep",
        "late_events",
        "length",
        "on_publish",
        "origin",
    )

    def __init__(
        self,
        length: float,
        k: int = 10,
        *,
        keep: int = DEFAULT_KEEP,
        origin: float = 0.0,
        clock: Callable[[], float] = time.time,
        source: WindowSource | None = None,
        on_publish: Callable[[Window], None] | None = None,
        **tracker_options: Any,
    ) -> None:
        """Create the windows; by default one :class:`TopK` counts each window.

        A ``source`` must hold at least ``k`` candidates (its ``capacity``):
        a published window reports only what its tracker holds.

        Runtime complexity: O(width * depth)

        >>> TumblingWindows(10.0, k=50, source=PartitionedTopK(2, k=2, width=8, depth=1))
        Traceback (most recent call last):
        ...
        ValueError: k=50 is above the source's capacity 18: no window could report 50 keys

        :param length: window length in the clock's unit (seconds for ``time.time``)
        :param k: items published per window
        :param keep: how many published windows to keep
        :param origin: event time where window 0 starts
        :param clock: time source for events added without a time, and :meth:`advance`
        :param source: what counts each window, e.g. a :class:`PartitionedTopK`
        :param on_publish: called with each published :class:`Window` (once each,
            also when a call raises: the first error is re-raised after the others)
        :param tracker_options: :class:`TopK` options when ``source`` is None
        :raises ValueError: if ``k`` is above the source's candidate capacity
            (its windows could never report ``k`` keys)
        :raises TypeError: for tracker options given with a ``source``, which
            has its own trackers (the options would be ignored)
        """
        if source is not None and tracker_options:
            raise TypeError(
                f"tracker options ({', '.join(sorted(tracker_options))}) are for the "
                "TopK that TumblingWindows makes when no source is given; a source "
                "has its own trackers: set them where the source is made"
            )
        if not (
            isinstance(length, (int, float))
            and not isinstance(length, bool)
            and _finite(length)
            and length > 0
        ):
            raise ValueError(f"length must be a positive finite number, got {length!r}")
        check_positive(k, "k")
        check_positive(keep, "keep")
        self.length = float(length)
        self.k = k
        self.keep = keep
        self.origin = self._time(origin)
        self.clock = clock
        self.on_publish = on_publish
        self._source: WindowSource = (
            LocalSource(TopK(k, **tracker_options)) if source is None else source
        )
        capacity = getattr(self._source, "capacity", None)
        if type(capacity) is not int:
            capacity = self._source.snapshot().capacity
        if k > capacity:
            raise ValueError(
                f"k={k} is above the source's capacity {capacity}: no window could report {k} keys"
            )
        self._published: deque[Window] = deque(maxlen=keep)
        self.current: int | None = None
        self.late_events = 0

    @staticmethod
    def _time(ts: object) -> float:
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not _finite(ts):
            raise ValueError(f"event time must be a finite number, got {ts!r}")
        return float(ts)

    def window_of(self, ts: float) -> int:
        """Index of the window that contains event time ``ts``.

        Runtime complexity: O(1)

        >>> TumblingWindows(10.0, clock=float).window_of(25.0)
        2

        :param ts: event time
        :return: the ``i`` with ``start(i) <= ts < start(i + 1)``, where
            ``start(i) = origin + i * length`` as :class:`Window` reports it
        """
        ts = self._time(ts)
        offset = (ts - self.origin) / self.length
        if not math.isfinite(offset):
            raise ValueError(
                f"event time {ts!r} is too far from origin {self.origin!r} for windows of "
                f"length {self.length!r}"
            )
        index = math.floor(offset)
        # The division rounds (3 * 0.7 / 0.7 < 3): settle the index against
        # the starts as computed, so that each event lies in its window's
        # published [start, end).  The rounding is far below one window (for
        # any window longer than a few ulps of the times), so one step is enough.
        if ts < self._start(index):
            index -= 1
        elif ts >= self._start(index + 1):
            index += 1
        return index

    def _start(self, index: int) -> float:
        """Event time where window ``index`` starts (and window ``index - 1`` ends)."""
        return self.origin + index * self.length

    def _enter(self, ts: float | None, n: int) -> bool:
        """Move to the window of ``ts`` for ``n`` events, publishing as needed.

        Returns False if ``ts`` is late.  ``n`` events that would open a new
        window but cannot fit in one raise :class:`OverflowError` before
        anything changes (in the open window, the source itself refuses them
        unchanged).
        """
        index = self.window_of(self.clock() if ts is None else ts)
        if self.current is None or index > self.current:
            limit = getattr(self._source, "limit", None)
            if type(limit) is int and n > limit:
                raise OverflowError(
                    f"{n} events in one window are past the counter limit {limit}: "
                    "use counter_bits=64 or shorter windows"
                )
        if self.current is None:
            self.current = index
        elif index < self.current:
            return False
        elif index > self.current:
            self._publish_until(index)
        return True

    def add(self, key: Key, n: int = 1, ts: float | None = None) -> None:
        """Count ``n`` occurrences of ``key`` at event time ``ts`` (default: the clock).

        Runtime complexity: as the source's ``add``, plus a publish at a
        window boundary

        >>> tw = TumblingWindows(10.0, k=1, width=16, depth=1, clock=lambda: 4.0)
        >>> tw.add("a"); tw.add("b", 2, ts=8.0)
        >>> tw.current_top()
        [TopItem(key='b', count=2, error=0)]

        :param key: a supported key
        :param n: positive count
        :param ts: event time; a published window's time counts as late
        """
        check_key(key)
        check_positive(n)
        if not self._enter(ts, n):
            self.late_events += n
            return
        self._source.add(key, n)

    def add_many(self, keys: Iterable[Key], ts: float | None = None) -> None:
        """Count one occurrence of each key, all at event time ``ts``.

        Runtime complexity: O(n) plus the source's ``add_counts``

        >>> tw = TumblingWindows(10.0, k=1, width=16, depth=1, clock=lambda: 3.0)
        >>> tw.add_many(["x", "x", "y"])
        >>> tw.current_top()
        [TopItem(key='x', count=2, error=0)]

        :param keys: keys (validated before anything changes)
        :param ts: event time of the whole batch
        """
        self.add_counts(count_keys(keys), ts)

    def add_counts(self, counts: Mapping[Key, int], ts: float | None = None) -> None:
        """Count pre-aggregated keys, all at event time ``ts``.

        Runtime complexity: as the source's ``add_counts``

        >>> tw = TumblingWindows(10.0, k=1, width=16, depth=1, clock=lambda: 0.0)
        >>> tw.add_counts({"a": 3}, ts=1.0); tw.add_counts({"b": 1}, ts=12.0)
        >>> tw.latest().top
        (TopItem(key='a', count=3, error=0),)

        :param counts: mapping key -> positive int
        :param ts: event time of the whole batch
        """
        check_count_map(counts)
        for key, n in counts.items():
            check_positive(n, f"count of {key!r}")
        if not self._enter(ts, sum(counts.values())):
            self.late_events += sum(counts.values())
            return
        self._source.add_counts(counts)

    def advance(self, now: float | None = None) -> list[Window]:
        """Publish every window that ended by ``now`` (default: the clock).

        Use it on a timer so that quiet periods still publish (empty) windows.

        Runtime complexity: O(min(windows passed, keep)) publishes

        >>> tw = TumblingWindows(10.0, k=1, width=16, depth=1, clock=lambda: 0.0)
        >>> tw.add("a", ts=1.0)
        >>> [(w.index, w.total) for w in tw.advance(now=35.0)]
        [(0, 1), (1, 0), (2, 0)]

        :param now: current event time
        :return: the windows published by this call
        """
        index = self.window_of(self.clock() if now is None else now)
        if self.current is None:
            self.current = index
        if index <= self.current:
            return []
        return self._publish_until(index)

    def _publish_until(self, index: int) -> list[Window]:
        """Publish the open window and the empty ones before window ``index``.

        Only the last ``keep`` windows are kept, so after a long gap at most
        ``keep`` empty windows are published, not one per skipped window.

        The windows are recorded and ``current`` moves before ``on_publish``
        runs: a callback that raises cannot leave a window half published
        (rolled but still open, and published again, empty, by the next
        event).  Each window is handed to ``on_publish`` once; the first
        exception a call raises is re-raised after the others.
        """
        assert self.current is not None
        tracker = self._source.roll()
        published = [self._publish(self.current, tracker if tracker.total else None)]
        first_empty = max(self.current + 1, index - self.keep)
        published.extend(self._publish(empty, None) for empty in range(first_empty, index))
        self.current = index
        if self.on_publish is not None:
            failure: BaseException | None = None
            for window in published:
                try:
                    self.on_publish(window)
                except Exception as exc:
                    failure = exc if failure is None else failure
            if failure is not None:
                raise failure
        return published

    def _publish(self, index: int, tracker: TopK | None) -> Window:
        """Freeze ``tracker`` and record window ``index`` (``on_publish`` is the caller's)."""
        if tracker is not None:
            tracker.freeze()  # published windows never change (O(1), no copy)
        top = tuple(tracker.top(self.k)) if tracker is not None else ()
        window = Window(
            index=index,
            start=self._start(index),
            end=self._start(index + 1),
            total=tracker.total if tracker is not None else 0,
            top=top,
            tracker=tracker,
        )
        self._published.append(window)
        return window

    def windows(self) -> list[Window]:
        """Published windows, oldest first (at most ``keep``).

        Runtime complexity: O(keep)

        >>> tw = TumblingWindows(10.0, keep=2, width=16, depth=1, clock=lambda: 0.0)
        >>> _ = tw.advance(0.0); _ = tw.advance(45.0)
        >>> [w.index for w in tw.windows()]
        [2, 3]
        """
        return list(self._published)

    def latest(self) -> Window | None:
        """The most recently published window, or None.

        Runtime complexity: O(1)

        >>> TumblingWindows(10.0, width=16, depth=1, clock=lambda: 0.0).latest() is None
        True
        """
        return self._published[-1] if self._published else None

    def current_top(self, k: int | None = None) -> list[TopItem]:
        """Top-k of the open window so far.

        Runtime complexity: as the source's ``snapshot`` plus O(k' log k')

        >>> tw = TumblingWindows(10.0, k=1, width=16, depth=1, clock=lambda: 0.0)
        >>> tw.add_many("aab")
        >>> tw.current_top()
        [TopItem(key='a', count=2, error=0)]
        """
        return self._source.snapshot().top(self.k if k is None else k)

    def sliding(self, windows: int, *, include_current: bool = False) -> TopK:
        """Merged tracker of the last ``windows`` published windows ("last N windows").

        Sketches are summed and candidates re-queried (see
        :func:`~rankengine.trending.topk.merge_topk`); with ``include_current`` the open
        window counts as one of them.

        Runtime complexity: O(windows * width * depth + windows * k' * depth)

        >>> tw = TumblingWindows(10.0, k=1, width=64, depth=2, clock=lambda: 0.0)
        >>> tw.add("a", ts=1.0); tw.add("b", 2, ts=11.0); tw.add("a", 3, ts=21.0)
        >>> tw.sliding(2).top()
        [TopItem(key='b', count=2, error=0)]
        >>> tw.sliding(3, include_current=True).top()
        [TopItem(key='a', count=4, error=0)]

        :param windows: how many windows, 1 to ``keep`` (``keep + 1`` with
            ``include_current``)
        :param include_current: count the open window as the newest one
        :return: a new tracker
        """
        check_positive(windows, "windows")
        include_current = _check_flag(include_current, "include_current")
        most = self.keep + include_current
        if windows > most:
            raise ValueError(f"windows must be 1 to {most} (keep={self.keep}), not {windows}")
        trackers: list[TopK] = []
        if include_current:
            trackers.append(self._source.snapshot())
            windows -= 1
        published = list(self._published)[-windows:] if windows else []
        trackers.extend(w.tracker for w in published if w.tracker is not None)
        trackers = [t for t in trackers if t.total]
        if not trackers:
            return self._source.snapshot().empty_like()
        return merge_topk(trackers, k=self.k)

    def _check(self) -> None:
        """Assert the window bookkeeping invariants."""
        try:
            indexes = [w.index for w in self._published]
            # Published windows are consecutive-or-later, oldest first, at most keep.
            assert len(indexes) <= self.keep
            assert indexes == sorted(set(indexes)), indexes
            if self.current is not None and indexes:
                assert indexes[-1] < self.current
            for w in self._published:
                # Each window's times, total and top agree with its tracker.
                assert (w.start, w.end) == (self._start(w.index), self._start(w.index + 1))
                if w.tracker is None:
                    assert w.total == 0 and w.top == ()
                else:
                    w.tracker._check()
                    assert w.total == w.tracker.total > 0
                    assert list(w.top) == w.tracker.top(self.k)
            assert self.late_events >= 0
            # The open window's source holds its own invariants (when it can check them).
            source_check = getattr(self._source, "_check", None)
            if source_check is not None:
                source_check()
        except AssertionError:
            print(f"TumblingWindows(current={self.current}, published={indexes})")
            raise


__all__ = [
    "LocalSource",
    "PartitionedTopK",
    "TumblingWindows",
    "Window",
    "WindowSource",
]
