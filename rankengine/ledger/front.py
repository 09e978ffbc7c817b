"""What every ledger over a stream of events shares: its views by name, events, subscriptions.

Two ledgers keep the same views and the same ``record`` API over two
streams: :class:`~rankengine.ledger.ledger.Ledger` over local segments and
:class:`~rankengine.pg.ledger.PgLedger` over a PostgreSQL table.  Their
front (the views by name, an event made from ``record``'s arguments or a
batch's items, subscriptions, a view's board loaded from a snapshot part)
is written once, here, in :class:`LedgerFront`; each ledger supplies
``_views``, ``_lock``, ``_subs``, ``_now`` and ``_record`` (check, store,
apply a list of events).  The local ledger keeps its own ``record`` (a
fast path for plain increments) and inherits the rest.

>>> event_of(("ann", 3), now=lambda: 7)
LedgerEvent(member='ann', op='incr', value=3, t_ms=7, attrs=None, when=None, meta=None)
>>> event_of({"member": "bob", "op": "set", "value": 2, "t_ms": 5}, now=lambda: 7).value
2
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, NamedTuple, cast

from rankengine.board.bulk import LoadedColumns
from rankengine.durable.snapshot import read_snapshot
from rankengine.index.collector import collector_paused
from rankengine.ledger.events import LedgerEvent, make_event
from rankengine.ledger.preload import LOADING
from rankengine.ledger.routes import NO_KEY
from rankengine.ledger.subscriptions import Subscriptions
from rankengine.ledger.views import Outcome, View

__all__ = [
    "PENDING",
    "LazyRecorded",
    "LedgerFront",
    "Recorded",
    "closed_period",
    "deferred_board",
    "event_of",
    "events_of",
    "first_score",
    "restored_board",
]


class Recorded(NamedTuple):
    """What one event did: its sequence number and each view's outcome."""

    seq: int
    event: LedgerEvent
    outcomes: list[Outcome]

    def outcome(self, view: str, key: Any = NO_KEY) -> Outcome | None:
        """The outcome in ``view`` (its board ``key``), None if it took no part.

        Runtime complexity: O(number of views)
        """
        for outcome in self.outcomes:
            if outcome.view == view and outcome.key == key:
                return outcome
        return None


#: Tuples made without the Python-level ``__new__`` of a NamedTuple.
_new_outcome: Final = tuple.__new__

#: The first item of a :class:`LazyRecorded`'s outcome list while its
#: outcomes are not made yet (see there).
PENDING: Final = object()


def _made(pending: list[Any]) -> list[Outcome]:
    """The outcomes a pending list stands for (see :class:`LazyRecorded`).

    Runtime complexity: O(V) for V views
    """
    outcomes: list[Outcome] = []
    for name, item in zip(pending[1], pending[2:], strict=True):
        if type(item) is list:  # a view's own outcomes (a score is never a list)
            outcomes += item
        else:
            outcomes.append(_new_outcome(Outcome, (name, NO_KEY, item, None, None)))
    return outcomes


class LazyRecorded(Recorded):
    """A :class:`Recorded` whose outcomes are made when first read.

    What ``record(..., ranks=False)``'s fast path returns: most callers
    never read the outcomes, and making one ``Outcome`` per view was ~5% of
    a four-view record (measured: ``docs/ledger.md``).  Its outcome list
    starts as ``[PENDING, names, item, ...]``: the views' names and, per
    view, the new score or a list of the view's own outcomes.  The first
    read (``.outcomes``, ``outcome()``, indexing, iteration, unpacking,
    comparison, ``repr``) turns that list, in place, into the outcomes, so
    it reads as a :class:`Recorded` with the same fields in every way.

    Its event may be kept as its fields (a plain tuple, equal to the
    event): :attr:`event` and every read of the whole make the
    :class:`~rankengine.ledger.events.LedgerEvent` from them (making it
    for every record was ~1.5% of a four-view record, measured: see
    ``docs/ledger.md``); each read of ``event`` then makes an equal one.

    Runtime complexity: O(V) for V views, once, on the first read

    >>> done = LazyRecorded(3, None, [PENDING, ("all", "trend"), 5, None])
    >>> done.outcome("all").score, len(done.outcomes)
    (5, 2)
    >>> seq, event, outcomes = done
    >>> outcomes[1]
    Outcome(view='trend', key=None, score=None, rank_before=None, rank_after=None)
    >>> done == Recorded(3, None, outcomes), done[2] is outcomes
    (True, True)
    """

    __slots__ = ()

    @property
    def outcomes(self) -> list[Outcome]:
        """Each view's outcome, made on the first read."""
        items = cast(list[Any], super().__getitem__(2))
        if items and items[0] is PENDING:
            pending = items[:]  # (one copy under the interpreter lock: threads agree)
            if pending[0] is PENDING:
                items[:] = _made(pending)
        return items

    @property
    def event(self) -> LedgerEvent:
        """The event, made from its fields when they are kept."""
        fields = tuple.__getitem__(self, 1)
        if type(fields) is tuple:
            return _new_outcome(LedgerEvent, fields)
        return cast(LedgerEvent, fields)

    def _ready(self) -> Recorded:
        """Self with its outcomes made, or, while its event is kept as its
        fields, an equal :class:`Recorded` holding the event made."""
        outcomes = self.outcomes
        if type(tuple.__getitem__(self, 1)) is not tuple:
            return self
        return _new_outcome(Recorded, (tuple.__getitem__(self, 0), self.event, outcomes))

    def __getitem__(self, index: Any) -> Any:
        return tuple.__getitem__(self._ready(), index)

    def __iter__(self) -> Iterator[Any]:
        return tuple.__iter__(self._ready())

    def __contains__(self, item: object) -> bool:
        return tuple.__contains__(self._ready(), item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyRecorded):
            other._ready()
        return tuple.__eq__(self._ready(), other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # (a Recorded holds a list: unhashable too)

    def __lt__(self, other: Any) -> bool:
        return tuple(self) < tuple(other)

    def __le__(self, other: Any) -> bool:
        return tuple(self) <= tuple(other)

    def __gt__(self, other: Any) -> bool:
        return tuple(self) > tuple(other)

    def __ge__(self, other: Any) -> bool:
        return tuple(self) >= tuple(other)

    def __add__(self, other: Any) -> Any:
        return tuple(self) + other

    def __radd__(self, other: Any) -> Any:
        return other + tuple(self)

    def __mul__(self, times: Any) -> Any:
        return tuple(self) * times

    __rmul__ = __mul__

    def count(self, value: Any) -> int:
        return tuple(self).count(value)

    def index(self, value: Any, *args: Any) -> int:
        return tuple(self).index(value, *args)

    def __repr__(self) -> str:
        return repr(Recorded(*self))


def first_score(done: Recorded) -> Any:
    """``done.outcomes[0].score`` (None without outcomes), without making a
    :class:`LazyRecorded`'s outcomes: what a one-view ledger's ``incr``
    returns.

    Runtime complexity: O(V) for V views, O(1) for one

    >>> first_score(LazyRecorded(1, None, [PENDING, ("all",), 5]))
    5
    >>> first_score(Recorded(1, None, [])) is None
    True
    """
    items = cast(list[Any], tuple.__getitem__(done, 2))
    if not items or items[0] is not PENDING:
        return items[0].score if items else None
    for item in items[2:]:
        if type(item) is not list:
            return item
        if item:
            return item[0].score
    return None


def event_of(item: Mapping[str, Any] | tuple[Any, Any], now: Callable[[], int]) -> LedgerEvent:
    """The event of one batch item: a ``(member, delta)`` pair (an increment
    now) or a map of ``record``'s arguments (``t_ms`` defaults to ``now()``).

    Runtime complexity: O(size of the item)
    """
    if isinstance(item, tuple):
        if len(item) != 2:
            raise TypeError(f"expected (member, delta) or a dict, got {item!r}")
        return make_event(item[0], item[1], t_ms=now())
    if not isinstance(item, Mapping):
        raise TypeError(f"expected (member, delta) or a dict, got {item!r}")
    fields = dict(item)
    member = fields.pop("member")
    op = fields.pop("op", "incr")
    value = fields.pop("value", 1 if op == "incr" else None)
    t_ms = fields.pop("t_ms", None)
    return make_event(member, value, op=op, t_ms=now() if t_ms is None else t_ms, **fields)


def events_of(
    items: Iterable[Mapping[str, Any] | tuple[Any, Any]], now: Callable[[], int]
) -> list[LedgerEvent]:
    """The events of a batch's items; a bad item raises, naming its index.

    Runtime complexity: O(k) for k items
    """
    events = []
    for i, item in enumerate(items):
        try:
            events.append(event_of(item, now))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"item {i} of the batch: {exc}") from None
    return events


def restored_board(
    view: View,
    snap: Any,
    restored: list[tuple[Any, LoadedColumns]] | None = None,
    *,
    pause: Callable[[], None] | None = None,
) -> Any:
    """A new board of ``view``'s settings holding a snapshot part's board
    (a :class:`~rankengine.durable.snapshot.Snapshot`), by the columnar load.

    ``restored`` (optional) lists ``(snapshot, loaded)`` for the boards
    restored before in the same open (what each load worked out:
    :class:`~rankengine.board.bulk.LoadedColumns`), none of them written to
    since.  When one of them came from a snapshot with the same rows
    (:meth:`Snapshot.same_rows`: the very same chunks), the new board copies
    its member map and its tie map (a C-level copy of each hash table:
    measured at 1,000,000 members, ~0.05 s against ~0.8 s for building the
    map from the columns on a shared machine) and skips the order check
    and the tie scan (:meth:`BulkLoad._restore_loaded`); else this load is
    added to ``restored``.  ``pause`` (a background preload's): the map is
    built :data:`MAP_SLICE` rows at a time, ``pause()`` between slices (see
    :func:`sliced_map`).

    Runtime complexity: O(N) for the part's N members
    """
    board = view.template.new_board()
    members, scores, clocks, metas = snap.columns()
    clock = int(snap.header["clock"])
    scalar = board._codec.columns is None
    by_member = None
    if restored is not None and scalar:
        for seen, loaded in restored:
            if seen.same_rows(snap):
                if board._restore_loaded(loaded, members, scores, clocks, clock):
                    return board
                by_member = loaded.by_member.copy()  # (other settings: the map only)
                break
    if by_member is None and scalar and pause is not None:
        by_member = sliced_map(members, scores, pause)
    done = board._restore_columns(
        members,
        scores,
        clocks,
        metas,
        clock,
        by_member=by_member,
        negated=snap.negated_clocks,
    )
    if restored is not None and done is not None:
        restored.append((snap, done))
    return board


#: Rows of a member map built between two pauses of a background load
#: (:func:`sliced_map`): one ``dict(zip())`` of a million rows holds the
#: interpreter lock for ~0.3 s (an event loop on another thread waits that
#: long); a slice of 65,536 rows, ~15-20 ms.  The same CPU in all: 0.247 s
#: sliced, 0.245 s whole, at 10^6 rows (min of 7, load average 1.1-2.0).
MAP_SLICE: Final = 65_536


def sliced_map(
    members: list[Any], scores: Any, pause: Callable[[], None], size: int = MAP_SLICE
) -> dict[Any, Any]:
    """``dict(zip(members, scores))``, built ``size`` rows at a time with
    ``pause()`` between slices (a repeated member is kept once,
    as ``dict(zip())`` does: the board's load then sees the map short and
    takes its general path).

    Runtime complexity: O(N)

    >>> sliced_map(["a", "b", "c"], array("q", [1, 2, 3]), lambda: None)
    {'a': 1, 'b': 2, 'c': 3}
    """
    listed = scores.tolist() if type(scores) is array else scores
    by_member: dict[Any, Any] = {}
    for lo in range(0, len(members), size):
        if lo:
            pause()
        hi = lo + size
        by_member.update(zip(members[lo:hi], listed[lo:hi], strict=True))
    return by_member


def closed_period(header: Mapping[str, Any]) -> bool:
    """True for the snapshot header of a periodic view's closed period: a
    ledger's open leaves that board unloaded (see :mod:`rankengine.timed.lazy`).

    Runtime complexity: O(1)

    >>> closed_period({"board": True, "part": {"period": "2027-W01", "closed": True}})
    True
    >>> closed_period({"board": True, "part": {"period": "2027-W02", "closed": False}})
    False
    """
    part = header.get("part")
    return bool(header.get("board")) and type(part) is dict and part.get("closed") is True


def deferred_board(view: View, columns: int | None) -> Callable[[str], Any]:
    """How an unloaded period board of ``view`` is loaded: its snapshot
    file read in full (the open checked its checksums already) and bulk
    loaded as :func:`restored_board` does, the collector paused as during
    an open.  A file damaged or removed since the open raises
    :class:`~rankengine.durable.records.CorruptionError` (or ``OSError``)
    to the read that loads it, and the board stays unloaded.

    Runtime complexity: O(1); the load O(N) for the part's N members
    """

    def load(path: str) -> Any:
        # (on a preload's thread: the member map built in slices, letting
        # go of the interpreter lock between them)
        pause = getattr(LOADING, "pause", None)
        with collector_paused():
            return restored_board(view, read_snapshot(path, columns=columns), pause=pause)

    return load


class LedgerFront:
    """The shared front of a ledger (see the module docstring)."""

    _views: dict[str, View]
    _lock: threading.RLock
    _subs: Subscriptions
    _now: Callable[[], int]

    def _record(self, events: list[LedgerEvent], ranks: bool) -> list[Recorded]:
        raise NotImplementedError  # each ledger's: check, store, apply

    @property
    def views(self) -> list[str]:
        """The views' names, in registration order."""
        return list(self._views)

    def view(self, name: str, key: Any = NO_KEY) -> Any:
        """The board of view ``name`` (of its board ``key`` when keyed; with
        no key, a keyed view gives the mapping of its boards).

        Runtime complexity: O(1)
        """
        view = self._views.get(name)
        if view is None:
            raise KeyError(f"the ledger has no view {name!r} (it has {self.views})")
        return view.reader() if key is NO_KEY else view.board(key)

    def __getitem__(self, name: str) -> Any:
        return self.view(name)

    def __contains__(self, name: object) -> bool:
        return name in self._views

    def record(
        self,
        member: Any,
        value: Any = None,
        *,
        op: str = "incr",
        t_ms: int | None = None,
        attrs: Mapping[str, Any] | None = None,
        when: str | None = None,
        meta: Mapping[str, Any] | None = None,
        ranks: bool = True,
    ) -> Recorded:
        """Record one event and apply it to every view; ``value`` defaults
        to 1 for ``incr``, ``t_ms`` (the event time) to now.  Returns its
        sequence number and each view's outcome.

        Runtime complexity: the ledger's ``_record`` of one event
        """
        if value is None and op == "incr":
            value = 1
        event = make_event(
            member,
            value,
            op=op,
            t_ms=self._now() if t_ms is None else t_ms,
            attrs=attrs,
            when=when,
            meta=meta,
        )
        return self._record([event], ranks)[0]

    def _events_of(self, items: Iterable[Mapping[str, Any] | tuple[Any, Any]]) -> list[LedgerEvent]:
        return events_of(items, self._now)

    def subscribe(self, view: str, callback: Callable[[Any], None], **options: Any) -> Any:
        """Call ``callback`` with each notice of ``view`` (see
        :mod:`rankengine.ledger.subscriptions`): ``on="change"`` (the
        default), ``on="top"`` with ``k=``, ``on="overtaken"``.  Returns a
        handle for :meth:`unsubscribe`.
        """
        with self._lock:
            if view not in self._views:
                raise KeyError(f"the ledger has no view {view!r}")
            return self._subs.add(view, self._views[view].kind, callback, **options)

    def unsubscribe(self, handle: Any) -> None:
        """Stop a subscription."""
        with self._lock:
            self._subs.remove(handle)
