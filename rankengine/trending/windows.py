"""Trending now: tumbling windows of top-k and a sliding view.

Built on :class:`~rankengine.trending.topk.TopK`; the partitioned pipeline
that can fill the windows is :mod:`rankengine.trending.partitions`.

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

import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rankengine.board.checks import check_flag
from rankengine.trending.hashing import Key, check_count_map, check_key, count_keys
from rankengine.trending.merge import merge_topk
from rankengine.trending.sketch import check_positive
from rankengine.trending.topk import TopItem, TopK

DEFAULT_KEEP: Final = 12
"""Published windows kept: one hour of 5-minute windows."""


class WindowSource(Protocol):
    """What :class:`TumblingWindows` needs from the structure it fills.

    :class:`LocalSource` (one tracker) and
    :class:`~rankengine.trending.partitions.PartitionedTopK` provide it.
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

        >>> from rankengine.trending.partitions import PartitionedTopK
        >>> TumblingWindows(10.0, k=50, source=PartitionedTopK(2, k=2, width=8, depth=1))
        Traceback (most recent call last):
        ...
        ValueError: k=50 is above the source's capacity 18: no window could report 50 keys

        :param length: window length in the clock's unit (seconds for ``time.time``)
        :param k: items published per window
        :param keep: how many published windows to keep
        :param origin: event time where window 0 starts
        :param clock: time source for events added without a time, and :meth:`advance`
        :param source: what counts each window, e.g. a
            :class:`~rankengine.trending.partitions.PartitionedTopK`
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
        :func:`~rankengine.trending.merge.merge_topk`); with ``include_current`` the open
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
        include_current = check_flag(include_current, "include_current")
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
    "DEFAULT_KEEP",
    "LocalSource",
    "TumblingWindows",
    "Window",
    "WindowSource",
]
