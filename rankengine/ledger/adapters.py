"""View adapters: each board kind as a ledger view -- check, apply, save, load.

A ledger keeps every view as the board kind it is (a ``Leaderboard``, a
``PeriodicLeaderboard``...), reads go to that board as they would
anywhere, and an *adapter* does the four things the ledger needs from it:

``check(event, now_ms, sim)``
    raise what the board would raise for this event, **changing nothing**:
    the boards' own checks (member, score or delta, ``when``, metadata; the
    sum an increment makes; a late event; a decayed weight), run against
    the board plus ``sim``, the effects of the events before it in the same
    batch (a batch is checked whole before any of it is applied);
``apply(event, ranks)``
    make the write (it cannot fail after ``check``); return the member's
    new score and, when asked, its rank before and after;
``export()`` / ``restore(parts)``
    the state as *parts* (a small header and a board each), which the
    ledger writes as snapshots (:mod:`rankengine.durable.snapshot`).

Time views run on the ledger's clock, the latest event time it has
recorded, so a replay of the log rebuilds them exactly: a period closes,
a window slides and a score decays by event time, never by the wall clock
of the process that replays.

=================  =============================================  ===========
kind               what an event does                             per write
=================  =============================================  ===========
``board``          incr/set/remove/meta on a ``Leaderboard``      O(log N)
``periodic``       the same on the board of the event's period    O(log N)
``window``         the same in the event's bucket, then refresh   O(B + log N)
``decayed``        ``add``/``set`` weighted by the event's time   O(log N)
``topk``           counts increments (``weight``: 1 or value)     O(1) amortised
=================  =============================================  ===========

>>> from rankengine.ledger.events import make_event
>>> adapter = make_adapter("board", {}, lambda: 0.0)
>>> event = make_event("ann", 5, t_ms=0)
>>> adapter.check(event, 0, {})
>>> adapter.apply(event, True)
(5, None, 1)
>>> adapter.check(make_event("ann", float("nan"), t_ms=0), 0, {})
Traceback (most recent call last):
...
ValueError: delta must not be NaN
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from rankengine.board.checks import check_comparable
from rankengine.board.direct import DIRECT_DELTA_LIMIT
from rankengine.board.leaderboard import Leaderboard
from rankengine.timed.calendars import Period, calendar
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.lazy import Unloaded
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.state import (
    DecayedBatch,
    check_decayed_write,
    decayed_state,
    open_until,
    period_board,
    periodic_parts,
    periodic_state,
    restore_decayed,
    restore_periodic,
    restore_window,
    route_period,
    window_state,
)
from rankengine.timed.window import SlidingWindowLeaderboard
from rankengine.trending.hashing import check_key
from rankengine.trending.topk import TopK

__all__ = [
    "BOARD_SETTINGS",
    "KINDS",
    "Adapter",
    "LazyPart",
    "Part",
    "make_adapter",
    "register_adapter",
]

#: The settings of the boards a view is made of (strings only: a backend
#: factory could not be stored in the manifest).
BOARD_SETTINGS: Final = ("order", "tie_break", "rank_style", "backend")
#: Options each kind takes besides the board settings.
_OPTIONS: dict[str, tuple[str, ...]] = {
    "board": BOARD_SETTINGS,
    "periodic": ("calendar", "keep", "grace", "late", *BOARD_SETTINGS),
    "window": ("calendar", "buckets", "grace", "late", *BOARD_SETTINGS),
    "decayed": ("half_life", "tau", "t0", "rebase_after", *BOARD_SETTINGS),
    "topk": ("k", "capacity", "width", "depth", "seed", "conservative", "counter_bits", "weight"),
}
KINDS: Final = tuple(_OPTIONS)
#: One part of a view's saved state: a header map and a board (or None).
Part = tuple[dict[str, Any], "Leaderboard | None"]
#: A part whose board may not be loaded yet (``Adapter.export_lazy``).
LazyPart = tuple[dict[str, Any], "Leaderboard | Unloaded | None"]
_MISSING: Final = object()
#: The key under which a batch's simulation keeps a tie-by-member board's
#: member type (no member is a tuple, so it never collides with one).
_TYPE: Final = ("type",)
#: The key under which a batch's simulation keeps what a trending view
#: counts (the batch's earlier increments).
_COUNTED: Final = ("counted",)
#: The key under which a batch's simulation keeps a decayed view's
#: :class:`~rankengine.timed.state.DecayedBatch`.
_DECAYED: Final = ("decayed",)


def _settings(options: dict[str, Any]) -> dict[str, Any]:
    return {k: options[k] for k in BOARD_SETTINGS if options.get(k) is not None}


def _check_board_write(board: Leaderboard, event: Any, sim: dict[Any, Any]) -> None:
    """Raise what ``board`` would raise for ``event`` after the writes noted
    in ``sim`` (member -> score, ``_MISSING`` removed), and note its effect.

    Runtime complexity: O(1) plus one score look-up
    """
    if (
        type(event.value) is int
        and event.op == "incr"
        and event.when is None
        and board._scalar
        and board._first
        and -DIRECT_DELTA_LIMIT <= event.value <= DIRECT_DELTA_LIMIT
    ):
        # The common event, an int increment on a plain board: it cannot
        # fail (int + int is exact; an int within DIRECT_DELTA_LIMIT added
        # to a float score is a float, inf at worst: one beyond it has no
        # float value and is checked below), and the member was checked
        # with the event.  Measured: a quarter of a ledger's overhead.
        return
    member = board._check_member(event.member)
    if board._tie_break == "member":
        held = board._member_type if len(board) else sim.get(_TYPE)
        check_comparable(member, held)
        sim.setdefault(_TYPE, type(member))
    op = event.op
    if op == "remove":
        sim[member] = _MISSING
        return
    if op == "meta":
        return
    codec = board._codec
    current = sim.get(member)
    if current is None:
        current = board.score(member, _MISSING)
    held_score = None if current is _MISSING else current
    if op == "incr":
        step = codec.check(event.value, "delta")
        if event.when == "present" and held_score is None:
            return
        if event.when == "new" and held_score is not None:
            return
        base = board._zero() if held_score is None else held_score
        new = codec.add(base, step, member)
    else:
        new = codec.check(event.value)
    if event.when is not None and codec.blocks(event.when, held_score, new):
        return
    sim[member] = new


def _free(board: Leaderboard) -> bool:
    return bool(board._scalar and board._first)


def _write(board: Leaderboard, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
    """Make ``event``'s write on an exact board; ``(score, rank before,
    rank after)`` (the ranks None unless ``ranks``)."""
    member, op = event.member, event.op
    before = board.rank(member) if ranks else None
    if op == "incr":
        score = board.incr(member, event.value, when=event.when)
    elif op == "set":
        board.set(member, event.value, when=event.when, meta=event.meta)
        score = board.score(member)
    elif op == "remove":
        board.remove(member)
        score = None
    else:
        if member in board:
            board.set_meta(member, event.meta)
        score = board.score(member)
    return score, before, (board.rank(member) if ranks else None)


class Adapter:
    """One view of one kind (see the module docstring); ``board`` is what
    reads are given."""

    kind = "board"

    def __init__(self, options: dict[str, Any], clock: Callable[[], float]) -> None:
        self.options = options
        self.clock = clock
        self.board: Any = self._make()
        #: True when an int increment without ``when=`` (of at most
        #: DIRECT_DELTA_LIMIT in size) cannot fail on this view's boards
        #: (scalar scores, first-to-reach ties): its check is then the route
        #: alone (see _check_board_write)
        self.free_int_incr = self.kind != "decayed" and _free(self.new_board())

    def _make(self) -> Any:
        return Leaderboard(**_settings(self.options))

    def new_board(self) -> Leaderboard:
        """An empty board with this view's settings (a part to restore into)."""
        return Leaderboard(**_settings(self.options))

    def check(self, event: Any, now_ms: int, sim: dict[Any, Any]) -> None:
        """Raise what the view would raise for ``event`` (the ledger's clock
        at ``now_ms`` then), after the batch's earlier writes in ``sim``."""
        _check_board_write(self.board, event, sim)

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        """Make the write; ``(score, rank before, rank after)``."""
        return _write(self.board, event, ranks)

    def exact(self, event: Any) -> Leaderboard | None:
        """The exact board ``event`` went to (for subscriptions), if any."""
        return self.board  # type: ignore[no-any-return]

    def export(self) -> list[Part]:
        """The state as parts."""
        return [({}, self.board)]

    def export_lazy(self) -> list[LazyPart]:
        """:meth:`export`, except that a part not loaded yet (a periodic
        view's closed period, see :mod:`rankengine.timed.lazy`) comes as
        its :class:`~rankengine.timed.lazy.Unloaded`: a compaction copies
        its file rather than loading and writing it again."""
        return list(self.export())

    def restore(self, parts: list[Part]) -> None:
        """Take the state :meth:`export` gave (boards restored already)."""
        ((_, board),) = parts
        assert board is not None
        self.board = board

    def check_invariants(self) -> None:
        """The board's own ``_check()``."""
        self.board._check()

    def attach(self, ledger_seq: int) -> None:
        """Connect what lives outside the process (a Redis view), once the
        view reflects ``ledger_seq``; nothing for in-process boards."""

    def rebuild(self, ledger_seq: int) -> int:
        """Bring an outside copy back to the view's state (a Redis view)."""
        return 0

    def close(self, ledger_seq: int) -> None:
        """Let go of what lives outside the process."""


class PeriodicAdapter(Adapter):
    """A ``PeriodicLeaderboard`` on the ledger's clock."""

    kind = "periodic"

    def _make(self) -> Any:
        o = self.options
        periodic = PeriodicLeaderboard(
            calendar(o["calendar"]),
            keep=o.get("keep", 1),
            grace=o.get("grace", 0.0),
            late=o.get("late", "reject"),
            clock=self.clock,
            **_settings(o),
        )
        # A period's board is made by the events the view takes (each moves
        # its time, making the current period's board as a periodic board
        # fed directly does: apply), never by a read: the ledger's clock
        # moves with events other views take (and stays where a forgotten
        # member's last event put it), so a read that made the current
        # period's board would leave state no replay of the events makes,
        # and a reopened ledger would not hold it.
        periodic._advance_makes_current = False
        return periodic

    def _periodic(self) -> PeriodicLeaderboard:
        return self.board  # type: ignore[no-any-return]

    #: ``(start, end, open until, period)`` of the period last routed to
    _open: tuple[float, float, float, Period] | None = None

    @property
    def _scratch(self) -> Leaderboard:
        """An empty board with the periods' settings, never written."""
        scratch = self.__dict__.get("_empty")
        if scratch is None:
            scratch = self.__dict__["_empty"] = self.new_board()
        return scratch

    def check(self, event: Any, now_ms: int, sim: dict[Any, Any]) -> None:
        periodic = self._periodic()
        t, now = event.t_ms / 1000, now_ms / 1000
        cached = self._open
        if cached is not None and cached[0] <= t < cached[1] and now < cached[2]:
            # within the period last routed to, and before it closes: the
            # route is that period (the calendar and the lock skipped)
            period: Period | None = cached[3]
        else:
            period = route_period(periodic, t, now)
            if period is not None and period.start <= t < period.end:
                self._open = (period.start, period.end, open_until(periodic, period), period)
        if (
            self.free_int_incr
            and type(event.value) is int
            and event.op == "incr"
            and event.when is None
            and -DIRECT_DELTA_LIMIT <= event.value <= DIRECT_DELTA_LIMIT
        ):
            return  # routed, and an int increment cannot fail on a period board
        name = None if period is None else period.name
        target = None if name is None else period_board(periodic, name)
        if target is None:  # checked as on the new period's empty board
            target = self._scratch
        _check_board_write(target, event, sim.setdefault(("period", name), {}))

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        periodic = self._periodic()
        reads_only = not periodic._advance_makes_current
        periodic._advance_makes_current = True  # (an event's advance makes the current board)
        try:
            return self._apply(periodic, event, ranks)
        finally:
            if reads_only:
                periodic._advance_makes_current = False

    def _apply(self, periodic: Any, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        member, op, t = event.member, event.op, event.t_ms / 1000
        if op == "incr" and not ranks:  # the hot path: the board routes it itself
            return periodic.incr(member, event.value, t=t, when=event.when), None, None
        periodic.now()  # time moves with every event the view takes, write or not
        period = route_period(periodic, t, self.clock())
        board = None if period is None else period_board(periodic, period.name)
        before = board.rank(member) if ranks and board is not None else None
        if op == "incr":
            score = periodic.incr(member, event.value, t=t, when=event.when)
        elif op == "set":
            periodic.set(member, event.value, t=t, when=event.when, meta=event.meta)
            score = None
        elif op == "remove":
            periodic.remove(member, t=t)
            score = None
        else:
            score = None
            if board is not None and member in board:
                periodic.set_meta(member, event.meta, t=t)
        if period is None:
            return None, None, None
        board = period_board(periodic, period.name)
        if board is None:
            return None, before, None
        if op != "incr":
            score = board.score(member)
        return score, before, (board.rank(member) if ranks else None)

    def exact(self, event: Any) -> Leaderboard | None:
        periodic = self._periodic()
        return period_board(periodic, periodic.period_of(event.t_ms / 1000).name)

    def export(self) -> list[Part]:
        now, held = periodic_state(self._periodic())
        if not held:
            return [({"now": now}, None)]
        return [({"now": now, "period": n, "closed": c}, b) for n, c, b in held]

    def export_lazy(self) -> list[LazyPart]:
        now, held = periodic_parts(self._periodic())
        if not held:
            return [({"now": now}, None)]
        return [({"now": now, "period": n, "closed": c}, b) for n, c, b in held]

    def restore(self, parts: list[Part]) -> None:
        now, held = _held(parts)
        restore_periodic(self._periodic(), now, held)

    def check_invariants(self) -> None:
        self._periodic()._check()


def _held(parts: list[Part]) -> tuple[float, list[tuple[str, bool, Leaderboard]]]:
    now = float(parts[0][0].get("now", float("-inf")))
    held = [(h["period"], bool(h["closed"]), b) for h, b in parts if b is not None]
    return now, held


class WindowAdapter(PeriodicAdapter):
    """A ``SlidingWindowLeaderboard``, refreshed after every event (so its
    reads are current: the refresh recomputes the one member written, and
    the members of a bucket that slid out)."""

    kind = "window"

    def _make(self) -> Any:
        o = self.options
        return SlidingWindowLeaderboard(
            calendar(o["calendar"]),
            o["buckets"],
            grace=o.get("grace", 0.0),
            late=o.get("late", "reject"),
            clock=self.clock,
            **_settings(o),
        )

    def _periodic(self) -> PeriodicLeaderboard:
        return self.board.buckets  # type: ignore[no-any-return]

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        window = self.board.board
        before = window.rank(event.member) if ranks else None
        super().apply(event, False)
        self.board.refresh()
        member = event.member
        return window.score(member), before, (window.rank(member) if ranks else None)

    def exact(self, event: Any) -> Leaderboard | None:
        return self.board.board  # type: ignore[no-any-return]

    def export(self) -> list[Part]:
        as_of, board = window_state(self.board)
        return [*super().export(), ({"window": True, "as_of": as_of}, board)]

    def export_lazy(self) -> list[LazyPart]:
        return list(self.export())  # (a window's buckets are always loaded)

    def restore(self, parts: list[Part]) -> None:
        (window_part,) = [p for p in parts if p[0].get("window")]
        buckets = [p for p in parts if not p[0].get("window")]
        now, held = _held(buckets)
        assert window_part[1] is not None
        restore_window(self.board, now, held, float(window_part[0]["as_of"]), window_part[1])

    def check_invariants(self) -> None:
        self.board._check()


class DecayedAdapter(Adapter):
    """A ``DecayedLeaderboard`` on the ledger's clock: an ``incr`` adds
    points earned at the event's time, a ``set`` sets the decayed value."""

    kind = "decayed"

    def _make(self) -> Any:
        o = self.options
        return DecayedLeaderboard(
            half_life=o.get("half_life"),
            tau=o.get("tau"),
            t0=o.get("t0", 0.0),
            clock=self.clock,
            **({"rebase_after": o["rebase_after"]} if "rebase_after" in o else {}),
            **_settings(o),
        )

    def check(self, event: Any, now_ms: int, sim: dict[Any, Any]) -> None:
        if event.when is not None:
            raise ValueError("a decayed view takes no when= (its scores fade)")
        board = self.board.board
        _check_board_write(board, _plain(event), sim)  # the member's type and presence
        # the batch's earlier writes to this board, as they will be made
        # (their sums and re-bases: a write checked alone may pass and then
        # overflow on the score the batch's earlier writes leave)
        batch = sim.get(_DECAYED)
        if batch is None:
            batch = sim[_DECAYED] = DecayedBatch(self.board)
        if event.op == "remove":
            batch.remove(self.board, event.member)
        elif event.op in ("incr", "set"):
            check_decayed_write(
                self.board,
                event.member,
                event.value,
                event.t_ms / 1000,
                max(now_ms / 1000, self.clock()),
                add=event.op == "incr",
                batch=batch,
            )

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        decayed, member, t = self.board, event.member, event.t_ms / 1000
        before = decayed.rank(member) if ranks else None
        if event.op == "incr":
            score = decayed.add(member, event.value, t=t)
        elif event.op == "set":
            decayed.set(member, event.value, t=t)
            if event.meta is not None:
                decayed.set_meta(member, event.meta)
            score = decayed.score(member)
        elif event.op == "remove":
            decayed.remove(member)
            score = None
        else:
            if member in decayed:
                decayed.set_meta(member, event.meta)
            score = decayed.score(member)
        return score, before, (decayed.rank(member) if ranks else None)

    def exact(self, event: Any) -> Leaderboard | None:
        return self.board.board  # type: ignore[no-any-return]

    def export(self) -> list[Part]:
        t0, rebases, stored = decayed_state(self.board)
        return [({"t0": t0, "rebases": rebases}, stored)]

    def restore(self, parts: list[Part]) -> None:
        ((header, stored),) = parts
        assert stored is not None
        restore_decayed(self.board, header["t0"], header["rebases"], stored)

    def check_invariants(self) -> None:
        self.board._check()


def _plain(event: Any) -> Any:
    """``event`` as a plain set of 0 (the checks of a decayed board's stored
    board: member type and presence; its values are checked by the decay)."""
    if event.op in ("incr", "set"):
        return event._replace(op="set", value=0.0, when=None)
    return event


class TopKAdapter(Adapter):
    """A trending ``TopK``: counts ``incr`` events, one each
    (``weight="one"``, the default) or their value (``weight="value"``,
    which must then be a positive int); other events leave it as it is.
    Its outcome's score is the member's estimated count, read (a second
    pass over the sketch) only when ranks are asked for."""

    kind = "topk"

    def _make(self) -> Any:
        o = {k: v for k, v in self.options.items() if k != "weight"}
        weight = self.options.get("weight", "one")
        if weight not in ("one", "value"):
            raise ValueError(f"weight must be 'one' or 'value', not {weight!r}")
        #: True when each increment counts one (``weight="one"``)
        self.counts_one = weight == "one"
        topk = TopK(**o)
        #: the most occurrences its counters hold (unsigned, counter_bits wide)
        self.limit: int = 2 ** topk.config()["counter_bits"] - 1
        return topk

    def _count(self, event: Any) -> int:
        if self.counts_one:
            return 1
        n = event.value
        if type(n) is not int or n < 1:
            raise ValueError(f"a topk view with weight='value' counts positive ints, not {n!r}")
        return n

    def check(self, event: Any, now_ms: int, sim: dict[Any, Any]) -> None:
        if event.op == "incr":
            if type(event.member) is not str:
                check_key(event.member)
            counted = sim.get(_COUNTED, 0) + self._count(event)
            total = self.board.total + counted
            if total > self.limit:  # what TopK.add would raise, after the write
                raise OverflowError(
                    f"trending view: its count would reach {total}, past its counters' limit "
                    f"{self.limit} (use counter_bits=64, or a view per period)"
                )
            sim[_COUNTED] = counted

    def apply(self, event: Any, ranks: bool) -> tuple[Any, Any, Any]:
        if event.op != "incr":
            return None, None, None
        topk = self.board
        topk.add(event.member, self._count(event))
        # the estimate is a second pass over the sketch: only when asked
        return (topk.estimate(event.member) if ranks else None), None, None

    def exact(self, event: Any) -> Leaderboard | None:
        return None

    def export(self) -> list[Part]:
        return [({"topk": self.board.to_bytes()}, None)]

    def restore(self, parts: list[Part]) -> None:
        ((header, _),) = parts
        self.board = TopK.from_bytes(header["topk"])


_ADAPTERS: dict[str, type[Adapter]] = {
    "board": Adapter,
    "periodic": PeriodicAdapter,
    "window": WindowAdapter,
    "decayed": DecayedAdapter,
    "topk": TopKAdapter,
}


def register_adapter(kind: str, adapter: type[Adapter], options: tuple[str, ...]) -> None:
    """Make ``kind`` a view kind (a module above this one adds the Redis view).

    Runtime complexity: O(1)
    """
    _ADAPTERS[kind] = adapter
    _OPTIONS[kind] = options


def make_adapter(kind: str, options: dict[str, Any], clock: Callable[[], float]) -> Adapter:
    """A new, empty view of ``kind`` with ``options``; ``ValueError`` /
    ``TypeError`` for an unknown kind or option, or a bad value (the board's
    own constructor checks them).

    Runtime complexity: O(1) (a TopK: O(width * depth))
    """
    if kind not in _ADAPTERS:
        raise ValueError(f"kind must be one of {tuple(_ADAPTERS)}, not {kind!r}")
    unknown = sorted(set(options) - set(_OPTIONS[kind]))
    if unknown:
        raise TypeError(f"a {kind} view takes no option {unknown[0]!r} (it takes {_OPTIONS[kind]})")
    for name in BOARD_SETTINGS:
        if name in options and not isinstance(options[name], (str, list, tuple, type(None))):
            raise TypeError(f"{name} must be given by name in a ledger view, not {options[name]!r}")
    if kind in ("periodic", "window") and not isinstance(options.get("calendar"), str):
        raise TypeError("a periodic or window view needs calendar= as a name or cron string")
    if kind == "redis" and not (isinstance(options.get("url"), str) and options.get("board")):
        raise TypeError("a redis view needs url= (redis://host:port/db) and board= (its name)")
    return _ADAPTERS[kind](options, clock)
