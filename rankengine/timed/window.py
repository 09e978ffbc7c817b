"""Sliding windows: "top over the last N buckets", materialised.

A :class:`SlidingWindowLeaderboard` writes into time buckets (the periods
of a :class:`~rankengine.timed.periodic.PeriodicLeaderboard`: hours, days, ...)
and keeps one more board, the *window*: every member's sum over the last
``buckets`` buckets.  Reads go to that board only, so a read costs what a
read of one board costs; nothing is merged on a read.

The window is brought up to date by :meth:`~SlidingWindowLeaderboard.refresh`,
called explicitly or on a schedule (``refresh_every`` seconds, checked on
each read).  A refresh is incremental: it recomputes only the *touched*
members, those written to since the last refresh plus those of buckets that
slid out of the window::

    buckets   ... | h-3 | h-2 | h-1 |  h  |        window = last 3 buckets
    before          [-----------------]           (as of the last refresh)
    after                 [-----------------]     h-3 slid out, h came in
    touched  = members written since the last refresh  ∪  members of h-3
    for each touched member: total = sum of its score in h-2, h-1, h
                             (oldest bucket first), or remove it if absent

Why recompute instead of "add the newest bucket, subtract the one that fell
out"?  With float scores subtraction does not undo addition exactly
(``(0.1 + 0.2) - 0.2 != 0.1``), so a long-running window would drift from
the true sum.  Recomputing a touched member costs one dictionary look-up
per bucket, and gives *exactly* the sum a from-scratch union computes
(same values, same order of additions).  Sums follow
:meth:`Leaderboard.union`: ``+inf + -inf`` counts as 0.

Staleness
---------
Between refreshes the window shows the state of the last refresh
(:attr:`~SlidingWindowLeaderboard.as_of`): writes made since then are not
in it yet, and a bucket that slid out since then is still in it.  With
``refresh_every=s`` no read sees a window older than ``s`` seconds (plus the
time of one refresh); with ``refresh_every=None`` only explicit refreshes
move it.  Bucket reads (:meth:`~SlidingWindowLeaderboard.bucket`) are
always current.  A refresh holds the window's lock for about a
millisecond at a time, however many members it recomputes: it sums off
the lock and writes in slices or swaps a new state in (see
:mod:`rankengine.timed.window_refresh`, which also says what another
thread reads meanwhile).

>>> clock = [1_796_032_800.0]                      # 2026-11-30T10:00Z
>>> last3h = SlidingWindowLeaderboard("hourly", 3, clock=lambda: clock[0])
>>> for member, points in [("ann", 5), ("bob", 4), ("ann", 1), ("cid", 3)]:
...     _ = last3h.incr(member, points)            # one write an hour, 10:00 to 13:00
...     clock[0] += 3600
>>> last3h.top()                                   # never refreshed: empty
[]
>>> last3h.refresh()                               # at 14:00: hours 12, 13 and 14
3
>>> [(e.member, e.score) for e in last3h.top()]    # ann's 5 from 10:00 slid out
[('cid', 3), ('ann', 1)]
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

from rankengine.board.changes import DEL
from rankengine.board.copying import Uncopyable
from rankengine.board.leaderboard import Leaderboard, When
from rankengine.board.routing import at_time, routed
from rankengine.board.scoring import Member, Score, check_member
from rankengine.durable.board import (
    BOARD_SETTINGS,
    FsyncPolicy,
    check_fsync,
    check_options,
    pop_log_options,
)
from rankengine.durable.forget import Forgotten
from rankengine.durable.kinds import as_ledger_view
from rankengine.timed.periodic import (
    _OPEN_OWNS,
    Calendar,
    LatePolicy,
    Period,
    PeriodicLeaderboard,
)
from rankengine.timed.window_refresh import WindowRefresh

__all__ = ["SlidingWindowLeaderboard"]

_MISSING: Final = object()

_R = TypeVar("_R")


def _over_window(method: Callable[..., _R]) -> Callable[..., _R]:
    """``method`` of the board contract, read over the window (see
    :func:`~rankengine.board.routing.routed`), after a refresh that is due
    (run before the read takes the lock, so that the refresh's own holds
    stay short: see :mod:`rankengine.timed.window_refresh`).

    >>> SlidingWindowLeaderboard.top.__doc__.splitlines()[0]
    ':meth:`Leaderboard.top` over the window (refreshed first when due).'
    """
    return routed(
        method,
        keyword=None,
        route="_current",
        before="_maybe_refresh",
        about=f":meth:`Leaderboard.{method.__name__}` over the window (refreshed first when due).",
    )


class SlidingWindowLeaderboard(WindowRefresh, Uncopyable):
    """The sum of each member's scores over the last ``buckets`` buckets,
    refreshed incrementally and read like one board.

    :param cal: the bucket calendar (``"hourly"``, ``"daily"``, a
        :class:`~rankengine.timed.periodic.Calendar`, a cron expression).
    :param buckets: how many buckets the window spans, the current
        (partial) one included: ``("hourly", 24)`` is "the last 24 hours"
        at one-hour granularity.
    :param refresh_every: seconds; a read refreshes first when the window is
        at least this old.  ``None``: only :meth:`refresh` refreshes.
    :param grace, late, clock, archive, board_factory: as for
        :class:`~rankengine.timed.periodic.PeriodicLeaderboard` (late writes,
        injectable clock, where old buckets go, durable buckets);
        :meth:`open` makes durable buckets under its own directory and
        refuses ``archive`` and ``board_factory``.
    :param board_config: settings of the buckets and the window board
        (``order``, ``tie_break``, ``rank_style``, ``backend``); scores must
        be numbers (composite scores cannot be summed).

    A member's metadata in the window is the one in its newest bucket that
    has any (set with ``set(..., meta=...)`` or :meth:`set_meta`), copied
    at refresh.

    Writes: ``set``, ``incr``, ``set_many``, ``incr_many``, ``remove``,
    ``remove_many`` and ``set_meta``, each to the bucket of ``t`` (default
    now).  There are no pops and no removals by rank or score (``pop_best``,
    ``keep_top``, ...): the window's standings are sums over buckets, and
    removing a member from one bucket leaves its other buckets counting, so
    such a write could not do what its name says.  ``buckets`` has them,
    for one bucket's own standings.

    Ties on a first-to-reach board (the default): a refresh writes the
    members it recomputes in the order their sums changed (a write puts its
    member last; a bucket that slides out adds those of its members not
    already due, in its rank order), so members with equal sums rank by the
    write that reached them, the same in every run.  A reopen has no write
    order to go by: its full refresh takes the members bucket by bucket,
    oldest first, each bucket in rank order.

    Copying: ``copy.copy``, ``copy.deepcopy`` and pickling raise
    :class:`TypeError` (the window runs on a clock over bucket boards that
    may be durable); ``board.board.copy()`` is an independent
    :class:`Leaderboard` of the window's sums.

    Thread safety: one lock (the buckets' own) serialises every write and
    read; a refresh holds it only in short steps (about a millisecond
    each, see :mod:`rankengine.timed.window_refresh`), so writes and reads
    of other threads run while it computes.  One refresh runs at a time;
    a read that finds a refresh due while another thread refreshes reads
    the window as it stands.
    """

    _copy_advice = (
        "it runs on a clock over bucket boards that may own a directory; copy the "
        "window's sums instead: board.board.copy()"
    )

    def __init__(
        self,
        cal: Calendar | str,
        buckets: int,
        *,
        refresh_every: float | None = None,
        grace: float = 0.0,
        late: LatePolicy = "reject",
        clock: Callable[[], float] = time.time,
        archive: str | os.PathLike[str] | None = None,
        board_factory: Callable[[Period], Leaderboard] | None = None,
        **board_config: Any,
    ) -> None:
        check_options(board_config, BOARD_SETTINGS, "SlidingWindowLeaderboard")
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            raise ValueError(f"buckets must be an int >= 1, not {buckets!r}")
        if refresh_every is not None and (
            isinstance(refresh_every, bool)
            or not isinstance(refresh_every, (int, float))
            or not refresh_every >= 0
        ):
            raise ValueError(f"refresh_every must be None or seconds >= 0, not {refresh_every!r}")
        if isinstance(board_config.get("order"), tuple):
            raise TypeError("a sliding window sums scores: composite orders are not supported")
        self._size = buckets
        self._refresh_every = refresh_every
        self._buckets = PeriodicLeaderboard(
            cal,
            keep=buckets - 1,
            grace=grace,
            late=late,
            clock=clock,
            archive=archive,
            board_factory=board_factory,
            **board_config,
        )
        self._buckets._write_hook = self._mark
        self._buckets._drop_hook = self._dropped
        self._board_config = dict(board_config)
        self._board = Leaderboard(**board_config)
        #: members due a recompute, in the order their sums changed: the
        #: refresh writes them in this order, so that on a first-to-reach
        #: board members with equal sums rank by the write that reached them
        #: (an insertion-ordered dict, not a set, whose order is the hash's)
        self._dirty: dict[Any, None] = {}
        #: bucket boards that slid out (dropped) since a refresh took them:
        #: their members are due too (read by the next refresh, off the lock)
        self._slid: list[Leaderboard] = []
        #: what the refresh in progress took from _dirty and _slid: due
        #: until it has written their new sums
        self._taken: dict[Any, None] = {}
        self._taken_boards: list[Leaderboard] = []
        self._window: list[Period] = []
        self._as_of = -math.inf
        # Lock order (nested acquisitions only ever go this way, so no two
        # threads can wait on each other): _refreshing, then the window's
        # lock, which *is* the buckets' lock (one lock: a dropped bucket's
        # archive is written after its outermost release, see
        # rankengine.timed.detached, and not while the window holds a lock
        # of its own), then a bucket board's lock or the window board's
        # lock.  The buckets call _mark and _dropped with it held; those
        # take no lock.
        self._lock = self._buckets._lock
        self._refreshing = threading.RLock()
        self._last_touched = 0

    # ------------------------------------------------------------------
    # Refresh
    # ------------------------------------------------------------------
    # as_of, window() and last_touched describe the window board as the last
    # refresh left it: they are read under the lock refresh() holds, so that
    # a reader in another thread never pairs the new totals with the old time.
    @property
    def as_of(self) -> float:
        """The time of the last refresh (``-inf`` before the first)."""
        with self._lock:
            return self._as_of

    @property
    def last_touched(self) -> int:
        """How many members the last refresh recomputed (a cost figure)."""
        with self._lock:
            return self._last_touched

    def staleness(self) -> float:
        """Seconds since the last refresh (``inf`` before the first).

        >>> now = [0.0]
        >>> window = SlidingWindowLeaderboard("hourly", 2, clock=lambda: now[0])
        >>> window.staleness()
        inf
        >>> _ = window.refresh(); now[0] = 90.0
        >>> window.staleness()
        90.0
        """
        with self._lock:
            return self._buckets.now() - self._as_of

    def window(self) -> list[Period]:
        """The buckets the window board sums, oldest first, as of the last
        refresh: ``buckets`` of them, fewer in the calendar's first periods
        (there is none before the first one of year 1)."""
        with self._lock:
            return list(self._window)

    def refresh(self) -> int:
        """Bring the window up to "now"; return how many members were recomputed.

        The members written since the last refresh and those of the buckets
        that slid out are summed again over the window's buckets without
        the lock, and written into the window board in holds of about a
        millisecond, or swapped in at once when most of the window changes
        (see :mod:`rankengine.timed.window_refresh`).  A call while another
        thread refreshes waits for it, then refreshes.

        Runtime complexity: O(T * B + T log N) for T touched members, B
        buckets and N members in the window, or O(N + T * B) when T is a
        large part of N; the lock is held O(1) or a slice at a time
        """
        with self._refreshing:
            return self._refresh()

    def _maybe_refresh(self) -> None:
        """Refresh when due, unless another thread is refreshing (then the
        caller reads the window as it stands).  Call it without the lock."""
        due = self._refresh_every
        if due is None or self._buckets.now() - self._as_of < due:
            return
        if self._refreshing.acquire(blocking=False):
            try:
                self._refresh()
            finally:
                self._refreshing.release()

    def _mark(self, period: Period, members: Iterable[Member], moved: bool) -> None:
        # a written member moves to the end: it reached its new sum last;
        # a write that moved no score (metadata, a blocked ``when``) leaves a
        # member already due where it is, as a board keeps its place
        for member in members:
            if moved:
                self._dirty.pop(member, None)
                self._dirty[member] = None
            else:
                self._dirty.setdefault(member, None)

    def _dropped(self, period: Period, board: Leaderboard) -> None:
        # O(1) under the lock: the next refresh reads its members, off the lock
        self._slid.append(board)

    def forget(self, member: Member) -> Forgotten:
        """Remove ``member`` from the window and from every bucket, and from
        their history: :meth:`PeriodicLeaderboard.forget
        <rankengine.timed.forget.PeriodicForgetting.forget>` of the buckets
        (logs, snapshots, archives), then the window board, which is
        derived data and holds no file.  Written again later, the member
        is a new member.

        Runtime complexity: O(size of the buckets' files and archives)
        """
        with self._refreshing, self._lock:
            forgotten = self._buckets.forget(member)
            member = check_member(member)
            self._dirty.pop(member, None)
            with self._board._lock:
                if member in self._board:
                    self._board._apply([(DEL, member)])
                    forgotten = forgotten._replace(present=True)
            return forgotten

    # ------------------------------------------------------------------
    # Writes (to the bucket of the timestamp)
    # ------------------------------------------------------------------
    @at_time(Leaderboard.incr)
    def incr(
        self, member: Member, delta: Score = 1, *, t: float | None = None, when: When | None = None
    ) -> Score | None:
        """Add ``delta`` to ``member`` in the bucket of ``t`` (default now).

        :return: the member's new score *in that bucket*.

        Runtime complexity: O(log N)
        """
        with self._lock:
            return self._buckets.incr(member, delta, t=t, when=when)

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
        """Set ``member``'s score in the bucket of ``t`` (default now).

        Runtime complexity: O(log N)
        """
        with self._lock:
            return self._buckets.set(member, score, t=t, when=when, meta=meta)

    @at_time(Leaderboard.incr_many)
    def incr_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
    ) -> dict[Member, Score]:
        """Increment many members in the bucket of ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            return self._buckets.incr_many(items, t=t)

    @at_time(Leaderboard.set_many)
    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        t: float | None = None,
        when: When | None = None,
    ) -> int:
        """Set many scores in the bucket of ``t`` (default now).

        Runtime complexity: O(k log N)
        """
        with self._lock:
            return self._buckets.set_many(items, t=t, when=when)

    @at_time(Leaderboard.remove)
    def remove(self, member: Member, *, t: float | None = None) -> bool:
        """Remove ``member`` from the bucket of ``t`` (default now); its
        other buckets still count.

        Runtime complexity: O(log N)
        """
        with self._lock:
            return self._buckets.remove(member, t=t)

    @at_time(Leaderboard.remove_many)
    def remove_many(self, members: Iterable[Member], *, t: float | None = None) -> int:
        """Remove ``members`` from the bucket of ``t`` (default now); their
        other buckets still count.  Every member is checked before any is
        removed: a bad one raises and changes nothing.

        :return: how many were in that bucket.

        Runtime complexity: O(k log N)

        >>> now = [1_796_032_800.0]                      # 2026-11-30T10:00Z
        >>> window = SlidingWindowLeaderboard("hourly", 2, clock=lambda: now[0])
        >>> window.set_many({"ann": 3, "bob": 2})
        2
        >>> now[0] += 3600
        >>> window.set_many({"ann": 5, "cid": 1})
        2
        >>> window.remove_many(["ann", "cid", "zed"])
        2
        >>> _ = window.refresh()
        >>> window.items()                               # ann's hour before still counts
        [('ann', 3), ('bob', 2)]
        """
        with self._lock:
            return self._buckets.remove_many(members, t=t)

    @at_time(Leaderboard.set_meta)
    def set_meta(
        self, member: Member, meta: Mapping[str, Any] | None, *, t: float | None = None
    ) -> None:
        """Replace (or with ``None`` remove) ``member``'s metadata in the
        bucket of ``t`` (default now), where ``member`` must have a score
        (``KeyError`` otherwise).  The window shows the metadata of the
        member's newest bucket that has any, from the next refresh on.

        Runtime complexity: O(size of meta)

        >>> now = [1_796_032_800.0]                      # 2026-11-30T10:00Z
        >>> window = SlidingWindowLeaderboard("hourly", 2, clock=lambda: now[0])
        >>> window.set("ann", 3)
        True
        >>> window.set_meta("ann", {"name": "Ann"})
        >>> _ = window.refresh()
        >>> window.top(with_meta=True)
        [Entry(member='ann', score=3, rank=1, meta={'name': 'Ann'})]
        """
        with self._lock:
            self._buckets.set_meta(member, meta, t=t)

    # ------------------------------------------------------------------
    # Reads (from the materialised window)
    # ------------------------------------------------------------------
    @property
    def board(self) -> Leaderboard:
        """The window board itself (refreshed first if due).  Read it; don't write it."""
        self._maybe_refresh()
        with self._lock:
            return self._board

    @property
    def buckets(self) -> PeriodicLeaderboard:
        """The bucket boards (a :class:`PeriodicLeaderboard` with ``keep = buckets - 1``)."""
        return self._buckets

    def bucket(self, period: Period | str | None = None) -> Leaderboard:
        """The board of one bucket (default: the current one), always up to date."""
        return self._buckets.board(period)

    def __len__(self) -> int:
        return len(self.board)

    def __contains__(self, member: object) -> bool:
        return member in self.board

    def __iter__(self) -> Iterator[Member]:
        """Members over the window in rank order, best first."""
        return iter(self.board)

    def __getitem__(self, member: Member) -> Score:
        """``member``'s total over the window; ``KeyError`` when absent."""
        return self.board[member]

    # Every read of the board contract, over the window: the window board
    # answers it once a due refresh has run (see
    # rankengine.board.routing.routed): the contract's signature, docstring
    # and errors, the flags checked before the refresh.
    score = _over_window(Leaderboard.score)
    rank = _over_window(Leaderboard.rank)
    entry = _over_window(Leaderboard.entry)
    entries = _over_window(Leaderboard.entries)
    at = _over_window(Leaderboard.at)
    rank_for_score = _over_window(Leaderboard.rank_for_score)
    percentile = _over_window(Leaderboard.percentile)
    score_at_percentile = _over_window(Leaderboard.score_at_percentile)
    meta = _over_window(Leaderboard.meta)
    top = _over_window(Leaderboard.top)
    by_rank = _over_window(Leaderboard.by_rank)
    page = _over_window(Leaderboard.page)
    pages = _over_window(Leaderboard.pages)
    around = _over_window(Leaderboard.around)
    by_score = _over_window(Leaderboard.by_score)
    count = _over_window(Leaderboard.count)
    items = _over_window(Leaderboard.items)

    def _current(self) -> Leaderboard:
        """The window board (under the lock; a due refresh ran before)."""
        return self._board

    # ------------------------------------------------------------------
    # Durable storage
    # ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        cal: Calendar | str,
        buckets: int,
        *,
        fsync: FsyncPolicy = "everysec",
        clock: Callable[[], float] = time.time,
        **options: Any,
    ) -> SlidingWindowLeaderboard:
        """Open (or create) a window whose buckets are durable boards in
        directory ``path`` (see :meth:`PeriodicLeaderboard.open`).  The
        window board itself is derived data: opening rebuilds it with one
        full refresh over the buckets found.  Like the periodic board, it
        holds the lock of ``path`` until :meth:`close` (one writer per
        directory), and a failed open closes what it opened and releases it.
        ``options`` are the constructor's but ``archive`` and
        ``board_factory`` (old buckets go to ``path/archive``, the buckets
        are durable boards: either raises ``TypeError``).

        Runtime complexity: O(replay of the buckets + one full refresh)
        """
        check_fsync(fsync)  # before anything is created or locked
        given = dict(options, calendar=cal, buckets=buckets, clock=clock, fsync=fsync)
        if (view := as_ledger_view(path, "window", given)) is not None:  # a one-view ledger
            return view  # type: ignore[no-any-return]
        # the buckets' store makes the bucket boards and keeps the archive
        # under path: these would be taken (the archive directory even made)
        # and then ignored
        for name in _OPEN_OWNS:
            if name in options:
                raise TypeError(f"open() got an unexpected keyword argument {name!r}")
        log_options = pop_log_options(options)
        window = cls(cal, buckets, clock=clock, **options)  # refuses anything else unknown
        # the buckets are durable boards and take the log options; the
        # window board, derived data rebuilt on open, stays in memory
        bucket_config = window._buckets._board_config
        window._buckets._board_config = {**bucket_config, **log_options}
        with window._lock:
            window._buckets._attach(Path(path), fsync)
        try:
            with window._lock:
                for board in window._buckets._boards.values():
                    window._slid_out(board)
            window.refresh()
        except BaseException:
            window._buckets.close()
            raise
        return window

    def compact(self) -> dict[str, int]:
        """Compact the durable bucket boards: :meth:`PeriodicLeaderboard.compact
        <rankengine.timed.periodic.PeriodicLeaderboard.compact>` of :attr:`buckets`
        (the window board is rebuilt from them on open).

        Runtime complexity: O(N) for N members over the buckets held
        """
        return self._buckets.compact()

    def close(self) -> None:
        """Close the durable bucket boards and release the directory;
        no-op in memory."""
        self._buckets.close()

    def __enter__(self) -> SlidingWindowLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        """Verify the buckets, the window board, and that every member not
        due a refresh (see :meth:`refresh`) holds exactly its window sum and
        the metadata of its newest bucket that has any."""
        with self._lock:
            self._buckets._check()
            self._board._check()
            held = self._buckets._boards
            boards = [held[p.name] for p in self._window if p.name in held]
            in_buckets: set[Any] = set()
            for board in boards:
                in_buckets.update(board)
            # due: written since, in a bucket that slid out since, or taken
            # by a refresh in progress that has not written them yet
            due = set(self._dirty) | set(self._taken)
            for board in self._slid + self._taken_boards:
                due.update(board._primary)
            for member in in_buckets | set(self._board):
                if member in due:
                    continue
                values = [b.score(member) for b in boards if member in b]
                if not values:
                    assert member not in self._board, f"{member!r} left every bucket"
                    continue
                total: Any = values[0]
                for value in values[1:]:
                    total = total + value
                    if total != total:
                        total = 0.0
                assert self._board.score(member, _MISSING) == total, (member, total)
                newest = [b._meta[member] for b in reversed(boards) if member in b._meta]
                meta = newest[0] if newest else None
                assert self._board._meta.get(member) == meta, ("metadata", member, meta)

    def __repr__(self) -> str:
        return (
            f"SlidingWindowLeaderboard({self._buckets.calendar!r}, {self._size}, "
            f"refresh_every={self._refresh_every}, members={len(self._board)})"
        )
