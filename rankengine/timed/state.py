"""The state of a time board, read out and put back, and its writes checked
without making them: what a ledger (:mod:`rankengine.ledger`) needs to keep
a periodic board, a sliding window or a decayed board as one of its views.

A view is rebuilt from a snapshot plus the events after it, so each board's
state must be read out whole and put back exactly:

* a periodic board: "now" and each period held (its name, whether its
  close has run, its board);
* a sliding window: its buckets (a periodic board) and its window board
  (refreshed after every write, so nothing is due);
* a decayed board: its base time ``t0`` and its stored board.

And an event any view would refuse must change no view, so a write is
checked first, against the board as it is and a time that has not moved
yet: :func:`route_period` (which period a write at ``t`` goes to when the
clock reads ``now``; raises as the write would) and
:func:`check_decayed_write`.

>>> from rankengine.timed.periodic import PeriodicLeaderboard
>>> daily = PeriodicLeaderboard("daily", clock=lambda: 90_000.0)
>>> _ = daily.incr("ann", 3)
>>> now, held = periodic_state(daily)
>>> now, [(name, closed, board.items()) for name, closed, board in held]
(90000.0, [('1970-01-02', False, [('ann', 3)])])
>>> route_period(daily, 100_000.0, 100_000.0).name
'1970-01-02'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rankengine.board.direct import direct_incr
from rankengine.board.leaderboard import Leaderboard
from rankengine.timed.calendars import Period
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.decay_checks import check_points, check_sum
from rankengine.timed.lazy import PeriodBoards, Unloaded, is_unloaded
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

__all__ = [
    "DecayedBatch",
    "check_decayed_write",
    "decayed_state",
    "held_period_board",
    "held_period_incr",
    "open_until",
    "period_board",
    "periodic_parts",
    "periodic_state",
    "restore_decayed",
    "restore_periodic",
    "restore_window",
    "route_period",
    "window_state",
]


def periodic_state(board: PeriodicLeaderboard) -> tuple[float, list[tuple[str, bool, Leaderboard]]]:
    """``(now, [(period name, closed, board), ...])``: what
    :func:`restore_periodic` puts back (the boards are the live ones: read
    them before the next write; a period not loaded yet is loaded).

    Runtime complexity: O(P) for P periods held, plus loading any unloaded
    """
    with board._lock:
        held = [(name, name in board._closed, b) for name, b in board._boards.items()]
        return board._now, held


def periodic_parts(
    board: PeriodicLeaderboard,
) -> tuple[float, list[tuple[str, bool, Leaderboard | Unloaded]]]:
    """:func:`periodic_state` without loading: a closed period that is not
    loaded yet (see :mod:`rankengine.timed.lazy`) comes as its
    :class:`~rankengine.timed.lazy.Unloaded` (its snapshot file is its
    state), for a ledger's compaction that copies that file.

    Runtime complexity: O(P) for P periods held
    """
    with board._lock:
        boards = board._boards
        if type(boards) is not PeriodBoards:
            return periodic_state(board)  # type: ignore[return-value]
        held: list[tuple[str, bool, Leaderboard | Unloaded]] = []
        for name in list(boards):
            value = boards.peek(name)
            assert value is not None
            held.append((name, name in board._closed, value))
        return board._now, held


def open_until(board: PeriodicLeaderboard, period: Period) -> float:
    """When ``period`` stops taking writes: its end plus the board's grace.

    Runtime complexity: O(1)
    """
    return period.end + board._grace


def period_board(board: PeriodicLeaderboard, name: str) -> Leaderboard | None:
    """The board of period ``name`` if ``board`` holds it, else None (no
    board is created and time does not move).

    Runtime complexity: O(1)
    """
    return board._boards.get(name)


def restore_periodic(
    board: PeriodicLeaderboard,
    now: float,
    held: Sequence[tuple[str, bool, Leaderboard | Unloaded]],
) -> None:
    """Put the state :func:`periodic_state` read back into an unused
    ``board`` (same calendar and settings); the boards become its own.

    A closed period's board may be an :class:`~rankengine.timed.lazy.Unloaded`
    (loaded on its first read; the board's map becomes a
    :class:`~rankengine.timed.lazy.PeriodBoards`).

    Runtime complexity: O(P) for P periods
    """
    with board._lock:
        if any(is_unloaded(b) for _, _, b in held) and type(board._boards) is not PeriodBoards:
            board._boards = PeriodBoards(board._boards)
        for name, closed, period_board in held:
            if is_unloaded(period_board) and not closed:
                raise ValueError(f"period {name} is open: it cannot be left unloaded")
            period = board._calendar.parse(name)
            # (an Unloaded only into a PeriodBoards, made above)
            board._boards[name] = period_board  # type: ignore[assignment]
            board._periods[name] = period
            if closed:
                board._closed.add(name)
        board._now = max(board._now, now)
        board._horizon = -math.inf


def held_period_board(board: PeriodicLeaderboard, period: Period, now: float) -> Leaderboard | None:
    """The board of ``period`` for a write routed there (the caller checked
    that the write's time falls in it) when the board's clock reads
    ``now``, if that write would ask nothing more of the periodic board
    than moving its time to ``now``: ``now`` before the board's horizon (no
    period opens or closes), ``period`` held and open, no write hook (a
    sliding window's buckets have one).  The board's time is then moved
    to ``now``, as the write's own clock reading would, and the caller
    writes to the board returned.  None: nothing changed, write through
    the periodic board (it routes, opens and closes periods).

    A ledger's view routes each event once, in its check; this lets the
    write skip routing it again (measured: about a third of a periodic
    board's ``incr``, see ``docs/ledger.md``).

    Runtime complexity: O(1)

    >>> from rankengine.timed.periodic import PeriodicLeaderboard
    >>> daily = PeriodicLeaderboard("daily", clock=lambda: 90_000.0)
    >>> _ = daily.incr("ann", 3)
    >>> day = daily.period_of(90_000.0)
    >>> held_period_board(daily, day, 95_000.0).incr("ann", 2), daily.now()
    (5, 95000.0)
    >>> held_period_board(daily, day, 200_000.0) is None      # the day closes first
    True
    """
    # (the board's lock held through its plain RLock: nothing done here
    # leaves follow-up work, see AfterLock)
    lock = board._lock.plain
    lock.acquire()
    try:
        return _held_target(board, period, now)
    finally:
        lock.release()


def _held_target(board: PeriodicLeaderboard, period: Period, now: float) -> Leaderboard | None:
    """The body of :func:`held_period_board`, run with the board's lock
    held: the period's board (the board's time moved to ``now``), or None
    with nothing changed.

    Runtime complexity: O(1)
    """
    held = board._now
    now = now if now > held else held
    if now >= board._horizon or board._write_hook is not None:
        return None
    name = period.name
    target = board._boards.get(name)
    if target is None or name in board._closed:
        return None
    board._now = now
    return target


def held_period_incr(
    board: PeriodicLeaderboard, period: Period, now: float, member: str, delta: int
) -> Any:
    """:func:`held_period_board` and the increment in one hold of the
    board's lock: when that function would return the period's board,
    ``direct_incr(that board, member, delta)`` is made (see
    :func:`~rankengine.board.direct.direct_incr`: the caller has checked
    the increment) and the new score returned; else None, nothing changed.
    The period board's lock is taken inside the periodic board's, as
    :meth:`PeriodicLeaderboard.incr` takes them.

    Runtime complexity: O(log N)

    >>> from rankengine.timed.periodic import PeriodicLeaderboard
    >>> daily = PeriodicLeaderboard("daily", clock=lambda: 90_000.0)
    >>> _ = daily.incr("ann", 3)
    >>> day = daily.period_of(90_000.0)
    >>> held_period_incr(daily, day, 95_000.0, "ann", 2), daily.now()
    (5, 95000.0)
    >>> held_period_incr(daily, day, 200_000.0, "ann", 2) is None   # the day closes first
    True
    """
    lock = board._lock.plain  # (as held_period_board: no follow-up work)
    lock.acquire()
    try:
        # _held_target's body, inlined: a call less per periodic write of
        # a ledger's int increment (-930 instructions per record of the four
        # views of bench/ledger.py, valgrind; a test holds the two alike)
        held = board._now
        now = now if now > held else held
        if now >= board._horizon or board._write_hook is not None:
            return None
        name = period.name
        target = board._boards.get(name)
        if target is None or name in board._closed:
            return None
        board._now = now
        return direct_incr(target, member, delta)
    finally:
        lock.release()


def route_period(board: PeriodicLeaderboard, t: float, now: float) -> Period | None:
    """The period a write at ``t`` goes to if the board's clock read ``now``
    (None: a late write ``late="drop"`` drops), without moving the board's
    time or creating a board; raises what that write would raise
    (:class:`~rankengine.timed.periodic.LateEventError`, ``ValueError``).

    Runtime complexity: O(1) (the calendar's period look-up)
    """
    with board._lock:
        return board._route(t, max(now, board._now))


def window_state(window: SlidingWindowLeaderboard) -> tuple[float, Leaderboard]:
    """``(as_of, window board)`` of a sliding window refreshed after its
    last write (nothing due): with its buckets, its whole state.

    Runtime complexity: O(1)
    """
    with window._lock:
        if window._dirty or window._slid or window._taken or window._taken_boards:
            raise ValueError("the window has members due a refresh: refresh() it first")
        return window._as_of, window._board


def restore_window(
    window: SlidingWindowLeaderboard,
    now: float,
    held: list[tuple[str, bool, Leaderboard]],
    as_of: float,
    board: Leaderboard,
) -> None:
    """Put the buckets :func:`periodic_state` read from ``window.buckets``
    and the window board :func:`window_state` read back into an unused
    ``window``, exactly (the window board as it was, ties in the order its
    refreshes gave them: recomputing it would order equal sums otherwise).

    Runtime complexity: O(B) for B buckets
    """
    with window._lock:
        restore_periodic(window._buckets, now, held)
        window._board = board
        window._dirty = {}
        window._as_of = as_of
        window._window = []
        if as_of != -math.inf:
            cal = window._buckets.calendar
            periods = [cal.period_of(as_of)]
            for _ in range(window._size - 1):
                try:
                    periods.append(cal.previous(periods[-1]))
                except ValueError:  # no bucket before the calendar's first (year 1)
                    break
            periods.reverse()
            window._window = periods


def decayed_state(board: DecayedLeaderboard) -> tuple[float, int, Leaderboard]:
    """``(t0, rebases, stored board)`` of a decayed board.

    Runtime complexity: O(1)
    """
    with board._lock:
        return board._t0, board.rebases, board._board


def restore_decayed(
    board: DecayedLeaderboard, t0: float, rebases: int, stored: Leaderboard
) -> None:
    """Make ``stored`` (scores stored against base ``t0``) the decayed
    board's own.

    Runtime complexity: O(1)
    """
    with board._lock:
        board._t0 = float(t0)
        board.rebases = rebases
        board._board = stored


class DecayedBatch:
    """What the writes of a batch checked so far will do to a decayed board,
    so that each write of the batch is checked after the ones before it
    (:func:`check_decayed_write`): the bases their re-bases move to, in
    order, and each member they write, with its stored score (None:
    removed) and the index in ``bases`` of the base it is stored against.
    The board is not touched.

    Runtime complexity: O(1) a write, O(R) to bring a score through the R
    re-bases of the batch (at most a few: a re-base is due only once the
    events move many time constants on)

    >>> board = DecayedLeaderboard(tau=10.0, t0=0.0, clock=lambda: 0.0)
    >>> batch = DecayedBatch(board)
    >>> check_decayed_write(board, "ann", 1e308, 0.0, 0.0, add=True, batch=batch)
    >>> check_decayed_write(board, "ann", 1e308, 0.0, 0.0, add=True, batch=batch)
    Traceback (most recent call last):
    ...
    OverflowError: the stored score of 'ann' would be inf: ...
    >>> batch.remove(board, "ann")
    >>> check_decayed_write(board, "ann", 1e308, 0.0, 0.0, add=True, batch=batch)
    >>> len(board)
    0
    """

    __slots__ = ("bases", "stored")

    def __init__(self, board: DecayedLeaderboard) -> None:
        with board._lock:
            self.bases: list[float] = [board._t0]
        self.stored: dict[Any, tuple[float | None, int]] = {}

    def stored_at(self, board: DecayedLeaderboard, member: Any, new_t0: float | None) -> float:
        """``member``'s stored score (0.0 if absent) after the batch's
        writes so far and a re-base to ``new_t0`` (None: none), each
        re-base computed as :meth:`DecayedLeaderboard.rebase` computes it."""
        stored: float | None
        if member in self.stored:
            stored, at = self.stored[member]
        else:
            held = board._board.score(member)
            stored, at = (None if held is None else float(held)), 0
        if stored is None:
            return 0.0
        bases = self.bases if new_t0 is None else [*self.bases, new_t0]
        for i in range(at, len(bases) - 1):
            stored = board._decayed(stored, bases[i + 1], bases[i])
        return stored

    def remove(self, board: DecayedLeaderboard, member: Any) -> None:
        """Note that the batch removes ``member``."""
        self.stored[board._board._check_member(member)] = (None, len(self.bases) - 1)


def check_decayed_write(
    board: DecayedLeaderboard,
    member: Any,
    points: Any,
    t: float,
    now: float,
    *,
    add: bool,
    batch: DecayedBatch | None = None,
) -> None:
    """Raise what ``board.add(member, points, t=t)`` (``add``) or
    ``board.set(member, points, t=t)`` would raise with the clock at
    ``now``, changing nothing (no re-base).  With ``batch``, after the
    batch's writes checked before it (whose effect it simulates), and
    noting this write's effect there.

    Runtime complexity: O(1) (plus the batch's re-bases, see :class:`DecayedBatch`)
    """
    with board._lock:
        member = board._board._check_member(member)
        check_points(points, member)
        if batch is None:
            batch = DecayedBatch(board)
        new_t0, weight = board._plan(t, now, batch.bases[-1])
        delta = points * weight
        if add:
            stored = check_sum(batch.stored_at(board, member, new_t0) + delta, member)
        else:
            stored = check_sum(delta, member)
        if new_t0 is not None:
            batch.bases.append(new_t0)
        batch.stored[member] = (stored, len(batch.bases) - 1)
