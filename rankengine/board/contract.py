"""The board contract: the API every exact board kind answers, stated once.

Six kinds of board answer the same questions -- the in-memory
:class:`~rankengine.Leaderboard` (and the durable board, a subclass), the
board on Redis, the sharded board, the current period of a periodic board,
and, where the operation has a meaning, the sliding-window and decayed
boards.  This module is where that API lives:

:class:`Board`
    A :class:`typing.Protocol` naming every public method and its
    signature, as :class:`~rankengine.index.protocol.OrderedIndex` does for
    the indexes (in :mod:`rankengine.board.protocol`, re-exported here).
    Code that takes "any board" annotates with it; mypy checks that the
    in-memory, Redis and sharded boards answer it (a ``TYPE_CHECKING``
    function at the end of each of their modules).

:class:`BoardAPI`
    The public methods themselves, each with its docstring (summary, prose,
    complexity, doctest) and its argument checks, in the order every kind
    checks them (:mod:`rankengine.board.checks` holds the rules).  A method
    checks its arguments, then calls one *primitive* that the kind supplies
    with the arguments already checked::

        top(k, style=, with_meta=)                      public, here
          with_meta a bool?  k a count?  style known?   checks, here
          -> self._top_rows(k, style, with_meta)        primitive, each kind

    The primitives are listed in :data:`PRIMITIVES`.  A kind supplies them
    and inherits the rest; ``tests/test_board_conformance.py`` runs the same
    behaviour tests over every kind.

The writes ``set``, ``incr``, ``set_many``, ``incr_many``, ``remove``,
``remove_many``, ``set_meta`` and ``clear`` are stated once in
:class:`rankengine.board.writes.BoardWrites`, its companion (the same
pattern: checks there, one primitive per write, listed in its
``WRITE_PRIMITIVES``); the in-memory, durable, sharded and Redis boards
inherit it.  The time boards' writes go to the board a time picks, with
bookkeeping of their own per write: each is declared the contract's by
:func:`rankengine.board.routing.at_time` (its signature checked against
the contract's plus ``t=``, the contract's rules in its docstring).

The container reads ``__len__``, ``__contains__``, ``score``, ``meta`` and
``items`` are *extension points* (:data:`EXTENSION_POINTS`): their
docstrings are :class:`BoardAPI`'s and each kind writes the body (each
reads its own store); ``__iter__`` and ``__getitem__`` are made from them
once, here (the in-memory board answers both with fused bodies of its own).

Hot path: the in-memory board answers :meth:`BoardAPI.rank` (and the
writes ``set`` and ``incr``) with fused bodies of its own (the checks and
the primitive inlined: the hottest calls), held to the same behaviour by
the conformance suite.  Their docstrings are the contract's
(``inspect.getdoc`` and ``help()`` find a base class's docstring when an
override has none).

Reads that another board answers (a periodic board's period, a sliding
window's window board) are made from these methods by
:func:`rankengine.board.routing.routed`.

Every check raises before anything is read or written, so a refused call
changes nothing; which argument is checked first decides the error when
several are bad, and it is the same on every kind
(``tests/test_board_conformance.py``, ``tests/test_argument_order.py``).

>>> from rankengine import Leaderboard
>>> isinstance(Leaderboard(), BoardAPI), sorted(PRIMITIVES)[:3]
(True, ['_around_rows', '_at_rank', '_count_between'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from rankengine.board.checks import (
    check_count,
    check_flag,
    check_int,
    check_percentile,
    check_percentile_method,
    check_ranks,
    check_size,
    check_style,
    member_list,
    not_a_flag,
)
from rankengine.board.core import Entry, RankStyle
from rankengine.board.protocol import DEFAULT_PAGE_SIZE, Board, PercentileMethod, When
from rankengine.board.scoring import Member, Score

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "EXTENSION_POINTS",
    "PRIMITIVES",
    "Board",
    "BoardAPI",
    "PercentileMethod",
    "When",
]

#: What ``__getitem__`` passes to ``score`` as its default: no caller has it.
_ABSENT: Final = object()

#: The extension points of :class:`BoardAPI`: public methods whose
#: docstrings it holds and whose bodies each kind writes (see the class).
EXTENSION_POINTS: Final = ("__len__", "__contains__", "score", "meta", "items")

#: The primitives a kind supplies to :class:`BoardAPI` (see the stubs at the
#: end of the class), each called with checked arguments: a count is an
#: ``int >= 0``, a rank a nonzero ``int``, a style one of the three, a flag
#: a ``bool``.  Score bounds are checked by the primitive (its codec).
PRIMITIVES: Final = (
    "_rank_of_member",
    "_entry_of",
    "_entries_of",
    "_at_rank",
    "_rank_for_score",
    "_score_counts",
    "_score_at_percentile",
    "_top_rows",
    "_rank_rows",
    "_page_rows",
    "_around_rows",
    "_score_rows",
    "_count_between",
    "_pop",
    "_remove_ranks",
    "_remove_scores",
    "_keep_top",
)


class BoardAPI:
    """The public reads and the pops and prunes of every exact board kind:
    docstrings and argument checks here, the work in the kind's primitives
    (see :data:`PRIMITIVES`).

    A kind inherits from it and supplies ``_rank_style``, ``_desc`` (True
    when a higher score ranks first), the primitives, and the *extension
    points*: the container reads ``__len__``, ``__contains__``, ``score``,
    ``meta`` and ``items``, whose docstrings are here and whose bodies each
    kind writes (each reads its own store; their only argument is a member,
    which any value may be: a value that is not a member is absent).
    ``__iter__`` and ``__getitem__`` are made from them here.
    """

    __slots__ = ()

    _rank_style: RankStyle
    _desc: bool

    # ------------------------------------------------------------------
    # A container of members: extension points, and what is made of them
    # ------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of members.

        Runtime complexity: O(1) (Redis: one round trip; sharded: one per shard)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> len(board)
        2
        """
        raise NotImplementedError  # pragma: no cover - an extension point

    def __contains__(self, member: object) -> bool:
        """True when ``member`` is on the board.  A value that only equals a
        member (``True`` or ``1.0`` for the member ``1``) is not on it, as on
        every kind.

        Runtime complexity: O(1) (Redis: one round trip; sharded: one shard)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set(1, 5)
        True
        >>> 1 in board, True in board, 2 in board
        (True, False, False)
        """
        raise NotImplementedError  # pragma: no cover - an extension point

    def __iter__(self) -> Iterator[Member]:
        """Members in rank order, best first: a snapshot, one read of the
        whole board (:meth:`items`).

        Runtime complexity: O(N) (Redis: one round trip)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> list(board)
        ['bob', 'ann']
        """
        return iter([member for member, _ in self.items()])

    def __getitem__(self, member: Member) -> Score:
        """The score of ``member`` (:meth:`score`); ``KeyError`` when absent.

        Runtime complexity: as :meth:`score`

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 5)
        True
        >>> board["ann"]
        5
        >>> board["zed"]
        Traceback (most recent call last):
        ...
        KeyError: 'zed'
        """
        value = self.score(member, _ABSENT)
        if value is _ABSENT:
            raise KeyError(member)
        return value  # type: ignore[no-any-return]

    def score(self, member: Member, default: Any = None) -> Any:
        """The member's score, or ``default`` when absent.

        Runtime complexity: O(1) (Redis: one round trip; sharded: one shard)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 5)
        True
        >>> board.score("ann"), board.score("zed"), board.score("zed", 0)
        (5, None, 0)
        """
        raise NotImplementedError  # pragma: no cover - an extension point

    def meta(self, member: Member) -> dict[str, Any] | None:
        """A copy of the member's metadata, or None (absent, or none set):
        changing the copy changes nothing on the board.

        Runtime complexity: O(size of meta) (Redis: one round trip; sharded:
        one shard)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set("ann", 5, meta={"name": "Ann"})
        True
        >>> board.meta("ann"), board.meta("zed")
        ({'name': 'Ann'}, None)
        """
        raise NotImplementedError  # pragma: no cover - an extension point

    def items(self) -> list[tuple[Member, Score]]:
        """``(member, score)`` pairs in rank order, best first.

        Runtime complexity: O(N) (Redis: one round trip; sharded: a merge of
        every shard's)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> board.items()
        [('bob', 9), ('ann', 5)]
        """
        raise NotImplementedError  # pragma: no cover - an extension point

    # ------------------------------------------------------------------
    # Point reads
    # ------------------------------------------------------------------
    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None:
        """The member's 1-based rank, or None when absent.

        ``style`` (default: the board's ``rank_style``) numbers ties:
        ``"unique"`` 1, 2, 3, 4, 5 -- ``"dense"`` 1, 1, 2, 2, 3 --
        ``"competition"`` 1, 1, 3, 3, 5 for scores 50, 50, 30, 30, 10.

        Runtime complexity: O(log N) (Redis: one or two round trips;
        sharded: O(S log N) for S shards)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 50, "bob": 50, "cid": 30})
        3
        >>> board.rank("bob"), board.rank("cid", style="dense"), board.rank("zed")
        (2, 2, None)
        """
        return self._rank_of_member(member, self._style(style))

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
        if style is None:  # (the default style costs no call)
            return self._entry_of(member, self._rank_style, with_meta)
        check_style(style)
        return self._entry_of(member, style, with_meta)

    def entries(
        self,
        members: Iterable[Member],
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry | None]:
        """Entries for a list of members (a friends list), in the order given;
        a missing member gives None in its place.  A bare ``str`` is refused,
        not read as a list of one-letter members.

        Runtime complexity: O(k log N) (Redis: one round trip for the list)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> board.entries(["bob", "zed"])
        [Entry(member='bob', score=9, rank=1, meta=None), None]
        """
        with_meta = check_flag(with_meta, "with_meta")
        style = self._style(style)  # checked even when no member is given
        return self._entries_of(member_list(members), style, with_meta)

    def at(self, rank: int, *, style: RankStyle | None = None, with_meta: bool = False) -> Entry:
        """The entry at a 1-based position (``-1`` is the last); ``IndexError`` outside.

        The position is always the unique order; ``style`` only changes the
        rank number reported.

        Runtime complexity: O(log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9})
        2
        >>> board.at(1).member, board.at(-1).member
        ('bob', 'ann')
        >>> board.at(3)
        Traceback (most recent call last):
        ...
        IndexError: rank 3 is outside 1..2 (or -2..-1 counting from the bottom)
        """
        with_meta = check_flag(with_meta, "with_meta")
        style = self._style(style)
        return self._at_rank(check_int(rank, "rank"), style, with_meta)

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
        return self._rank_for_score(score, self._style(style))

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
        check_percentile_method(method)
        counts = self._score_counts(member)
        if counts is None:
            return None
        lower, upper, n = counts  # members with a lower / lower-or-equal primary
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
        return self._score_at_percentile(check_percentile(p))

    # ------------------------------------------------------------------
    # Range reads
    # ------------------------------------------------------------------
    def top(
        self, k: int = 10, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> list[Entry]:
        """The best ``k`` entries, best first.

        Runtime complexity: O(log N + k) (sharded: a k-way merge of every
        shard's best k)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"ann": 5, "bob": 9, "cid": 7})
        3
        >>> [(e.member, e.rank) for e in board.top(2)]
        [('bob', 1), ('cid', 2)]
        """
        # (the usual call -- top(10) -- costs identity tests, no check call)
        if with_meta is not False and with_meta is not True:
            raise not_a_flag(with_meta, "with_meta")
        if type(k) is not int or k < 0:
            k = check_count(k, "k")
        if style is not None:
            check_style(style)
            return self._top_rows(k, style, with_meta)
        return self._top_rows(k, self._rank_style, with_meta)

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
        with_meta = check_flag(with_meta, "with_meta")
        start, stop = check_ranks(start, stop)
        return self._rank_rows(start, stop, self._style(style), with_meta)

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
        with_meta = check_flag(with_meta, "with_meta")
        number = check_int(number, "page number")
        size = check_size(size)
        return self._page_rows(number, size, self._style(style), with_meta)

    def pages(self, size: int = DEFAULT_PAGE_SIZE) -> int:
        """Number of pages of ``size`` entries: ``ceil(N / size)``.

        Runtime complexity: O(1) (Redis: one round trip; sharded: O(S))

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({f"p{i}": i for i in range(5)})
        5
        >>> board.pages(2), board.pages()
        (3, 1)
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
        with_meta = check_flag(with_meta, "with_meta")
        above = check_count(above, "above")
        below = check_count(below, "below")
        fill = check_flag(fill, "fill")
        style = self._style(style)  # checked even when the member is absent
        return self._around_rows(member, above, below, fill, style=style, with_meta=with_meta)

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
        column in the direction of the first.  The bounds are checked
        before the inclusive flags.

        Runtime complexity: O(log N + k)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30})
        3
        >>> [e.member for e in board.by_score(10, 30, max_inclusive=False)]
        ['b', 'a']
        """
        with_meta = check_flag(with_meta, "with_meta")
        offset = check_count(offset, "offset")
        if limit is not None:
            limit = check_count(limit, "limit")
        style = self._style(style)  # checked even when the range is empty
        return self._score_rows(
            min,
            max,
            min_inclusive,
            max_inclusive,
            offset=offset,
            limit=limit,
            style=style,
            with_meta=with_meta,
        )

    def count(
        self,
        min: Score | None = None,
        max: Score | None = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int:
        """How many members have a score in the range (the bounds as
        :meth:`by_score` takes them).

        Runtime complexity: O(log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 10, "b": 20, "c": 30})
        3
        >>> board.count(10, 20), board.count(10, 20, min_inclusive=False)
        (2, 1)
        """
        return self._count_between(min, max, min_inclusive, max_inclusive)

    # ------------------------------------------------------------------
    # Pops and pruning
    # ------------------------------------------------------------------
    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` best entries (with their ranks
        before removal), best first.

        Runtime complexity: O(count log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> [e.member for e in board.pop_best(2)], board.items()
        (['a', 'b'], [('c', 1)])
        """
        with_meta = check_flag(with_meta, "with_meta")  # before anything is popped
        return self._pop(check_count(count, "count"), best=True, with_meta=with_meta)

    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]:
        """Remove and return up to ``count`` worst entries, worst first (with
        their ranks before removal).

        Runtime complexity: O(count log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> [(e.member, e.rank) for e in board.pop_worst(2)], board.items()
        ([('c', 3), ('b', 2)], [('a', 3)])
        """
        with_meta = check_flag(with_meta, "with_meta")
        return self._pop(check_count(count, "count"), best=False, with_meta=with_meta)

    def remove_by_rank(self, start: int, stop: int) -> int:
        """Remove the members ranked ``start`` to ``stop`` inclusive (1-based,
        negative counts from the bottom, clamped as :meth:`by_rank`); return
        how many were removed.

        Runtime complexity: O(log N + k log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> board.remove_by_rank(2, -1), list(board)
        (2, ['a'])
        """
        start, stop = check_ranks(start, stop)
        return self._remove_ranks(start, stop)

    def remove_by_score(
        self,
        min: Score | None,  # mirrors the Redis/Python vocabulary of a range
        max: Score | None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int:
        """Remove every member whose score lies in the range (``None`` leaves
        an end open, as in :meth:`by_score`); return how many.

        Runtime complexity: O(log N + k log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> board.remove_by_score(None, 2), board.items()
        (2, [('a', 3)])
        """
        return self._remove_scores(min, max, min_inclusive, max_inclusive)

    def keep_top(self, n: int) -> int:
        """Keep only the best ``n`` members; return how many were removed.

        Runtime complexity: O(log N + k log N)

        >>> from rankengine import Leaderboard
        >>> board = Leaderboard()
        >>> board.set_many({"a": 3, "b": 2, "c": 1})
        3
        >>> board.keep_top(1), board.items()
        (2, [('a', 3)])
        """
        return self._keep_top(check_count(n, "n"))

    # ------------------------------------------------------------------
    # Shared helpers
    # ------------------------------------------------------------------
    def _style(self, style: RankStyle | None) -> RankStyle:
        """``style``, checked, or the board's default when None."""
        if style is None:
            return self._rank_style
        check_style(style)
        return style

    # ------------------------------------------------------------------
    # The primitives each kind supplies (see PRIMITIVES): each returns what
    # its public method returns; _score_counts gives (members with a lower
    # score, with a lower or equal one, N) for a member, or None if absent
    # ------------------------------------------------------------------
    def _rank_of_member(self, member: Member, style: RankStyle) -> int | None:
        raise NotImplementedError

    def _entry_of(self, member: Member, style: RankStyle, with_meta: bool) -> Entry | None:
        raise NotImplementedError

    def _entries_of(
        self, members: list[Any], style: RankStyle, with_meta: bool
    ) -> list[Entry | None]:
        raise NotImplementedError

    def _at_rank(self, rank: int, style: RankStyle, with_meta: bool) -> Entry:
        raise NotImplementedError

    def _rank_for_score(self, score: Score, style: RankStyle) -> int:
        raise NotImplementedError

    def _score_counts(self, member: Member) -> tuple[int, int, int] | None:
        raise NotImplementedError

    def _score_at_percentile(self, p: int | float) -> Score | None:
        raise NotImplementedError

    def _top_rows(self, k: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        raise NotImplementedError

    def _rank_rows(self, start: int, stop: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        raise NotImplementedError

    def _page_rows(self, number: int, size: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        raise NotImplementedError

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
        raise NotImplementedError

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
        raise NotImplementedError

    def _count_between(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        raise NotImplementedError

    def _pop(self, count: int, *, best: bool, with_meta: bool) -> list[Entry]:
        raise NotImplementedError

    def _remove_ranks(self, start: int, stop: int) -> int:
        raise NotImplementedError

    def _remove_scores(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        raise NotImplementedError

    def _keep_top(self, n: int) -> int:
        raise NotImplementedError
