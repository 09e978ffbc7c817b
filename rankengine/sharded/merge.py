"""The machinery under :class:`~rankengine.sharded.board.ShardedLeaderboard`:
keyed access to each shard, reads of every shard in one round trip per
server, and merges of their answers that stay exact.

:class:`Shard` gives the sharded board one view of any shard board, in the
index terms ``(primary, tie)`` (the key the shard sorts by).  An in-process
:class:`~rankengine.Leaderboard` answers at once; a
:class:`~rankengine.redis.board.RedisLeaderboard` answers with a
:class:`~rankengine.redis.board.Pending` script call, and
:meth:`ShardMerge._map` runs the calls of all shards together: one
pipelined round trip per Redis server (per node owning the shards' slots on
a cluster).

:class:`ShardMerge` holds the reads that combine shards:

* counts add up: members strictly ahead of a key, or of a score, are the sum
  over shards; dense ranks count the *distinct* better scores of all shards
  together (shards share scores);
* a run of global ranks ``[lo, hi)`` is, on every shard, a run of its own
  ranks.  :meth:`ShardMerge._window` reads a window around each shard's
  guessed part, sorts the rows of all windows by key (one C sort: keys are
  unique across shards, so it is the merge), and keeps the result only if
  it is *verified* complete::

      shard 0:  ... [ 91 90 88 87 85 84 ] ...   its guessed part of the
      shard 1:  ... [ 89 86 83 ] ...            page, plus a margin each side
      merged:  91 90 [89 88 87 86 85] 84 83     the page: global ranks lo..hi

  every merged row must lie after each window's first row and before its
  last, unless the window reaches the shard's end; otherwise the windows
  grow by :data:`GROWTH` and are read again;
* a deep page is located first (:meth:`ShardMerge._locate`): a pivot row of
  the largest shard, and the rows ahead of it on every shard, give its
  global rank; a few secant steps move it to within a few rows of ``lo``.

>>> from rankengine import Leaderboard
>>> shard = Shard(Leaderboard())
>>> shard.board.set_many({"ann": 3, "bob": 5})
2
>>> shard.size(), [row[2] for row in shard.rows(0, 2, False)]
(2, ['bob', 'ann'])
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final

from rankengine.board.changes import Change
from rankengine.board.leaderboard import Entry, RankStyle
from rankengine.board.scoring import Member, Score, ScoreCodec, check_meta
from rankengine.redis.board import MISSING, Pending, RedisLeaderboard, run_pipelined

__all__ = ["GROWTH", "MIN_MARGIN", "PIVOT_STEPS", "Shard", "ShardMerge"]

#: Rows read beyond the estimate on each side of a deep page, at least.
MIN_MARGIN: Final = 16
#: Windows grow by this factor when a merged page could not be verified.
GROWTH: Final = 4
#: At most this many pivots locate a deep page (each: one row read, then a
#: count on every shard); each step shrinks the error about tenfold.
PIVOT_STEPS: Final = 4


# ----------------------------------------------------------------------
# What the sharded board needs from a shard
# ----------------------------------------------------------------------
class Shard:
    """Keyed access to one shard, in the index terms ``(primary, tie)``.

    The reads of a Redis shard return a :class:`~rankengine.redis.board.Pending`
    script call instead of a value: the sharded board runs those of all its
    shards in one pipeline per Redis client (see :meth:`ShardMerge._map`).
    """

    def __init__(self, board: Any) -> None:
        self.board = board
        self.remote = isinstance(board, RedisLeaderboard)

    # -- keys and counts -------------------------------------------------
    def key(self, member: Member) -> tuple[Any, Any, Score] | None:
        """``(primary, tie, score)`` of a member, or None."""
        board = self.board
        if self.remote:
            return board._shard_key(member)  # type: ignore[no-any-return]
        with board._lock:
            primary = board._primary.get(member, MISSING)
            if primary is MISSING:
                return None
            return primary, board._tie_of(member), board._codec.score(primary)

    def before(self, primary: Any, tie: Any, member: Member) -> int | Pending:
        """Members ranked strictly ahead of the key ``(primary, tie)``."""
        board = self.board
        if self.remote:
            return board._shard_before(primary, tie, member)  # type: ignore[no-any-return]
        with board._lock:
            index = board._index
            less = index.count_less(primary, tie)
            if not board._desc:
                return int(less)
            here = board._primary.get(member, MISSING) == primary and (board._tie_of(member) == tie)
            return int(len(index) - less - (1 if here else 0))

    def rows(self, lo: int, hi: int, with_meta: bool) -> list[tuple[Any, ...]] | Pending:
        """``(primary, tie, member, score, meta)`` for local ranks [lo, hi)."""
        board = self.board
        if lo >= hi:
            return []
        if self.remote:
            return board._shard_rows(lo, hi, with_meta)  # type: ignore[no-any-return]
        with board._lock:
            hi = min(hi, len(board))
            score, metas = board._codec.score, board._meta
            out = []
            for primary, tie, member in board._iter_positions(lo, hi, best_first=True):
                data = metas.get(member) if with_meta else None
                meta = None if data is None else check_meta(data)
                out.append((primary, tie, member, score(primary), meta))
            return out

    def distinct(self, primary: Any) -> list[Any] | Pending:
        """Distinct primaries strictly better than ``primary``."""
        board = self.board
        if self.remote:
            return board._shard_distinct(primary)  # type: ignore[no-any-return]
        with board._lock:
            board._ensure_dense()
            values = board._distinct
            if board._desc:
                return list(values.irange(minimum=primary, inclusive=(False, True)))
            return list(values.irange(maximum=primary, inclusive=(True, False)))

    def size(self) -> int | Pending:
        """The number of members."""
        board = self.board
        return board._shard_size() if self.remote else len(board)

    def rank_for(self, score: Score, style: RankStyle) -> int | Pending:
        """The rank ``score`` would get on this shard."""
        board = self.board
        if self.remote:
            return board._shard_rank_for(score, style)  # type: ignore[no-any-return]
        return int(board.rank_for_score(score, style=style))

    def count(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int | Pending:
        """Members with a score in the range."""
        board = self.board
        if self.remote:
            return board._shard_count(low, high, low_inclusive, high_inclusive)  # type: ignore[no-any-return]
        flags = {"min_inclusive": low_inclusive, "max_inclusive": high_inclusive}
        return int(board.count(low, high, **flags))

    def states(self, members: list[Any]) -> dict[Any, Any]:
        """Current exact scores (``MISSING`` when absent)."""
        board = self.board
        if self.remote:
            return board._state_of(members)  # type: ignore[no-any-return]
        with board._lock:
            return {m: board.score(m, MISSING) for m in members}

    # -- writes ------------------------------------------------------------
    @contextlib.contextmanager
    def floor(self, clock: int) -> Iterator[None]:
        """Writes inside use tie clocks above ``clock``."""
        board = self.board
        if self.remote:
            board._clock_floor = clock
            try:
                yield
            finally:
                board._clock_floor = 0
        else:
            with board._lock:
                board._clock = max(board._clock, clock)
                yield

    def clock(self) -> int | Pending:
        """The shard's clock as stored (on Redis a pending script call, so
        that every shard's is read in one pipelined round trip per client)."""
        board = self.board
        return board._shard_clock() if self.remote else int(board._clock)

    def last_clock(self) -> int:
        """The latest clock this process saw the shard use (no round trip)."""
        board = self.board
        if self.remote:
            return int(board._last_clock)
        return int(board._clock)

    def member_type(self) -> type | None:
        """The type of the shard's members, or None when it is empty."""
        board = self.board
        if self.remote:
            first = board.top(1)
            return type(first[0].member) if first else None
        with board._lock:
            return board._member_type if board._primary else None

    def commit(self, changes: list[Change], expect: list[tuple[Any, Any]]) -> bool:
        """Apply planned changes if the members still hold ``expect``."""
        board = self.board
        if self.remote:
            return board._commit(changes, expect)  # type: ignore[no-any-return]
        with board._lock:
            codec = board._codec
            for member, value in expect:
                have = board._primary.get(member, MISSING)
                if (have is MISSING) != (value is MISSING):
                    return False
                if have is not MISSING and have != codec.primary(value):
                    return False
            if changes:
                board._commit(changes)
            return True

    def validate(self, value: Score) -> None:
        """Raise now if the shard could not store ``value``."""
        if self.remote:
            self.board._format.encode(value)


# ----------------------------------------------------------------------
# Reads over every shard, merged
# ----------------------------------------------------------------------
class ShardMerge:
    """The merged reads of a sharded board (a base class).

    The subclass sets ``_shards`` (a :class:`Shard` per shard board, in
    placement order), ``_codec`` (the board's
    :class:`~rankengine.board.scoring.ScoreCodec`) and ``_desc`` (best is
    highest), and holds its lock around these reads.
    """

    _shards: list[Shard]
    _codec: ScoreCodec
    _desc: bool

    # ------------------------------------------------------------------
    # Fan-out: every shard, one round trip per Redis server
    # ------------------------------------------------------------------
    def _map(self, func: Callable[[Shard], Any]) -> list[Any]:
        """``func`` on every shard.  Redis shards answer with pending script
        calls (alone or in a tuple), which run together: one pipelined round
        trip per Redis client."""
        results = [func(shard) for shard in self._shards]

        def items(result: Any) -> tuple[Any, ...]:
            # a Pending is a NamedTuple: tell it from a tuple of answers first
            if isinstance(result, tuple) and not isinstance(result, Pending):
                return result
            return (result,)

        pending = [item for r in results for item in items(r) if isinstance(item, Pending)]
        if not pending:
            return results
        answers = dict(zip(map(id, pending), run_pipelined(pending), strict=True))

        def resolve(item: Any) -> Any:
            return answers[id(item)] if isinstance(item, Pending) else item

        return [
            resolve(r)
            if isinstance(r, Pending) or not isinstance(r, tuple)
            else tuple(map(resolve, r))
            for r in results
        ]

    def _now(self, item: Any) -> Any:
        """A single shard's answer, run at once if it is a pending call."""
        return run_pipelined([item])[0] if isinstance(item, Pending) else item

    def _sizes(self) -> list[int]:
        return self._map(Shard.size)

    # ------------------------------------------------------------------
    # Counts over every shard
    # ------------------------------------------------------------------
    def _ahead(self, primary: Any) -> int:
        """Members with a strictly better score, on every shard."""
        value = self._codec.score(primary)
        ranks = self._map(lambda s: s.rank_for(value, "competition"))
        return int(sum(ranks)) - len(ranks)

    def _distinct_ahead(self, primary: Any) -> int:
        """Distinct better scores of the whole board (shards may share scores)."""
        better: set[Any] = set()
        for part in self._map(lambda s: s.distinct(primary)):
            better.update(part)
        return len(better)

    def _score_positions(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> tuple[int, int, list[int]]:
        """Ascending index positions [lo, hi) of a score range, and the shard sizes.

        The bounds are checked before the flags, as on one board (a NaN
        bound with a non-bool flag is a ``ValueError`` there too)."""
        for bound, name in ((low, "min"), (high, "max")):
            if bound is not None:
                self._codec.check(bound, name)
        if not isinstance(low_inclusive, bool) or not isinstance(high_inclusive, bool):
            raise TypeError("inclusive flags must be bools")

        def counts(s: Shard) -> tuple[Any, Any, Any]:
            below = 0 if low is None else s.count(None, low, True, not low_inclusive)
            upto = s.size() if high is None else s.count(None, high, True, high_inclusive)
            return below, upto, s.size()

        counted = self._map(counts)
        lo, hi = sum(c[0] for c in counted), sum(c[1] for c in counted)
        sizes = [c[2] for c in counted]
        return (lo, hi, sizes) if lo < hi else (lo, lo, sizes)

    # ------------------------------------------------------------------
    # Merged windows of global ranks
    # ------------------------------------------------------------------
    def _window(
        self,
        lo: int,
        hi: int,
        with_meta: bool,
        guess: list[int] | None = None,
        sizes: list[int] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Rows of global 0-based ranks [lo, hi), best first, verified exact.

        ``guess``: each shard's local rank of global rank ``lo`` (default:
        proportional to its size).  Windows around the guesses are read and
        merged; the merge is complete when every returned row lies after the
        first row of each window that does not start at the shard's top, and
        before the last row of each window that stops short of its bottom.
        Otherwise the windows grow by :data:`GROWTH` and are read again.

        The top of the board (``lo == 0``) needs no sizes and no check: the
        best ``hi`` are among the union of every shard's best ``hi``.
        """
        if lo <= 0 and guess is None:
            parts = self._map_spans([(0, hi)] * len(self._shards), with_meta)
            return sorted(itertools.chain(*parts), key=_key, reverse=self._desc)[:hi]
        sizes = self._sizes() if sizes is None else sizes
        n = sum(sizes)
        lo, hi = max(lo, 0), builtins_min(hi, n)
        if lo >= hi:
            return []
        width = hi - lo
        if guess is not None:
            margin = 1
        elif lo == 0:
            guess, margin = [0] * len(sizes), 0
        else:
            margin = MIN_MARGIN + 2 * math.isqrt(lo)
            if 2 * margin <= width:  # cheaper than locating the page first
                guess = [lo * size // n for size in sizes]
            else:
                guess, margin = self._locate(lo, sizes)
        while True:
            spans = [
                (max(0, g - margin), builtins_min(size, g + width + margin))
                for g, size in zip(guess, sizes, strict=True)
            ]
            parts = self._map_spans(spans, with_meta)
            # keys are unique across shards: one C sort of the runs is the merge
            merged = sorted(itertools.chain(*parts), key=_key, reverse=self._desc)
            base = sum(a for a, _ in spans)
            if base <= lo and base + len(merged) >= hi:
                rows = merged[lo - base : hi - base]
                if self._complete(rows, spans, sizes, parts):
                    return rows
            if all(a == 0 and b == size for (a, b), size in zip(spans, sizes, strict=True)):
                raise AssertionError("shards changed while a page was read")  # pragma: no cover
            margin = max(MIN_MARGIN, margin * GROWTH)

    def _locate(self, lo: int, sizes: list[int]) -> tuple[list[int], int]:
        """Where a deep page starts on every shard, to within a few rows.

        A row of the largest shard serves as a pivot; the rows ahead of it
        on every shard sum to its global rank g.  If g is off by d from the
        page's first rank lo, each shard's part of the page starts within d
        rows of its count, so windows d rows wider than the page are enough.
        The pivot starts at the proportional estimate and moves by the error
        scaled to its shard (a secant step) until d is small.
        """
        j = max(range(len(sizes)), key=sizes.__getitem__)
        n = sum(sizes)
        at = builtins_min(lo * sizes[j] // n, sizes[j] - 1)
        for _ in range(PIVOT_STEPS):
            primary, tie, member = self._now(self._shards[j].rows(at, at + 1, False))[0][:3]
            ahead = self._map(partial(Shard.before, primary=primary, tie=tie, member=member))
            error = sum(ahead) - lo
            moved = builtins_min(max(at - error * sizes[j] // n, 0), sizes[j] - 1)
            if abs(error) <= MIN_MARGIN or moved == at:
                break
            at = moved
        return ahead, abs(error) + 1

    def _map_spans(
        self, spans: list[tuple[int, int]], with_meta: bool
    ) -> list[list[tuple[Any, ...]]]:
        jobs = iter(spans)
        return self._map(lambda s: s.rows(*next(jobs), with_meta))

    def _complete(
        self,
        rows: list[tuple[Any, ...]],
        spans: list[tuple[int, int]],
        sizes: list[int],
        parts: list[list[tuple[Any, ...]]],
    ) -> bool:
        best, worst = _key(rows[0]), _key(rows[-1])
        for (a, b), size, part in zip(spans, sizes, parts, strict=True):
            if a > 0 and (not part or self._ahead_of(best, _key(part[0]))):
                return False  # rows before this window might belong in the page
            if b < size and (not part or self._ahead_of(_key(part[-1]), worst)):
                return False  # rows after this window might belong in the page
        return True

    def _ahead_of(self, a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
        """Key ``a`` ranks strictly ahead of key ``b``."""
        return a > b if self._desc else a < b

    def _entries(self, rows: list[tuple[Any, ...]], lo: int, style: RankStyle) -> list[Entry]:
        """Entries for consecutive rows starting at global rank ``lo``."""
        out: list[Entry] = []
        rank = lo + 1
        prev: Any = MISSING
        shared = 0
        for primary, _, member, score, meta in rows:
            if style == "unique":
                shown = rank
            elif prev is MISSING or primary != prev:
                if style == "competition":
                    shown = rank if prev is not MISSING else self._ahead(primary) + 1
                else:
                    shown = self._distinct_ahead(primary) + 1 if prev is MISSING else shared + 1
                shared = shown
            else:
                shown = shared
            prev = primary
            out.append(Entry(member, score, shown, meta))
            rank += 1
        return out


builtins_min = min


def _key(row: tuple[Any, ...]) -> tuple[Any, Any]:
    return (row[0], row[1])
