"""The board protocol: what every board kind answers, by name and signature.

:class:`Board` is a :class:`typing.Protocol` naming every public method of
a board and its signature, as :class:`~rankengine.index.protocol.OrderedIndex`
does for the indexes.  Code that takes "any board" annotates with it; mypy
checks that the in-memory, Redis and sharded boards answer it (a
``TYPE_CHECKING`` function at the end of each of their modules).  The
docstrings and argument checks are not here but in the contract's classes
that implement it: :class:`~rankengine.board.contract.BoardAPI` (reads,
pops, prunes, and the container reads, its extension points) and
:class:`~rankengine.board.writes.BoardWrites` (writes).  Beside it, the
types its signatures share: :data:`When`, :data:`PercentileMethod`, and
the default page size.

>>> from rankengine import Leaderboard
>>> def best(board: Board) -> str:
...     return board.top(1)[0].member
>>> board = Leaderboard()
>>> board.set_many({"ann": 5, "bob": 9})
2
>>> best(board)
'bob'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Literal, Protocol, TypeAlias, overload

from rankengine.board.core import Entry, RankStyle, TieBreak
from rankengine.board.scoring import Member, Order, Score

__all__ = ["DEFAULT_PAGE_SIZE", "Board", "PercentileMethod", "When"]

When: TypeAlias = Literal["new", "present", "better", "worse"]
PercentileMethod: TypeAlias = Literal["below", "at_or_below", "midpoint"]

#: Page size used when none is given (agoragames' default).
DEFAULT_PAGE_SIZE: Final = 25


class Board(Protocol):
    """What every exact board kind answers: its settings, reads and writes.

    The docstrings are :class:`BoardAPI`'s (the container reads' too: they
    are its extension points) and the writes'
    :class:`~rankengine.board.writes.BoardWrites`'.
    """

    # -- settings ------------------------------------------------------
    @property
    def order(self) -> Order | tuple[Order, ...]: ...
    @property
    def tie_break(self) -> TieBreak: ...
    @property
    def rank_style(self) -> RankStyle: ...
    @property
    def clock(self) -> int: ...
    def config(self) -> dict[str, Any]: ...

    # -- a container of members ----------------------------------------
    def __len__(self) -> int: ...
    def __contains__(self, member: object) -> bool: ...
    def __iter__(self) -> Iterator[Member]: ...
    def __getitem__(self, member: Member) -> Score: ...
    def __setitem__(self, member: Member, score: Score) -> None: ...
    def __delitem__(self, member: Member) -> None: ...

    # -- point reads ---------------------------------------------------
    def score(self, member: Member, default: Any = None) -> Any: ...
    def rank(self, member: Member, *, style: RankStyle | None = None) -> int | None: ...
    def entry(
        self, member: Member, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> Entry | None: ...
    def entries(
        self, members: Iterable[Member], *, style: RankStyle | None = None, with_meta: bool = False
    ) -> list[Entry | None]: ...
    def at(
        self, rank: int, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> Entry: ...
    def rank_for_score(self, score: Score, *, style: RankStyle | None = None) -> int: ...
    def percentile(
        self, member: Member, *, method: PercentileMethod = "midpoint"
    ) -> float | None: ...
    def score_at_percentile(self, p: float) -> Score | None: ...
    def meta(self, member: Member) -> dict[str, Any] | None: ...

    # -- range reads ---------------------------------------------------
    def top(
        self, k: int = 10, *, style: RankStyle | None = None, with_meta: bool = False
    ) -> list[Entry]: ...
    def by_rank(
        self,
        start: int = 1,
        stop: int = -1,
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]: ...
    def page(
        self,
        number: int,
        size: int = DEFAULT_PAGE_SIZE,
        *,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]: ...
    def pages(self, size: int = DEFAULT_PAGE_SIZE) -> int: ...
    def around(
        self,
        member: Member,
        above: int = 5,
        below: int = 5,
        *,
        fill: bool = False,
        style: RankStyle | None = None,
        with_meta: bool = False,
    ) -> list[Entry]: ...
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
    ) -> list[Entry]: ...
    def count(
        self,
        min: Score | None = None,
        max: Score | None = None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int: ...
    def items(self) -> list[tuple[Member, Score]]: ...

    # -- writes --------------------------------------------------------
    def set(
        self,
        member: Member,
        score: Score,
        *,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool: ...
    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: None = None) -> Score: ...
    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: When) -> Score | None: ...
    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        when: When | None = None,
    ) -> int: ...
    def incr_many(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]: ...
    def remove(self, member: Member) -> bool: ...
    def remove_many(self, members: Iterable[Member]) -> int: ...
    def set_meta(self, member: Member, meta: Mapping[str, Any] | None) -> None: ...
    def clear(self) -> None: ...
    def pop_best(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]: ...
    def pop_worst(self, count: int = 1, *, with_meta: bool = False) -> list[Entry]: ...
    def remove_by_rank(self, start: int, stop: int) -> int: ...
    def remove_by_score(
        self,
        min: Score | None,
        max: Score | None,
        *,
        min_inclusive: bool = True,
        max_inclusive: bool = True,
    ) -> int: ...
    def keep_top(self, n: int) -> int: ...

    # -- invariants ----------------------------------------------------
    def _check(self) -> None: ...
