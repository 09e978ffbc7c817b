"""The public :class:`Leaderboard`: one Pythonic API over every exact backend.

A board is a hash map plus an ordered index (see :mod:`rankengine.index`)::

    member --> (primary, tie)          dict, O(1)
    (primary, tie) in ascending order  skip list or SortedList, O(log N)

The index sorts ascending by ``(primary, tie)``.  A descending board (the
default: high score first) reads it from the top end, so public rank 1 is the
*last* index position.  That conversion lives in exactly two methods,
:meth:`Leaderboard._rank_of_position` and :meth:`Leaderboard._position_of_rank`.

Ties
----
``tie_break="first"`` (default)
    The member who reached a score first ranks first.  A logical clock ticks
    each time a member's score changes (and only then: re-setting the same
    score keeps a member's place), and the tie is that clock, negated on a
    descending board so that the earlier clock sorts nearer the top.
``tie_break="member"``
    Redis order: ties sorted by member, reversed on a descending board (as
    ``ZREVRANGE`` does).

Rank styles (scores 50, 50, 30, 30, 10)
---------------------------------------
``unique`` 1, 2, 3, 4, 5 -- ``dense`` 1, 1, 2, 2, 3 -- ``competition`` 1, 1, 3, 3, 5.
All are O(log N): competition counts entries with a strictly better primary
in the index; dense keeps a count per distinct score (built on first use).

>>> board = Leaderboard()
>>> board.set_many({"ann": 50, "bob": 50, "cid": 30, "dee": 30, "eve": 10})
5
>>> [board.rank(m) for m in board]
[1, 2, 3, 4, 5]
>>> [board.rank(m, style="dense") for m in board]
[1, 1, 2, 2, 3]
>>> [board.rank(m, style="competition") for m in board]
[1, 1, 3, 3, 5]
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeAlias

from sortedcontainers import SortedList

from rankengine.changes import DEL, META, PUT, Change
from rankengine.index import OrderedIndex
from rankengine.scoring import (
    Member,
    Order,
    Score,
    ScoreCodec,
    check_member,
    check_meta,
)

if TYPE_CHECKING:
    from rankengine.durable import DurableLeaderboard
    from rankengine.redis_board import RedisLeaderboard

__all__ = ["Entry", "Leaderboard", "RankStyle", "TieBreak", "When"]

RankStyle: TypeAlias = Literal["unique", "dense", "competition"]
TieBreak: TypeAlias = Literal["first", "member"]
When: TypeAlias = Literal["new", "present", "better", "worse"]
Backend: TypeAlias = Literal["sortedlist", "skiplist"]
PercentileMethod: TypeAlias = Literal["below", "at_or_below", "midpoint"]

_STYLES: Final = ("unique", "dense", "competition")
_TIE_BREAKS: Final = ("first", "member")
_WHENS: Final = (None, "new", "present", "better", "worse")
_PERCENTILE_METHODS: Final = ("below", "at_or_below", "midpoint")
_MISSING: Final = object()

#: Page size used when none is given (agoragames' default).
DEFAULT_PAGE_SIZE: Final = 25

#: A batch write rebuilds the index from scratch (sort + O(N) bulk load)
#: instead of applying entries one by one when it touches at least this
#: fraction of the resulting board: C's sort beats N O(log N) Python inserts.
BULK_REBUILD_FRACTION: Final = 0.25


class Entry(NamedTuple):
    """One row of a read: member, score, rank (1-based) and, on request, metadata."""

    member: Member
    score: Score
    rank: int
    meta: dict[str, Any] | None = None


def _make_index(backend: str | Callable[[], OrderedIndex]) -> OrderedIndex:
    if callable(backend):
        return backend()
    if backend == "sortedlist":
        from rankengine.sortedlist import SortedListIndex

        return SortedListIndex()
    if backend == "skiplist":
        from rankengine.skiplist import SkipList

        return SkipList()
    raise ValueError(f"backend must be 'sortedlist' or 'skiplist', not {backend!r}")


class Leaderboard:
    """An in-memory leaderboard: O(log N) writes, ranks and ranges.

    :param order: ``"desc"`` (high score first, the default), ``"asc"``, or a
        tuple of directions for composite scores, e.g. ``("desc", "asc")``
        (most points first, then fewest seconds).
    :param tie_break: ``"first"`` (first to reach a score ranks first) or
        ``"member"`` (Redis order).
    :param rank_style: default rank style for reads: ``"unique"``,
        ``"dense"`` or ``"competition"``.
    :param backend: ``"sortedlist"`` (fastest, the default) or ``"skiplist"``,
        or a zero-argument factory returning an :class:`~rankengine.index.OrderedIndex`.

    Thread safety: every public method holds one re-entrant lock for its whole
    duration, so threads sharing a board see the same results as if their
    calls ran one after another.  The lock costs about 0.1 us a call.

    >>> board = Leaderboard()
    >>> board.set("ann", 10)
    True
    >>> board.incr("bob", 25)
    25
    >>> board.top(2)
    [Entry(member='bob', score=25, rank=1, meta=None),
     Entry(member='ann', score=10, rank=2, meta=None)]
    """

    def __init__(
        self,
        *,
        order: Order | tuple[Order, ...] = "desc",
        tie_break: TieBreak = "first",
        rank_style: RankStyle = "unique",
        backend: Backend | Callable[[], OrderedIndex] = "sortedlist",
    ) -> None:
        if tie_break not in _TIE_BREAKS:
            raise ValueError(f"tie_break must be 'first' or 'member', not {tie_break!r}")
        _check_style(rank_style)
        self._codec = ScoreCodec(order)
        self._order = order
        self._desc = self._codec.descending
        self._tie_break: TieBreak = tie_break
        self._rank_style: RankStyle = rank_style
        self._backend = backend
        self._index: OrderedIndex = _make_index(backend)
        # member -> primary (for scalar boards the primary *is* the score)
        self._primary: dict[Any, Any] = {}
        # member -> tie clock (first-to-reach boards only)
        self._tie: dict[Any, int] = {}
        self._meta: dict[Any, dict[str, Any]] = {}
        self._clock = 0
        self._member_type: type | None = None
        # Dense ranks: primary -> number of members with it, and the sorted
        # distinct primaries.  Built on the first dense read, then maintained.
        self._counts: dict[Any, int] | None = None
        self._distinct: SortedList | None = None
        self._lock = threading.RLock()
        #: Called with each list of changes *before* it is applied; raising
        #: aborts the write.  The event log hooks in here.
        self._listener: Callable[[list[Change]], None] | None = None

    # ------------------------------------------------------------------
    # Configuration and sizes
    # ------------------------------------------------------------------
    @property
    def order(self) -> Order | tuple[Order, ...]:
        """The board's order as given at creation."""
        return self._order

    @property
    def tie_break(self) -> TieBreak:
        """How equal scores are ordered: ``"first"`` or ``"member"``."""
        return self._tie_break

    @property
    def rank_style(self) -> RankStyle:
        """The default rank style for reads."""
        return self._rank_style

    @property
    def clock(self) -> int:
        """The logical clock: the tie stamp the next score change will get minus one."""
        return self._clock

    def config(self) -> dict[str, Any]:
        """The creation arguments, enough to build an empty twin of this board.

        >>> Leaderboard(order="asc").config()["order"]
        'asc'
        """
        return {
            "order": self._order,
            "tie_break": self._tie_break,
            "rank_style": self._rank_style,
            "backend": self._backend,
        }

    def __len__(self) -> int:
        return len(self._primary)

    def __contains__(self, member: object) -> bool:
        return member in self._primary

    def __iter__(self) -> Iterator[Member]:
        """Members in rank order, best first (a snapshot taken under the lock)."""
        with self._lock:
            members = [
                m for _, _, m in self._iter_positions(0, len(self._primary), best_first=True)
            ]
        return iter(members)

    def __repr__(self) -> str:
        return (
            f"Leaderboard(order={self._order!r}, tie_break={self._tie_break!r}, "
            f"rank_style={self._rank_style!r}, members={len(self)})"
        )

    def __getitem__(self, member: Member) -> Score:
        """The score of ``member``; ``KeyError`` when absent."""
        try:
            primary = self._primary[member]
        except (KeyError, TypeError):
            raise KeyError(member) from None
        return self._codec.score(primary)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------
    # Writes
    # ------------------------------------------------------------------
    def set(
        self,
        member: Member,
        score: Score,
        *,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Set ``member``'s score, optionally only under a condition.

        ``when`` (Redis ``ZADD`` flags): ``"new"`` only adds (NX),
        ``"present"`` only updates (XX), ``"better"``/``"worse"`` update only
        if the new score ranks ahead of/behind the old one and always add a new
        member (GT/LT; ``"better"`` is the "keep best" rule).  ``meta``, if
        given, replaces the member's metadata when the write happens.

        Setting the score a member already has changes nothing: it keeps its
        place among ties.

        Runtime complexity: O(log N)

        :return: True if the board changed.

        >>> board = Leaderboard()
        >>> board.set("ann", 10), board.set("ann", 5, when="better"), board["ann"]
        (True, False, 10)
        """
        with self._lock:
            self._check_member(member)
            value = self._codec.check(score)
            if when not in _WHENS:
                raise ValueError(f"when must be one of {_WHENS[1:]} or None, not {when!r}")
            clean_meta = None if meta is None else check_meta(meta)
            changes = self._plan_set(member, value, when, clean_meta)
            if not changes:
                return False
            self._commit(changes)
            return True

    def incr(self, member: Member, delta: Score = 1, *, when: When | None = None) -> Score | None:
        """Add ``delta`` to ``member``'s score (a missing member starts at 0).

        ``when`` works as in :meth:`set` and is checked against the resulting
        score.  An increment that would give NaN (``inf + -inf``) raises and
        changes nothing.  An increment of 0 changes nothing.

        Runtime complexity: O(log N)

        :return: the new score, or None when ``when`` blocked the write.

        >>> board = Leaderboard()
        >>> board.incr("ann", 5), board.incr("ann", 2.5), board.incr("bob", 1, when="present")
        (5, 7.5, None)
        """
        with self._lock:
            self._check_member(member)
            step = self._codec.check(delta, "delta")
            if when not in _WHENS:
                raise ValueError(f"when must be one of {_WHENS[1:]} or None, not {when!r}")
            primary = self._primary.get(member, _MISSING)
            if primary is _MISSING:
                if when == "present":
                    return None
                base = self._zero()
            else:
                if when == "new":
                    return None
                base = self._codec.score(primary)
            new = self._codec.add(base, step)
            changes = self._plan_set(member, new, when, None)
            if changes:
                self._commit(changes)
                return new
            # No change: `when` blocked it (an unchanged score is neither better
            # nor worse, as Redis' GT/LT see it), or the increment kept the score.
            if when in ("better", "worse") or self._codec.primary(new) != primary:
                return None
            return new

    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        when: When | None = None,
    ) -> int:
        """Set many scores in one call; all are validated before any is applied.

        Pairs are applied in order, as consecutive :meth:`set` calls would be
        (a member given twice ends with the last score, and its tie clock is
        that of its last change).  Much faster than a loop: one lock, one log
        record, and a bulk rebuild of the index when the batch is large.

        Runtime complexity: O(k log N), or O((N + k) log(N + k)) in C when
        rebuilding.

        :return: the number of members whose score changed or who were added.

        >>> board = Leaderboard()
        >>> board.set_many([("ann", 3), ("bob", 5), ("ann", 4)])
        2
        >>> board.set_many({"bob": "x"})
        Traceback (most recent call last):
        ...
        TypeError: score must be an int or a float, not str
        """
        with self._lock:
            if when not in _WHENS:
                raise ValueError(f"when must be one of {_WHENS[1:]} or None, not {when!r}")
            pairs = self._check_pairs(items, "score")
            return self._apply_batch(pairs, when, increment=False)[0]

    def incr_many(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        """Increment many members in one call; all are validated first.

        A member given twice gets both increments.  If any increment would
        produce NaN, nothing changes.

        Runtime complexity: O(k log N)

        :return: each member's new score.

        >>> board = Leaderboard()
        >>> board.incr_many([("ann", 3), ("bob", 5), ("ann", 4)])
        {'ann': 7, 'bob': 5}
        """
        with self._lock:
            pairs = self._check_pairs(items, "delta")
            return self._apply_batch(pairs, None, increment=True)[1]

    def remove(self, member: Member) -> bool:
        """Remove a member and its metadata.

        Runtime complexity: O(log N)

        :return: True if it was present.

        >>> board = Leaderboard()
        >>> board.set("ann", 1)
        True
        >>> board.remove("ann"), board.remove("ann"), len(board)
        (True, False, 0)
        """
        with self._lock:
            self._check_member(member)
            if member not in self._primary:
                return False
            self._commit([(DEL, member)])
            return True

    def remove_many(self, members: Iterable[Member]) -> int:
        """Remove several members in one call; return how many were present.

        Runtime complexity: O(k log N)
        """
        with self._lock:
            wanted = _member_list(members)
            for member in wanted:
                self._check_member(member)
            present = list(dict.fromkeys(m for m in wanted if m in self._primary))
            if present:
                self._commit([(DEL, m) for m in present])
            return len(present)

    def clear(self) -> None:
        """Remove every member.

        Runtime complexity: O(N)
        """
        with self._lock:
            if self._primary:
                self._commit([(DEL, m) for m in list(self._primary)])

    def set_meta(self, member: Member, meta: Mapping[str, Any] | None) -> None:
        """Replace (or with ``None`` remove) a present member's metadata.

        Runtime complexity: O(size of meta)

        >>> board = Leaderboard()
        >>> board.set("ann", 1, meta={"name": "Ann"})
        True
        >>> board.meta("ann")
        {'name': 'Ann'}
        """
        with self._lock:
            self._check_member(member)
            clean = None if meta is None else check_meta(meta)
            if member not in self._primary:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            if self._meta.get(member) == clean:
                return
            self._commit([(META, member, clean)])

    def meta(self, member: Member) -> dict[str, Any] | None:
        """A copy of the member's metadata, or None.

        Runtime complexity: O(size of meta)
        """
        with self._lock:
            data = self._meta.get(member)
            return None if data is None else check_meta(data)

    # ------------------------------------------------------------------
    # Pops and pruning
    # ------------------------------------------------------------------
    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` best entries (with their ranks before removal).

        Runtime complexity: O(count log N)
        """
        return self._pop(count, best=True, with_meta=with_meta)

    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` worst entries, worst first.

        Runtime complexity: O(count log N)
        """
        return self._pop(count, best=False, with_meta=with_meta)

    def remove_by_rank(self, start: int, stop: int) -> int:
        """Remove the members ranked ``start`` to ``stop`` inclusive (1-based,
        negative counts from the bottom); return how many were removed.

        Runtime complexity: O(log N + k log N)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> board.remove_by_rank(2, -1), list(board)
        (2, ['a'])
        """
        with self._lock:
            lo, hi = self._rank_window(start, stop)
            members = [m for _, _, m in self._iter_positions(lo, hi, best_first=True)]
            if members:
                self._commit([(DEL, m) for m in members])
            return len(members)

    def remove_by_score(
        self,
        min: Score | None,  # mirrors the Redis/Python vocabulary of a range
        max: Score | None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int:
        """Remove every member whose score lies in the range; return how many.

        Runtime complexity: O(log N + k log N)
        """
        with self._lock:
            lo, hi = self._score_positions(min, max, min_inclusive, max_inclusive)
            members = [m for _, _, m in self._index.iter_range(lo, hi)]
            if members:
                self._commit([(DEL, m) for m in members])
            return len(members)

    def keep_top(self, n: int) -> int:
        """Keep only the best ``n`` members; return how many were removed.

        Runtime complexity: O(log N + k log N)
        """
        with self._lock:
            n = _check_count(n, "n")
            if n >= len(self):
                return 0
            return self.remove_by_rank(n + 1, len(self))

    # ------------------------------------------------------------------
    # Point reads
    # ------------------------------------------------------------------
    def score(self, member: Member, default: Any = None) -> Any:
        """The member's score, or ``default`` when absent.

        Runtime complexity: O(1)
        """
        primary = self._primary.get(member, _MISSING)
        if primary is _MISSING:
            return default
        return self._codec.score(primary)

    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None:
        """The member's 1-based rank, or None when absent.

        Runtime complexity: O(log N)
        """
        with self._lock:
            style = self._style(style)
            primary = self._primary.get(member, _MISSING)
            if primary is _MISSING:
                return None
            return self._rank_of(member, primary, style)

    def entry(
        self, member: Member, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> Entry | None:
        """Score and rank together (and metadata on request), or None.

        Runtime complexity: O(log N)

        >>> board = Leaderboard()
        >>> board.set("ann", 7, meta={"name": "Ann"})
        True
        >>> board.entry("ann", with_meta=True)
        Entry(member='ann', score=7, rank=1, meta={'name': 'Ann'})
        """
        with self._lock:
            style = self._style(style)
            primary = self._primary.get(member, _MISSING)
            if primary is _MISSING:
                return None
            return self._make_entry(
                member, primary, self._rank_of(member, primary, style), with_meta
            )

    def entries(
        self,
        members: Iterable[Member],
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry | None]:
        """Entries for a list of members (a friends list), in the order given;
        a missing member gives None in its place.

        Runtime complexity: O(k log N)

        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> board.entries(["bob", "zed"])
        [Entry(member='bob', score=9, rank=1, meta=None), None]
        """
        with self._lock:
            style = self._style(style)
            out: list[Entry | None] = []
            for member in _member_list(members):
                primary = self._primary.get(member, _MISSING)
                if primary is _MISSING:
                    out.append(None)
                else:
                    rank = self._rank_of(member, primary, style)
                    out.append(self._make_entry(member, primary, rank, with_meta))
            return out

    def at(self, rank: int, *, style: RankStyle | None = None, with_meta: bool = False) -> Entry:
        """The entry at a 1-based position (``-1`` is the last); ``IndexError`` outside.

        The position is always the unique order; ``style`` only changes the
        rank number reported.

        Runtime complexity: O(log N)
        """
        with self._lock:
            style = self._style(style)
            n = len(self)
            rank = _check_int(rank, "rank")
            if rank < 0:
                rank += n + 1
            if not 1 <= rank <= n:
                raise IndexError(f"rank {rank} is outside 1..{n}")
            return self._entries_between(rank - 1, rank, style, with_meta)[0]

    def rank_for_score(self, score: Score, *, style: RankStyle | None = None) -> int:
        """The rank a member with ``score`` would get if it reached it now,
        without inserting anything ("what rank would this score have?").

        A newcomer arrives after the members already on that score, so its
        unique rank is one past them; its competition and dense ranks are
        those of the score.

        Runtime complexity: O(log N)

        >>> board = Leaderboard()
        >>> board.set_many({"ann": 50, "bob": 30})
        2
        >>> board.rank_for_score(40), board.rank_for_score(50)
        (2, 2)
        >>> board.rank_for_score(50, style="competition")
        1
        """
        with self._lock:
            style = self._style(style)
            primary = self._codec.primary(self._codec.check(score))
            if style == "dense":
                return self._dense_rank(primary)
            ahead = self._count_ahead(primary, include_ties=style == "unique")
            return ahead + 1

    def percentile(self, member: Member, *, method: PercentileMethod = "midpoint") -> float | None:
        """The percent of the board this member's score beats, or None when absent.

        With ``below`` = members with a strictly worse score, ``equal`` =
        members with the same score (itself included) and N members:

        * ``"below"``:       100 * below / N
        * ``"at_or_below"``: 100 * (below + equal) / N
        * ``"midpoint"``:    100 * (below + equal / 2) / N   (the default)

        Example: scores 50, 50, 30, 30, 10 -- a 30 has below = 1, equal = 2,
        so 20.0, 60.0 and 40.0.

        Runtime complexity: O(log N)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 50, "b": 50, "c": 30, "d": 30, "e": 10})
        5
        >>> [board.percentile("c", method=m) for m in ("below", "at_or_below", "midpoint")]
        [20.0, 60.0, 40.0]
        """
        if method not in _PERCENTILE_METHODS:
            raise ValueError(f"method must be one of {_PERCENTILE_METHODS}, not {method!r}")
        with self._lock:
            primary = self._primary.get(member, _MISSING)
            if primary is _MISSING:
                return None
            n = len(self)
            lower = self._index.count_primary(primary, inclusive=False)
            upper = self._index.count_primary(primary, inclusive=True)
            below, equal = (lower, upper - lower) if self._desc else (n - upper, upper - lower)
            if method == "below":
                return 100.0 * below / n
            if method == "at_or_below":
                return 100.0 * (below + equal) / n
            return 100.0 * (below + equal / 2) / n

    def score_at_percentile(self, p: float) -> Score | None:
        """The score at percentile ``p`` (0 = worst, 100 = best); None on an empty board.

        Scores are lined up worst to best and read at index ``(N - 1) * p / 100``
        with linear interpolation between the two neighbours (agoragames'
        ``score_for_percentile``).  Composite scores are not interpolated:
        the lower neighbour is returned.  Nor are infinite ones (``inf - inf``
        is NaN): between a finite and an infinite neighbour the infinite one
        is returned, between ``-inf`` and ``inf`` the lower neighbour.

        Runtime complexity: O(log N)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30, "d": 40, "e": 50})
        5
        >>> [board.score_at_percentile(p) for p in (0, 50, 90)]
        [10, 30, 46.0]
        """
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 100:
            raise ValueError(f"percentile must be a number from 0 to 100, not {p!r}")
        with self._lock:
            n = len(self)
            if n == 0:
                return None
            x = (n - 1) * p / 100
            lo = math.floor(x)
            hi = min(lo + 1, n - 1)
            # worst-first index j is index position j on a descending board
            low_score = self._score_at_worst_index(lo)
            if self._codec.columns is not None or lo == x:
                return low_score
            high_score = self._score_at_worst_index(hi)
            if low_score == high_score:
                return low_score
            if math.isinf(low_score) or math.isinf(high_score):  # type: ignore[arg-type]
                # inf - inf is NaN: between an infinite neighbour and a finite
                # one the infinite one wins; between -inf and inf, the lower
                # neighbour is returned.
                return low_score if math.isinf(low_score) else high_score  # type: ignore[arg-type]
            frac = x - lo
            return low_score + (high_score - low_score) * frac  # type: ignore[operator]

    # ------------------------------------------------------------------
    # Range reads
    # ------------------------------------------------------------------
    def top(
        self, k: int = 10, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """The best ``k`` entries, best first.

        Runtime complexity: O(log N + k)
        """
        with self._lock:
            k = _check_count(k, "k")
            return self._entries_between(0, min(k, len(self)), self._style(style), with_meta)

    def by_rank(
        self,
        start: int = 1,
        stop: int = -1,
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]:
        """Entries ranked ``start`` to ``stop`` inclusive, best first.

        Ranks are 1-based; negative ranks count from the bottom (-1 is the
        last).  Out-of-range bounds are clamped and an empty range gives an
        empty list, as Redis's ``ZRANGE`` does; 0 is not a rank.

        Runtime complexity: O(log N + k)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> [e.member for e in board.by_rank(2, 99)], board.by_rank(3, 2)
        (['b', 'c'], [])
        """
        with self._lock:
            lo, hi = self._rank_window(start, stop)
            return self._entries_between(lo, hi, self._style(style), with_meta)

    def page(
        self,
        number: int,
        size: int = DEFAULT_PAGE_SIZE,
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]:
        """Page ``number`` (1-based) of ``size`` entries.

        A page below 1 is clamped to 1 and a page past the end to the last
        page (agoragames ``leaders``); an empty board gives ``[]``.

        Runtime complexity: O(log N + size)

        >>> board = Leaderboard()
        >>> board.set_many({f"p{i}": i for i in range(5)})
        5
        >>> [e.rank for e in board.page(2, 2)], [e.rank for e in board.page(9, 2)]
        ([3, 4], [5])
        """
        with self._lock:
            number = _check_int(number, "page number")
            size = _check_size(size)
            total = self.pages(size)
            number = min(max(number, 1), max(total, 1))
            lo = (number - 1) * size
            return self._entries_between(
                lo, min(lo + size, len(self)), self._style(style), with_meta
            )

    def pages(self, size: int = DEFAULT_PAGE_SIZE) -> int:
        """Number of pages of ``size`` entries: ``ceil(N / size)``.

        Runtime complexity: O(1)
        """
        size = _check_size(size)
        return -(-len(self) // size)

    def around(
        self,
        member: Member,
        above: int = 5,
        below: int = 5,
        *,
        fill: bool = False,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]:
        """The member with up to ``above`` entries ranked ahead of it and up to
        ``below`` behind it, best first.  Empty if the member is absent.

        Near the top or bottom the window is cut short, unless ``fill`` is
        true: then the rows missing on one side are taken from the other, so
        the window always has ``min(above + below + 1, N)`` rows.

        Runtime complexity: O(log N + above + below)

        >>> board = Leaderboard()
        >>> board.set_many({f"p{i}": i for i in range(10)})
        10
        >>> [e.rank for e in board.around("p8", 2, 2)]
        [1, 2, 3, 4]
        >>> [e.rank for e in board.around("p8", 2, 2, fill=True)]
        [1, 2, 3, 4, 5]
        """
        with self._lock:
            above = _check_count(above, "above")
            below = _check_count(below, "below")
            primary = self._primary.get(member, _MISSING)
            if primary is _MISSING:
                return []
            n = len(self)
            r0 = self._unique_offset(member, primary)  # 0-based rank
            lo, hi = r0 - above, r0 + below + 1
            if fill:
                if lo < 0:
                    hi, lo = min(n, hi - lo), 0
                elif hi > n:
                    lo, hi = max(0, lo - (hi - n)), n
            lo, hi = max(lo, 0), min(hi, n)
            return self._entries_between(lo, hi, self._style(style), with_meta)

    def by_score(
        self,
        min: Score | None = None,
        max: Score | None = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
        offset: int = 0,
        limit: int | None = None,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]:
        """Entries whose score lies between ``min`` and ``max``, best first.

        ``None`` leaves an end open; bounds may also be ``-inf``/``inf``;
        either end can be exclusive (Redis's ``(``).  ``offset``/``limit``
        page through the result in O(log N).
        On a composite board the bounds are compared column by column, each
        column in the direction of the first.

        Runtime complexity: O(log N + k)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30})
        3
        >>> [e.member for e in board.by_score(10, 30, max_inclusive=False)]
        ['b', 'a']
        """
        with self._lock:
            offset = _check_count(offset, "offset")
            if limit is not None:
                limit = _check_count(limit, "limit")
            lo, hi = self._score_positions(min, max, min_inclusive, max_inclusive)
            # the range [lo, hi) in index order is ranks n-hi+1 .. n-lo (desc)
            n = len(self)
            first, last = (n - hi, n - lo) if self._desc else (lo, hi)
            first += offset
            if limit is not None:
                last = builtins_min(last, first + limit)
            if first >= last:
                return []
            return self._entries_between(first, last, self._style(style), with_meta)

    def count(
        self,
        min: Score | None = None,
        max: Score | None = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int:
        """How many members have a score in the range.

        Runtime complexity: O(log N)

        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30})
        3
        >>> board.count(10, 20), board.count(10, 20, min_inclusive=False)
        (2, 1)
        """
        with self._lock:
            lo, hi = self._score_positions(min, max, min_inclusive, max_inclusive)
            return hi - lo

    def items(self) -> list[tuple[Member, Score]]:
        """``(member, score)`` pairs in rank order, best first.

        Runtime complexity: O(N)
        """
        with self._lock:
            score = self._codec.score
            return [
                (m, score(p)) for p, _, m in self._iter_positions(0, len(self), best_first=True)
            ]

    # ------------------------------------------------------------------
    # Combining boards
    # ------------------------------------------------------------------
    @classmethod
    def union(
        cls,
        boards: Iterable[Leaderboard],
        *,
        weights: Iterable[float] | None = None,
        aggregate: Literal["sum", "min", "max"] = "sum",
        **config: Any,
    ) -> Leaderboard:
        """A new board holding every member of ``boards``, scores combined.

        See :func:`rankengine.combine.combine` for the rules.
        """
        from rankengine.combine import combine

        return combine(cls, boards, weights, aggregate, intersect=False, config=config)

    @classmethod
    def intersection(
        cls,
        boards: Iterable[Leaderboard],
        *,
        weights: Iterable[float] | None = None,
        aggregate: Literal["sum", "min", "max"] = "sum",
        **config: Any,
    ) -> Leaderboard:
        """A new board holding the members present in every one of ``boards``.

        See :func:`rankengine.combine.combine` for the rules.
        """
        from rankengine.combine import combine

        return combine(cls, boards, weights, aggregate, intersect=True, config=config)

    # ------------------------------------------------------------------
    # Durability seams: export / restore the whole state
    # ------------------------------------------------------------------
    def _export(self) -> Iterator[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Every member as ``(member, score, clock, meta)`` in ascending index
        order (the order :meth:`_restore` bulk-loads without sorting).

        Call it under the board's lock and consume it before writing.  On a
        ``tie_break="member"`` board the clock of every member is 0.
        """
        score = self._codec.score
        first = self._tie_break == "first"
        meta = self._meta
        for primary, tie, member in self._index.iter_range(0, len(self._index)):
            clock = abs(tie) if first else 0
            yield member, score(primary), clock, meta.get(member)

    def _restore(
        self, rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]], clock: int
    ) -> None:
        """Replace the whole state with ``rows`` (as :meth:`_export` yields them)
        and set the logical clock; bulk-builds the index in O(N) when the rows
        arrive in index order (else sorts them first).  Rows are trusted: they
        come from a checksummed snapshot.
        """
        with self._lock:
            codec = self._codec
            first = self._tie_break == "first"
            desc = self._desc
            primaries: dict[Any, Any] = {}
            ties: dict[Any, int] = {}
            metas: dict[Any, dict[str, Any]] = {}
            index_rows: list[tuple[Any, Any, Any]] = []
            for member, value, member_clock, data in rows:
                primary = codec.primary(tuple(value) if isinstance(value, list) else value)
                tie: Any = (-member_clock if desc else member_clock) if first else member
                primaries[member] = primary
                if first:
                    ties[member] = tie
                if data is not None:
                    metas[member] = data
                index_rows.append((primary, tie, member))
            if any(_key_of_row(a) >= _key_of_row(b) for a, b in itertools.pairwise(index_rows)):
                index_rows.sort(key=_key_of_row)
            self._primary, self._tie, self._meta = primaries, ties, metas
            self._clock = clock
            self._member_type = type(index_rows[0][2]) if index_rows else None
            self._index.build(index_rows)
            self._counts = None
            self._distinct = None

    def _restore_columns(
        self,
        members: list[Any],
        scores: list[Any],
        clocks: list[int],
        metas: dict[Any, dict[str, Any]],
        clock: int,
    ) -> None:
        """Columnar :meth:`_restore`: whole columns in ascending index order.

        Snapshot recovery of a million members spends its time in per-row
        Python work; here every step is a C-level bulk operation (``dict(zip())``,
        ``map``), which is what makes recovery competitive with Redis's RDB load.
        The order is checked on the primaries in C (``map(operator.le)``); rows
        that are out of order or repeat a member fall back to :meth:`_restore`,
        which sorts.
        """
        with self._lock:
            codec = self._codec
            if codec.columns is None:
                primaries = scores
            else:
                primaries = [codec.primary(tuple(s)) for s in scores]
            if self._tie_break == "first":
                ties: list[Any] = list(map(operator.neg, clocks)) if self._desc else clocks
            else:
                ties = members
            by_member = dict(zip(members, primaries, strict=True))
            ordered = all(map(operator.le, primaries, itertools.islice(primaries, 1, None)))
            if len(by_member) != len(members) or not ordered:
                rows = zip(members, scores, clocks, (metas.get(m) for m in members), strict=True)
                self._restore(rows, clock)
                return
            self._primary = by_member
            self._tie = dict(zip(members, ties, strict=True)) if self._tie_break == "first" else {}
            self._meta = dict(metas)
            self._clock = clock
            self._member_type = type(members[0]) if members else None
            self._index.build(zip(primaries, ties, members, strict=True))
            self._counts = None
            self._distinct = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], **options: Any) -> DurableLeaderboard:
        """Open (or create) a durable board stored in directory ``path``.

        See :mod:`rankengine.durable` for the options (``fsync`` policy,
        compaction thresholds, what happens to a torn tail).
        """
        from rankengine.durable import open_board

        return open_board(cls, path, **options)

    @staticmethod
    def connect(redis: Any, name: str, **options: Any) -> RedisLeaderboard:
        """A board with this API stored in a Redis sorted set (``pip install
        rankengine[redis]``).

        ``redis`` is a redis-py client (``Redis`` or ``RedisCluster``) or a
        URL; ``name`` names the board's keys.  See :mod:`rankengine.redis_board`
        for the options (key prefix, packed scores, an event log to rebuild
        from).
        """
        from rankengine.redis_board import RedisLeaderboard

        return RedisLeaderboard(redis, name, **options)

    # ------------------------------------------------------------------
    # Invariants
    # ------------------------------------------------------------------
    def _check(self) -> None:
        """Verify the board's invariants and its index's; raise AssertionError."""
        with self._lock:
            self._index._check()
            # the hash map and the index hold the same members
            assert len(self._index) == len(self._primary), (len(self._index), len(self._primary))
            seen = 0
            for primary, tie, member in self._index.iter_range(0, len(self._index)):
                assert self._primary.get(member, _MISSING) == primary, (member, primary)
                assert tie == self._tie_of(member), (member, tie)
                seen += 1
            assert seen == len(self._primary)
            # metadata only for present members
            assert all(m in self._primary for m in self._meta), "metadata of an absent member"
            # tie clocks: unique and never ahead of the board clock
            if self._tie_break == "first":
                assert len(self._tie) == len(self._primary)
                clocks = [abs(t) for t in self._tie.values()]
                assert len(set(clocks)) == len(clocks), "duplicate tie clocks"
                assert not clocks or max(clocks) <= self._clock, (
                    "tie clock ahead of the board clock"
                )
            # dense counts agree with the index
            if self._counts is not None:
                assert self._distinct is not None
                assert sum(self._counts.values()) == len(self._primary)
                assert list(self._distinct) == sorted(self._counts), "distinct scores out of step"
                assert all(c > 0 for c in self._counts.values())

    # ------------------------------------------------------------------
    # The one place where the board changes
    # ------------------------------------------------------------------
    def _commit(self, changes: list[Change]) -> None:
        """Show ``changes`` to the listener (the log), then apply them.

        If the listener raises (disk full, say), nothing is applied: the
        board never shows a write that was not recorded.
        """
        if self._listener is not None:
            self._listener(changes)
        self._apply(changes)

    def _apply(self, changes: list[Change]) -> None:
        """Apply already-validated changes (also used by replay)."""
        if (
            len(changes) > 1
            and len(changes) >= BULK_REBUILD_FRACTION * (len(self) + len(changes))
            and all(change[0] == PUT for change in changes)
        ):
            self._rebuild_with(changes)
            return
        for change in changes:
            kind = change[0]
            if kind == PUT:
                self._put(change[1], change[2], change[3])
            elif kind == DEL:
                self._delete(change[1])
            elif kind == META:
                if change[2] is None:
                    self._meta.pop(change[1], None)
                else:
                    self._meta[change[1]] = change[2]
            else:
                raise ValueError(f"unknown change kind {kind!r}")

    def _put(self, member: Any, score: Score, clock: int) -> None:
        primary = self._codec.primary(score)
        if self._tie_break == "first":
            tie: Any = -clock if self._desc else clock
        else:
            tie = member
        old = self._primary.get(member, _MISSING)
        if old is _MISSING:
            self._index.insert(primary, tie, member)
            if not self._primary:  # first member of an empty board fixes the type
                self._member_type = type(member)
        else:
            old_tie = self._tie_of(member)
            # A batch can bring a member back to the key it started from (tie
            # by member, score changed and changed back): nothing to move.
            if old != primary or old_tie != tie:
                self._index.move(old, old_tie, primary, tie)
            if self._counts is not None:
                self._count_remove(old)
        self._primary[member] = primary
        if self._tie_break == "first":
            self._tie[member] = tie
        if self._counts is not None:
            self._count_add(primary)
        self._clock = max(self._clock, clock)

    def _delete(self, member: Any) -> None:
        primary = self._primary.pop(member)
        tie = self._tie.pop(member) if self._tie_break == "first" else member
        self._index.remove(primary, tie)
        self._meta.pop(member, None)
        if self._counts is not None:
            self._count_remove(primary)

    def _tie_of(self, member: Any) -> Any:
        return self._tie[member] if self._tie_break == "first" else member

    # ------------------------------------------------------------------
    # Planning writes (validation already done)
    # ------------------------------------------------------------------
    def _plan_set(
        self, member: Any, score: Score, when: When | None, meta: dict[str, Any] | None
    ) -> list[Change]:
        old = self._primary.get(member, _MISSING)
        changes: list[Change] = []
        if old is _MISSING:
            if when == "present":
                return changes
            changes.append((PUT, member, score, self._clock + 1))
        else:
            if when == "new":
                return changes
            old_score = self._codec.score(old)
            if when == "better" and not self._codec.better(score, old_score):
                return changes
            if when == "worse" and not self._codec.better(old_score, score):
                return changes
            # The clock moves only when the ranked score changes: re-setting the
            # same value keeps the member's place among ties.
            if self._codec.primary(score) != old:
                changes.append((PUT, member, score, self._clock + 1))
        if meta is not None and (changes or self._meta.get(member) != meta):
            changes.append((META, member, meta))
        return changes

    def _check_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], what: str
    ) -> list[tuple[Any, Score]]:
        source = items.items() if isinstance(items, Mapping) else items
        pairs: list[tuple[Any, Score]] = []
        check = self._codec.check
        # On a board that breaks ties by member, the batch's members must
        # compare with each other too, even when the board is empty.
        kind = self._member_type if self._primary else None
        for pair in source:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(f"expected (member, {what}) pairs, got {pair!r}")
            member, value = pair
            self._check_member(member)
            if self._tie_break == "member":
                if kind is None:
                    kind = type(member)
                elif type(member) is not kind:
                    raise TypeError(
                        f"this board breaks ties by member: {kind.__name__} and "
                        f"{type(member).__name__} members would not compare"
                    )
            pairs.append((member, check(value, what)))
        return pairs

    def _apply_batch(
        self, pairs: list[tuple[Any, Score]], when: When | None, *, increment: bool
    ) -> tuple[int, dict[Member, Score]]:
        """Plan a whole batch against a scratch view, then commit it at once.

        The plan is what the pairs would do one after another: a member's tie
        clock is that of its *last* score change in the batch, so tie order
        matches a loop of single writes.
        """
        current: dict[Any, Any] = {}  # member -> score as the batch leaves it
        stamps: dict[Any, int] = {}  # member -> clock of its last change, in clock order
        results: dict[Member, Score] = {}
        codec = self._codec
        clock = self._clock
        for member, value in pairs:
            if member in current:
                old = current[member]
            else:
                primary = self._primary.get(member, _MISSING)
                old = _MISSING if primary is _MISSING else codec.score(primary)
            if increment:
                new = codec.add(self._zero() if old is _MISSING else old, value)
            else:
                new = value
                if old is _MISSING:
                    if when == "present":
                        continue
                elif (
                    when == "new"
                    or (when == "better" and not codec.better(new, old))
                    or (when == "worse" and not codec.better(old, new))
                ):
                    continue
            results[member] = new
            if old is not _MISSING and codec.primary(new) == codec.primary(old):
                continue  # same score: no change, the member keeps its place
            clock += 1
            current[member] = new
            stamps.pop(member, None)  # re-insert so that `stamps` stays in clock order
            stamps[member] = clock
        changes: list[Change] = [(PUT, m, current[m], c) for m, c in stamps.items()]
        if changes:
            self._commit(changes)
        return len(changes), results

    def _rebuild_with(self, puts: list[Change]) -> None:
        """Apply many PUTs by sorting everything and bulk-loading the index."""
        for _, member, score, clock in puts:
            if not self._primary:  # first member of an empty board fixes the type
                self._member_type = type(member)
            self._primary[member] = self._codec.primary(score)
            if self._tie_break == "first":
                self._tie[member] = -clock if self._desc else clock
            self._clock = max(self._clock, clock)
        self._rebuild_index()

    def _rebuild_index(self) -> None:
        tie = self._tie
        if self._tie_break == "first":
            rows = [(p, tie[m], m) for m, p in self._primary.items()]
        else:
            rows = [(p, m, m) for m, p in self._primary.items()]
        rows.sort(key=_key_of_row)
        self._index.build(rows)
        if self._counts is not None:
            self._counts = None
            self._distinct = None
            self._ensure_dense()

    # ------------------------------------------------------------------
    # Ranks and positions
    # ------------------------------------------------------------------
    def _rank_of_position(self, position: int) -> int:
        """1-based unique rank of a 0-based index position (the only place
        where the index's ascending order meets the user's ranks)."""
        return len(self._primary) - position if self._desc else position + 1

    def _position_of_rank(self, offset: int) -> int:
        """0-based index position of the entry with 0-based rank ``offset``."""
        return len(self._primary) - 1 - offset if self._desc else offset

    def _unique_offset(self, member: Any, primary: Any) -> int:
        return self._rank_of_position(self._index.position(primary, self._tie_of(member))) - 1

    def _count_ahead(self, primary: Any, *, include_ties: bool) -> int:
        """Members whose score ranks strictly ahead of ``primary`` (plus, with
        ``include_ties``, those with an equal score)."""
        index = self._index
        if self._desc:
            return len(self._primary) - index.count_primary(primary, inclusive=not include_ties)
        return index.count_primary(primary, inclusive=include_ties)

    def _rank_of(self, member: Any, primary: Any, style: RankStyle) -> int:
        if style == "unique":
            return self._unique_offset(member, primary) + 1
        if style == "competition":
            return self._count_ahead(primary, include_ties=False) + 1
        return self._dense_rank(primary)

    def _entries_between(self, lo: int, hi: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        """Entries with 0-based ranks ``lo <= r < hi``, best first, ranked in ``style``."""
        out: list[Entry] = []
        if lo >= hi:
            return out
        score = self._codec.score
        meta = self._meta
        rank = lo + 1
        prev: Any = _MISSING
        shared = 0
        for primary, _, member in self._iter_positions(lo, hi, best_first=True):
            if style == "unique":
                shown = rank
            elif prev is _MISSING or primary != prev:
                if style == "competition":
                    shown = (
                        rank
                        if prev is not _MISSING
                        else self._count_ahead(primary, include_ties=False) + 1
                    )
                else:
                    shown = self._dense_rank(primary) if prev is _MISSING else shared + 1
                shared = shown
            else:
                shown = shared
            prev = primary
            data = meta.get(member) if with_meta else None
            out.append(
                Entry(member, score(primary), shown, None if data is None else check_meta(data))
            )
            rank += 1
        return out

    def _iter_positions(self, lo: int, hi: int, *, best_first: bool) -> Iterator[Any]:
        """Index entries for 0-based ranks ``lo <= r < hi``."""
        n = len(self._primary)
        if self._desc:
            return self._index.iter_range(n - hi, n - lo, reverse=best_first)
        return self._index.iter_range(lo, hi, reverse=not best_first)

    def _rank_window(self, start: int, stop: int) -> tuple[int, int]:
        """Clamp 1-based inclusive ranks (negative from the bottom) to 0-based [lo, hi)."""
        start = _check_int(start, "start")
        stop = _check_int(stop, "stop")
        if start == 0 or stop == 0:
            raise ValueError("ranks are 1-based: use 1 for the top and -1 for the bottom, not 0")
        n = len(self)
        if start < 0:
            start += n + 1
        if stop < 0:
            stop += n + 1
        lo = max(start, 1) - 1
        hi = min(stop, n)
        return (lo, hi) if lo < hi else (0, 0)

    def _score_positions(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> tuple[int, int]:
        """Index positions [lo, hi) of scores in the range (index order); a
        ``None`` bound is open."""
        codec = self._codec
        lo_p = None if low is None else codec.primary(codec.check(low, "min"))
        hi_p = None if high is None else codec.primary(codec.check(high, "max"))
        if not isinstance(low_inclusive, bool) or not isinstance(high_inclusive, bool):
            raise TypeError("inclusive flags must be bools")
        index = self._index
        lo = 0 if lo_p is None else index.count_primary(lo_p, inclusive=not low_inclusive)
        hi = len(index) if hi_p is None else index.count_primary(hi_p, inclusive=high_inclusive)
        return (lo, hi) if lo < hi else (lo, lo)

    def _score_at_worst_index(self, j: int) -> Score:
        position = j if self._desc else len(self) - 1 - j
        return self._codec.score(self._index.entry(position)[0])  # type: ignore[no-any-return]

    # ------------------------------------------------------------------
    # Dense ranks: a count per distinct score
    # ------------------------------------------------------------------
    def _ensure_dense(self) -> dict[Any, int]:
        if self._counts is None:
            counts: dict[Any, int] = {}
            for primary in self._primary.values():
                counts[primary] = counts.get(primary, 0) + 1
            self._counts = counts
            self._distinct = SortedList(counts)
        return self._counts

    def _dense_better(self, primary: Any) -> int:
        """Number of distinct scores strictly ahead of ``primary``."""
        self._ensure_dense()
        distinct = self._distinct
        assert distinct is not None
        if self._desc:
            return len(distinct) - int(distinct.bisect_right(primary))
        return int(distinct.bisect_left(primary))

    def _dense_rank(self, primary: Any) -> int:
        return self._dense_better(primary) + 1

    def _count_add(self, primary: Any) -> None:
        counts = self._counts
        assert counts is not None and self._distinct is not None
        if primary in counts:
            counts[primary] += 1
        else:
            counts[primary] = 1
            self._distinct.add(primary)

    def _count_remove(self, primary: Any) -> None:
        counts = self._counts
        assert counts is not None and self._distinct is not None
        left = counts[primary] - 1
        if left:
            counts[primary] = left
        else:
            del counts[primary]
            self._distinct.remove(primary)

    # ------------------------------------------------------------------
    # Small helpers
    # ------------------------------------------------------------------
    def _style(self, style: RankStyle | None) -> RankStyle:
        if style is None:
            return self._rank_style
        _check_style(style)
        return style

    def _zero(self) -> Score:
        return 0 if self._codec.columns is None else (0,) * self._codec.columns

    def _check_member(self, member: object) -> None:
        check_member(member)
        if (
            self._tie_break == "member"
            and self._member_type is not None
            and type(member) is not self._member_type
            and self._primary
        ):
            raise TypeError(
                f"this board breaks ties by member and holds {self._member_type.__name__} "
                f"members; {type(member).__name__} members would not compare"
            )

    def _make_entry(self, member: Any, primary: Any, rank: int, with_meta: bool) -> Entry:
        data = self._meta.get(member) if with_meta else None
        return Entry(
            member, self._codec.score(primary), rank, None if data is None else check_meta(data)
        )

    def _pop(self, count: int, *, best: bool, with_meta: bool) -> list[Entry]:
        with self._lock:
            count = _check_count(count, "count")
            n = len(self)
            count = min(count, n)
            if count == 0:
                return []
            if best:
                rows = self._entries_between(0, count, "unique", with_meta)
            else:
                rows = self._entries_between(n - count, n, "unique", with_meta)[::-1]
            self._commit([(DEL, e.member) for e in rows])
            return rows


builtins_min = min


def _key_of_row(row: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    return (row[0], row[1])


def _member_list(members: Iterable[Member]) -> list[Member]:
    """A list of the members; a bare ``str``/``bytes`` is refused, not split
    into one-character members."""
    if isinstance(members, (str, bytes)):
        raise TypeError(f"expected an iterable of members, not a single {type(members).__name__}")
    return list(members)


def _check_style(style: object) -> None:
    if style not in _STYLES:
        raise ValueError(f"rank style must be one of {_STYLES}, not {style!r}")


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return value


def _check_count(value: object, what: str) -> int:
    value = _check_int(value, what)
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {value}")
    return value


def _check_size(value: object) -> int:
    value = _check_int(value, "page size")
    if value < 1:
        raise ValueError(f"page size must be at least 1, got {value}")
    return value
