"""Union and intersection into a new Redis board.

:meth:`Combining.union` and :meth:`Combining.intersection` combine any
boards with the public API (Redis's ZUNIONSTORE rules: weights, and ``sum``,
``min`` or ``max``) into a new board on Redis, written by
:meth:`Combining._load_new` as ONE write: chunks of :data:`LOAD_CHUNK`
members (or :data:`LOAD_CHUNK_BYTES`) in one MULTI/EXEC transaction.

>>> LOAD_CHUNK, LOAD_CHUNK_BYTES // 2**20
(5000, 32)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Self, TypeVar

from rankengine.board.changes import META, PUT, Change
from rankengine.board.combine import aggregate_scores, board_list, check_new, weigh, weight_list
from rankengine.board.scoring import check_meta
from rankengine.redis.codec import encode_meta
from rankengine.redis.decode import ReplyDecoding

__all__ = [
    "LOAD_CHUNK",
    "LOAD_CHUNK_BYTES",
    "Combining",
]

#: Members per LOAD script when a union or intersection fills its new board;
#: a bigger result goes as several, in one MULTI/EXEC transaction.  A
#: chunk is one command of five arguments per member: a few MB with
#: typical metadata, well below what Redis takes in one command (512 MB
#: per argument, 1 GB of query buffer per client), and a command redis-py
#: builds and sends without holding the whole result twice in memory.
LOAD_CHUNK: Final = 5000
#: ... and at most this many bytes of arguments per chunk (large metadata).
LOAD_CHUNK_BYTES: Final = 32 * 1024 * 1024
#: The kind of board a union or intersection makes: the class it is called on.
_Combined = TypeVar("_Combined", bound="Combining")


def _combine(
    cls: type[_Combined],
    inputs: list[Any],
    weights: Iterable[float] | None,
    aggregate: str,
    *,
    intersect: bool,
    config: dict[str, Any],
) -> _Combined:
    """Union/intersection over any boards with the public API (Redis rules)."""
    if not inputs:
        raise ValueError("combine needs at least one board")
    for board in inputs:
        if not hasattr(board, "by_rank") or not hasattr(board, "config"):
            raise TypeError(f"can only combine leaderboards, not {type(board).__name__}")
        if not isinstance(board.order, str):
            raise TypeError("composite-score boards cannot be combined with weights")
    factors = weight_list(weights, len(inputs))
    if aggregate not in ("sum", "min", "max"):
        raise ValueError(f"aggregate must be one of ('sum', 'min', 'max'), not {aggregate!r}")
    first = inputs[0]
    settings = {k: v for k, v in first.config().items() if k != "backend"}
    if isinstance(first, Combining):
        settings["prefix"] = first._prefix  # the result lives beside it
    settings.update(config)
    client = settings.pop("redis", getattr(first, "redis", None))
    name = settings.pop("name", None) or f"{getattr(first, 'name', 'board')}.{uuid.uuid4().hex[:8]}"
    if client is None:
        raise ValueError("pass redis=... (a client) to combine in-process boards into Redis")
    totals: dict[Any, Any] = {}
    seen: dict[Any, int] = {}
    metas: dict[Any, dict[str, Any]] = {}
    for board, weight in zip(inputs, factors, strict=True):
        for entry in board.by_rank(1, -1, with_meta=True):
            value = weigh(weight, entry.score, entry.member)
            if entry.member in totals:
                totals[entry.member] = aggregate_scores(
                    aggregate, totals[entry.member], value, entry.member
                )
                seen[entry.member] += 1
            else:
                totals[entry.member] = value
                seen[entry.member] = 1
            if entry.member not in metas and entry.meta is not None:
                metas[entry.member] = entry.meta
    if intersect:
        totals = {m: s for m, s in totals.items() if seen[m] == len(inputs)}
    result = cls(client, name, **settings)
    check_new(result, f"name {name!r}")
    # One write, checked before anything is sent: a client that dies leaves
    # the whole result with its metadata, or an empty board.
    try:
        result._load_new(
            list(totals.items()), {m: data for m, data in metas.items() if m in totals}
        )
    except BaseException:
        # A score Redis cannot hold (an int beyond a double's range read from
        # an in-process board), say: the board is new (checked above), so
        # removing its keys leaves Redis as it was.
        result.close()
        client.delete(*result.keys, result._reply_key())
        raise
    return result


class Combining(ReplyDecoding):
    """Union and intersection of boards into a new Redis board."""

    if TYPE_CHECKING:  # supplied by the board (see rankengine.redis.board)

        def __init__(self, redis: Any, name: str, **options: Any) -> None: ...

        def close(self) -> None: ...

    # ------------------------------------------------------------------
    # Combining boards
    # ------------------------------------------------------------------
    @classmethod
    def union(
        cls,
        boards: Iterable[Any],
        *,
        weights: Iterable[float] | None = None,
        aggregate: Literal["sum", "min", "max"] = "sum",
        **config: Any,
    ) -> Self:
        """A new Redis board holding every member of ``boards`` (any boards
        with this API), scores combined as :func:`rankengine.board.combine.combine`
        describes.  ``redis``, ``prefix`` and ``name`` default to the first
        board's client, its key prefix and a fresh name (a name that already
        holds a board is refused with ``ValueError``: the result is a new
        board); other keywords override its settings.

        The result's members and metadata are one write, checked before
        anything is sent: one script, or for more than :data:`LOAD_CHUNK`
        members several in one MULTI/EXEC transaction (still atomic).  A
        client that dies part-way leaves the whole result or an empty board.

        Runtime complexity: O(T log T) for T input entries in all; one round
        trip for the write.
        """
        return _combine(cls, board_list(boards), weights, aggregate, intersect=False, config=config)

    @classmethod
    def intersection(
        cls,
        boards: Iterable[Any],
        *,
        weights: Iterable[float] | None = None,
        aggregate: Literal["sum", "min", "max"] = "sum",
        **config: Any,
    ) -> Self:
        """A new Redis board with the members present in every one of
        ``boards``, written as :meth:`union` writes its result.

        Runtime complexity: O(T log T) for T input entries in all; one round
        trip for the write.
        """
        return _combine(cls, board_list(boards), weights, aggregate, intersect=True, config=config)

    def _load_new(
        self, items: list[tuple[Any, Any]], metas: Mapping[Any, Mapping[str, Any]]
    ) -> None:
        """Fill this new, empty board with ``items`` (each member once) and
        give the members in ``metas`` their metadata, as ONE write: what
        :meth:`set_many` of the items and then :meth:`set_meta` of each of
        ``metas`` leave (the k-th item gets tie clock k), counted as one
        write and logged, on a board with an event log, as one record (every
        PUT, then every META), as :meth:`Leaderboard._load_new` does.  Every
        member, score and metadata is checked before anything is sent.

        One LOAD script fills the board; a result of more than
        :data:`LOAD_CHUNK` members (or :data:`LOAD_CHUNK_BYTES` of
        arguments) goes as several, all in one MULTI/EXEC transaction, which
        Redis runs back to back: still one atomic write, and like any script
        it blocks the server while it runs (about 10 ms per 2,000 members).
        The script refuses a board that holds members or has a clock.

        Runtime complexity: O(k log k) for k items, plus the size of the
        metadata; one round trip.
        """
        pairs, keys, _ = self._check_pairs(items, "score")
        if len(set(keys)) != len(keys):
            raise ValueError("_load_new takes each member once")
        known = set(dict(pairs))
        missing = [member for member in metas if member not in known]
        if missing:
            raise KeyError(f"no member {missing[0]!r}: add a score before its metadata")
        clean = {member: check_meta(data) for member, data in metas.items()}
        blobs = {member: encode_meta(data) for member, data in clean.items()}
        chunks: list[list[Any]] = []
        size = 0
        for (member, value), key in zip(pairs, keys, strict=True):
            row = (key, *self._format.encode(value), blobs.get(member, b""))
            width = sum(map(len, row))
            if not chunks or len(chunks[-1]) == 5 * LOAD_CHUNK or size + width > LOAD_CHUNK_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].extend(row)
            size += width
        if not chunks:
            return
        calls: list[list[Any]] = []
        done = 0  # members the chunks before hold
        for chunk in chunks:
            calls.append([done, "0", *chunk])
            done += len(chunk) // 5
        calls[-1][1] = "1"  # the last one counts the write
        puts: list[Change] = [(PUT, m, score, k) for k, (m, score) in enumerate(pairs, 1)]
        notes: list[Change] = [(META, m, data) for m, data in clean.items()]
        with self._writing():
            if len(calls) == 1:
                self._run("LOAD", *calls[0])
            else:
                self._run_together("LOAD", calls)
            self._notify(puts + notes)
