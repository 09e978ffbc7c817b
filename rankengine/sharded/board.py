"""One leaderboard over S shards: the same API, exact answers.

A :class:`ShardedLeaderboard` splits its members over ``S`` boards (any mix
of in-process :class:`~rankengine.Leaderboard` boards and
:class:`~rankengine.redis.board.RedisLeaderboard` boards, on one Redis, on
many, or on a Redis Cluster).  Each member lives on exactly one shard, chosen
by a deterministic hash (the same in every process), so a write touches one
shard.  Reads merge, and stay exact:

* **top k**: the global top k is inside the union of the shards' top k
  (a member of the global top k has fewer than k members ahead of it on its
  own shard), so it is a k-way merge of per-shard top-k lists::

      shard 0: 98 91 75 ...      merge (heap)      global: 98 97 91 90 75
      shard 1: 97 90 60 ...    ------------->
* **rank**: the number of members strictly ahead is the sum over shards of
  the members strictly ahead on each, ties included by the full key
  ``(score, tie)``; competition ranks sum counts of strictly better scores;
  dense ranks count the *distinct* better scores of all shards together;
* **a page deep in the board** (global ranks lo..hi): each shard's part of
  it is a run of its own ranks.  A pivot row locates the page on every
  shard to within a few rows; the board reads those windows, merges, and
  *checks* that the merged run is complete, widening the windows if not;
* **around me**: a member's rank gives, on every shard, exactly where the
  rows above and below it are.

The reads of all Redis shards go out together: one pipelined round trip per
Redis server (on a cluster, per node owning the shards' slots).  The shard
adapter and the merges are in :mod:`rankengine.sharded.merge`.

First-to-reach ties need one clock for the whole board: the sharded board
keeps a global logical clock and raises a shard's clock to it before each
write, so tie order across shards is the order of the writes, exactly as
on one board (with one writer process; several writer processes each
advance their own view of the clock, so cross-shard ties between writes made
at nearly the same moment by different processes may come out either way).

Batch writes are planned across shards (one global clock sequence, as
consecutive ``set`` calls would assign it) and applied one shard at a time:
each shard's part is atomic, the batch as a whole is not.  When another
writer changed a shard under the plan, the shards not yet written are planned
again with clocks after every clock on the board (see ``_batch``), so the
batch's members never share a tie clock.

>>> board = ShardedLeaderboard.local(3)
>>> board.set_many({f"p{i}": i for i in range(10)})
10
>>> [e.member for e in board.top(3)], board.rank("p5")
(['p9', 'p8', 'p7'], 5)
>>> [e.rank for e in board.page(2, size=4)]
[5, 6, 7, 8]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from rankengine.board.changes import PUT, Change
from rankengine.board.checks import batch_error, check_style
from rankengine.board.contract import Board, BoardAPI
from rankengine.board.core import Entry, ItemWrites, RankStyle
from rankengine.board.leaderboard import Leaderboard, When
from rankengine.board.reads import (
    interpolate,
    rank_outside,
)
from rankengine.board.scoring import (
    Member,
    Score,
    ScoreCodec,
    check_lookup,
    check_member,
    is_member,
)
from rankengine.board.writes import BoardWrites
from rankengine.redis.board import MISSING, RedisLeaderboard, client_from_url
from rankengine.redis.codec import MAXCLOCK
from rankengine.sharded.merge import Shard, ShardMerge
from rankengine.sharded.placement import (
    check_agreement,
    check_distinct,
    check_places,
    check_shard_count,
    jump_hash,
    shard_of,
)

__all__ = ["ShardedLeaderboard", "jump_hash", "shard_of"]

#: "Every row" as the end of a window.
_ALL: Final = 2**62


# ----------------------------------------------------------------------
# The sharded board
# ----------------------------------------------------------------------
class ShardedLeaderboard(ShardMerge, ItemWrites, BoardWrites, BoardAPI):
    """A leaderboard whose members are spread over several shard boards.

    :param shards: the shard boards, all empty or all filled by a sharded
        board with the same number of shards, in the same order (the
        placement depends on both): in-process
        :class:`~rankengine.Leaderboard` boards,
        :class:`~rankengine.redis.board.RedisLeaderboard` boards, or a mix.
        A Redis shard created by :meth:`on_redis` stores its place (shard i
        of S), and one given at another index or among another number of
        shards is refused; a shard with no stored place (created on its own,
        or by an earlier version; durable and in-process shards) is not
        checked.
        They must share ``order``, ``tie_break``, ``rank_style`` and (Redis
        shards) ``packing``: a packed shard with an exact one (in-process, or
        Redis without packing) is refused, as is any other mismatch.
    :param rank_style: the default rank style (default: the first shard's).

    The API is :class:`~rankengine.Leaderboard`'s; see the module docstring
    for what each read costs.

    Copying: when every shard is in process, :meth:`copy`, ``copy.copy``,
    ``copy.deepcopy`` and pickling give an independent sharded board of
    shard copies (see :meth:`Leaderboard.copy`; a durable shard copies to an
    in-memory board, and pickling one is refused as for a durable board).
    With a :class:`~rankengine.redis.board.RedisLeaderboard` shard they
    raise :class:`TypeError`: such a shard is a handle on Redis state.
    """

    def __init__(self, shards: Sequence[Any], *, rank_style: RankStyle | None = None) -> None:
        boards = list(shards)
        if not boards:
            raise ValueError("a sharded board needs at least one shard")
        for board in boards:
            if not isinstance(board, (Leaderboard, RedisLeaderboard)):
                raise TypeError(f"shards must be Leaderboard or RedisLeaderboard, not {board!r}")
        check_distinct(boards)
        first = boards[0]
        check_agreement(boards)
        check_places(boards)
        style = first.rank_style if rank_style is None else rank_style
        check_style(style)
        self._boards = boards
        self._shards = [Shard(board) for board in boards]
        self._codec = ScoreCodec(first.order)
        self._desc = self._codec.descending
        self._tie_break = first.tie_break
        self._rank_style: RankStyle = style
        self._lock = threading.RLock()
        #: the client :meth:`on_redis` made from a URL for every shard (closed by close())
        self._own_client: Any = None
        self._clock = max(self._map(Shard.clock))

    @classmethod
    def local(cls, shards: int, **config: Any) -> ShardedLeaderboard:
        """``shards`` in-process boards, each ``Leaderboard(**config)``.

        >>> ShardedLeaderboard.local(4, order="asc").order
        'asc'
        """
        return cls([Leaderboard(**config) for _ in range(check_shard_count(shards))])

    @classmethod
    def on_redis(
        cls, redis: Any, name: str, shards: int, *, prefix: str = "rankengine:", **config: Any
    ) -> ShardedLeaderboard:
        """``shards`` Redis boards named ``name:0``, ``name:1``, ...: each its
        own hash tag, so on a Redis Cluster they spread over the slots (and
        the masters) while each shard's keys stay together.

        Every shard's arguments and stored settings are checked before any
        shard's settings are stored, so a refused board creates no shard.
        Each shard stores its place (shard i of ``shards``) with its
        settings: shards created with another number of shards are refused
        (shards stored without a place, by an earlier version, are not).
        ``log`` is refused: each shard needs a log of its own (build the
        shards with ``RedisLeaderboard(..., log=...)`` and pass them in).
        ``redis`` is a client or a URL: for a URL the shards share one client
        (so a read is one pipelined round trip, not one per shard), which
        :meth:`close` closes.

        Runtime complexity: O(S), two round trips per shard (the check, the
        open), then one per client to read every shard's logical clock.
        """
        count = check_shard_count(shards)
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if config.get("log") is not None:
            raise ValueError(
                "a sharded board needs one log per shard, not one for all: build the "
                "shards with RedisLeaderboard(..., log=...) and pass them to ShardedLeaderboard"
            )
        own = client_from_url(redis) if isinstance(redis, str) else None
        try:
            boards = [
                RedisLeaderboard._unopened(own or redis, f"{name}:{i}", prefix=prefix, **config)
                for i in range(count)
            ]
            for i, board in enumerate(boards):
                board._place(i, count)
            for board in boards:
                board._init(store=False)
            for board in boards:
                board._open()
        except BaseException:
            if own is not None:
                own.close()
            raise
        sharded = cls(boards)
        sharded._own_client = own
        return sharded

    # ------------------------------------------------------------------
    # Copying and pickling
    # ------------------------------------------------------------------
    def copy(self) -> ShardedLeaderboard:
        """An independent sharded board of copies of the in-process shards,
        with this board's rank style and global clock.

        Runtime complexity: O(N + size of metadata)

        :raises TypeError: a shard is a Redis board.

        >>> board = ShardedLeaderboard.local(2)
        >>> board.set_many({"ann": 3, "bob": 3})
        2
        >>> twin = board.copy()
        >>> twin.remove("ann"), len(board), twin.clock == board.clock
        (True, 2, True)
        """
        with self._lock:
            self._refuse_remote_copy()
            twin = ShardedLeaderboard(
                [board.copy() for board in self._boards], rank_style=self._rank_style
            )
            twin._clock = max(twin._clock, self._clock)
            return twin

    def __copy__(self) -> ShardedLeaderboard:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> ShardedLeaderboard:
        twin = self.copy()
        memo[id(self)] = twin
        return twin

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the shard boards (each pickles its own state), the rank
        style and the global clock; not the lock."""
        with self._lock:
            self._refuse_remote_copy()
            return (_sharded_from_shards, (list(self._boards), self._rank_style, self._clock))

    def _refuse_remote_copy(self) -> None:
        if any(shard.remote for shard in self._shards):
            raise TypeError(
                "ShardedLeaderboard with RedisLeaderboard shards cannot be copied or "
                "pickled: those shards are handles on keys in Redis, not containers; "
                "build another sharded board on the same shards instead"
            )

    # ------------------------------------------------------------------
    # Configuration and sizes
    # ------------------------------------------------------------------
    @property
    def shards(self) -> list[Any]:
        """The shard boards, in placement order."""
        return list(self._boards)

    @property
    def order(self) -> Any:
        return self._boards[0].order

    @property
    def tie_break(self) -> Any:
        return self._tie_break

    @property
    def rank_style(self) -> RankStyle:
        return self._rank_style

    @property
    def clock(self) -> int:
        """The global logical clock: the largest shard clock.

        Runtime complexity: O(S)
        """
        with self._lock:
            self._clock = max(self._clock, *self._map(Shard.clock))
            return int(self._clock)

    def config(self) -> dict[str, Any]:
        """Settings for an empty one-board twin: ``Leaderboard(**board.config())``."""
        return {"order": self.order, "tie_break": self._tie_break, "rank_style": self._rank_style}

    def shard_of(self, member: Member) -> int:
        """The index of the shard that holds (or would hold) ``member``."""
        return shard_of(member, len(self._boards))

    def close(self) -> None:
        """Close the Redis client :meth:`on_redis` made from a URL; otherwise
        nothing to release (the shards are the caller's).  Reads and writes
        after it reconnect, as a closed redis-py client does.

        Runtime complexity: O(1)
        """
        if self._own_client is not None:
            self._own_client.close()

    def __enter__(self) -> ShardedLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        with self._lock:  # a sum over shards: not split by a batch
            return sum(self._sizes())

    def __contains__(self, member: object) -> bool:
        shard = self._shard_or_none(member)
        return shard is not None and member in shard.board

    def __repr__(self) -> str:
        return (
            f"ShardedLeaderboard(shards={len(self._boards)}, order={self.order!r}, "
            f"tie_break={self._tie_break!r}, rank_style={self._rank_style!r})"
        )

    # ------------------------------------------------------------------
    # Writes: the public methods and their checks are the contract's
    # (rankengine.board.writes.BoardWrites); these are its primitives, called
    # under the lock with checked arguments: one shard each, under the
    # global clock (a shard checks them again, as its own contract does)
    # ------------------------------------------------------------------
    def _set_checked(
        self, member: Member, score: Score, when: When | None, meta: dict[str, Any] | None
    ) -> bool:
        return bool(self._write(member, lambda b: b.set(member, score, when=when, meta=meta)))

    def _incr_checked(self, member: Member, delta: Score, when: When | None) -> Score | None:
        return self._write(member, lambda b: b.incr(member, delta, when=when))  # type: ignore[no-any-return]

    def _set_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], when: When | None
    ) -> int:
        return self._batch(items, when, increment=False)[0]

    def _incr_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        return self._batch(items, None, increment=True)[1]

    def _remove_member(self, member: Member) -> bool:
        return self._remove_members([member]) == 1

    def _remove_members(self, members: list[Any]) -> int:
        groups: dict[int, list[Any]] = {}
        for member in dict.fromkeys(members):
            groups.setdefault(self.shard_of(member), []).append(member)
        return sum(self._boards[i].remove_many(group) for i, group in groups.items())

    def _clear_all(self) -> None:
        for board in self._boards:
            board.clear()

    def _set_meta_checked(self, member: Member, meta: dict[str, Any] | None) -> None:
        self._boards[self.shard_of(member)].set_meta(member, meta)

    def meta(self, member: Member) -> dict[str, Any] | None:
        # (an extension point of BoardAPI, as score: one shard)
        shard = self._shard_or_none(member)
        return None if shard is None else shard.board.meta(member)

    # ------------------------------------------------------------------
    # Pops and pruning: primitives of BoardAPI, which holds the public
    # methods and their checks (each shard's part is atomic, the whole is not)
    # ------------------------------------------------------------------
    def _pop(self, count: int, *, best: bool, with_meta: bool) -> list[Entry]:
        with self._lock:
            if best:
                rows = self._window(0, count, with_meta)
                entries = self._entries(rows, 0, "unique")
            else:
                sizes = self._sizes()
                n = sum(sizes)
                count = min(count, n)
                rows = self._window(n - count, n, with_meta, sizes=sizes)
                entries = self._entries(rows, n - count, "unique")[::-1]
            self._remove_rows(rows)
            return entries

    def _remove_ranks(self, start: int, stop: int) -> int:
        with self._lock:
            sizes = self._sizes()
            lo, hi = _rank_window(start, stop, sum(sizes))
            rows = self._window(lo, hi, False, sizes=sizes)
            self._remove_rows(rows)
            return len(rows)

    def _remove_scores(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        flags = {"min_inclusive": low_inclusive, "max_inclusive": high_inclusive}
        with self._lock:
            return sum(self._map(lambda s: s.board.remove_by_score(low, high, **flags)))

    def _keep_top(self, n: int) -> int:
        with self._lock:
            return self._remove_ranks(n + 1, -1) if n < len(self) else 0

    # ------------------------------------------------------------------
    # Point reads
    # ------------------------------------------------------------------
    def score(self, member: Member, default: Any = None) -> Any:
        # (an extension point of BoardAPI, which holds the docstring: one shard)
        shard = self._shard_or_none(member)
        return default if shard is None else shard.board.score(member, default)

    def _rank_of_member(self, member: Member, style: RankStyle) -> int | None:
        # members strictly ahead on every shard, plus one: O(S log N)
        # (dense: O(S D) for D better distinct scores)
        found = self._entry_of(member, style, False)
        return None if found is None else found.rank

    def _entry_of(self, member: Member, style: RankStyle, with_meta: bool) -> Entry | None:
        shard = self._shard_or_none(member)
        if shard is None:
            return None
        with self._lock:
            key = self._now(shard.key(member))
            if key is None:
                return None
            primary, tie, score = key
            if style == "unique":
                rank = sum(self._map(lambda s: s.before(primary, tie, member))) + 1
            elif style == "competition":
                rank = self._ahead(primary) + 1
            else:
                rank = self._distinct_ahead(primary) + 1
            meta = shard.board.meta(member) if with_meta else None
            return Entry(member, score, rank, meta)

    def _entries_of(
        self, members: list[Any], style: RankStyle, with_meta: bool
    ) -> list[Entry | None]:
        with self._lock:  # every entry from the same board, not split by a write
            return [self._entry_of(m, style, with_meta) for m in members]

    def _at_rank(self, rank: int, style: RankStyle, with_meta: bool) -> Entry:
        given = rank
        with self._lock:
            sizes = self._sizes()
            n = sum(sizes)
            rank = given + n + 1 if given < 0 else given
            if not 1 <= rank <= n:
                raise rank_outside(given, n)
            rows = self._window(rank - 1, rank, with_meta, sizes=sizes)
            return self._entries(rows, rank - 1, style)[0]

    def _rank_for_score(self, score: Score, style: RankStyle) -> int:
        value = self._codec.check(score)
        with self._lock:  # every shard's count from the same board
            if style == "dense":
                return self._distinct_ahead(self._codec.primary(value)) + 1
            ranks = self._map(lambda s: s.rank_for(value, style))
        return int(sum(ranks)) - len(ranks) + 1

    def _score_counts(self, member: Member) -> tuple[int, int, int] | None:
        with self._lock:  # the member's score and the counts from the same board
            value = self.score(member, MISSING)
            if value is MISSING:
                return None
            counts = self._map(
                lambda s: (
                    s.count(None, value, True, False),
                    s.count(None, value, True, True),
                    s.size(),
                )
            )
        lower, upper, n = (int(sum(column)) for column in zip(*counts, strict=True))
        return lower, upper, n

    def _score_at_percentile(self, p: int | float) -> Score | None:
        with self._lock:
            sizes = self._sizes()
            n = sum(sizes)
            if n == 0:
                return None
            x = (n - 1) * p / 100
            lo = math.floor(x)
            hi = min(lo + 1, n - 1)
            # worst-first index j is best-first rank n - 1 - j
            rows = self._window(n - 1 - hi, n - lo, False, sizes=sizes)
            low_score, high_score = rows[-1][3], rows[0][3]
        if self._codec.columns is not None or lo == x:
            return low_score  # type: ignore[no-any-return]
        return interpolate(low_score, high_score, x - lo, p)

    # ------------------------------------------------------------------
    # Range reads: merged, verified windows
    # ------------------------------------------------------------------
    def _top_rows(self, k: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        # a k-way merge of every shard's best k: O(S k + k log S)
        with self._lock:
            return self._entries(self._window(0, k, with_meta), 0, style)

    def _rank_rows(self, start: int, stop: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        # O(S (k + log N)) when the first guess holds
        with self._lock:
            sizes = self._sizes()
            lo, hi = _rank_window(start, stop, sum(sizes))
            return self._entries(self._window(lo, hi, with_meta, sizes=sizes), lo, style)

    def _page_rows(self, number: int, size: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        with self._lock:
            sizes = self._sizes()
            n = sum(sizes)
            number = min(max(number, 1), max(-(-n // size), 1))
            lo = (number - 1) * size
            rows = self._window(lo, min(lo + size, n), with_meta, sizes=sizes)
            return self._entries(rows, lo, style)

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
        # on every shard the rows just ahead of and behind the member's key
        shard = self._shard_or_none(member)
        if shard is None:
            return []
        with self._lock:
            key = self._now(shard.key(member))
            if key is None:
                return []
            counted = self._map(lambda s: (s.before(key[0], key[1], member), s.size()))
            ahead, sizes = [c for c, _ in counted], [z for _, z in counted]
            n = sum(sizes)
            r0 = sum(ahead)
            lo, hi = r0 - above, r0 + below + 1
            if fill:
                if lo < 0:
                    hi, lo = min(n, hi - lo), 0
                elif hi > n:
                    lo, hi = max(0, lo - (hi - n)), n
            lo, hi = max(lo, 0), min(hi, n)
            guess = [a - (r0 - lo) for a in ahead]
            return self._entries(self._window(lo, hi, with_meta, guess, sizes), lo, style)

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
            lo, hi, sizes = self._score_positions(low, high, low_inclusive, high_inclusive)
            n = sum(sizes)
            first, last = (n - hi, n - lo) if self._desc else (lo, hi)
            first += offset
            if limit is not None:
                last = builtins_min(last, first + limit)
            if first >= last:
                return []
            rows = self._window(first, last, with_meta, sizes=sizes)
            return self._entries(rows, first, style)

    def _count_between(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        with self._lock:  # every shard's count from the same board
            return sum(self._map(lambda s: s.count(low, high, low_inclusive, high_inclusive)))

    def items(self) -> list[tuple[Member, Score]]:
        # (an extension point of BoardAPI: a merge of every shard, O(N log S))
        with self._lock:
            return [(row[2], row[3]) for row in self._window(0, _ALL, False)]

    # ------------------------------------------------------------------
    # Invariants
    # ------------------------------------------------------------------
    def _check(self) -> None:
        """Every shard's invariants, placement, and the clock."""
        with self._lock:
            for i, board in enumerate(self._boards):
                board._check()
                for member, _ in board.items():
                    assert self.shard_of(member) == i, f"{member!r} is on shard {i}"
            assert self._clock <= max(self._map(Shard.clock)) or not len(self)

    # ------------------------------------------------------------------
    # Helpers
    # ------------------------------------------------------------------
    def _shard_or_none(self, member: object) -> Shard | None:
        kind = type(member)
        if kind is str or kind is bytes or kind is int or is_member(member):
            return self._shards[self.shard_of(member)]  # type: ignore[arg-type]
        check_lookup(member)  # a hashable value of another type is just absent
        return None

    def _member_type(self) -> type | None:
        for shard in self._shards:
            kind = shard.member_type()
            if kind is not None:
                return kind
        return None

    def _check_member(self, member: object, kind: type | None = MISSING) -> Member:  # type: ignore[assignment]
        """As the one-board check: on a ``tie_break="member"`` board every
        member has the type of the members already there (on any shard).
        Returns ``member`` as given (each shard makes it plain itself)."""
        check_member(member)
        if self._tie_break != "member":
            return member  # type: ignore[return-value]
        have = self._member_type() if kind is MISSING else kind
        if have is not None and type(member) is not have:
            raise TypeError(
                f"this board breaks ties by member and holds {have.__name__} "
                f"members; {type(member).__name__} members would not compare"
            )
        return member  # type: ignore[return-value]

    def _write(self, member: Member, action: Callable[[Any], Any]) -> Any:
        """``action`` on the shard of ``member`` (checked by the caller)."""
        with self._lock:
            shard = self._shards[self.shard_of(member)]
            with shard.floor(self._clock):
                result = action(shard.board)
            self._clock = max(self._clock, shard.last_clock())
            return result

    def _batch(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        when: When | None,
        *,
        increment: bool,
    ) -> tuple[int, dict[Member, Score]]:
        """Plan a batch as consecutive single writes would run it, then apply
        each shard's part in one call.

        Returns what ``set_many`` reports (how many members changed) and what
        ``incr_many`` reports (each member's score now).

        A shard written by another writer since the plan read it refuses the
        plan's part.  The batch then re-reads the shards it has not written
        yet (that one included) and plans their part again, from what they
        hold now and with tie clocks after every clock on the board, in
        batch order; what that plan reports replaces the first plan's for
        their members.  So the batch never gives two members the same tie
        clock (the old plan's clocks for the later shards would repeat or
        undercut the ones the other writer's write took), and its members
        tie as a serial run would leave them: first the part already written,
        then the rest in batch order.
        """
        what = "delta" if increment else "score"
        source = items.items() if isinstance(items, Mapping) else items
        codec = self._codec
        with self._lock:
            kind = self._member_type() if self._tie_break == "member" else None
            pairs: list[tuple[Any, Score]] = []
            pair: object = None
            try:
                for pair in source:
                    if not isinstance(pair, tuple) or len(pair) != 2:
                        raise TypeError(f"expected (member, {what}) pairs, got {pair!r}")
                    member, value = pair
                    self._check_member(member, kind)
                    if self._tie_break == "member" and kind is None:
                        kind = type(member)
                    pairs.append((member, codec.check(value, what)))
            except (TypeError, ValueError, OverflowError) as exc:
                raise batch_error(exc, len(pairs), pair) from None
            placed = {m: self.shard_of(m) for m, _ in pairs}
            groups: dict[int, list[Any]] = {}
            for member in dict.fromkeys(placed):
                groups.setdefault(placed[member], []).append(member)
            states: dict[Any, Any] = {}
            for i, members in groups.items():
                states.update(self._shards[i].states(members))
            current, stamps, results, clock = self._plan(
                pairs, states, self._clock, when, increment
            )
            for member, stamp in stamps.items():
                shard = self._shards[placed[member]]
                shard.validate(current[member])
                if shard.remote and stamp > MAXCLOCK:
                    # A Redis shard refuses it in its own script, but only
                    # after the shards before it took their part of the batch.
                    raise ValueError(
                        f"the tie clock would pass 2**53 - 1 (it is at {self._clock}), the "
                        "largest a Redis shard holds: the batch is refused whole, nothing "
                        "was written"
                    )
            order = list(groups)
            written = 0  # changes of the shards already written
            at = 0
            while at < len(order):
                i = order[at]
                changes: list[Change] = [
                    (PUT, m, current[m], c) for m, c in stamps.items() if placed[m] == i
                ]
                if not changes:
                    at += 1
                    continue  # nothing to write: what the plan read stands (as if run first)
                expect = [(m, states[m]) for m in groups[i]]
                if self._shards[i].commit(changes, expect):
                    written += len(changes)
                    at += 1
                    continue
                # Another writer changed shard i: plan the shards not written
                # yet again, from their states now, after every clock in use.
                rest = set(order[at:])
                states = {}
                for j in order[at:]:
                    states.update(self._shards[j].states(groups[j]))
                base = max(self._clock, *self._map(Shard.clock))
                mine = [(m, v) for m, v in pairs if placed[m] in rest]
                current, stamps, replanned, clock = self._plan(mine, states, base, when, increment)
                for member in current:
                    self._shards[placed[member]].validate(current[member])
                results.update(replanned)
            self._clock = max(self._clock, clock)
            return written, results

    def _plan(
        self,
        pairs: list[tuple[Any, Score]],
        states: dict[Any, Any],
        clock: int,
        when: When | None,
        increment: bool,
    ) -> tuple[dict[Any, Any], dict[Any, int], dict[Member, Score], int]:
        """:meth:`Leaderboard._apply_batch` over every shard at once: run
        ``pairs`` one after another against ``states`` (exact scores, or
        ``MISSING``), the clock counting up from ``clock``.

        Returns each changed member's final score, the tie clock of its last
        change (in clock order), what each member reports (its score after
        the batch; none for a pair ``when`` skipped) and the last clock used.
        """
        codec = self._codec
        current: dict[Any, Any] = {}
        stamps: dict[Any, int] = {}
        results: dict[Member, Score] = {}
        zero = 0 if codec.columns is None else (0,) * codec.columns
        for member, value in pairs:
            old = current.get(member, states[member])
            if increment:
                new = codec.add(zero if old is MISSING else old, value, member)
            else:
                new = value
                if when is not None and codec.blocks(when, None if old is MISSING else old, new):
                    continue
            if old is not MISSING and codec.primary(new) == codec.primary(old):
                results[member] = old  # an equal score: the shard keeps the one it holds
                continue
            results[member] = new
            clock += 1
            current[member] = new
            stamps.pop(member, None)
            stamps[member] = clock
        return current, stamps, results, clock

    def _remove_rows(self, rows: list[tuple[Any, ...]]) -> None:
        groups: dict[int, list[Any]] = {}
        for row in rows:
            groups.setdefault(self.shard_of(row[2]), []).append(row[2])
        for i, members in groups.items():
            self._boards[i].remove_many(members)


builtins_min = min


def _rank_window(start: int, stop: int, n: int) -> tuple[int, int]:
    """Checked 1-based inclusive ranks (nonzero, negative from the bottom)
    to 0-based [lo, hi)."""
    if start < 0:
        start += n + 1
    if stop < 0:
        stop += n + 1
    lo = max(start, 1) - 1
    hi = builtins_min(stop, n)
    return (lo, hi) if lo < hi else (0, 0)


def _sharded_from_shards(
    boards: list[Leaderboard], rank_style: RankStyle, clock: int
) -> ShardedLeaderboard:
    """Rebuild a pickled :class:`ShardedLeaderboard` from its unpickled shards.

    Runtime complexity: O(S)
    """
    board = ShardedLeaderboard(boards, rank_style=rank_style)
    board._clock = max(board._clock, clock)
    return board


if TYPE_CHECKING:

    def _answers_the_contract(board: ShardedLeaderboard) -> Board:
        """mypy checks here that the board answers the contract."""
        return board
