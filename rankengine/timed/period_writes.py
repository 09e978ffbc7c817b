"""The writes of a periodic board, routed by time to the board of a period.

A write at time ``t`` (default: the board's "now") goes to the board of the
period ``t`` falls in, when that period is open; a write for a closed period
is *late* and follows the board's ``late`` policy (see
:mod:`rankengine.timed.periodic`)::

    incr("ann", 5, t=t)
      _routed(t):  advance; _route(t) -> the open period of t,
                   the current one (late="current"), None (late="drop")
                   or LateEventError (late="reject")
      _target(period).incr("ann", 5)      the period's board does the work
      _wrote(period, ["ann"], moved)      the write hook (a sliding window)

:class:`PeriodWrites` holds these public writes, with the routing they share
and the write hook's bookkeeping; :class:`~rankengine.timed.periodic.PeriodicLeaderboard`
supplies the periods (advancing time, creating and discarding period boards).

>>> from rankengine.timed.periodic import PeriodicLeaderboard
>>> board = PeriodicLeaderboard("daily", grace=60, clock=lambda: 86_430.0)
>>> board.incr("ann", 5), board.incr("ann", 1, t=10.0)   # day 2, and day 1 in its grace
(5, 1)
>>> [p.name for p in board.periods()]
['1970-01-01', '1970-01-02']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Literal

from rankengine.board.checks import check_count, check_flag, member_list
from rankengine.board.leaderboard import Entry, Leaderboard, When
from rankengine.board.routing import at_time
from rankengine.board.scoring import Member, Score, check_member, check_meta
from rankengine.timed.calendars import Calendar, Period, check_time
from rankengine.timed.detached import AfterLock

__all__ = ["LateEventError", "PeriodWrites"]

#: A score not read (see :meth:`PeriodWrites._score_before`).
_UNREAD: Final = object()


class LateEventError(ValueError):
    """A write for a period that is already closed (its standings are final)."""

    def __init__(self, t: float, period: Period, now: float) -> None:
        super().__init__(
            f"event at t={t} is late: period {period.name} closed at "
            f"{period.end} + grace and now is {now}"
        )
        self.t = t
        self.period = period


class PeriodWrites:
    """The public writes of :class:`~rankengine.timed.periodic.PeriodicLeaderboard`,
    each routed to the board of the period of its ``t=`` (see the module
    docstring).  A base of that class, not used on its own.
    """

    # The periodic board's state these writes read; PeriodicLeaderboard sets it.
    _lock: AfterLock
    _calendar: Calendar
    _grace: float
    _late: str
    _closed: set[str]
    _boards: dict[str, Leaderboard]
    _plain_config: dict[str, Any]
    _late_dropped: int
    _write_hook: Callable[[Period, Iterable[Member], bool], None] | None

    if TYPE_CHECKING:  # defined by PeriodicLeaderboard

        def _advance(self, closed: list[Period] | None = None) -> float: ...
        def _ensure(self, period: Period) -> Leaderboard: ...
        def _discard(self, period: Period) -> None: ...

    @at_time(Leaderboard.set)
    def set(
        self,
        member: Member,
        score: Score,
        *,
        t: float | None = None,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """:meth:`Leaderboard.set` on the board of the period of ``t`` (default now).

        :return: True if the board changed; False also when a late write was dropped.

        Runtime complexity: O(log N)
        """
        with self._lock:
            with self._routed(t) as period:
                board = self._target(period)
                before = self._score_before(board, member)
                changed = board.set(member, score, when=when, meta=meta)
            if period is None:
                return False
            self._wrote(period, (member,), moved=self._moved(board, member, before))
            return changed

    @at_time(Leaderboard.incr)
    def incr(
        self, member: Member, delta: Score = 1, *, t: float | None = None, when: When | None = None
    ) -> Score | None:
        """:meth:`Leaderboard.incr` on the board of the period of ``t`` (default now).

        :return: the new score, or None if ``when`` blocked it or a late
            write was dropped.

        Runtime complexity: O(log N)
        """
        with self._lock:
            with self._routed(t) as period:
                board = self._target(period)
                before = self._score_before(board, member)
                result = board.incr(member, delta, when=when)
            if period is None:
                return None
            self._wrote(period, (member,), moved=self._moved(board, member, before))
            return result

    @at_time(Leaderboard.set_many)
    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
        when: When | None = None,
    ) -> int:
        """:meth:`Leaderboard.set_many`, all at time ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            with self._routed(t) as period:
                pairs = list(items.items() if isinstance(items, Mapping) else items)
                changed = self._target(period).set_many(pairs, when=when)
            if period is None:
                return 0
            self._wrote(period, [pair[0] for pair in pairs])
            return changed

    @at_time(Leaderboard.incr_many)
    def incr_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
    ) -> dict[Member, Score]:
        """:meth:`Leaderboard.incr_many`, all at time ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            with self._routed(t) as period:
                pairs = list(items.items() if isinstance(items, Mapping) else items)
                result = self._target(period).incr_many(pairs)
            if period is None:
                return {}
            self._wrote(period, result)
            return result

    @at_time(Leaderboard.remove)
    def remove(self, member: Member, *, t: float | None = None) -> bool:
        """Remove ``member`` from the board of the period of ``t`` (default now).

        Runtime complexity: O(log N)
        """
        with self._lock:
            with self._routed(t) as period:
                removed = self._target(period).remove(member)
            if period is None:
                return False
            self._wrote(period, (member,), moved=removed)
            return removed

    @at_time(Leaderboard.remove_many)
    def remove_many(self, members: Iterable[Member], *, t: float | None = None) -> int:
        """:meth:`Leaderboard.remove_many` on the board of the period of
        ``t`` (default now): every member is checked before any is removed.

        :return: how many were present; 0 also when a late write was dropped.

        Runtime complexity: O(k log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> board.remove_many(["ann", "cid", "zed"]), board.board().items()
        (2, [('bob', 2)])
        """
        with self._lock:
            with self._routed(t) as period:
                wanted = member_list(members)  # read once, inside: a failing iterable undoes
                removed = self._target(period).remove_many(wanted)
            if period is None:
                return 0
            self._wrote(period, wanted)
            return removed

    @at_time(Leaderboard.pop_best)
    def pop_best(
        self, count: int = 1, *, t: float | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """:meth:`Leaderboard.pop_best` on the board of the period of ``t``
        (default now): remove and return up to ``count`` best entries.

        For a closed period (its standings are final) it raises
        :class:`LateEventError` under ``late="reject"`` and ``"current"``
        (moved to the current period, it would pop that period's best, not
        the closed one's), and returns ``[]`` under ``"drop"``.

        Runtime complexity: O(count log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> [e.member for e in board.pop_best(2)], board.board().items()
        (['ann', 'bob'], [('cid', 1)])
        """
        return self._pop("pop_best", count, t, with_meta)

    @at_time(Leaderboard.pop_worst)
    def pop_worst(
        self, count: int = 1, *, t: float | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """:meth:`Leaderboard.pop_worst` on the board of the period of ``t``
        (default now): remove and return up to ``count`` worst entries,
        worst first.  A closed period: as :meth:`pop_best`.

        Runtime complexity: O(count log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> [e.member for e in board.pop_worst(2)], board.board().items()
        (['cid', 'bob'], [('ann', 3)])
        """
        return self._pop("pop_worst", count, t, with_meta)

    def _pop(
        self,
        pop: Literal["pop_best", "pop_worst"],
        count: int,
        t: float | None,
        with_meta: bool,
    ) -> list[Entry]:
        """:meth:`pop_best` or :meth:`pop_worst` (``pop`` names the period
        board's method), routed as they say.

        Runtime complexity: O(count log N)
        """
        with_meta = check_flag(with_meta, "with_meta")
        with self._lock:
            with self._routed(t, redirect=False) as period:
                popped: list[Entry] = getattr(self._target(period), pop)(count, with_meta=with_meta)
            if period is None:
                return []
            self._wrote(period, [entry.member for entry in popped])
            return popped

    @at_time(Leaderboard.remove_by_rank)
    def remove_by_rank(self, start: int, stop: int, *, t: float | None = None) -> int:
        """:meth:`Leaderboard.remove_by_rank` on the board of the period of
        ``t`` (default now): remove the members ranked ``start`` to ``stop``
        inclusive (1-based, negative from the bottom).  A closed period: as
        :meth:`pop_best` (``"drop"`` returns 0).

        Runtime complexity: O(log N + k log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> board.remove_by_rank(2, -1), board.board().items()
        (2, [('ann', 3)])
        """
        with self._lock:
            with self._routed(t, redirect=False) as period:
                board = self._target(period)
                with board._lock:
                    gone = self._going(period, lambda: board.by_rank(start, stop))
                    removed = board.remove_by_rank(start, stop)
            if period is None:
                return 0
            self._wrote(period, gone)
            return removed

    @at_time(Leaderboard.remove_by_score)
    def remove_by_score(
        self,
        min: Score | None,  # the names of Leaderboard.remove_by_score
        max: Score | None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        t: float | None = None,
    ) -> int:
        """:meth:`Leaderboard.remove_by_score` on the board of the period of
        ``t`` (default now): remove every member whose score lies in the
        range (``None`` leaves an end open).  A closed period: as
        :meth:`pop_best` (``"drop"`` returns 0).

        Runtime complexity: O(log N + k log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> board.remove_by_score(None, 2), board.board().items()
        (2, [('ann', 3)])
        """
        with self._lock:
            with self._routed(t, redirect=False) as period:
                board = self._target(period)
                with board._lock:
                    gone = self._going(
                        period,
                        lambda: board.by_score(
                            min, max, min_inclusive=min_inclusive, max_inclusive=max_inclusive
                        ),
                    )
                    removed = board.remove_by_score(
                        min, max, min_inclusive=min_inclusive, max_inclusive=max_inclusive
                    )
            if period is None:
                return 0
            self._wrote(period, gone)
            return removed

    @at_time(Leaderboard.keep_top)
    def keep_top(self, n: int, *, t: float | None = None) -> int:
        """:meth:`Leaderboard.keep_top` on the board of the period of ``t``
        (default now): keep only its best ``n`` members.  A closed period:
        as :meth:`pop_best` (``"drop"`` returns 0).

        :return: how many were removed.

        Runtime complexity: O(log N + k log N)

        >>> from rankengine.timed.periodic import PeriodicLeaderboard
        >>> board = PeriodicLeaderboard("daily", clock=lambda: 0.0)
        >>> board.set_many({"ann": 3, "bob": 2, "cid": 1})
        3
        >>> board.keep_top(1), board.board().items()
        (2, [('ann', 3)])
        """
        with self._lock:
            with self._routed(t, redirect=False) as period:
                board = self._target(period)
                with board._lock:
                    n = check_count(n, "n")  # as the board checks it, before n + 1 below
                    gone = self._going(period, lambda: board.by_rank(n + 1, -1))
                    removed = board.keep_top(n)
            if period is None:
                return 0
            self._wrote(period, gone)
            return removed

    @at_time(Leaderboard.set_meta)
    def set_meta(
        self, member: Member, meta: Mapping[str, Any] | None, *, t: float | None = None
    ) -> None:
        """:meth:`Leaderboard.set_meta` on the board of the period of ``t``
        (default now): ``member`` must be on that board.  A late write that
        the ``late`` policy drops changes nothing.

        Runtime complexity: O(size of meta)
        """
        with self._lock:
            with self._routed(t) as period:
                if period is None:  # dropped: checked as the board would, not applied
                    check_member(member)
                    if meta is not None:
                        check_meta(meta)
                else:
                    self._boards[period.name].set_meta(member, meta)
            if period is not None:
                # a window over these buckets copies the newest metadata at
                # refresh; no score moved
                self._wrote(period, (member,), moved=False)

    @contextmanager
    def _routed(self, t: float | None, *, redirect: bool = True) -> Iterator[Period | None]:
        """Route a write at ``t`` (see :meth:`_route`) and yield its period,
        or None for a dropped late write; the caller writes to
        :meth:`_target` of it inside the ``with`` (a dropped write counts in
        ``late_dropped`` only if that write succeeds).

        If the write raises (bad input the period's board refuses), or
        succeeds but leaves the board empty (``remove`` of an absent member,
        a ``when`` rule that blocked it, an empty batch), a board that
        routing created for it is undone: such a write leaves no period
        behind (no close callback for it later, no directory).  Routing
        creates a board only for an open past period nobody wrote to yet:
        the current period's is held already.
        """
        now = self._advance()
        period = self._route(t, now, redirect=redirect)
        created = period is not None and period.name not in self._boards
        if period is not None:
            self._ensure(period)
        try:
            yield period
        except BaseException:
            if created and period is not None:
                self._discard(period)
            raise
        if period is None:
            self._late_dropped += 1  # a good write, dropped: see _target
        elif created and not self._boards[period.name]:
            self._discard(period)

    def _target(self, period: Period | None) -> Leaderboard:
        """The board a routed write goes to: its period's, or for a late
        write that ``late="drop"`` drops, a new scratch board.  A dropped
        write is still made, on the scratch board, so that bad input raises
        as it would on time (instead of passing as a dropped event and
        counting in ``late_dropped``); the scratch board is then forgotten.

        Runtime complexity: O(1) (a dropped write: the cost of the write on
        an empty board)
        """
        if period is None:
            return Leaderboard(**self._plain_config)
        return self._boards[period.name]

    def _route(self, t: float | None, now: float, *, redirect: bool = True) -> Period | None:
        """The open period a write at ``t`` goes to (``now`` the board's
        time), or None (dropped late write).  Creates no board.

        ``redirect=False``: a late write is refused under ``late="current"``
        too (a write that picks its members by the standings: moved to the
        current period it would pick other members)."""
        if t is None:
            # held already, unless close() stopped advancing or a close
            # callback is running
            return self._calendar.period_of(now)
        t = check_time(t)
        period = self._calendar.period_of(t)
        if period.start > now:
            raise ValueError(
                f"event at t={t} is in period {period.name}, which starts after now ({now})"
            )
        if now < period.end + self._grace and period.name not in self._closed:
            return period
        if self._late == "reject" or (self._late == "current" and not redirect):
            raise LateEventError(t, period, now)
        if self._late == "drop":
            return None  # counted in late_dropped once the write is checked
        return self._calendar.period_of(now)

    def _going(self, period: Period | None, doomed: Callable[[], list[Entry]]) -> list[Member]:
        """The members a removal by rank or score is about to remove (read
        with ``doomed``, under the board's lock), for the write hook: the
        board's own method returns only a count.  Read only when a hook
        wants them (a sliding window over these buckets) and the write is
        not a dropped one.

        Runtime complexity: O(log N + k) with a hook, O(1) without
        """
        if period is None or self._write_hook is None:
            return []
        return [entry.member for entry in doomed()]

    def _wrote(self, period: Period, members: Iterable[Member], *, moved: bool = True) -> None:
        """Tell the write hook (a sliding window) which members a write
        touched, and whether it may have moved their scores (False: only
        their metadata, or nothing, changed)."""
        if self._write_hook is not None:
            self._write_hook(period, members, moved)

    def _score_before(self, board: Leaderboard, member: Member) -> Any:
        """``member``'s score on ``board`` before a write, for :meth:`_moved`;
        ``_UNREAD`` when no hook wants it or ``member`` is not one (the
        write then raises its own error).

        Runtime complexity: O(1)
        """
        if self._write_hook is None:
            return _UNREAD
        try:
            return board.score(member, _UNREAD)
        except TypeError:
            return _UNREAD

    def _moved(self, board: Leaderboard, member: Member, before: Any) -> bool:
        """Whether a write may have moved ``member``'s score on ``board``
        (``before`` as :meth:`_score_before` read it).

        Runtime complexity: O(1)
        """
        return before is _UNREAD or board.score(member, _UNREAD) != before
