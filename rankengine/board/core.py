"""The state of an exact board, and the one place where it changes.

:class:`BoardCore` holds what every exact board keeps -- a hash map plus an
ordered index (see :mod:`rankengine.index.protocol`)::

    member --> primary                 dict, O(1)   (_primary)
    member --> tie clock               TieMap, O(1) (_tie, first-to-reach boards;
                                                     only members deep in a run
                                                     of equal scores; 256 dicts)
    (primary, tie) in ascending order  skip list or SortedList, O(log N)

-- and the machinery that keeps them in step: ``_commit`` (show the changes
to the listener, then apply), ``_apply``/``_put``/``_delete``, the rank
arithmetic and the dense-rank counts, and ``_check()`` for the invariants.
Bulk rebuilds, snapshot export/restore and copies move the whole state at
once: they are :class:`~rankengine.board.bulk.BulkLoad`, a base of this
class.  :class:`~rankengine.board.reads.BoardReads` adds the reads and
:class:`~rankengine.Leaderboard` the writes.

The index sorts ascending by ``(primary, tie)``.  A descending board (the
default) reads it from the top end, so public rank 1 is the *last* index
position.  That conversion lives in three methods of :class:`BoardCore`:
``_rank_of_position`` (one entry), ``_iter_positions`` (a rank range read
from the index) and ``_ranks_of_positions`` (an index range as ranks).

>>> core = BoardCore()
>>> core._commit([(0, "ann", 10, 1), (0, "bob", 20, 2)])
>>> core._rank_of(member="bob", primary=20, style="unique"), len(core)
(1, 2)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final, Literal, NamedTuple, Protocol, TypeAlias

from sortedcontainers import SortedList

from rankengine.board.bulk import BulkLoad
from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.checks import (
    check_comparable,
    check_style,
)
from rankengine.board.plain import plain_repr
from rankengine.board.scoring import (
    Member,
    Order,
    Score,
    ScoreCodec,
    check_member,
    is_member,
    member_error,
)
from rankengine.board.tiemap import TIE_SHARD_MASK, VACANT_SHARD, TieMap
from rankengine.index.protocol import PROTOCOL_METHODS, RUN_SCAN_LIMIT, OrderedIndex
from rankengine.index.skiplist import SkipList
from rankengine.index.sortedlist import SortedListIndex

__all__ = [
    "BULK_REBUILD_FRACTION",
    "MISSING",
    "TOP_CACHE_SIZE",
    "Backend",
    "BoardCore",
    "Entry",
    "ItemWrites",
    "RankStyle",
    "TieBreak",
    "lookalike",
]

RankStyle: TypeAlias = Literal["unique", "dense", "competition"]
TieBreak: TypeAlias = Literal["first", "member"]
Backend: TypeAlias = Literal["sortedlist", "skiplist"]

_TIE_BREAKS: Final = ("first", "member")
#: What a look-up returns for an absent member (a default no caller can pass).
MISSING: Final = object()

#: How many best rows a board keeps ready for ``top()``: enough for a top 10
#: and for page 1 at the default page size.  A top-k read then costs a slice
#: until a write reaches those rows (most writes in a large board do not).
TOP_CACHE_SIZE: Final = 25

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

    def __repr__(self) -> str:
        """The NamedTuple's repr, with ints beyond Python's int-to-string
        limit written in hexadecimal (see :mod:`rankengine.board.plain`)."""
        return (
            f"Entry(member={plain_repr(self.member)}, score={plain_repr(self.score)}, "
            f"rank={self.rank!r}, meta={plain_repr(self.meta)})"
        )


def _make_index(backend: str | Callable[[], OrderedIndex]) -> OrderedIndex:
    if callable(backend):
        index = backend()
        missing = [name for name in PROTOCOL_METHODS if not callable(getattr(index, name, None))]
        if missing:
            raise TypeError(
                f"backend factory {backend!r} made a {type(index).__name__}, which lacks "
                f"the OrderedIndex methods {', '.join(missing)} (see rankengine.index.protocol)"
            )
        return index
    if backend == "sortedlist":
        return SortedListIndex()
    if backend == "skiplist":
        return SkipList()
    if not isinstance(backend, str) and hasattr(backend, "insert"):
        raise ValueError(
            "backend takes a factory (a class, or a callable with no arguments) "
            f"returning an index, not an index: pass {type(backend).__name__}, "
            f"not {type(backend).__name__}()"
        )
    raise ValueError(
        "backend must be 'sortedlist', 'skiplist' or a factory returning an "
        f"ordered index, not {backend!r}"
    )


class _Writable(Protocol):
    def set(self, member: Member, score: Score) -> bool: ...
    def remove(self, member: Member) -> bool: ...


class ItemWrites:
    """``board[member] = score`` and ``del board[member]`` on every kind of
    board, through the board's own ``set`` and ``remove``.

    >>> from rankengine import Leaderboard
    >>> board = Leaderboard()
    >>> board["ann"] = 10
    >>> board["ann"], board.rank("ann")
    (10, 1)
    >>> del board["ann"]
    >>> del board["ann"]
    Traceback (most recent call last):
    ...
    KeyError: 'ann'
    """

    __slots__ = ()

    def __setitem__(self: _Writable, member: Member, score: Score) -> None:
        """``set(member, score)`` with no options (the member's metadata stays).

        Runtime complexity: O(log N)
        """
        self.set(member, score)

    def __delitem__(self: _Writable, member: Member) -> None:
        """``remove(member)``, except that an absent member raises
        ``KeyError``, as ``del`` on a dict does.

        Runtime complexity: O(log N)
        """
        if not self.remove(member):
            raise KeyError(member)


class BoardCore(BulkLoad):
    """State, invariants and the change machinery shared by every exact board.

    Not used on its own: :class:`~rankengine.Leaderboard` is the public class.
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
        check_style(rank_style)
        self._codec = ScoreCodec(order)
        self._order = self._codec.order
        self._desc = self._codec.descending
        # flags read on every write (cheaper than re-deriving them)
        self._scalar = self._codec.columns is None
        self._first = tie_break == "first"
        self._tie_break: TieBreak = tie_break
        self._rank_style: RankStyle = rank_style
        self._backend = backend
        self._index: OrderedIndex = _make_index(backend)
        if self._first and hasattr(self._index, "oldest_last"):
            # Tell the index which end of a run of equal scores is the oldest
            # (ties are -clock on a descending board): its insert and move
            # then report whether the entry landed near that end.
            self._index.oldest_last = self._desc
        # The index's look-ups by member (None when it has none): a member
        # missing from _tie is moved or ranked in one search, not two.
        self._move_member: Callable[[Any, Any, Any, Any], bool | None] | None = getattr(
            self._index, "move_member", None
        )
        self._position_of: Callable[[Any, Any], int] | None = getattr(
            self._index, "position_of", None
        )
        # member -> primary (for scalar boards the primary *is* the score)
        self._primary: dict[Any, Any] = {}
        # member -> tie clock (first-to-reach boards only), and only for
        # members that lie RUN_SCAN_LIMIT or more entries from the oldest end
        # of their run of equal scores: any other member's tie is read from
        # the index, a short scan of its run (see _find_tie).  Entries agree
        # with the index.  Split in shards (rankengine.board.tiemap): the map
        # grows with the board, and one dict's doubling stops a write for
        # milliseconds.
        self._tie = TieMap()
        self._meta: dict[Any, dict[str, Any]] = {}
        self._clock = 0
        self._member_type: type | None = None
        # Dense ranks: primary -> number of members with it, and the sorted
        # distinct primaries.  Built on the first dense read, then maintained.
        self._counts: dict[Any, int] | None = None
        self._distinct: SortedList | None = None
        # The best TOP_CACHE_SIZE rows (unique ranks, no metadata), kept until a
        # change reaches them; ``_top_floor`` is the primary of the last cached row,
        # or None when the board had fewer members (then any change clears it).
        self._top: list[Entry] | None = None
        self._top_floor: Any = None
        # Lock order: boards built on boards (periodic, window, decayed,
        # sharded, a Redis board with a log) take their own lock first and
        # this one inside it, never the other way round; a durable board
        # takes its own locks inside this one (see durable.py).  No code
        # holds two boards' locks otherwise (combine() takes one at a time).
        self._lock = threading.RLock()
        #: Called with each list of changes *before* it is applied; raising
        #: aborts the write.  The event log hooks in here.
        self._listener: Callable[[list[Change]], None] | None = None

    @property
    def order(self) -> Order | tuple[Order, ...]:
        """The board's order as given at creation (a list of directions
        given is kept as the board's own tuple)."""
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

        >>> from rankengine import Leaderboard

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
        return self._lookup(member) is not MISSING

    def _lookup(self, member: object) -> Any:
        """The member's primary key, or ``MISSING`` when it is absent; a
        value that cannot be looked up (unhashable) raises the write's
        :func:`~rankengine.board.scoring.member_error`.  (``rank`` inlines it.)

        A value that is not a member but equals one (``True`` or ``1.0`` for
        the member ``1``, ``memoryview(b"a")`` for ``b"a"``) is absent, as on
        a Redis or sharded board: the dict alone would find the member.

        Runtime complexity: O(1)
        """
        try:  # free unless it raises: no type test before the look-up
            primary = self._primary.get(member, MISSING)
        except TypeError:
            raise member_error(member) from None
        if primary is not MISSING and type(member) is not str and lookalike(member):
            return MISSING
        return primary

    def __repr__(self) -> str:
        return (
            f"Leaderboard(order={self._order!r}, tie_break={self._tie_break!r}, "
            f"rank_style={self._rank_style!r}, members={len(self)})"
        )

    def _check(self) -> None:
        """Verify the board's invariants and its index's; raise AssertionError."""
        with self._lock:
            self._index._check()
            # the hash map and the index hold the same members
            assert len(self._index) == len(self._primary), (len(self._index), len(self._primary))
            seen = 0
            for primary, tie, member in self._index.iter_range(0, len(self._index)):
                held = self._primary.get(member, MISSING)
                # the same value, not just an equal one (2 and 2.0, 0.0 and -0.0)
                assert held is not MISSING and _same_value(held, primary), (member, held, primary)
                if self._tie_break == "first":
                    # the tie map agrees with the index where it holds a member;
                    # any other member is found in the index by its score
                    kept = self._tie.get(member, MISSING)
                    if kept is MISSING:
                        found = self._locate_tie(member, primary)[0]
                        assert found == tie, ("tie look-up", member, found, tie)
                    else:
                        assert kept == tie, ("stale tie", member, kept, tie)
                else:
                    assert tie == member, (member, tie)
                seen += 1
            assert seen == len(self._primary)
            # the cached best rows equal a fresh read of the index
            if self._top is not None:
                score = self._codec.score
                fresh = [
                    (m, score(p), rank)
                    for rank, (p, _, m) in enumerate(
                        self._iter_positions(0, len(self._top), best_first=True), 1
                    )
                ]
                assert [(e.member, e.score, e.rank) for e in self._top] == fresh, "stale top cache"
                assert len(self._top) == min(TOP_CACHE_SIZE, len(self._primary)), "top cache length"
            # metadata only for present members
            assert all(m in self._primary for m in self._meta), "metadata of an absent member"
            # tie clocks: unique and never ahead of the board clock
            if self._tie_break == "first":
                self._tie._check()
                assert all(m in self._primary for m in self._tie), "tie of an absent member"
                clocks = [abs(t) for _, t, _ in self._index.iter_range(0, len(self._index))]
                assert len(set(clocks)) == len(clocks), "duplicate tie clocks"
                assert not clocks or max(clocks) <= self._clock, (
                    "tie clock ahead of the board clock"
                )
            # dense counts agree with the index: each score's count is the
            # number of members holding it (equal values, 1 and 1.0, are one score)
            if self._counts is not None:
                assert self._distinct is not None
                members_of: dict[Any, int] = {}
                for primary in self._primary.values():
                    members_of[primary] = members_of.get(primary, 0) + 1
                assert self._counts == members_of, "dense counts out of step"
                assert list(self._distinct) == sorted(self._counts), "distinct scores out of step"

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
        primary = score if self._scalar else self._codec.primary(score)
        first = self._first
        if first:
            tie: Any = -clock if self._desc else clock
            # the member's shard of the tie map, read and written below
            ties = self._tie.shards[hash(member) & TIE_SHARD_MASK]
        else:
            tie = member
        old = self._primary.get(member, MISSING)
        if self._top is not None:
            self._touch_top(primary)
            if old is not MISSING:
                self._touch_top(old)
        if old is MISSING:
            near = self._index.insert(primary, tie, member)
            if not self._primary:  # first member of an empty board fixes the type
                self._member_type = type(member)
        else:
            old_tie = ties.get(member) if first else member
            if old_tie is None and old != primary and self._move_member is not None:
                near = self._move_member(old, member, primary, tie)  # one search
            else:
                if old_tie is None:
                    old_tie = self._locate_tie(member, old)[0]
                # A batch can bring a member back to the key it started from
                # (tie by member, score changed and changed back): nothing to
                # move, unless the score came back as another value that
                # compares equal (2 -> 0 -> 2.0, or 0.0 -> 1 -> -0.0), which
                # the index must then hold, as the map does.
                if old != primary or old_tie != tie:
                    near = self._index.move(old, old_tie, primary, tie)
                elif not _same_value(old, primary):
                    self._index.remove(old, old_tie)
                    near = self._index.insert(primary, tie, member)
                else:
                    near = not first or member not in ties  # unchanged: so is the tie map
            if self._counts is not None:
                self._count_remove(old)
        self._primary[member] = primary
        if first:
            # Keep the tie only when the index cannot find the member by a
            # short scan from the oldest end of its run (see rankengine.index.protocol).
            if near:
                ties.pop(member, None)
            elif ties is VACANT_SHARD:
                self._tie[member] = tie  # the slot's first entry (see tiemap)
            else:
                ties[member] = tie
        if self._counts is not None:
            self._count_add(primary)
        self._clock = max(self._clock, clock)

    def _delete(self, member: Any) -> None:
        primary = self._primary.pop(member)
        if self._top is not None:
            self._touch_top(primary)
        if self._first:
            tie = self._tie.shards[hash(member) & TIE_SHARD_MASK].pop(member, None)
            if tie is None:
                tie = self._locate_tie(member, primary)[0]
        else:
            tie = member
        self._index.remove(primary, tie)
        self._meta.pop(member, None)
        if self._counts is not None:
            self._count_remove(primary)

    def _touch_top(self, primary: Any) -> None:
        """Drop the cached top rows if an entry with ``primary`` may sit among them.

        Conservative: an entry on the floor's own score clears the cache even
        if its tie puts it just below.  Entries strictly below the floor cannot
        change the unique ranks above them, so the cache survives them.
        """
        floor = self._top_floor
        if floor is None or (primary >= floor if self._desc else primary <= floor):
            self._top = None

    def _tie_of(self, member: Any) -> Any:
        """The index tie of a present member."""
        if self._tie_break != "first":
            return member
        tie = self._tie.get(member)
        return self._find_tie(member, self._primary[member]) if tie is None else tie

    def _find_tie(self, member: Any, primary: Any) -> Any:
        """Read the tie of a member missing from ``_tie`` from the index.

        The index scans the member's run of equal primaries from its oldest
        end, where a member missing from the map lies within
        ``RUN_SCAN_LIMIT`` entries after any history of ordinary writes (see
        :mod:`rankengine.index.protocol`); usually the run is the member alone.  When
        the scan went further (entries with older clocks arrived after it),
        the tie is kept in ``_tie``, so the next look-up is a dict read.

        Runtime complexity: O(log N) plus the entries scanned past
        """
        tie_of = getattr(self._index, "tie_of", None)
        if tie_of is not None:  # one search (SortedListIndex, SkipList)
            tie, distance = tie_of(primary, member)
        else:
            tie, distance = self._scan_run(member, primary)
        if distance >= RUN_SCAN_LIMIT:
            self._tie[member] = tie
        return tie

    def _locate_tie(self, member: Any, primary: Any) -> tuple[Any, int]:
        """``(tie, distance)`` of a present member from the index, remembering
        nothing (see :meth:`_find_tie`).

        Runtime complexity: O(log N) plus the entries scanned past
        """
        tie_of = getattr(self._index, "tie_of", None)
        if tie_of is not None:
            return tie_of(primary, member)  # type: ignore[no-any-return]
        return self._scan_run(member, primary)

    def _scan_run(self, member: Any, primary: Any) -> tuple[Any, int]:
        """:meth:`_locate_tie` for an index without ``tie_of``: three
        searches, then the run of ``primary`` read from its oldest end.

        Runtime complexity: O(log N) plus the entries scanned past
        """
        index = self._index
        lo = index.count_primary(primary, inclusive=False)
        hi = index.count_primary(primary, inclusive=True)
        run = index.iter_range(lo, hi, reverse=self._desc)
        for distance, (_, tie, other) in enumerate(run):
            if other == member:
                return tie, distance
        raise KeyError(member)  # pragma: no cover - the maps are out of step

    def _rank_of_position(self, position: int) -> int:
        """1-based unique rank of a 0-based index position (the only place
        where the index's ascending order meets the user's ranks)."""
        return len(self._primary) - position if self._desc else position + 1

    def _ranks_of_positions(self, lo: int, hi: int) -> tuple[int, int]:
        """0-based rank range ``[first, last)`` of index positions ``[lo, hi)``."""
        n = len(self._primary)
        return (n - hi, n - lo) if self._desc else (lo, hi)

    def _unique_offset(self, member: Any, primary: Any) -> int:
        return self._rank_of_position(self._position(member, primary)) - 1

    def _position(self, member: Any, primary: Any) -> int:
        """0-based index position of a present member with ``primary``: one
        search by key, or by score and member when ``_tie`` lacks it.

        Runtime complexity: O(log N) plus the entries scanned past
        """
        if not self._first:
            return self._index.position(primary, member)
        tie = self._tie.shards[hash(member) & TIE_SHARD_MASK].get(member)
        if tie is None:
            if self._position_of is not None:  # one search, not two
                return self._position_of(primary, member)
            tie = self._find_tie(member, primary)
        return self._index.position(primary, tie)

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

    def _iter_positions(self, lo: int, hi: int, *, best_first: bool) -> Iterator[Any]:
        """Index entries for 0-based ranks ``lo <= r < hi``."""
        n = len(self._primary)
        if self._desc:
            return self._index.iter_range(n - hi, n - lo, reverse=best_first)
        return self._index.iter_range(lo, hi, reverse=not best_first)

    def _position_columns(self, lo: int, hi: int) -> tuple[list[Any], list[Any]] | None:
        """``(primaries, members)`` for 0-based ranks ``lo <= r < hi``, best
        first, when the index can give columns (``columns_between``); else None."""
        columns = getattr(self._index, "columns_between", None)
        if columns is None:
            return None
        n = len(self._primary)
        if self._desc:
            return columns(n - hi, n - lo, reverse=True)  # type: ignore[no-any-return]
        return columns(lo, hi)  # type: ignore[no-any-return]

    def _ensure_dense(self) -> dict[Any, int]:
        if self._counts is None:
            counts: dict[Any, int] = {}
            for primary in self._primary.values():
                counts[primary] = counts.get(primary, 0) + 1
            self._counts = counts
            self._distinct = SortedList(counts)
        return self._counts

    def _dense_rank(self, primary: Any) -> int:
        """1 + the number of distinct scores strictly ahead of ``primary``."""
        self._ensure_dense()
        distinct = self._distinct
        assert distinct is not None
        if self._desc:
            return len(distinct) - int(distinct.bisect_right(primary)) + 1
        return int(distinct.bisect_left(primary)) + 1

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

    def _zero(self) -> Score:
        return 0 if self._codec.columns is None else (0,) * self._codec.columns

    def _check_member(self, member: object) -> Member:
        """``member`` checked for this board and made plain (see
        :func:`~rankengine.board.scoring.check_member`), or raise.

        Runtime complexity: O(1)
        """
        member = check_member(member)
        if self._tie_break == "member" and self._primary:
            check_comparable(member, self._member_type)
        return member


def lookalike(value: object) -> bool:
    """True for a value found in a dict of members that is not a member: it
    only equals one (``True == 1``, ``1.0 == 1``).  A plain ``str``, ``int``
    or ``bytes`` costs two or three identity tests.

    Runtime complexity: O(1)

    >>> lookalike("ann"), lookalike(1), lookalike(True), lookalike(1.0)
    (False, False, True, True)
    """
    kind = type(value)
    if kind is str or kind is int or kind is bytes:
        return False
    return not is_member(value)


def _same_value(a: Any, b: Any) -> bool:
    """Are two equal primaries also the same value, column by column for
    composite scores: the same type (``2`` and ``2.0`` are not) and, for
    floats, the same sign (``0.0`` and ``-0.0`` are not)?"""
    if type(a) is tuple:
        return type(b) is tuple and all(map(_same_value, a, b))
    if type(a) is not type(b):
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)
