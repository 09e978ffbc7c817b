"""A follower: a process's boards, fed from the event store in its order.

Each process of a fleet keeps its own boards in memory (all-time, weekly, a
region's ...) and a :class:`Follower` applies the store's events to them:
first everything committed so far (:meth:`Follower.catch_up`), then each new
event as it commits (:meth:`Follower.poll`, :meth:`Follower.follow`:
``LISTEN`` to wake, a query to read).  Every process applies the same events
in the same order, so every process's views end equal.

Each view remembers the sequence number of the last event it applied
(``view.position``) and skips events at or below it, so applying is
idempotent by sequence number: a chunk read twice (a retry, a view added
late) is never counted twice.  An event a view refuses (a late event for a
closed period, a member a board cannot compare) changes nothing in that
view and is counted in ``view.refused``; every process refuses it alike,
because every process's view is in the same state when it comes.

Time: a view whose ``incr`` takes ``t=`` (periodic boards, windows) gets the
event's own time, and its board's ``clock`` should be a :class:`StreamClock`
given to the view too: "now" is then the latest event time the view has
seen, so what is open, closed or late is decided by the stream, the same in
every process, not by each process's wall clock.

A view on Redis is :class:`~rankengine.pg.redis_view.RedisView`: the same
interface, with its position kept in Redis.

>>> from rankengine import Leaderboard
>>> view = BoardView("all-time", Leaderboard())
>>> view.apply([StoreEvent(1, "incr", "ann", 5, 0, None), StoreEvent(2, "incr", "ann", 5, 0, None)])
2
>>> view.board.items(), view.position
([('ann', 10)], 2)
>>> view.apply([StoreEvent(2, "incr", "ann", 5, 0, None)])   # seen: skipped
0
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol

from rankengine.pg.catchup import fold_in_sql
from rankengine.pg.events import INCR, META, REMOVE, SET, StoreEvent
from rankengine.pg.fold import add_increments, can_fold, fold_into, write_increments
from rankengine.pg.snapshots import ViewSnapshots, can_snapshot
from rankengine.pg.store import CHUNK, EventStore

__all__ = [
    "FOLD_MIN",
    "BoardView",
    "Follower",
    "Route",
    "StreamClock",
    "View",
    "apply_event",
]

#: A run of foldable events shorter than this is applied one by one: folding
#: pays a dict per run and ``set_many``'s planning, which a few events do not
#: win back (a live follower's reads are often one or two events).
FOLD_MIN: Final = 64

#: A view's filter: True for the events it takes.
Route = Callable[[StoreEvent], bool]


class View(Protocol):
    """What a follower feeds: a name, a position, and ``apply``."""

    name: str
    position: int
    refused: int

    def apply(self, events: Sequence[StoreEvent]) -> int:
        """Apply the events past :attr:`position` (in order); return how many."""
        ...


def apply_event(board: Any, event: StoreEvent, timed: bool) -> None:
    """Apply one event to ``board`` through its public writes (``t=`` the
    event's time, in seconds, on a board with a time axis).

    Runtime complexity: one write of the board (O(log N) on an exact board)
    """
    op, member, value = event.op, event.member, event.value
    time: dict[str, float] = {"t": event.time_ms / 1000} if timed else {}
    if op == INCR:
        if event.when is None:
            board.incr(member, value, **time)
        else:
            board.incr(member, value, when=event.when, **time)
    elif op == SET:
        extra: dict[str, Any] = {}
        if event.when is not None:
            extra["when"] = event.when
        if event.meta is not None:
            extra["meta"] = event.meta
        board.set(member, value, **time, **extra)
    elif op == REMOVE:
        board.remove(member, **time)
    elif op == META:
        board.set_meta(member, value, **time)


def _takes_time(board: Any) -> bool:
    try:
        return "t" in inspect.signature(board.incr).parameters
    except (TypeError, ValueError):
        return False


class StreamClock:
    """A board's "now" taken from the stream: the latest event time (seconds)
    its view has seen, routed to it or not.  Never goes back.

    >>> clock = StreamClock()
    >>> clock.advance(5_000); clock.advance(3_000); clock()
    5.0
    """

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, time_ms: int) -> None:
        """Move to ``time_ms`` (milliseconds) unless the clock is past it already."""
        t = time_ms / 1000
        self.now = max(self.now, t)


class BoardView:
    """An in-process board fed by a follower (any board kind with
    ``incr``/``set``/``remove``/``set_meta``).

    :param route: a filter, e.g. ``lambda e: (e.attrs or {}).get("region") == "eu"``.
    :param clock: the :class:`StreamClock` the board was made with (a board
        with a time axis): the view advances it before each event.
    """

    def __init__(
        self,
        name: str,
        board: Any,
        *,
        route: Route | None = None,
        position: int = 0,
        clock: StreamClock | None = None,
    ) -> None:
        self.name = name
        self.board = board
        self.route = route
        self.position = position
        self.refused = 0
        self.timed = _takes_time(board)
        self.foldable = not self.timed and can_fold(board)
        #: increments summed by a deferred apply, not yet written (see flush)
        self._sums: dict[Any, int] = {}
        self.clock = clock

    def __repr__(self) -> str:
        return f"BoardView({self.name!r}, position={self.position}, refused={self.refused})"

    def apply(self, events: Sequence[StoreEvent], *, defer: bool = False) -> int:
        """Apply the events past :attr:`position`, in order (folded where
        :mod:`rankengine.pg.fold` can); return how many were past it.

        ``defer``: into an empty board, a run of integer increments may be
        summed and written later, by :meth:`flush` (a joining process's
        catch-up sums every chunk, then loads each member once, in bulk);
        the board lags until then.

        Runtime complexity: O(k log N) for k events (less when folded).
        """
        fresh = [e for e in events if e.seq > self.position]
        if not fresh:
            return 0
        route = self.route
        if self.foldable and self.clock is None:
            taken = fresh if route is None else [e for e in fresh if route(e)]
            empty = bool(self._sums) or not len(self.board)
            if defer and empty and add_increments(self._sums, taken):
                self.position = fresh[-1].seq
                return len(fresh)
        self.flush()
        if self.clock is not None:
            # one by one, the clock at each event the latest time before it
            advance = self.clock.advance
            for event in fresh:
                advance(event.time_ms)
                if route is None or route(event):
                    self._one(event)
            self.position = fresh[-1].seq
            return len(fresh)
        taken = fresh if route is None else [e for e in fresh if route(e)]
        run: list[StoreEvent] = []
        for event in taken:
            if (
                self.foldable
                and event.op != META
                and type(event.value) in (int, float, type(None))
                and event.when is None
                and event.meta is None
            ):
                run.append(event)
                continue
            self._flush(run)
            run = []
            self._one(event)
        self._flush(run)
        self.position = fresh[-1].seq
        return len(fresh)

    def flush(self) -> None:
        """Write the increments a deferred :meth:`apply` summed.

        Runtime complexity: O(m log N) for m members summed
        """
        if not self._sums:
            return
        sums, self._sums = self._sums, {}
        # deferred only into an empty board, which takes any sums exactly
        written = write_increments(self.board, sums)
        assert written, "deferred increments into a board that was not empty"

    def _flush(self, run: list[StoreEvent]) -> None:
        if not run:
            return
        if len(run) >= FOLD_MIN:
            refused = fold_into(self.board, run)
            if refused is not None:
                self.refused += refused
                return
        for event in run:
            self._one(event)

    def _one(self, event: StoreEvent) -> None:
        try:
            apply_event(self.board, event, self.timed)
        except (ValueError, TypeError, KeyError, OverflowError):
            # The board refused it: nothing changed (every board's rule), and
            # every process's view refuses it alike.
            self.refused += 1


class Follower:
    """Applies one event store's events to a process's views.

    >>> follower = Follower(store)                        # doctest: +SKIP
    >>> clock = StreamClock()                             # doctest: +SKIP
    >>> weekly = PeriodicLeaderboard("weekly", clock=clock)  # doctest: +SKIP
    >>> follower.add("weekly", weekly, clock=clock)       # doctest: +SKIP
    >>> follower.catch_up()                               # doctest: +SKIP
    >>> follower.follow(stop)                             # doctest: +SKIP
    """

    def __init__(
        self,
        store: EventStore,
        *,
        chunk: int = CHUNK,
        snapshots: str | os.PathLike[str] | None = None,
        snapshot_every: int | None = None,
        fold_in_sql: bool = True,
    ) -> None:
        """``snapshots``: a local directory for the views' snapshots
        (:mod:`rankengine.pg.snapshots`): a view added loads its snapshot,
        :meth:`snapshot` writes them, and with ``snapshot_every`` they are
        written whenever the follower has applied that many events since.
        ``fold_in_sql``: a catch-up into an empty board of a view without
        route or clock lets PostgreSQL fold the events
        (:mod:`rankengine.pg.catchup`); False reads every event."""
        if snapshot_every is not None and (type(snapshot_every) is not int or snapshot_every < 1):
            raise ValueError(f"snapshot_every must be a positive int, not {snapshot_every!r}")
        if snapshot_every is not None and snapshots is None:
            raise ValueError("snapshot_every needs a snapshots directory")
        self.store = store
        self.chunk = chunk
        self.views: dict[str, View] = {}
        self._lock = threading.Lock()
        self.snapshots = None if snapshots is None else ViewSnapshots(snapshots)
        self.snapshot_every = snapshot_every
        self.fold_in_sql = fold_in_sql
        #: the follower's position when the snapshots were last written
        self._snapshot_at = 0

    def add(
        self,
        name: str,
        board: Any,
        *,
        route: Route | None = None,
        clock: StreamClock | None = None,
    ) -> BoardView:
        """Register an in-process board as view ``name`` (it starts at
        position 0: the next :meth:`catch_up` builds it from the whole
        stream).  A board with a time axis needs its ``clock``.

        Runtime complexity: O(1)
        """
        if _takes_time(board) and clock is None:
            raise ValueError(
                f"view {name!r}: a board with a time axis needs clock=StreamClock(), "
                "the one it was made with (its 'now' must come from the stream)"
            )
        view = BoardView(name, board, route=route, clock=clock)
        self.add_view(view)
        return view

    def load_snapshot(self, view: BoardView) -> bool:
        """Load ``view``'s snapshot if it can have one (called by
        :meth:`add_view` when the follower has a snapshots directory).

        Runtime complexity: O(N) for the snapshot's N members, one round trip
        """
        if self.snapshots is None or not can_snapshot(view):
            return False
        return self.snapshots.load(view, head=self.store.head())

    def snapshot(self) -> dict[str, int]:
        """Write the snapshot of every view that can have one, each
        atomically; return ``{view name: seq it reflects}``.

        Runtime complexity: O(N) for N members over the views; holds the
        follower's lock (applying waits) while it writes.
        """
        if self.snapshots is None:
            raise ValueError("this follower was given no snapshots directory")
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> dict[str, int]:
        assert self.snapshots is not None
        written: dict[str, int] = {}
        for view in self.views.values():
            if isinstance(view, BoardView) and can_snapshot(view):
                self.snapshots.save(view)
                written[view.name] = view.position
        self._snapshot_at = self.position
        return written

    def _maybe_snapshot(self) -> None:
        """Under the lock: snapshot if ``snapshot_every`` events were applied since."""
        every = self.snapshot_every
        if every is not None and self.position - self._snapshot_at >= every:
            self._snapshot()

    def add_view(self, view: View) -> View:
        """Register a view object (a :class:`BoardView`, a ``RedisView``...)."""
        if view.name in self.views:
            raise ValueError(f"a view named {view.name!r} is registered already")
        if isinstance(view, BoardView):
            self.load_snapshot(view)
        self.views[view.name] = view
        self._snapshot_at = self.position
        return view

    @property
    def position(self) -> int:
        """The lowest position of the views: every event up to it is in every view."""
        return min((v.position for v in self.views.values()), default=0)

    def apply(self, events: Sequence[StoreEvent]) -> int:
        """Apply ``events`` (in store order) to every view; return how many
        were new to some view."""
        if not events:
            return 0
        with self._lock:
            applied = 0
            for view in self.views.values():
                applied = max(applied, view.apply(events))
            self._maybe_snapshot()
            return applied

    def catch_up(self) -> int:
        """Apply every event committed so far; return how many were applied.

        Runtime complexity: O(n) for n events past :attr:`position`
        (chunked server-side cursor reads).
        """
        views = list(self.views.values())
        applied = self._fold_in_sql(views) if self.fold_in_sql else 0
        try:
            for chunk in self.store.chunks(self.position, size=self.chunk):
                with self._lock:
                    done = 0
                    for view in views:
                        if isinstance(view, BoardView):
                            done = max(done, view.apply(chunk, defer=True))
                        else:
                            done = max(done, view.apply(chunk))
                    applied += done
        finally:
            with self._lock:
                for view in views:
                    if isinstance(view, BoardView):
                        view.flush()
        with self._lock:
            self._maybe_snapshot()
        return applied

    def _fold_in_sql(self, views: list[View]) -> int:
        """Load the views that take every event into an empty scalar board
        from PostgreSQL's fold; return how many events that moved the
        follower's position past (the lowest view's)."""
        before = self.position
        groups: dict[int, list[BoardView]] = {}
        for view in views:
            if (
                isinstance(view, BoardView)
                and view.foldable
                and view.route is None
                and view.clock is None
                and not view._sums
                and not len(view.board)
            ):
                groups.setdefault(view.position, []).append(view)
        covered = {}
        for position, group in sorted(groups.items()):
            folded = fold_in_sql(self.store, position)
            if folded is None:
                continue
            with self._lock:
                for view in group:
                    if view.position != position or len(view.board) or view._sums:
                        continue  # another thread applied to it meanwhile: not empty now
                    if folded.pairs:
                        view.board.set_many(list(folded.pairs))
                    view.position = folded.upto
            covered[position] = folded
        after = self.position
        if after == before:
            return 0  # a view not folded is still where the catch-up reads from
        if before in covered and covered[before].upto == after:
            return covered[before].events
        return self.store.count(before, after)

    def poll(self, timeout: float = 0.0) -> int:
        """Apply what is new; if nothing is, wait up to ``timeout`` seconds
        for an append to commit (``LISTEN``) and apply that.

        Runtime complexity: O(k) for k new events, one or two round trips.
        """
        applied = self._read_all()
        if applied or timeout <= 0:
            return applied
        if self.store.wait(timeout):
            return self._read_all()
        return 0

    def _read_all(self) -> int:
        applied = 0
        while True:
            events = self.store.read(self.position, self.chunk)
            applied += self.apply(events)
            if len(events) < self.chunk:
                return applied

    def follow(self, stop: threading.Event, *, timeout: float = 0.5) -> None:
        """Apply events as they commit until ``stop`` is set.

        Runtime complexity: O(k) per k events, one wake-up per commit.
        """
        self.catch_up()
        while not stop.is_set():
            self.poll(timeout)

    def views_of(self, names: Iterable[str]) -> list[View]:
        """The views of ``names``, in that order."""
        return [self.views[n] for n in names]
