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
import sys
from collections.abc import Iterator
from typing import Any, Final

from rankengine.board.checks import STYLES, check_int, check_percentile, check_style
from rankengine.board.contract import DEFAULT_PAGE_SIZE, BoardAPI, PercentileMethod
from rankengine.board.core import MISSING, TOP_CACHE_SIZE, BoardCore, Entry, RankStyle, lookalike
from rankengine.board.scoring import Member, Score, check_meta, describe, member_error
from rankengine.board.tiemap import TIE_SHARD_MASK

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "BoardReads",
    "PercentileMethod",
    "check_percentile",
    "rank_outside",
]


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


class BoardReads(BoardCore, BoardAPI):
    """The read half of the :class:`~rankengine.Leaderboard` API: the
    primitives of :class:`~rankengine.board.contract.BoardAPI` (which holds
    the public methods, their docstrings and checks) over the hash map and
    index of :class:`~rankengine.board.core.BoardCore`, each under the lock."""

    # The container reads: BoardAPI's extension points (and __getitem__ and
    # __iter__, fused here: no score() call, no pairs), under its docstrings.
    def __getitem__(self, member: Member) -> Score:
        primary = self._lookup(member)
        if primary is MISSING:
            raise KeyError(member)
        return self._codec.score(primary)  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Member]:
        with self._lock:
            members = [
                m for _, _, m in self._iter_positions(0, len(self._primary), best_first=True)
            ]
        return iter(members)

    def score(self, member: Member, default: Any = None) -> Any:
        primary = self._lookup(member)
        if primary is MISSING:
            return default
        return self._codec.score(primary)

    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None:
        # BoardAPI.rank fused for the hottest read (its docstring applies):
        # the style check and the _rank_of_member primitive inlined, with
        # the unique-rank arithmetic of _rank_of, saving three calls.
        if style is None:
            style = self._rank_style
        elif style not in STYLES:
            check_style(style)
        # The lock as acquire/try/finally, not `with`: the same hold, and
        # cheaper on CPython 3.11 (measured: an uncontended RLock taken by
        # `with` cost 270 ns a call on a loaded machine, 140 ns this way).
        lock = self._lock
        lock.acquire()
        try:
            try:  # free unless it raises: no type test on the hottest read
                primary = self._primary.get(member, MISSING)
            except TypeError:
                raise member_error(member) from None
            # (a str, the usual member, skips the call: the hottest read)
            if primary is MISSING or (type(member) is not str and lookalike(member)):
                return None
            if style == "unique":
                tie = (
                    self._tie.shards[hash(member) & TIE_SHARD_MASK].get(member)
                    if self._first
                    else member
                )
                if tie is not None:
                    position = self._index.position(primary, tie)
                elif self._position_of is not None:  # not in the tie map: one search
                    position = self._position_of(primary, member)
                else:
                    position = self._position(member, primary)
                return len(self._primary) - position if self._desc else position + 1
            return self._rank_of(member, primary, style)
        finally:
            lock.release()

    def meta(self, member: Member) -> dict[str, Any] | None:
        with self._lock:
            if self._lookup(member) is MISSING:
                return None
            data = self._meta.get(member)
            return None if data is None else check_meta(data)

    def items(self) -> list[tuple[Member, Score]]:
        with self._lock:
            score = self._codec.score
            return [
                (m, score(p)) for p, _, m in self._iter_positions(0, len(self), best_first=True)
            ]

    # ------------------------------------------------------------------
    # The primitives of BoardAPI (arguments checked there)
    # ------------------------------------------------------------------
    def _rank_of_member(self, member: Member, style: RankStyle) -> int | None:
        with self._lock:
            primary = self._lookup(member)
            if primary is MISSING:
                return None
            return self._rank_of(member, primary, style)

    def _entry_of(self, member: Member, style: RankStyle, with_meta: bool) -> Entry | None:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            primary = self._lookup(member)
            if primary is MISSING:
                return None
            return self._make_entry(
                member, primary, self._rank_of(member, primary, style), with_meta
            )
        finally:
            lock.release()

    def _entries_of(
        self, members: list[Any], style: RankStyle, with_meta: bool
    ) -> list[Entry | None]:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            out: list[Entry | None] = []
            for member in members:
                primary = self._lookup(member)
                if primary is MISSING:
                    out.append(None)
                else:
                    rank = self._rank_of(member, primary, style)
                    out.append(self._make_entry(member, primary, rank, with_meta))
            return out
        finally:
            lock.release()

    def _at_rank(self, rank: int, style: RankStyle, with_meta: bool) -> Entry:
        with self._lock:
            n = len(self)
            given = rank
            rank = given + n + 1 if given < 0 else given
            if not 1 <= rank <= n:
                raise rank_outside(given, n)
            return self._entries_between(rank - 1, rank, style, with_meta)[0]

    def _rank_for_score(self, score: Score, style: RankStyle) -> int:
        with self._lock:
            primary = self._codec.primary(self._codec.check(score))
            if style == "dense":
                return self._dense_rank(primary)
            ahead = self._count_ahead(primary, include_ties=style == "unique")
            return ahead + 1

    def _score_counts(self, member: Member) -> tuple[int, int, int] | None:
        with self._lock:
            primary = self._lookup(member)
            if primary is MISSING:
                return None
            lower = self._index.count_primary(primary, inclusive=False)
            upper = self._index.count_primary(primary, inclusive=True)
            return lower, upper, len(self)

    def _score_at_percentile(self, p: int | float) -> Score | None:
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

    def _top_rows(self, k: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            n = len(self._primary)
            return self._entries_between(0, k if k < n else n, style, with_meta)
        finally:
            lock.release()

    def _rank_rows(self, start: int, stop: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            lo, hi = self._rank_window(start, stop)
            return self._entries_between(lo, hi, style, with_meta)
        finally:
            lock.release()

    def _page_rows(self, number: int, size: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            total = -(-len(self) // size)
            number = min(max(number, 1), max(total, 1))
            lo = (number - 1) * size
            return self._entries_between(lo, min(lo + size, len(self)), style, with_meta)
        finally:
            lock.release()

    def _around_rows(
        self,
        member: Member,
        above: int,
        below: int,
        fill: bool,
        *,
        style: RankStyle,
        with_meta: bool,
    ) -> list[Entry]:
        lock = self._lock  # (not `with`: see rank)
        lock.acquire()
        try:
            primary = self._lookup(member)
            if primary is MISSING:
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
        finally:
            lock.release()

    def _score_rows(
        self,
        low: Score | None,
        high: Score | None,
        low_inclusive: bool,
        high_inclusive: bool,
        *,
        offset: int,
        limit: int | None,
        style: RankStyle,
        with_meta: bool,
    ) -> list[Entry]:
        with self._lock:
            lo, hi = self._score_positions(low, high, low_inclusive, high_inclusive)
            first, last = self._ranks_of_positions(lo, hi)
            first += offset
            if limit is not None:
                last = builtins_min(last, first + limit)
            if first >= last:
                return []
            return self._entries_between(first, last, style, with_meta)

    def _count_between(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        with self._lock:
            lo, hi = self._score_positions(low, high, low_inclusive, high_inclusive)
            return hi - lo

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
        prev: Any = MISSING
        shared = 0
        for primary, _, member in rows:
            if style == "unique":
                shown = rank
            elif prev is MISSING or primary != prev:
                if style == "competition":
                    shown = (
                        rank
                        if prev is not MISSING
                        else self._count_ahead(primary, include_ties=False) + 1
                    )
                else:
                    shown = self._dense_rank(primary) if prev is MISSING else shared + 1
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
