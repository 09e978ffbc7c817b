"""The seams a sharded board uses on a Redis shard, and many boards' reads in
one round trip per server.

Each ``_shard_*`` read of :class:`ShardHooks` returns a :class:`Pending`
script call instead of running it, so
:mod:`rankengine.sharded.merge` can send the reads of every shard at once
(:func:`run_pipelined`: one pipeline per server, grouped by node on a
Redis Cluster) and merge their decoded replies.

>>> Pending._fields
('board', 'name', 'args', 'decode')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from rankengine.board.core import RankStyle
from rankengine.board.scoring import (
    Member,
    Score,
)
from rankengine.redis.codec import (
    MAXCLOCK,
    decode_member,
    decode_meta,
)
from rankengine.redis.decode import (
    ReplyDecoding,
    _pairs,
    _quads,
)
from rankengine.redis.handle import (
    _STYLE_CODE,
    _flag,
)
from rankengine.redis.scripts import ScriptError

__all__ = [
    "Pending",
    "ShardHooks",
    "run_pipelined",
]


# ----------------------------------------------------------------------
# Many boards, one round trip per client
# ----------------------------------------------------------------------
class Pending(NamedTuple):
    """A read script to run on a board, and how to decode its reply."""

    board: ShardHooks
    name: str
    args: tuple[Any, ...]
    decode: Callable[[Any], Any]


def run_pipelined(calls: list[Pending]) -> list[Any]:
    """Run read scripts of many boards, one pipeline per server: boards on
    one Redis share a round trip.  On a cluster the calls are grouped by the
    node that owns each board's slot (a cluster pipeline refuses scripts);
    if the topology moved meanwhile, the calls go one by one through the
    cluster client, which follows redirections.  Returns the decoded replies.

    Runtime complexity: one round trip per server, plus the scripts' work.
    """
    from redis.exceptions import AskError, NoScriptError, RedisError, ResponseError, TryAgainError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

    out: list[Any] = [None] * len(calls)
    groups: dict[int, tuple[Any, list[int]]] = {}
    for i, call in enumerate(calls):
        client = call.board._client
        if hasattr(client, "get_node_from_key"):  # a cluster: the node of the slot
            client = client.get_redis_connection(client.get_node_from_key(call.board._keys[0]))
        groups.setdefault(id(client), (client, []))[1].append(i)
    for client, indices in groups.values():
        try:
            replies = _pipeline(client, [calls[i] for i in indices])
        except RedisError:
            replies = None
        # a slot that moved (MOVED, or ASK while it migrates: redis-py strips
        # the word from the message and raises MovedError, a kind of AskError)
        if replies is None or any(isinstance(r, (AskError, TryAgainError)) for r in replies):
            replies = []
            for i in indices:  # slowly but surely, through the cluster client
                board, name, args, _ = calls[i]
                try:
                    replies.append(board._scripts(name, board._keys, [board._mode, *args]))
                except ScriptError as exc:
                    raise board._error(exc) from None
        for i, reply in zip(indices, replies, strict=True):
            if isinstance(reply, ResponseError) and not isinstance(reply, NoScriptError):
                message = str(reply)
                if message.startswith("RANKENGINE_"):
                    code, _, detail = message.split(" script:", 1)[0][11:].partition(" ")
                    raise calls[i].board._error(ScriptError(code, detail)) from None
            if isinstance(reply, Exception):
                raise reply
            out[i] = calls[i].decode(reply)
    return out


def _pipeline(client: Any, calls: list[Pending]) -> list[Any]:
    """One pipeline of script calls; loads the library (or the scripts) and
    retries once when the server lacks it."""
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for board, name, args, _ in calls:
            keys = board._keys
            pipe.execute_command(*board._scripts.call_args(name, keys, [board._mode, *args]))
        replies = pipe.execute(raise_on_error=False)
        runner = calls[0].board._scripts
        if attempt == 0 and any(runner.missing(r) for r in replies):
            for call in calls:  # (a server without functions: every board learns it)
                if not runner.functions:
                    call.board._scripts._scripts_only()
            runner.load()
            continue
        break
    return list(replies)


class ShardHooks(ReplyDecoding):
    """Reads of a shard, as Pending calls a sharded board pipelines."""

    # ------------------------------------------------------------------
    # Sharding seams (see rankengine.sharded.board)
    # ------------------------------------------------------------------
    def _shard_key(self, member: Member) -> tuple[Any, Any, Score] | None:
        """``(primary, tie, score)`` of a member (index terms), or None."""
        key = self._key_or_none(member)
        if key is None:
            return None
        text, element, kind = self._run("ENTRIES", "-", "0", key)[:3]
        if text is None:
            return None
        ok, clock, _ = self._split_element(element)
        score = self._format.decode(text, ok, kind)
        return self._format.primary(text, ok), self._tie(clock, member), score

    def _shard_before(self, primary: Any, tie: Any, member: Member) -> Pending:
        """How many members rank strictly ahead of the key ``(primary, tie)``."""
        text, ok = self._format.bound(self._codec.score(primary))
        if self._first:  # the clock decides: the element up to its digits
            probe = ok + b"%016d" % (MAXCLOCK + tie if self._desc else tie)
        else:
            probe = ok + self._member(member)
        return Pending(self, "SHARD", ("before", text, probe), int)

    def _shard_rows(self, lo: int, hi: int, with_meta: bool) -> Pending:
        """``(primary, tie, member, score, meta)`` for local 0-based ranks [lo, hi)."""
        return Pending(
            self, "RANGE", ("u", _flag(with_meta), "win", lo, hi), self._keyed_rows(with_meta)
        )

    def _keyed_rows(self, with_meta: bool) -> Callable[[Any], list[tuple[Any, ...]]]:
        def decode(result: Any) -> list[tuple[Any, ...]]:
            out = []
            for element, text, kind, data in _quads(result[4:]):
                ok, clock, key = self._split_element(element)
                member = decode_member(key)
                out.append(
                    (
                        self._format.primary(text, ok),
                        self._tie(clock, member),
                        member,
                        self._format.decode(text, ok, kind),
                        decode_meta(data) if with_meta and data else None,
                    )
                )
            return out

        return decode

    def _shard_distinct(self, primary: Any) -> Pending:
        """The distinct primaries strictly better than ``primary`` (which may
        be a score no member here can hold: a hypothetical dense rank)."""
        text, ok = self._hypothetical(self._codec.score(primary), "dense")

        def decode(result: Any) -> list[Any]:
            return [
                self._format.primary(double, element.split(b"|", 1)[1])
                for element, double in _pairs(result)
            ]

        return Pending(self, "SHARD", ("distinct", text, ok), decode)

    def _shard_size(self) -> Pending:
        """The number of members."""
        return Pending(self, "SIZE", (), int)

    def _shard_clock(self) -> Pending:
        """The tie clock as stored, as :attr:`clock` reads it."""
        return Pending(self, "CLOCK", (), int)

    def _shard_rank_for(self, score: Score, style: RankStyle) -> Pending:
        """As :meth:`rank_for_score`."""
        text, ok = self._hypothetical(score, style)
        return Pending(self, "RANK_FOR", ("rank", text, ok, _STYLE_CODE[style]), int)

    def _shard_count(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> Pending:
        """As :meth:`count`."""
        span = self._span(low, high, low_inclusive, high_inclusive)
        return Pending(self, "RANK_FOR", ("span", "", "", *span), int)
