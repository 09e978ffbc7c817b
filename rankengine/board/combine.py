"""Union and intersection of boards (Redis ``ZUNIONSTORE``/``ZINTERSTORE``).

Rules, as in Redis:

* each input score is multiplied by its board's weight (default 1); a
  product that is NaN (``0 * inf``) counts as 0;
* ``aggregate="sum"`` adds the weighted scores, and ``+inf + -inf`` counts
  as 0; ``"min"``/``"max"`` keep the lowest/highest;
* a union holds every member of any input, an intersection only members
  present in all inputs;
* the inputs and the result have scalar scores: a composite-score board,
  or a composite ``order`` for the result, is refused with ``TypeError``.

Two details differ from the server's own commands: the weighted scores are
combined in the order the boards are given (``ZUNIONSTORE`` and
``ZINTERSTORE`` start from the smallest set, which can change a float sum's
last digit, or whether ``+inf + -inf`` meets a third score before or after
becoming 0), and a NaN product counts as 0 wherever it occurs (``ZINTERSTORE``
does so only in its smallest set; in another it turns the sum into 0).

The result is a new board with the first input's settings (override any
with keyword arguments); a destination that already holds a board (a
durable board's path, a Redis board's name) is refused with ``ValueError``.
Its first-to-reach tie order follows first appearance: inputs in the order
given, each read best first.  A member's metadata comes from the first input
that has some.  The result's members and metadata are one write: a durable
result logs them as one record, so a crash leaves all of it or none.

>>> from rankengine import Leaderboard
>>> a, b = Leaderboard(), Leaderboard()
>>> a.set_many({"ann": 10, "bob": 5})
2
>>> b.set_many({"bob": 7, "cid": 1})
2
>>> Leaderboard.union([a, b]).items()
[('bob', 12), ('ann', 10), ('cid', 1)]
>>> Leaderboard.intersection([a, b], weights=[1, 2], aggregate="max").items()
[('bob', 14)]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rankengine.board.core import BoardCore
from rankengine.board.scoring import check_score, out_of_float_range

if TYPE_CHECKING:
    from rankengine.board.leaderboard import Leaderboard

__all__ = [
    "aggregate_scores",
    "board_list",
    "check_new",
    "combine",
    "weigh",
    "weight_list",
]

_AGGREGATES = ("sum", "min", "max")


def combine(
    cls: type[Leaderboard],
    boards: Iterable[Leaderboard],
    weights: Iterable[float] | None,
    aggregate: str,
    *,
    intersect: bool,
    config: dict[str, Any],
) -> Leaderboard:
    """Build the union (or intersection) of ``boards`` as a new board of ``cls``.

    Runtime complexity: O(T log T) for T input entries in all.
    """
    inputs = board_list(boards)
    if not inputs:
        raise ValueError("combine needs at least one board")
    for board in inputs:
        if not isinstance(board, BoardCore):
            raise TypeError(f"can only combine Leaderboards, not {type(board).__name__}")
        if board._codec.columns is not None:
            raise TypeError(
                "union and intersection combine scalar scores only: a composite-score "
                f"board (order={board.order!r}) cannot be summed or weighted"
            )
    factors = weight_list(weights, len(inputs))
    if aggregate not in _AGGREGATES:
        raise ValueError(f"aggregate must be one of {_AGGREGATES}, not {aggregate!r}")
    settings = {**inputs[0].config(), **config}
    if isinstance(settings.get("order"), (tuple, list)):
        # (checked before the result exists: its first write would refuse
        # the sums only once a durable result's directory had been made)
        raise TypeError(
            "union and intersection make scalar scores: the result cannot have "
            f"the composite order {settings['order']!r}"
        )

    totals: dict[Any, Any] = {}
    seen: dict[Any, int] = {}
    metas: dict[Any, dict[str, Any]] = {}
    for board, weight in zip(inputs, factors, strict=True):
        with board._lock:
            rows: list[tuple[Any, Any]] = board.items()  # scalar scores: checked above
            board_meta = dict(board._meta)
        for member, score in rows:
            value = weigh(weight, score, member)
            if member in totals:
                totals[member] = aggregate_scores(aggregate, totals[member], value, member)
                seen[member] += 1
            else:
                totals[member] = value
                seen[member] = 1
            if member not in metas and member in board_meta:
                metas[member] = board_meta[member]
    if intersect:
        totals = {m: s for m, s in totals.items() if seen[m] == len(inputs)}
    if settings.get("tie_break") == "member":
        _check_member_types(totals)
    # Every score is known (and every overflow raised) before the result
    # exists: a durable result's directory is only created for a good union.
    result = cls(**settings)
    check_new(result, "board")
    # One write (one record on a durable result): a crash leaves the whole
    # union with its metadata or nothing, never scores without metadata.
    try:
        result._load_new(
            list(totals.items()), {m: data for m, data in metas.items() if m in totals}
        )
    except BaseException:
        # (a durable result refused its record -- over the record limit, or
        # disk full: nobody else holds it, so it must not keep its
        # directory locked; it stays an empty board a union may be run into)
        _close(result)
        raise
    return result


def board_list(boards: Iterable[Any]) -> list[Any]:
    """``boards`` as a list; one board given alone (which iterates over its
    members) is refused with ``TypeError``, as a bare string is where a
    list of members is expected.

    Runtime complexity: O(len(boards))
    """
    if hasattr(boards, "by_rank"):
        raise TypeError("boards must be a list of boards, not one board: union([board, ...])")
    return list(boards)


def weight_list(weights: Iterable[float] | None, n: int) -> list[Any]:
    """One checked weight per board (1 each when ``weights`` is None).

    Runtime complexity: O(n)
    """
    if weights is None:
        return [1] * n
    if not isinstance(weights, Iterable):
        raise TypeError(f"weights must be a list of numbers, one per board, not {weights!r}")
    factors = [check_score(w, "weight") for w in weights]
    if len(factors) != n:
        raise ValueError(f"{len(factors)} weights for {n} boards")
    return factors


def _check_member_types(totals: dict[Any, Any]) -> None:
    """Refuse, before the result exists, members of more than one type for a
    result that breaks ties by member (they would not compare), as the
    result's own ``set_many`` would refuse them once it had been created.

    Runtime complexity: O(M) for M members
    """
    kinds = list(dict.fromkeys(map(type, totals)))
    if len(kinds) > 1:
        raise TypeError(
            "the result breaks ties by member (tie_break='member'): "
            f"{kinds[0].__name__} and {kinds[1].__name__} members would not compare"
        )


def check_new(result: Any, where: str) -> None:
    """Refuse a result that opened an existing board (a durable board's
    path, a Redis board's name) that has held members: the combination would
    be merged into its stale members.  The result is closed, unchanged.

    Runtime complexity: O(1)
    """
    if len(result) or result.clock:
        _close(result)
        raise ValueError(
            f"the {where} for the result already holds a board (members or history): "
            "union and intersection write a new board"
        )


def _close(result: Any) -> None:
    """Close a result board that is not handed to the caller (a durable
    board's directory lock, a Redis board's client), if it has ``close``.

    Runtime complexity: O(1) plus what its ``close`` does
    """
    close = getattr(result, "close", None)
    if close is not None:
        close()


def weigh(weight: Any, score: Any, member: Any) -> Any:
    """``weight * score``, with 0 for NaN (``0 * inf``), as in Redis; an
    ``OverflowError`` naming ``member`` when an int beyond the float range
    meets a float.  All of it runs before the result board is written."""
    try:
        value = weight * score
    except OverflowError:
        raise out_of_float_range(f"weighted score of {member!r}", weight, "*", score) from None
    if value != value:  # 0 * inf
        return 0.0
    return value


def aggregate_scores(kind: str, old: Any, new: Any, member: Any) -> Any:
    if kind == "min":
        return min(old, new)  # int and float compare exactly, whatever their size
    if kind == "max":
        return max(old, new)
    try:
        total = old + new
    except OverflowError:
        raise out_of_float_range(f"sum of the scores of {member!r}", old, "+", new) from None
    if total != total:  # +inf + -inf counts as 0, as in Redis
        return 0.0
    return total
