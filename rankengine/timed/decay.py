"""Decayed scores: old activity fades without ever rebuilding on a read.

Forward decay
-------------
A member's decayed score at time ``now`` is the sum of its events' points,
each faded by its age::

    value(now) = sum_i  points_i * e^(-(now - t_i) / tau)

Rewriting ``-(now - t_i)`` as ``(t_i - t0) - (now - t0)`` splits it into a
part fixed at write time and one factor shared by every member::

    stored     = sum_i  points_i * e^((t_i - t0) / tau)     (kept in the board)
    value(now) = stored * e^(-(now - t0) / tau)

So a write adds ``points * e^((t - t0) / tau)`` to the member's stored score
(an ordinary :meth:`Leaderboard.incr`), and since the shared factor is
positive, **ranking by stored score is ranking by decayed value** at any
common "now": ranks never need recomputing as time passes.  Reads multiply
by the factor on the way out.  ``tau`` is the e-folding time; a half-life
``h`` is ``tau = h / ln 2``.

Re-basing
---------
``e^((t - t0) / tau)`` grows without bound: with a one-hour half-life it
passes the largest double (about e^709.8) after 42 days.  So when a write
arrives more than :data:`REBASE_AFTER` time constants after ``t0``, the
board is *re-based* to ``t0' = t``.  For an event stamped ahead of the
clock the base never passes now (or every present event's weight would
fade towards 0): it re-bases to ``t0' = now``, once now is more than
:data:`REBASE_AFTER` time constants after ``t0`` (or the event's weight
from ``t0`` would not be a double).  A re-base multiplies every stored score by
``e^(-(t0' - t0) / tau)`` (through logarithms, as a read does, when more
than 700 time constants have passed and that factor alone would underflow)
and writes them to a new board in one ``set_many``, best first (a positive
uniform scale keeps the order; scores that become equal keep their
previous order on a first-to-reach board).  The cost,
O(N log N), is paid once per ``REBASE_AFTER * tau`` seconds.

Exactness
---------
Floats round, so "equal to a recomputation" is stated two ways and both are
tested:

* *Same formula*: replaying the events with the same operations (each
  weight ``e^((t - t0) / tau)`` added in event order, each re-base a
  multiplication by ``e^(-(t0' - t0) / tau)``) gives bit-identical stored
  scores and identical ranks.
* *Direct formula*: ``sum points * e^(-(now - t_i) / tau)`` with no
  re-basing agrees to a relative error of about 1e-12 (a few roundings per
  event and per re-base), so ranks agree except between members whose
  values are that close; those may come out in either order.

>>> now = [0.0]
>>> hot = DecayedLeaderboard(half_life=3600, clock=lambda: now[0], t0=0)
>>> hot.add("ann", 100)                      # 100 points now
100.0
>>> now[0] = 3600                            # an hour later: half of it is left
>>> round(hot.add("bob", 60), 9)
60.0
>>> [(e.member, round(e.score, 6)) for e in hot.top()]
[('bob', 60.0), ('ann', 50.0)]
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar

from rankengine.board.changes import DEL
from rankengine.board.copying import Uncopyable
from rankengine.board.leaderboard import Entry, Leaderboard, RankStyle
from rankengine.board.routing import at_time, routed
from rankengine.board.scoring import Member, check_member
from rankengine.durable.board import (
    BOARD_SETTINGS,
    LOG_OPTIONS,
    DurableLeaderboard,
    FsyncPolicy,
    check_fsync,
    check_options,
    check_settings,
    pop_log_options,
)
from rankengine.durable.forget import Forgotten
from rankengine.durable.kinds import as_ledger_view
from rankengine.durable.manifest import DirectoryLock
from rankengine.timed.decay_checks import (
    _EXP_SAFE,
    _decay_tau,
    _finite,
    _number,
    check_points,
    check_sum,
)
from rankengine.timed.epochs import open_epochs

__all__ = ["REBASE_AFTER", "DecayedLeaderboard"]

#: Re-base when a write is this many time constants after ``t0``.  Weights
#: then stay below e^64 ~ 6e27, so points up to ~1e280 still fit a double
#: with room for sums; and the O(N log N) re-base runs only once per 64 tau
#: (with a one-day half-life: every 61 days).
REBASE_AFTER: Final = 64.0

#: What :meth:`DecayedLeaderboard.__getitem__` asks for in place of an absent score.
_ABSENT: Final = object()

_R = TypeVar("_R")


def _decayed(method: Callable[..., _R]) -> Callable[..., _R]:
    """``method`` of the board contract on a decayed board: the stored
    board answers, its values decayed to ``at`` (see
    :func:`~rankengine.board.routing.routed`).

    >>> DecayedLeaderboard.top.__doc__.splitlines()[0]
    ':meth:`Leaderboard.top`, its values decayed to ``at`` (default now).'
    """
    return routed(
        method,
        keyword="at",
        route="_stored",
        annotation="float | None",
        finish="_decayed_read",
        about=f":meth:`Leaderboard.{method.__name__}`, its values decayed to ``at`` (default now).",
    )


class DecayedLeaderboard(Uncopyable):
    """A board of exponentially decayed scores ("hot", "trending").

    :param half_life: seconds for a point to fade to half (or give ``tau``).
    :param tau: the e-folding time in seconds (``half_life / ln 2``).
    :param t0: the initial base time (default: the clock at creation).
    :param clock: returns "now" in POSIX seconds (injectable for tests).
    :param board_factory: ``board_factory(t0)`` builds the empty board used
        from base ``t0`` on (the first one and one per re-base); default
        ``Leaderboard(**board_config)``.
    :param rebase_after: see :data:`REBASE_AFTER`.
    :param board_config: ``tie_break``, ``rank_style``, ``backend``; the
        order is always "highest decayed value first".

    Writes: :meth:`add`, :meth:`add_many`, :meth:`set`, :meth:`set_many`,
    :meth:`remove`, :meth:`remove_many`, :meth:`set_meta`, :meth:`pop_best`,
    :meth:`pop_worst`, :meth:`keep_top`, :meth:`remove_by_rank` and
    :meth:`rebase`.  Decay scales every score by one factor, so ranks never
    change with time and the removals by rank act on the stored board as
    they are; pops return decayed values at now, as the reads do.  There is
    no ``remove_by_score``: its bounds are decayed values, which would have
    to be divided by the factor into stored units, and a score exactly on a
    bound could then fall on either side of it by rounding.  Read the
    members with :meth:`items` or :meth:`top` and :meth:`remove_many` them.

    Copying: ``copy.copy``, ``copy.deepcopy`` and pickling raise
    :class:`TypeError` (the board runs on a clock function and a board
    factory, and a durable one owns its root directory);
    ``board.board.copy()`` is an independent :class:`Leaderboard` of the
    stored scores (relative to :attr:`t0`).

    Thread safety: one lock serialises every call.
    """

    _copy_advice = (
        "it runs on a clock and a board factory and may own a directory; copy the "
        "stored scores (relative to board.t0) instead: board.board.copy()"
    )

    def __init__(
        self,
        *,
        half_life: float | None = None,
        tau: float | None = None,
        t0: float | None = None,
        clock: Callable[[], float] = time.time,
        board_factory: Callable[[float], Leaderboard] | None = None,
        rebase_after: float = REBASE_AFTER,
        **board_config: Any,
    ) -> None:
        self._tau = _decay_tau(half_life, tau, rebase_after, board_config)
        self._clock = clock
        self._rebase_after = float(rebase_after)
        self._board_config = board_config
        self._factory = board_factory or (lambda _t0: Leaderboard(**board_config))
        # a float, so that repr(t0) names a durable epoch that float() reads back
        self._t0 = float(_finite(clock() if t0 is None else t0, "t0"))
        self._board = self._factory(self._t0)
        # Lock order: this lock, then the board's (rebase() reads the old
        # board under its lock; every call goes through this one first).
        self._lock = threading.RLock()
        #: how many re-bases this object has done
        self.rebases = 0
        #: called as ``hook(old_board, new_board)`` after a re-base (durable cleanup)
        self._rebase_hook: Callable[[Leaderboard, Leaderboard], None] | None = None
        #: a durable board's lock on its root directory, held until close()
        self._root_lock: DirectoryLock | None = None

    # ------------------------------------------------------------------
    # Settings and state
    # ------------------------------------------------------------------
    @property
    def tau(self) -> float:
        """The e-folding time in seconds."""
        return self._tau

    @property
    def half_life(self) -> float:
        """Seconds for a value to halve: ``tau * ln 2``."""
        return self._tau * math.log(2)

    @property
    def t0(self) -> float:
        """The current base time of the stored scores."""
        return self._t0

    @property
    def board(self) -> Leaderboard:
        """The board of *stored* scores (relative to :attr:`t0`).  Read it; don't write it."""
        return self._board

    def __len__(self) -> int:
        return len(self._board)

    def __contains__(self, member: object) -> bool:
        return member in self._board

    def __iter__(self) -> Iterator[Member]:
        """Members in rank order, best first (ranks do not change with time)."""
        with self._lock:
            return iter(self._board)

    def __getitem__(self, member: Member) -> float:
        """``member``'s decayed value now; ``KeyError`` when absent."""
        found = self.score(member, _ABSENT)
        if found is _ABSENT:
            raise KeyError(member)
        return found  # type: ignore[no-any-return]

    def factor(self, at: float | None = None) -> float:
        """``e^(-(at - t0) / tau)``: what a stored score is multiplied by to
        read its decayed value at ``at`` (default now).  May underflow to 0
        or overflow to inf far from ``t0``; the reads do not use it there.

        >>> DecayedLeaderboard(tau=10, t0=0, clock=lambda: 10.0).factor() == math.exp(-1)
        True
        """
        with self._lock:
            x = (self._now(at) - self._t0) / self._tau
            return math.exp(-x) if x >= -_EXP_SAFE else math.inf

    # ------------------------------------------------------------------
    # Writes
    # ------------------------------------------------------------------
    def add(self, member: Member, points: float, *, t: float | None = None) -> float:
        """Add ``points`` earned at time ``t`` (default now) to ``member``.

        Runtime complexity: O(log N) (O(N log N) when it triggers a re-base)

        :return: the member's decayed value at now.
        :raises OverflowError: the stored score would not be finite, or
            ``t`` is so far ahead of now (about 700 time constants) that the
            event's value now is not a double.

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 10.0)
        >>> board.add("ann", 5, t=10.0), round(board.add("ann", 5, t=0.0), 4)
        (5.0, 6.8394)
        """
        with self._lock:
            now = self._now(None)
            when = now if t is None else _finite(t, "t")
            # everything is checked before a re-base, which cannot be undone
            self._board._check_member(member)
            check_points(points, member)
            new_t0, weight = self._plan(when, now)
            delta = points * weight
            check_sum(self._stored_at(member, new_t0) + delta, member)
            if new_t0 is not None:
                self.rebase(new_t0)
            stored = self._board.incr(member, delta)
            return self._decayed(stored, now)

    def add_many(
        self,
        items: Mapping[Member, float] | Iterable[tuple[Member, float]],
        *,
        t: float | None = None,
    ) -> dict[Member, float]:
        """Add points to many members at one time ``t`` (default now), in one
        board write (one log record on a durable board).

        Runtime complexity: O(k log N)

        :return: each member's decayed value at now.
        """
        with self._lock:
            now = self._now(None)
            when = now if t is None else _finite(t, "t")
            pairs = list(items.items() if isinstance(items, Mapping) else items)
            # Every item and every sum is checked before a re-base, which
            # cannot be undone: a bad item changes nothing.
            # pairs and members (of one type on a board with ties by member)
            # as the board checks them, then the points
            self._board._check_pairs(pairs, "points")
            for member, points in pairs:
                check_points(points, member)
            if not pairs:
                return {}  # nothing to add: no re-base either (a new epoch, durably)
            new_t0, weight = self._plan(when, now)
            weighted = [(member, points * weight) for member, points in pairs]
            totals: dict[Any, float] = {}
            for member, delta in weighted:
                base = totals[member] if member in totals else self._stored_at(member, new_t0)
                totals[member] = check_sum(base + delta, member)
            if new_t0 is not None:
                self.rebase(new_t0)
            stored = self._board.incr_many(weighted)
            return {m: self._decayed(s, now) for m, s in stored.items()}

    def set(self, member: Member, value: float, *, t: float | None = None) -> bool:
        """Make ``member``'s decayed value at time ``t`` (default now) equal ``value``.

        Runtime complexity: O(log N)

        :raises OverflowError: the stored score would not be finite.
        """
        with self._lock:
            now = self._now(None)
            when = now if t is None else _finite(t, "t")
            self._board._check_member(member)  # before a re-base, which cannot be undone
            check_points(value, member)
            new_t0, weight = self._plan(when, now)
            stored = check_sum(value * weight, member)
            if new_t0 is not None:
                self.rebase(new_t0)
            return self._board.set(member, stored)

    def set_many(
        self,
        items: Mapping[Member, float] | Iterable[tuple[Member, float]],
        *,
        t: float | None = None,
    ) -> int:
        """Make each member's decayed value at time ``t`` (default now) equal
        its value: what a loop of :meth:`set` does (a member given twice
        ends with its last value), in one board write (one log record on a
        durable board).  Every item is checked first, before a re-base: a
        bad one raises and changes nothing.

        Runtime complexity: O(k log N) (O(N log N) when it triggers a re-base)

        :return: how many members were added or had their score changed.
        :raises OverflowError: a stored score would not be finite.

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 10.0)
        >>> board.set_many({"ann": 5, "bob": 2}, t=0.0)
        2
        >>> [(m, round(v, 4)) for m, v in board.items()]
        [('ann', 1.8394), ('bob', 0.7358)]
        """
        with self._lock:
            now = self._now(None)
            when = now if t is None else _finite(t, "t")
            pairs = list(items.items() if isinstance(items, Mapping) else items)
            # pairs and members as the board checks them, then the values and
            # the stored scores, all before a re-base, which cannot be undone
            self._board._check_pairs(pairs, "value")
            for member, value in pairs:
                check_points(value, member)
            if not pairs:
                return 0  # nothing to set: no re-base either (a new epoch, durably)
            new_t0, weight = self._plan(when, now)
            stored = [(member, check_sum(value * weight, member)) for member, value in pairs]
            if new_t0 is not None:
                self.rebase(new_t0)
            return self._board.set_many(stored)

    @at_time(Leaderboard.remove, keyword=None)
    def remove(self, member: Member) -> bool:
        """Remove ``member``.

        Runtime complexity: O(log N)
        """
        with self._lock:
            return self._board.remove(member)

    @at_time(Leaderboard.remove_many, keyword=None)
    def remove_many(self, members: Iterable[Member]) -> int:
        """Remove ``members`` in one board write; every member is checked
        before any is removed.

        Runtime complexity: O(k log N)

        :return: how many were present.

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add_many({"ann": 3, "bob": 2, "cid": 1})
        >>> board.remove_many(["ann", "cid", "zed"]), board.items()
        (2, [('bob', 2.0)])
        """
        with self._lock:
            return self._board.remove_many(members)

    @at_time(Leaderboard.set_meta, keyword=None)
    def set_meta(self, member: Member, meta: Mapping[str, Any] | None) -> None:
        """Replace (or with ``None`` remove) a present member's metadata
        (``KeyError`` for an absent one); decay leaves it as it is, a
        re-base carries it over.

        Runtime complexity: O(size of meta)

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add("ann", 3)
        >>> board.set_meta("ann", {"name": "Ann"})
        >>> board.top(with_meta=True)
        [Entry(member='ann', score=3.0, rank=1, meta={'name': 'Ann'})]
        """
        with self._lock:
            self._board.set_meta(member, meta)

    def meta(self, member: Member) -> dict[str, Any] | None:
        """A copy of ``member``'s metadata, or None (absent, or none set).

        Runtime complexity: O(size of meta)

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add("ann", 3)
        >>> board.set_meta("ann", {"name": "Ann"})
        >>> board.meta("ann"), board.meta("bob")
        ({'name': 'Ann'}, None)
        """
        with self._lock:
            return self._board.meta(member)

    @at_time(Leaderboard.pop_best, keyword=None)
    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` best entries (with their ranks
        before removal), their scores the decayed values at now, as
        :meth:`top` reads them.

        Runtime complexity: O(count log N)

        >>> board = DecayedLeaderboard(half_life=60.0, t0=0, clock=lambda: 60.0)
        >>> _ = board.add_many({"ann": 8, "bob": 4}, t=0.0)
        >>> board.pop_best(), board.items()
        ([Entry(member='ann', score=4.0, rank=1, meta=None)], [('bob', 2.0)])
        """
        with self._lock:
            now = self._now(None)  # read before anything is removed
            return self._convert(self._board.pop_best(count, with_meta=with_meta), now)

    @at_time(Leaderboard.pop_worst, keyword=None)
    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` worst entries, worst first, their
        scores the decayed values at now (see :meth:`pop_best`).

        Runtime complexity: O(count log N)

        >>> board = DecayedLeaderboard(half_life=60.0, t0=0, clock=lambda: 60.0)
        >>> _ = board.add_many({"ann": 8, "bob": 4}, t=0.0)
        >>> board.pop_worst(), board.items()
        ([Entry(member='bob', score=2.0, rank=2, meta=None)], [('ann', 4.0)])
        """
        with self._lock:
            now = self._now(None)  # read before anything is removed
            return self._convert(self._board.pop_worst(count, with_meta=with_meta), now)

    @at_time(Leaderboard.keep_top, keyword=None)
    def keep_top(self, n: int) -> int:
        """Keep only the best ``n`` members (ranks do not change with time);
        return how many were removed.

        Runtime complexity: O(log N + k log N) for k removed

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add_many({"ann": 3, "bob": 2, "cid": 1})
        >>> board.keep_top(1), board.items()
        (2, [('ann', 3.0)])
        """
        with self._lock:
            return self._board.keep_top(n)

    @at_time(Leaderboard.remove_by_rank, keyword=None)
    def remove_by_rank(self, start: int, stop: int) -> int:
        """Remove the members ranked ``start`` to ``stop`` inclusive (1-based,
        negative counts from the bottom; see :meth:`Leaderboard.remove_by_rank`);
        return how many were removed.

        Runtime complexity: O(log N + k log N) for k removed

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add_many({"ann": 3, "bob": 2, "cid": 1})
        >>> board.remove_by_rank(2, -1), board.items()
        (2, [('ann', 3.0)])
        """
        with self._lock:
            return self._board.remove_by_rank(start, stop)

    def rebase(self, t0: float | None = None) -> None:
        """Move the base time forward to ``t0`` (default now), rescaling every
        stored score by ``e^(-(t0 - old t0) / tau)`` into a new board.  Decayed
        values and ranks are unchanged (up to rounding; see the module notes).

        Runtime complexity: O(N log N)

        >>> board = DecayedLeaderboard(tau=10.0, t0=0, clock=lambda: 20.0)
        >>> _ = board.add("ann", 1)
        >>> before = board.score("ann")
        >>> board.rebase()
        >>> board.t0, board.board["ann"], board.score("ann") == before
        (20.0, 1.0, True)
        """
        with self._lock:
            old = self._board
            if getattr(old, "closed", False):
                # a re-base would open a new durable board (and delete this
                # one's files) behind a close(): refuse, as a write would
                raise ValueError(f"the durable board at {getattr(old, 'path', '?')} is closed")
            new_t0 = float(self._now(None) if t0 is None else _finite(t0, "t0"))
            if new_t0 <= self._t0:
                if new_t0 == self._t0:
                    return
                raise ValueError(f"t0 only moves forward: {new_t0} < {self._t0}")
            fresh = self._factory(new_t0)
            try:
                with old._lock:
                    rows = old.items()  # best first: equal results keep this order
                    metas = {m: old.meta(m) for m in old._meta}
                # each stored score's decayed value at new_t0: a multiplication
                # by e^(-(new_t0 - t0) / tau), through logarithms after a
                # silence so long that the factor alone would underflow (see
                # _decayed)
                fresh.set_many([(member, self._decayed(stored, new_t0)) for member, stored in rows])
                for member, meta in metas.items():
                    fresh.set_meta(member, meta)
            except BaseException:
                # (a durable new board holds a thread, a file and its
                # directory's lock: give them back; the error is the news)
                close = getattr(fresh, "close", None)
                if close is not None:
                    with contextlib.suppress(OSError):
                        close()
                raise
            self._board, self._t0 = fresh, new_t0
            self.rebases += 1
            if self._rebase_hook is not None:
                self._rebase_hook(old, fresh)

    # ------------------------------------------------------------------
    # Reads (decayed values at "now", or at ``at``)
    # ------------------------------------------------------------------
    def score(self, member: Member, default: Any = None, *, at: float | None = None) -> Any:
        """``member``'s decayed value at ``at`` (default now), or ``default``.

        Runtime complexity: O(1)

        >>> board = DecayedLeaderboard(half_life=60.0, t0=0, clock=lambda: 0.0)
        >>> _ = board.add("ann", 8)
        >>> round(board.score("ann", at=180.0), 12), board.score("bob", 0)
        (1.0, 0)
        """
        with self._lock:
            stored = self._board.score(member)
            return default if stored is None else self._decayed(stored, self._now(at))

    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None:
        """``member``'s rank (the same at every "now"), or None.

        Runtime complexity: O(log N)
        """
        with self._lock:  # a re-base in progress installs a new board
            return self._board.rank(member, style=style)

    # The reads of the board contract that give values: the stored board
    # answers, its values decayed to ``at`` (see _decayed_read and
    # rankengine.board.routing.routed): the contract's signature plus
    # ``at=``, its docstring and errors.
    entry = _decayed(Leaderboard.entry)
    entries = _decayed(Leaderboard.entries)
    top = _decayed(Leaderboard.top)
    by_rank = _decayed(Leaderboard.by_rank)
    page = _decayed(Leaderboard.page)
    around = _decayed(Leaderboard.around)

    def _stored(self, at: float | None) -> Leaderboard:
        """The board of stored scores, for a read decayed to ``at``."""
        return self._board

    def _decayed_read(self, answer: Any, at: float | None) -> Any:
        """A read's ``answer`` (an entry, None, or a list of either) with its
        stored scores as values decayed to ``at`` (default now).

        Runtime complexity: O(k) for k entries

        >>> board = DecayedLeaderboard(half_life=60.0, t0=0, clock=lambda: 60.0)
        >>> _ = board.add_many({"ann": 8, "bob": 4}, t=0.0)
        >>> board.set_meta("bob", {"name": "Bob"})
        >>> board.entries(["bob", "zed"], with_meta=True)
        [Entry(member='bob', score=2.0, rank=2, meta={'name': 'Bob'}), None]
        >>> board.page(2, 1, with_meta=True), board.top(1, at=0.0)
        ([Entry(member='bob', score=2.0, rank=2, meta={'name': 'Bob'})], \
[Entry(member='ann', score=8.0, rank=1, meta=None)])
        """
        if answer is None:
            return None
        now = self._now(at)
        if isinstance(answer, Entry):
            return answer._replace(score=self._decayed(answer.score, now))
        return [
            None if e is None else e._replace(score=self._decayed(e.score, now)) for e in answer
        ]

    def items(self, *, at: float | None = None) -> list[tuple[Member, float]]:
        """``(member, decayed value)`` pairs, best first.

        Runtime complexity: O(N)
        """
        with self._lock:
            now = self._now(at)
            return [(m, self._decayed(s, now)) for m, s in self._board.items()]

    # ------------------------------------------------------------------
    # Internals
    # ------------------------------------------------------------------
    def _now(self, at: float | None) -> float:
        return _finite(self._clock() if at is None else at, "time")

    def _plan(self, t: float, now: float, t0: float | None = None) -> tuple[float | None, float]:
        """The base a write at ``t`` needs, when the clock reads ``now`` (and
        the base is ``t0``, default :attr:`t0`), and the weight
        ``e^((t - base) / tau)`` of its points there.  The
        base is None (keep the base) unless ``min(t, now)`` is too far
        past ``t0`` for the weights to stay small, or the event (stamped
        ahead) would have no finite weight from ``t0``; then it is ``t``, or
        ``now`` for an event stamped ahead (the base never passes the clock:
        a base far ahead would fade every present event's weight to 0), and the caller
        re-bases to it, *after* checking everything (so a write that fails
        changes nothing), *before* writing.

        :raises OverflowError: ``t`` is so far ahead that the event's weight
            (its value now, per point) is not a double.

        Runtime complexity: O(1)

        >>> board = DecayedLeaderboard(tau=1.0, t0=0.0, clock=lambda: 100.0)
        >>> board._plan(100.0, 100.0), board._plan(102.0, 100.0)[0]
        ((100.0, 1.0), 100.0)
        """
        base: float | None = None
        t0 = self._t0 if t0 is None else t0
        target = float(min(t, now))  # what rebase(target) makes t0
        # Due when the target is far past t0.  An event stamped ahead is due
        # only then too (a base that cannot pass now cannot shrink its
        # weight much: re-basing to a now a little past t0 on each of its
        # writes would cost O(N log N) a write), or when its weight from t0
        # would not be a double, where the move to now is what it needs.
        if target > t0 and (
            (target - t0) / self._tau > self._rebase_after or (t - t0) / self._tau > _EXP_SAFE
        ):
            base = target
        x = (t - (t0 if base is None else base)) / self._tau
        if x > _EXP_SAFE:
            raise OverflowError(
                f"an event at t={t} is {x:.6g} time constants ahead of the board's base: "
                "its value would not be a finite double (is its clock right? clamp t to now)"
            )
        # below -745 exp underflows to 0.0: an event that old has faded away
        return base, math.exp(x)

    def _stored_at(self, member: Member, new_t0: float | None) -> float:
        """``member``'s stored score (0.0 if absent) as the board will hold
        it after a re-base to ``new_t0`` (None: no re-base), computed as
        :meth:`rebase` computes it.

        Runtime complexity: O(1)
        """
        stored = self._board.score(member)
        if stored is None:
            return 0.0
        return _number(stored) if new_t0 is None else self._decayed(stored, new_t0)

    def _decayed(self, stored: object, now: float, t0: float | None = None) -> float:
        """A ``stored`` score's value at ``now``, stored against base ``t0``
        (default :attr:`t0`)."""
        stored = _number(stored)
        x = (now - (self._t0 if t0 is None else t0)) / self._tau
        if -_EXP_SAFE <= x <= _EXP_SAFE:
            return stored * math.exp(-x)
        if stored == 0:
            return 0.0 * stored
        # far from t0: exp(-x) alone would under/overflow before the product
        try:
            return math.copysign(math.exp(math.log(abs(stored)) - x), stored)
        except OverflowError:
            return math.copysign(math.inf, stored)

    def _convert(self, entries: list[Entry], at: float | None) -> list[Entry]:
        now = self._now(at)
        return [e._replace(score=self._decayed(e.score, now)) for e in entries]

    def _check(self) -> None:
        """Verify the board, and that every stored score is a finite float."""
        with self._lock:
            self._board._check()
            assert self._board.order == "desc", self._board.order
            for member, stored in self._board.items():
                assert isinstance(stored, (int, float)), (member, stored)
                assert math.isfinite(stored), f"{member!r} has a stored score of {stored}"

    def __repr__(self) -> str:
        return f"DecayedLeaderboard(tau={self._tau!r}, t0={self._t0!r}, members={len(self._board)})"

    # ------------------------------------------------------------------
    # Durable storage: one durable board per base time
    # ------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        half_life: float | None = None,
        tau: float | None = None,
        clock: Callable[[], float] = time.time,
        fsync: FsyncPolicy = "everysec",
        rebase_after: float = REBASE_AFTER,
        **board_config: Any,
    ) -> DecayedLeaderboard:
        """Open (or create) a durable decayed board in directory ``path``.

        The stored scores live in a durable board in ``path/epoch-<t0>``,
        ``t0`` written out exactly, so reopening replays the very same
        stored scores under the very same base; a crash during a re-base
        leaves either the old or the new base, never a mix (the steps are
        :mod:`rankengine.timed.epochs`'s).  The decay settings are the
        caller's to repeat on reopen.

        One process at a time: opening takes ``path/LOCK`` (as a board
        directory does) before it reads or cleans up anything, and holds it
        until :meth:`close`, so a second writer gets
        :class:`~rankengine.durable.records.LogError` ("already open for writing")
        and never removes a base this one is building.  A failed open
        closes what it opened and releases the lock.

        Runtime complexity: O(replay) to open
        """
        # before anything is created or locked
        check_fsync(fsync)
        given = dict(board_config, half_life=half_life, tau=tau, clock=clock, fsync=fsync)
        if (view := as_ledger_view(path, "decayed", given)) is not None:  # a one-view ledger
            return view  # type: ignore[no-any-return]
        check_options(board_config, BOARD_SETTINGS + LOG_OPTIONS, "DecayedLeaderboard.open")
        # bad values too, before the root is created or locked
        settings = dict(board_config)
        pop_log_options(settings)
        _decay_tau(half_life, tau, rebase_after, board_config)
        check_settings({name: board_config.get(name) for name in BOARD_SETTINGS})

        def build(t0: float | None, factory: Callable[[float], Leaderboard]) -> DecayedLeaderboard:
            return cls(
                half_life=half_life,
                tau=tau,
                t0=_finite(clock(), "clock()") if t0 is None else t0,
                clock=clock,
                board_factory=factory,
                rebase_after=rebase_after,
            )

        return open_epochs(path, build, clock=clock, fsync=fsync, board_config=board_config)

    def forget(self, member: Member) -> Forgotten:
        """Remove ``member`` and, on a durable board, every trace of them in
        its files (:meth:`DurableLeaderboard.forget
        <rankengine.durable.forget.Forgetting.forget>` of the stored board:
        log, snapshots).  Written again later, the member is a new member.

        Runtime complexity: O(size of the board's files); O(log N) in memory
        """
        with self._lock:
            board = self._board
            if isinstance(board, DurableLeaderboard):
                return board.forget(member)
            member = check_member(member)
            with board._lock:
                present = member in board._primary
                if present:
                    board._apply([(DEL, member)])
            return Forgotten(present, 0, 0, 0)

    def compact(self) -> int | None:
        """Compact the durable board of stored scores (a snapshot: see
        :meth:`DurableLeaderboard.compact <rankengine.durable.board.DurableLeaderboard.compact>`)
        and return the sequence number it covers; None in memory and after
        :meth:`close`.  Under the lock, so that it snapshots the board a
        re-base in progress installs.

        Runtime complexity: O(N)
        """
        with self._lock:
            board = self._board
            if isinstance(board, DurableLeaderboard) and not board.closed:
                return board.compact()
            return None

    def close(self) -> None:
        """Close the underlying board if it is durable (flushes its log).

        Under the lock, so that it waits for a re-base in progress and closes
        the board that re-base installs.  After it, writes raise (a write
        that would re-base too).  It releases the root directory of a
        durable board, even if closing the board raises (nothing here
        touches the root after a close).
        """
        with self._lock:
            try:
                close = getattr(self._board, "close", None)
                if close is not None:
                    close()
            finally:
                if self._root_lock is not None:
                    self._root_lock.release()
                    self._root_lock = None

    def __enter__(self) -> DecayedLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
