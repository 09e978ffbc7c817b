"""The ledger's views and ``record`` API, with the stream in PostgreSQL.

:class:`~rankengine.ledger.ledger.Ledger` keeps its events in local
segments: one process.  :class:`PgLedger` is the same idea for a fleet:
the same views (every board kind, routes with ``where=`` and ``by=``,
subscriptions), the same ``record`` returning each view's outcome, but the
events go to an :class:`~rankengine.pg.store.EventStore` that many
processes append to, and each process's views apply the stream in the
store's order.

``record(...)``:

1. makes the event and checks it against every view of *this* process
   (an event a view would refuse raises and writes nothing, as in the
   ledger);
2. appends it to the store (durable once it returns, see
   :mod:`rankengine.pg.store`);
3. applies the stream up to and including it (other processes' events
   first, when they committed before it), and returns its outcomes.

What differs from the one-process ledger, and why: the check in step 1 sees
this process's views as of its last read, while other processes may have
appended since.  An event that passes here and is then refused by a view
when applied (a weekly board's period closed by another process's later
event, say) changes nothing in that view, in every process alike, and is
counted in :attr:`PgLedger.refused`; it does not close the ledger as a
local ledger's failed apply does.  The views live in memory: a process
that starts builds them from the store (:meth:`PgLedger.sync`), or, given
a local ``snapshots`` directory, loads each view's snapshot
(:mod:`rankengine.pg.snapshots`: every view kind, periodic and window
views included) and reads the store only past the oldest of them.

>>> ledger = PgLedger(EventStore("host=127.0.0.1"))        # doctest: +SKIP
>>> ledger.add_view("alltime", "board")                    # doctest: +SKIP
>>> ledger.add_view("eu", "board", where={"region": "eu"}) # doctest: +SKIP
>>> done = ledger.record("ann", 30, attrs={"region": "eu"})   # doctest: +SKIP
>>> [(o.view, o.score) for o in done.outcomes]             # doctest: +SKIP
[('alltime', 30), ('eu', 30)]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rankengine.ledger.events import LedgerEvent
from rankengine.ledger.front import LedgerFront, Recorded, restored_board
from rankengine.ledger.routes import Route
from rankengine.ledger.subscriptions import Subscriptions
from rankengine.ledger.views import Outcome, View, check_view_name
from rankengine.pg.events import META, NewEvent, StoreEvent, now_ms
from rankengine.pg.snapshots import ViewSnapshots
from rankengine.pg.store import CHUNK, EventStore

__all__ = ["PgLedger", "ledger_event", "store_event"]

#: What a view may raise when it refuses an event it is given (the boards'
#: own refusals: bad value, late event, members that do not compare).
_REFUSALS = (ValueError, TypeError, KeyError, OverflowError)


def store_event(event: LedgerEvent) -> NewEvent:
    """The store's form of a ledger event (a ``meta`` event's metadata is its value).

    >>> from rankengine.ledger.events import make_event
    >>> e = make_event("ann", 3, op="set", t_ms=5, when="better")
    >>> ledger_event(store_event(e), 1) == e
    True
    """
    member, op, value, t_ms, attrs, when, meta = event
    if op == META:
        return NewEvent(op, member, meta, t_ms, attrs)
    return NewEvent(op, member, value, t_ms, attrs, when, meta)


def ledger_event(event: StoreEvent | NewEvent, seq: int = 0) -> LedgerEvent:
    """The ledger's form of a stored event (``seq`` for the error message)."""
    if event.op == META:
        return LedgerEvent(
            event.member, "meta", None, event.time_ms, event.attrs, None, event.value
        )
    return LedgerEvent(
        event.member,
        event.op,  # type: ignore[arg-type]  # checked when it was appended
        event.value,
        event.time_ms,
        event.attrs,
        event.when,
        event.meta,
    )


class PgLedger(LedgerFront):
    """One PostgreSQL event stream, this process's views of it (see the module docstring).

    :param store: the store events are appended to (and read from, unless
        ``reader`` is given: a store object is for one thread).
    :param now: a function returning milliseconds (the default event time).
    :param snapshots: a local directory for the views' snapshots: a view
        added loads its own, :meth:`snapshot` writes them, and with
        ``snapshot_every`` they are written whenever the ledger has applied
        that many events since.
    """

    def __init__(
        self,
        store: EventStore,
        *,
        reader: EventStore | None = None,
        now: Callable[[], int] | None = None,
        snapshots: str | os.PathLike[str] | None = None,
        snapshot_every: int | None = None,
    ) -> None:
        if snapshot_every is not None and (type(snapshot_every) is not int or snapshot_every < 1):
            raise ValueError(f"snapshot_every must be a positive int, not {snapshot_every!r}")
        if snapshot_every is not None and snapshots is None:
            raise ValueError("snapshot_every needs a snapshots directory")
        self.snapshots = None if snapshots is None else ViewSnapshots(snapshots)
        self.snapshot_every = snapshot_every
        #: the ledger's seq when the snapshots were last written
        self._snapshot_at = 0
        #: True once this ledger applied an event (its start can no longer move)
        self._started = False
        self.store = store
        self.reader = reader or EventStore(
            store.conninfo, table=store.table, create=False, retry_seconds=store.retry_seconds
        )
        self._now = now_ms if now is None else now
        self._lock = threading.RLock()
        self._views: dict[str, View] = {}
        self._subs = Subscriptions()
        #: the ledger's clock: the latest event time applied (ms)
        self._time = 0
        self._seq = 0
        #: events refused by a view when applied, by view name
        self.refused: dict[str, int] = {}
        #: outcomes of this process's own records, kept until record() returns them
        self._waiting: dict[int, list[Outcome]] = {}

    # -- views ---------------------------------------------------------------
    def add_view(
        self,
        name: str,
        kind: str = "board",
        *,
        where: Mapping[str, Any] | None = None,
        by: str | None = None,
        **options: Any,
    ) -> None:
        """Register a view (as :meth:`Ledger.add_view
        <rankengine.ledger.ledger.Ledger.add_view>`), built from every event
        this ledger has applied so far.

        Runtime complexity: O(E) for the E events applied so far (read again)
        """
        check_view_name(name)
        if kind == "redis":
            # The ledger's Redis view writes Redis from each process that
            # has it: in a fleet, every process would add every event.
            raise ValueError(
                "a fleet's Redis board has one applier: feed it with "
                "rankengine.pg.redis_view.RedisView in one process, not a 'redis' view "
                "in every process's PgLedger"
            )
        with self._lock:
            if name in self._views:
                raise ValueError(f"the ledger has a view {name!r} already")
            view = View(name, kind, options, Route.of(where=where, by=by))
            start_ms = self._load(view)
            if not self._started and (view.seq < self._seq or len(self._views) == 0):
                # nothing applied yet: the ledger reads from its lowest view
                self._seq, self._time = view.seq, start_ms
            saved = self._time
            self._time = start_ms
            try:
                if view.seq < self._seq:
                    for chunk in self.reader.chunks(view.seq, size=CHUNK):
                        events = [e for e in chunk if e.seq <= self._seq]
                        self._apply_to([view], events)
                        if len(events) < len(chunk):
                            break
            finally:
                self._time = saved
            view.seq = max(view.seq, self._seq)
            self._views[name] = view
            self._snapshot_at = self._seq

    def _load(self, view: View) -> int:
        """Load ``view``'s snapshot if there is a good one; the ledger's time
        at its seq (0 without one).  The view starts empty at seq 0 otherwise."""
        if self.snapshots is None:
            return 0
        board = view.template.board
        columns = board._codec.columns if hasattr(board, "_codec") else None
        loaded = self.snapshots.load_parts(
            view.name, view.spec(), head=self.reader.head(), columns=columns
        )
        if loaded is None:
            return 0
        try:
            view.restore(
                [
                    (key, (part, None if snap is None else restored_board(view, snap)))
                    for key, part, snap in loaded.parts
                ]
            )
        except (KeyError, TypeError, ValueError) as exc:
            view.reset()
            self.snapshots.warn(view.name, f"it does not load ({exc})")
            return 0
        view.seq = loaded.seq
        view.time_ms = loaded.ledger_ms
        if loaded.refused:
            self.refused[view.name] = loaded.refused
        return loaded.ledger_ms

    def snapshot(self) -> dict[str, int]:
        """Write every view's snapshot (each atomically); return ``{view
        name: seq it reflects}``.  Applying waits while it writes.

        Runtime complexity: O(N) for N members over the views
        """
        if self.snapshots is None:
            raise ValueError("this ledger was given no snapshots directory")
        with self._lock:
            written = {}
            for view in self._views.values():
                self.snapshots.save_parts(
                    view.name,
                    view.spec(),
                    view.seq,
                    self._time,
                    view.export(),
                    refused=self.refused.get(view.name, 0),
                )
                written[view.name] = view.seq
            self._snapshot_at = self._seq
            return written

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event applied."""
        return self._seq

    # -- recording (record(): LedgerFront's) ----------------------------------------
    def record_many(
        self, items: Iterable[Mapping[str, Any] | tuple[Any, Any]], *, ranks: bool = False
    ) -> list[Recorded]:
        """Record many events in one transaction: items as :meth:`Ledger.record_many
        <rankengine.ledger.ledger.Ledger.record_many>` takes them."""
        events = self._events_of(items)
        return self._record(events, ranks) if events else []

    def _record(self, events: list[LedgerEvent], ranks: bool) -> list[Recorded]:
        with self._lock:
            views = list(self._views.values())
            sims: list[dict[Any, Any]] = [{} for _ in views]
            now = self._time
            for i, event in enumerate(events):
                now = max(now, event.t_ms)
                for view, sim in zip(views, sims, strict=True):
                    try:
                        view.check(event, now, sim)
                    except Exception as exc:
                        where = f"item {i} of the batch, " if len(events) > 1 else ""
                        exc.add_note(
                            f"({where}refused by view {view.name!r}; nothing was recorded)"
                        )
                        raise
            seqs = self.store.append_many([store_event(e) for e in events])
            for seq in seqs:
                self._waiting[seq] = []
            self._ranks = ranks
            try:
                self.sync(upto=seqs[-1])
            finally:
                self._ranks = False
            return [
                Recorded(seq, event, self._waiting.pop(seq, []))
                for seq, event in zip(seqs, events, strict=True)
            ]

    # -- following ---------------------------------------------------------------
    def sync(self, upto: int | None = None) -> int:
        """Apply every event committed so far (at least up to ``upto``);
        return how many were applied.

        Runtime complexity: O(k) for k new events, k / CHUNK round trips
        """
        applied = 0
        with self._lock:
            while True:
                chunk = self.reader.read(self._seq, CHUNK)
                applied += self._apply(chunk)
                if len(chunk) < CHUNK and (upto is None or self._seq >= upto):
                    return applied

    def poll(self, timeout: float = 0.0) -> int:
        """Apply what is new; if nothing is, wait up to ``timeout`` seconds
        for an append (``LISTEN``) and apply it."""
        applied = self.sync()
        if applied or timeout <= 0:
            return applied
        return self.sync() if self.reader.wait(timeout) else 0

    def follow(self, stop: threading.Event, *, timeout: float = 0.5) -> None:
        """Apply events as they commit until ``stop`` is set."""
        while not stop.is_set():
            self.poll(timeout)

    _ranks = False

    def _apply(self, events: list[StoreEvent]) -> int:
        self._apply_to(list(self._views.values()), events)
        if events:
            self._started = True
            self._seq = max(self._seq, events[-1].seq)
            every = self.snapshot_every
            if every is not None and self._seq - self._snapshot_at >= every:
                self.snapshot()
        return len(events)

    def _apply_to(self, views: list[View], events: list[StoreEvent]) -> None:
        subs = self._subs
        for stored in events:
            event = ledger_event(stored, stored.seq)
            self._time = max(self._time, event.t_ms)
            mine = self._waiting.get(stored.seq)
            for view in views:
                if view.seq >= stored.seq:
                    continue
                view.time_ms = self._time
                watched = subs.watches(view.name)
                try:
                    outcomes = view.apply(event, (mine is not None and self._ranks) or watched)
                except _REFUSALS:
                    self.refused[view.name] = self.refused.get(view.name, 0) + 1
                    outcomes = []
                if mine is not None:
                    mine.extend(outcomes)
                if watched and outcomes:
                    subs.deliver(stored.seq, event, view, outcomes)
                view.seq = stored.seq

    # -- subscriptions: LedgerFront's (notices delivered as this process applies
    #    the stream, in order) ---------------------------------------------------
    def close(self) -> None:
        """Close the store connections (the views stay readable)."""
        self.store.close()
        self.reader.close()

    def _check(self) -> None:
        for view in self._views.values():
            view._check()
