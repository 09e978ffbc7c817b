"""Reading a board: point reads, ranges, pages, around-me and percentiles.

Every read holds the board's lock, validates its arguments before touching
anything, and returns :class:`~rankengine.board.core.Entry` rows best first.
Ranks come from the index positions through the one conversion in
:class:`~rankengine.board.core.BoardCore`; competition and dense ranks of a run of
rows are computed once for the first row and carried along the run.
"""

from __future__ import annotations

import itertools
import math
import numbers
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal, TypeAlias

from rankengine.board.checks import (
    check_count,
    check_flag,
    check_int,
    check_size,
    check_style,
    member_list,
    not_a_flag,
)
from rankengine.board.core import _MISSING, TOP_CACHE_SIZE, BoardCore, Entry, RankStyle, _lookalike
from rankengine.board.scoring import Member, Score, check_meta, describe, member_error

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "BoardReads",
    "PercentileMethod",
    "check_percentile",
    "rank_outside",
]

PercentileMethod: TypeAlias = Literal["below", "at_or_below", "midpoint"]
_PERCENTILE_METHODS: Final = ("below", "at_or_below", "midpoint")

#: Page size used when none is given (agoragames' default).
DEFAULT_PAGE_SIZE: Final = 25

builtins_min = min
_new = tuple.__new__
#: Endless arguments for building rows with ``map`` (see _unique_rows).
_ENTRIES: Final = itertools.repeat(Entry)
_NONES: Final = itertools.repeat(None)


def rank_outside(rank: int, n: int) -> IndexError:
    """The error for a position ``rank`` (as the caller gave it) that a board
    of ``n`` members does not have.

    >>> rank_outside(-7, 5)
    IndexError('rank -7 is outside 1..5 (or -5..-1 counting from the bottom)')
    """
    if n == 0:
        return IndexError(f"rank {rank} is outside the board: it is empty")
    return IndexError(f"rank {rank} is outside 1..{n} (or -{n}..-1 counting from the bottom)")


def check_percentile(p: object) -> int | float:
    """``p`` as the ``int`` or ``float`` percentile it stands for, or a
    ``ValueError`` unless it is a number from 0 to 100.

    Any real number is taken (a NumPy ``float32`` or ``int64``, a
    ``Fraction``): an integer as an ``int``, any other as the ``float`` it
    converts to.  A ``bool``, a string, ``None`` and NaN are refused.

    Runtime complexity: O(1)

    >>> from fractions import Fraction
    >>> check_percentile(90), check_percentile(Fraction(25, 2))
    (90, 12.5)
    >>> check_percentile(True)
    Traceback (most recent call last):
    ...
    ValueError: percentile must be a number from 0 to 100, not True
    """
    value: int | float
    if type(p) is int or type(p) is float:
        value = p
    elif isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise ValueError(f"percentile must be a number from 0 to 100, not {p!r}")
    elif isinstance(p, numbers.Integral):
        value = int(p)
    else:
        value = float(p)
    if not 0 <= value <= 100:
        raise ValueError(f"percentile must be a number from 0 to 100, not {p!r}")
    return value


class BoardReads(BoardCore):
    """The read half of the :class:`~rankengine.Leaderboard` API."""

    def __getitem__(self, member: Member) -> Score:
        """The score of ``member``; ``KeyError`` when absent."""
        primary = self._lookup(member)
        if primary is _MISSING:
            raise KeyError(member)
        return self._codec.score(primary)  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Member]:
        """Members in rank order, best first (a snapshot taken under the lock)."""
        with self._lock:
            members = [
                m for _, _, m in self._iter_positions(0, len(self._primary), best_first=True)
            ]
        return iter(members)

    def score(self, member: Member, default: Any = None) -> Any:
        """The member's score, or ``default`` when absent.

        Runtime complexity: O(1)
        """
        primary = self._lookup(member)
        if primary is _MISSING:
            return default
        return self._codec.score(primary)

    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None:
        """The member's 1-based rank, or None when absent.

        Runtime complexity: O(log N)
        """
        with self._lock:
            try:  # free unless it raises: no type test on the hottest read
                primary = self._primary.get(member, _MISSING)
            except TypeError:
                raise member_error(member) from None
            if style is None:
                style = self._rank_style
            else:
                check_style(style)
            # (a str, the usual member, skips the call: the hottest read)
            if primary is _MISSING or (type(member) is not str and _lookalike(member)):
                return None
            if style == "unique":
                # inlined _rank_of for the hottest read (saves two calls)
                tie = self._tie.get(member) if self._first else member
                if tie is not None:
                    position = self._index.position(primary, tie)
                elif self._position_of is not None:  # not in the tie map: one search
                    position = self._position_of(primary, member)
                else:
                    position = self._position(member, primary)
                return self._rank_of_position(position)
            return self._rank_of(member, primary, style)

    def entry(
        self, member: Member, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> Entry | None:
        """Score and rank together (and metadata on request), or None.

        Runtime complexity: O(log N)

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set("ann", 7, meta={"name": "Ann"})
        True
        >>> board.entry("ann", with_meta=True)
        Entry(member='ann', score=7, rank=1, meta={'name': 'Ann'})
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            style = self._style(style)
            primary = self._lookup(member)
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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> board.entries(["bob", "zed"])
        [Entry(member='bob', score=9, rank=1, meta=None), None]
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            style = self._style(style)
            out: list[Entry | None] = []
            for member in member_list(members):
                primary = self._lookup(member)
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
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            style = self._style(style)
            n = len(self)
            given = check_int(rank, "rank")
            rank = given + n + 1 if given < 0 else given
            if not 1 <= rank <= n:
                raise rank_outside(given, n)
            return self._entries_between(rank - 1, rank, style, with_meta)[0]

    def rank_for_score(self, score: Score, *, style: RankStyle | None = None) -> int:
        """The rank a member with ``score`` would get if it reached it now,
        without inserting anything ("what rank would this score have?").

        A newcomer arrives after the members already on that score, so its
        unique rank is one past them; its competition and dense ranks are
        those of the score.  On a ``tie_break="member"`` board the unique
        rank is also one past them, but a real newcomer lands among them by
        its name, so it may rank ahead of that.

        Runtime complexity: O(log N)

        >>> from rankengine import Leaderboard

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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({"a": 50, "b": 50, "c": 30, "d": 30, "e": 10})
        5
        >>> [board.percentile("c", method=m) for m in ("below", "at_or_below", "midpoint")]
        [20.0, 60.0, 40.0]
        """
        if method not in _PERCENTILE_METHODS:
            raise ValueError(f"method must be one of {_PERCENTILE_METHODS}, not {method!r}")
        with self._lock:
            primary = self._lookup(member)
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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30, "d": 40, "e": 50})
        5
        >>> [board.score_at_percentile(p) for p in (0, 50, 90)]
        [10, 30, 46.0]
        """
        p = check_percentile(p)
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
            return interpolate(low_score, self._score_at_worst_index(hi), x - lo, p)

    def meta(self, member: Member) -> dict[str, Any] | None:
        """A copy of the member's metadata, or None.

        Runtime complexity: O(size of meta)
        """
        with self._lock:
            if self._lookup(member) is _MISSING:
                return None
            data = self._meta.get(member)
            return None if data is None else check_meta(data)

    def top(
        self, k: int = 10, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """The best ``k`` entries, best first.

        Runtime complexity: O(log N + k)
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            k = check_count(k, "k")
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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> [e.member for e in board.by_rank(2, 99)], board.by_rank(3, 2)
        (['b', 'c'], [])
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({f"p{i}": i for i in range(5)})
        5
        >>> [e.rank for e in board.page(2, 2)], [e.rank for e in board.page(9, 2)]
        ([3, 4], [5])
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            number = check_int(number, "page number")
            size = check_size(size)
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
        size = check_size(size)
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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({f"p{i}": i for i in range(10)})
        10
        >>> [e.rank for e in board.around("p8", 2, 2)]
        [1, 2, 3, 4]
        >>> [e.rank for e in board.around("p8", 2, 2, fill=True)]
        [1, 2, 3, 4, 5]
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            above = check_count(above, "above")
            below = check_count(below, "below")
            fill = check_flag(fill, "fill")
            style = self._style(style)  # checked even when the member is absent
            primary = self._lookup(member)
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
            return self._entries_between(lo, hi, style, with_meta)

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

        >>> from rankengine import Leaderboard

        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30})
        3
        >>> [e.member for e in board.by_score(10, 30, max_inclusive=False)]
        ['b', 'a']
        """
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        with self._lock:
            offset = check_count(offset, "offset")
            if limit is not None:
                limit = check_count(limit, "limit")
            style = self._style(style)  # checked even when the range is empty
            lo, hi = self._score_positions(min, max, min_inclusive, max_inclusive)
            first, last = self._ranks_of_positions(lo, hi)
            first += offset
            if limit is not None:
                last = builtins_min(last, first + limit)
            if first >= last:
                return []
            return self._entries_between(first, last, style, with_meta)

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

        >>> from rankengine import Leaderboard

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

    def _unique_rows(self, lo: int, hi: int) -> list[Entry]:
        """Rows with 0-based ranks ``lo <= r < hi`` in unique style, no metadata.

        The common read (top-k, pages, around-me): one comprehension that builds
        the rows with ``tuple.__new__``, skipping the named tuple's Python-level
        ``__new__`` and the per-row style tests.  Measured: top(10) at 100,000
        members went from ~27k to ~40k calls/s before the top cache.
        """
        decode = None if self._codec.columns is None else self._codec.score
        columns = self._position_columns(lo, hi)
        if columns is not None:
            # one C-level pass: zip the columns, make each tuple an Entry
            primaries, members = columns
            scores = primaries if decode is None else list(map(decode, primaries))
            fields = zip(members, scores, range(lo + 1, hi + 1), _NONES, strict=False)
            return list(map(_new, _ENTRIES, fields))
        rows = self._iter_positions(lo, hi, best_first=True)
        if decode is None:
            return [_new(Entry, (m, p, r, None)) for r, (p, _, m) in enumerate(rows, lo + 1)]
        return [_new(Entry, (m, decode(p), r, None)) for r, (p, _, m) in enumerate(rows, lo + 1)]

    def _entries_between(self, lo: int, hi: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        """Entries with 0-based ranks ``lo <= r < hi``, best first, ranked in ``style``."""
        out: list[Entry] = []
        if lo >= hi:
            return out
        if style == "unique" and not with_meta:
            if lo == 0 and hi <= TOP_CACHE_SIZE:
                # Top-k reads are served from the cached best rows, which a
                # write clears only when it reaches them (see BoardCore._touch_top).
                top = self._top
                if top is None:
                    top = self._unique_rows(0, min(TOP_CACHE_SIZE, len(self._primary)))
                    self._top = top
                    full = len(top) == TOP_CACHE_SIZE
                    self._top_floor = self._codec.primary(top[-1].score) if full else None
                return top[:hi]
            return self._unique_rows(lo, hi)
        rows = self._iter_positions(lo, hi, best_first=True)
        score = self._codec.score
        meta = self._meta
        rank = lo + 1
        prev: Any = _MISSING
        shared = 0
        for primary, _, member in rows:
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

    def _rank_window(self, start: int, stop: int) -> tuple[int, int]:
        """Clamp 1-based inclusive ranks (negative from the bottom) to 0-based [lo, hi)."""
        start = check_int(start, "start")
        stop = check_int(stop, "stop")
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

    def _make_entry(self, member: Any, primary: Any, rank: int, with_meta: bool) -> Entry:
        data = self._meta.get(member) if with_meta else None
        return Entry(
            member, self._codec.score(primary), rank, None if data is None else check_meta(data)
        )


def interpolate(low: Score, high: Score, frac: float, p: float) -> Score:
    """The score ``frac`` of the way from scalar ``low`` to ``high`` (the
    neighbours read by ``score_at_percentile(p)``, ``0 < frac < 1``).

    Equal neighbours give ``low``.  Infinite ones are not interpolated
    (``inf - inf`` is NaN): between an infinite neighbour and a finite one
    the infinite one wins; between ``-inf`` and ``inf``, the lower neighbour
    is returned.  Finite floats near opposite ends of the float range have a
    difference that overflows to ``inf``; they are weighed separately
    instead, so the result stays between them, and so are ints within the
    float range whose difference is not (``-10**308`` and ``10**308``).  A
    neighbour that is an int beyond the float range has no float to
    interpolate to (the result is a float): an ``OverflowError`` says so.

    >>> interpolate(10, 20, 0.25, 50), interpolate(-1e308, 1e308, 0.75, 50)
    (12.5, 5e+307)
    >>> interpolate(-(10**308), 10**308, 0.75, 50)
    5e+307
    """
    assert not isinstance(low, tuple) and not isinstance(high, tuple)  # scalar boards only
    if low == high:
        return low
    # (an int is never infinite; math.isinf would convert it, and overflow)
    if type(low) is float and math.isinf(low):
        return low
    if type(high) is float and math.isinf(high):
        return high
    try:
        span = high - low
        # a gap beyond the float range: two floats' overflows to inf, two
        # ints' stays an int that no float holds (10**308 - -10**308)
        if (type(span) is float and math.isinf(span)) or (
            type(span) is int and abs(span) > sys.float_info.max
        ):
            return low * (1 - frac) + high * frac
        return low + span * frac
    except OverflowError:
        raise OverflowError(
            f"score at percentile {p!r}: no float lies between {describe(low)} and "
            f"{describe(high)} to interpolate (an int beyond the float range, about 1.8e308)"
        ) from None
