"""The same :class:`~rankengine.Leaderboard` API on a real Redis server.

A :class:`RedisLeaderboard` keeps its state in six Redis keys that share one
``{hash tag}`` (so they live in one Redis Cluster slot and one Lua script may
touch them all): the ranking is a sorted set, next to a hash of members, a
hash of metadata, the distinct scores for dense ranks, and a small state
hash (logical clock, configuration, write counter).  Every write and every
multi-command read is one Lua script (see :mod:`rankengine.redis.scripts`):
atomic, and one round trip.

Scores are stored exactly (ints of any size, composite scores, the
first-to-reach tie) as a double plus an *ordkey* of bytes that sort like the
rest, so Redis's own order is the engine's; members and metadata are stored
as bytes too.  :mod:`rankengine.redis.codec` has the encodings (and
:class:`ScoreFormat`, :func:`encode_member` and :func:`decode_member`,
re-exported here).

The board is built in layers, one module each: the handle, its stored
settings and script calls (:mod:`rankengine.redis.handle`), the decoding of
replies (:mod:`rankengine.redis.decode`), the event log with ``verify`` and
``rebuild`` (:mod:`rankengine.redis.log`), the seams of a sharded board
(:mod:`rankengine.redis.shards`) and union and intersection
(:mod:`rankengine.redis.combine`).  This module holds the board itself: its
construction, writes, reads and :meth:`RedisLeaderboard._check`.

>>> from rankengine.board.scoring import ScoreCodec
>>> fmt = ScoreFormat(ScoreCodec("desc"))
>>> fmt.encode(2**53 + 1)           # one more than a double can hold
('9007199254740992.0', b'\\x81\\x01', 'i')
>>> decode_member(encode_member("ann"))
'ann'
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.checks import check_when
from rankengine.board.contract import Board, BoardAPI
from rankengine.board.copying import Uncopyable
from rankengine.board.core import Entry, ItemWrites, RankStyle, TieBreak
from rankengine.board.leaderboard import Leaderboard, When
from rankengine.board.packed import PackedScore
from rankengine.board.reads import (
    interpolate,
    rank_outside,
)
from rankengine.board.scoring import (
    Member,
    Order,
    Score,
    check_meta,
)
from rankengine.board.writes import BoardWrites
from rankengine.durable.board import FsyncPolicy
from rankengine.redis.codec import (
    TIE_DIGITS,
    ScoreFormat,
    _canon,
    _kind,
    decode_member,
    decode_meta,
    encode_member,
    encode_meta,
)
from rankengine.redis.combine import Combining
from rankengine.redis.decode import (
    _pairs,
    _quads,
)
from rankengine.redis.handle import (
    _STYLE_CODE,
    MISSING,
    _flag,
    client_from_url,
)
from rankengine.redis.log import LoggedBoard
from rankengine.redis.pipeline import RedisPipeline
from rankengine.redis.plainranks import FALLBACK, PlainRanks
from rankengine.redis.scripts import EXACT
from rankengine.redis.shards import (
    Pending,
    ShardHooks,
    run_pipelined,
)

__all__ = [
    "MISSING",
    "Pending",
    "RedisLeaderboard",
    "ScoreFormat",
    "client_from_url",
    "decode_member",
    "encode_member",
    "run_pipelined",
]

#: Attempts of an exact (read, compute, compare-and-set) write under contention.
CAS_ATTEMPTS: Final = 100


class RedisLeaderboard(
    Uncopyable, ItemWrites, Combining, ShardHooks, LoggedBoard, PlainRanks, BoardWrites, BoardAPI
):
    """A leaderboard stored in Redis: the :class:`~rankengine.Leaderboard` API.

    :param redis: a ``redis.Redis`` or ``redis.cluster.RedisCluster`` client
        (without ``decode_responses``: the board reads bytes), or a URL
        (``redis://host:port/db``).
    :param name: the board's name; its keys are ``{prefix}{{name}}:z`` and so
        on, the braces making ``name`` the Redis Cluster hash tag.
    :param prefix: prepended to every key (no braces: the name is the hash tag).
    :param order, tie_break, rank_style: as for :class:`~rankengine.Leaderboard`.
        ``order`` and ``tie_break`` are stored with the board: another
        process opening it with different ones gets a ``ValueError``.
    :param packing: a :class:`~rankengine.board.packed.PackedScore` to store a
        ``(score, time)`` composite as one packed double instead of the exact
        encoding (values that would pass 2**53 are refused).
    :param log: a directory (or an open
        :class:`~rankengine.durable.board.DurableLeaderboard`) for rankengine's own
        event log: every write is logged before the call returns, and a
        Redis that lost writes is rebuilt from it (see :meth:`rebuild`).
    :param fsync: the log's fsync policy when ``log`` is a directory.
    :param rank_trips: round trips of a unique rank of a member this handle
        has not seen, on a first-to-reach board with scalar scores: ``2``
        (the default: an ``HGET`` and a ``ZREVRANK``, about 1.2-1.9x a
        ``ZREVRANK`` of server time) or ``1`` (the board's ``RANK``
        function doing both, about 2.4-3.3x; one round trip of waiting
        instead of two).  A rank of a member the handle has seen is one
        ``ZREVRANK`` either way, and a pipeline's ranks take two round
        trips for the whole batch either way; see "One round trip or two"
        in ``docs/redis.md``.  Not stored with the board: each handle
        chooses.

    Many processes may share one board; each write is atomic on the server.
    A logged board must have one writer process (the log records this
    process's writes).

    Copying: a Redis board is a handle on state kept by the server, not a
    container, so ``copy.copy``, ``copy.deepcopy`` and pickling raise
    :class:`TypeError` (a "copy" would share the server's sorted set, and a
    client connection does not pickle).  Another handle on the same board is
    ``RedisLeaderboard(client, board.name, prefix=..., packing=board.packing,
    **board.config())`` with the prefix it was created with:
    :meth:`config` holds only the settings an in-process twin takes, and
    without the prefix the handle would open another (empty) board.

    >>> import redis                                      # doctest: +SKIP
    >>> board = RedisLeaderboard(redis.Redis(), "weekly")  # doctest: +SKIP
    >>> board.set_many({"ann": 120, "bob": 80})           # doctest: +SKIP
    2
    """

    _copy_advice = (
        "it is a handle on keys in Redis, not a container of its own; connect another "
        "handle with RedisLeaderboard(client, board.name, prefix=<the prefix it was "
        "created with>, packing=board.packing, **board.config())"
    )

    def __init__(
        self,
        redis: Any,
        name: str,
        *,
        prefix: str = "rankengine:",
        order: Order | tuple[Order, ...] = "desc",
        tie_break: TieBreak = "first",
        rank_style: RankStyle = "unique",
        packing: PackedScore | None = None,
        log: str | os.PathLike[str] | Leaderboard | None = None,
        fsync: Literal["always", "everysec", "never"] = "everysec",
        rank_trips: Literal[1, 2] = 2,
    ) -> None:
        self._setup(
            redis,
            name,
            prefix=prefix,
            order=order,
            tie_break=tie_break,
            rank_style=rank_style,
            packing=packing,
            log=log,
            fsync=fsync,
            rank_trips=rank_trips,
        )
        self._open(log, fsync)

    @classmethod
    def _unopened(cls, redis: Any, name: str, **options: Any) -> RedisLeaderboard:
        """A handle whose arguments are checked but which has not been to
        Redis yet: :meth:`_open` it (a sharded board checks every shard's
        stored settings first, so a refused shard leaves none created)."""
        board = cls.__new__(cls)
        board._setup(redis, name, **options)
        return board

    def _open(self, log: Any = None, fsync: FsyncPolicy = "everysec") -> None:
        """Store the board's settings in Redis unless it has some (checking
        them), then attach the log.  A log directory is opened (or created)
        only once Redis's settings are known to agree."""
        if log is None:
            self._init()
        elif isinstance(log, Leaderboard):
            self._adopt_log(log, self._init())
        else:
            self._init(store=False)
            self._attach_log(log, fsync)

    def __len__(self) -> int:
        return int(self._client.zcard(self._keys[0]))

    def __contains__(self, member: object) -> bool:
        key = self._key_or_none(member)
        return key is not None and bool(self._client.hexists(self._keys[1], key))

    def __repr__(self) -> str:
        return (
            f"RedisLeaderboard({self._name!r}, order={self._order!r}, "
            f"tie_break={self._tie_break!r}, rank_style={self._rank_style!r})"
        )

    def close(self) -> None:
        """Close the event log, if any, and the Redis client if this board
        made it from a URL (a client passed in is the caller's).  Reads and
        writes after it reconnect, as a closed redis-py client does (a
        write to a board with a log raises: the log is closed).

        Runtime complexity: O(1), plus closing the log
        """
        try:
            if self._log is not None:
                self._log.close()
        finally:
            if self._own_client:
                self._client.close()

    def __enter__(self) -> RedisLeaderboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------
    # Writes: the public methods, their docstrings and argument checks are
    # the contract's (rankengine.board.writes.BoardWrites); these are its
    # primitives, with checked arguments.  No client-side lock around a
    # write (_write_guard): each is one script, atomic on the server;
    # _writing() keeps the log's records in order when a log listens.
    # ------------------------------------------------------------------
    _write_guard: ClassVar[AbstractContextManager[Any]] = contextlib.nullcontext()

    def _check_member(self, member: object) -> Member:
        kind = type(member)
        if kind is not str and kind is not bytes:  # (every str and bytes encodes)
            self._member(member)  # raises for a value that cannot be a stored member
        return member  # type: ignore[return-value]  # (checked: a member)

    def _set_checked(
        self, member: Member, score: Score, when: When | None, meta: dict[str, Any] | None
    ) -> bool:
        args, done = self._set_args(member, self._member(member), score, when, meta)
        with self._writing():
            return done(self._run("SET", *args))

    def _set_call(
        self, member: Member, score: Score, when: When | None, meta: Mapping[str, Any] | None
    ) -> tuple[list[Any], Callable[[Any], bool]]:
        """The checked arguments of a SET call (a pipeline's: it checks as
        :meth:`BoardWrites.set <rankengine.board.writes.BoardWrites.set>`
        does), and what turns its reply into set()'s answer; raises before
        anything is sent."""
        key = self._member(member)
        value = self._codec.check(score)
        check_when(when)
        clean = None if meta is None else check_meta(meta)
        return self._set_args(member, key, value, when, clean)

    def _set_args(
        self, member: Member, key: bytes, value: Score, when: When | None, clean: Any
    ) -> tuple[list[Any], Callable[[Any], bool]]:
        """The arguments of a SET call from checked ones, and what turns its
        reply into set()'s answer (noting the change)."""
        text, ok, kind = self._format.encode(value)
        blob = b"" if clean is None else encode_meta(clean)
        args = [key, text, ok, kind, when or "", "0" if clean is None else "1", blob]

        def done(reply: Any) -> bool:
            clock, meta_changed = reply
            changes: list[Change] = []
            if clock:
                changes.append((PUT, member, value, int(clock)))
                self._seen_write(key, ok, int(clock), kind)
            if meta_changed:
                changes.append((META, member, clean))
            self._notify(changes)
            return bool(changes)

        return [*args, self._clock_floor], done

    def _incr_checked(self, member: Member, delta: Score, when: When | None) -> Score | None:
        # Exact for every score: the server adds doubles when the result is
        # exact, and otherwise the client adds the exact values and commits
        # with a compare-and-set (_exact_incr: three round trips).
        key = self._member(member)
        step = delta
        args = self._incr_args(key, step, when)
        if args is not None and self._listener is None:  # (no log: no lock to take)
            sender, direct = self._incr_sender, self._direct
            reply = None
            if sender is not None and direct is not None and self._scripts.functions:
                # (one packing per call: see rankengine.redis.incrcall; None
                # on an error reply, sent again by the general path)
                sha, numbers = self._stored_sha, self._calls
                reply = sender.send(direct, sha, args, numbers, self._reply_key)
            if reply is None:
                reply = self._run("INCR", *args)
            new = self._incr_done(member, key, reply)
            if new is not EXACT:
                return new  # type: ignore[no-any-return]  # a score or None
        elif args is not None:
            with self._writing():
                new = self._incr_done(member, key, self._run("INCR", *args))
                if new is not EXACT:
                    return new  # type: ignore[no-any-return]  # a score or None
        return self._exact_incr(member, key, step, when)

    def _incr_call(
        self, member: Member, delta: Score, when: When | None
    ) -> tuple[bytes, Score, list[Any] | None]:
        """The member's key, the checked step and the arguments of an INCR
        call (a pipeline's: it checks as :meth:`BoardWrites.incr
        <rankengine.board.writes.BoardWrites.incr>` does; None when only the
        exact path can add them); raises before anything is sent."""
        key = self._member(member)
        step = self._codec.check(delta, "delta")
        check_when(when)
        return key, step, self._incr_args(key, step, when)

    def _incr_args(self, key: bytes, step: Score, when: When | None) -> list[Any] | None:
        """The arguments of an INCR call from checked ones, or None when only
        the exact path can add ``step``."""
        if self._format.columns == 1 and self._format.packing is None and _fast(step):
            number: float = step  # type: ignore[assignment]  # a scalar board's delta
            return [key, repr(float(number)), _kind(number), when or "", self._clock_floor]
        return None

    def _rank_of(self, key: bytes, reply: Any) -> int | None:
        """A unique rank from a RANK reply (noting the member's element)."""
        if not reply:
            return None
        self._seen(key, reply[1])
        return int(reply[0]) + 1

    def pipeline(self) -> RedisPipeline:
        """Queue many calls of this board and send them in one round trip,
        each with the guarantees it has alone (checked when queued, applied
        once if redis-py sends the round trip again, the settings guard):
        ``with board.pipeline() as p: p.incr("ann", 5); p.rank("ann")``,
        then ``p.results``.  See :mod:`rankengine.redis.pipeline`.

        Runtime complexity: one round trip per execute, besides the calls' work.
        """
        return RedisPipeline(self)

    def _set_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], when: When | None
    ) -> int:
        # one atomic script; every pair is checked (here) before it is sent
        pairs, keys, tag = self._check_pairs(items, "score")
        args: list[Any] = [when or "", self._clock_floor, tag]
        for (_, value), key in zip(pairs, keys, strict=True):
            args.extend((key, *self._format.encode(value)))
        if not pairs:
            return 0
        with self._writing():
            result = self._run("SET_MANY", *args)
            changed, base = int(result[0]), int(result[1])
            marks = sorted((int(step), int(index)) for index, step in _pairs(result[2:]))
            self._notify([(PUT, *pairs[index], base + step) for step, index in marks])
        return changed

    def _incr_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        # one atomic script (three round trips on the exact path)
        pairs, keys, tag = self._check_pairs(items, "delta")
        if not pairs:
            return {}
        fast = self._format.columns == 1 and self._format.packing is None
        if fast and all(_fast(step) for _, step in pairs):
            args: list[Any] = [self._clock_floor, tag, "1"]  # (one write)
            for (_, step), key in zip(pairs, keys, strict=True):
                number: float = step  # type: ignore[assignment]  # a scalar board's delta
                args.extend((key, repr(float(number)), _kind(number)))
            with self._writing():
                result = self._run("INCR_MANY", *args)
                if int(result[0]) >= 0:
                    base = int(result[0])
                    results: dict[Member, Score] = {}
                    changes: list[tuple[int, Change]] = []
                    order = list(dict.fromkeys(member for member, _ in pairs))
                    for i, member in enumerate(order):
                        text, kind, step, stored, skind = result[1 + 5 * i : 6 + 5 * i]
                        results[member] = self._format.decode(text, b"", kind)
                        if int(step):
                            new = self._format.decode(stored, b"", skind)
                            changes.append((int(step), (PUT, member, new, base + int(step))))
                    self._notify([change for _, change in sorted(changes, key=_first)])
                    return results
        return self._exact_incr_many(pairs, keys)

    def _remove_member(self, member: Member) -> bool:
        return self._remove_members([member]) == 1

    def _remove_members(self, members: list[Any]) -> int:
        keys = [self._member(member) for member in members]  # (checked members)
        if not keys:
            return 0
        with self._writing():
            gone = self._run("REMOVE", *keys)
            self._notify([(DEL, decode_member(key)) for key in gone])
        return len(gone)

    def _clear_all(self) -> None:
        # one script; the clock and the configuration stay
        with self._writing():
            want = self._listener is not None
            gone = self._run("CLEAR", "1" if want else "0")
            if want:
                self._notify([(DEL, decode_member(key)) for key in gone])

    def _set_meta_checked(self, member: Member, meta: dict[str, Any] | None) -> None:
        key = self._member(member)
        clean = meta
        blob = b"" if clean is None else encode_meta(clean)
        with self._writing():
            status = self._run("SET_META", key, "0" if clean is None else "1", blob)
            if status < 0:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            if status:
                self._notify([(META, member, clean)])

    def meta(self, member: Member) -> dict[str, Any] | None:
        # (an extension point of BoardAPI, which holds the docstring)
        key = self._key_or_none(member)
        data = None if key is None else self._client.hget(self._keys[2], key)
        return None if data is None else decode_meta(data)

    # ------------------------------------------------------------------
    # Pops, pruning and reads: the primitives of BoardAPI, which holds the
    # public methods and their argument checks (see rankengine.board.contract).
    # Each is one round trip.
    # ------------------------------------------------------------------
    def _remove_ranks(self, start: int, stop: int) -> int:
        return self._remove_range("rank", start, stop)

    def _remove_scores(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        return self._remove_range("score", *self._span(low, high, low_inclusive, high_inclusive))

    def _keep_top(self, n: int) -> int:
        return self._remove_range("rank", n + 1, -1)

    def score(self, member: Member, default: Any = None) -> Any:
        # (an extension point of BoardAPI, which holds the docstring)
        found = self._entries([member], "-", False)[0]
        return default if found is None else found.score

    def _rank_of_member(self, member: Member, style: RankStyle) -> int | None:
        key = self._key_or_none(member)
        if key is None:
            return None
        if style == "unique":
            # One plain command when the member's element is known: on a
            # tie_break="member" scalar board an exact score's element is
            # the member itself; on a first-to-reach board, the element this
            # handle last saw (see _seen).  Nil: absent, or the element
            # changed since: the plain path below, or the function.
            element = key if self._plain_rank else self._elements.get(key)
            if element is not None:
                found_rank = self._read(self._rank_command, self._keys[0], element)
                if found_rank is not None:
                    return int(found_rank) + 1
        if self._plain_ranks() and (style != "unique" or self._rank_trips == 2):
            # plain commands, no script (see rankengine.redis.plainranks);
            # with rank_trips=1 a unique rank takes the function below
            found = self._plain_rank_of(key, style)
            if found is not FALLBACK:
                return found  # type: ignore[no-any-return]
        if style == "unique":
            return self._rank_of(key, self._run("RANK", key))
        found = self._entries([member], _STYLE_CODE[style], False)[0]
        return None if found is None else found.rank

    def _entry_of(self, member: Member, style: RankStyle, with_meta: bool) -> Entry | None:
        return self._entries([member], _STYLE_CODE[style], with_meta)[0]

    def _entries_of(
        self, members: list[Any], style: RankStyle, with_meta: bool
    ) -> list[Entry | None]:
        return self._entries(members, _STYLE_CODE[style], with_meta)

    def _at_rank(self, rank: int, style: RankStyle, with_meta: bool) -> Entry:
        result = self._run("RANGE", _STYLE_CODE[style], _flag(with_meta), "at", rank)
        if int(result[0]) == -2:
            raise rank_outside(rank, int(result[1]))
        return self._rows(result, style, with_meta)[0]

    def _rank_for_score(self, score: Score, style: RankStyle) -> int:
        text, ok = self._hypothetical(score, style)
        return int(self._run("RANK_FOR", "rank", text, ok, _STYLE_CODE[style]))

    def _score_counts(self, member: Member) -> tuple[int, int, int] | None:
        key = self._key_or_none(member)
        if key is None:
            return None
        result = self._run("PERCENTILE", key)
        n = int(result[0])
        if n < 0:
            return None
        return int(result[1]), int(result[2]), n

    def _score_at_percentile(self, p: int | float) -> Score | None:
        result = self._run("SCORE_AT", repr(float(p)))
        n = int(result[0])
        if n == 0:
            return None
        low_score = self._score_of_row(result[1], result[2], result[3])
        x = (n - 1) * p / 100
        lo = math.floor(x)
        if self._codec.columns is not None or lo == x:
            return low_score
        high_score = self._score_of_row(result[4], result[5], result[6])
        return interpolate(low_score, high_score, x - lo, p)

    def _top_rows(self, k: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        if self._plain_range and not with_meta:
            # the first row is ranked 1 in every style: the rows are all
            # plain reads of one ZRANGE
            return self._plain_rows(0, k - 1, style) if k else []
        return self._range(style, with_meta, "win", 0, k)

    def _rank_rows(self, start: int, stop: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        if self._plain_range and not with_meta and start > 0 and (start == 1 or style == "unique"):
            # ZRANGE clamps and counts negative stops from the bottom as
            # this does; the first row's rank is start (unique) or 1
            return self._plain_rows(start - 1, stop if stop < 0 else stop - 1, style)
        return self._range(style, with_meta, "rank", start, stop)

    def _page_rows(self, number: int, size: int, style: RankStyle, with_meta: bool) -> list[Entry]:
        return self._range(style, with_meta, "page", number, size)

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
        key = self._key_or_none(member)
        if key is None:
            return []
        return self._range(style, with_meta, "around", key, above, below, _flag(fill))

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
        span = self._span(low, high, low_inclusive, high_inclusive)
        return self._range(style, with_meta, "score", *span, offset, -1 if limit is None else limit)

    def _count_between(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> int:
        span = self._span(low, high, low_inclusive, high_inclusive)
        return int(self._run("RANK_FOR", "span", "", "", *span))

    def items(self) -> list[tuple[Member, Score]]:
        # (an extension point of BoardAPI, which holds the docstring)
        return [(e.member, e.score) for e in self._range("unique", False, "rank", 1, -1)]

    # ------------------------------------------------------------------
    # Invariants
    # ------------------------------------------------------------------
    def _check(self) -> None:
        """Verify the stored invariants; raise AssertionError with the details."""
        pipe = self._client.pipeline(transaction=False)
        pipe.zrange(self._keys[0], 0, -1, withscores=True, score_cast_func=bytes)
        for key in self._keys[1:3]:
            pipe.hgetall(key)
        pipe.zrange(self._keys[3], 0, -1, withscores=True, score_cast_func=bytes)
        pipe.hgetall(self._keys[4])
        pipe.hgetall(self._keys[5])
        elements, members, metas, distinct, counts, state = pipe.execute()
        # every element belongs to a member whose hash entry points back at it
        assert len(elements) == len(members), (len(elements), len(members))
        clocks: list[int] = []
        tags: set[bytes] = set()
        inexact = 0
        histogram: dict[bytes, int] = {}
        previous = None
        for element, text in elements:
            ok, clock, member_key = self._split_element(element)
            stored_kind, stored_text, pre = members[member_key].split(b":", 2)
            assert pre + member_key == element, (element, members[member_key])
            assert float(stored_text) == float(text), (element, stored_text, text)
            if self._first:  # the kind is in the element too
                assert element[len(ok) + TIE_DIGITS :].startswith(stored_kind), element
            score = self._format.decode(text, ok, stored_kind)
            # the stored form is exactly the encoding of the score it decodes to
            again = self._format.encode(score)
            assert (float(again[0]), again[1], again[2]) == (
                float(text),
                ok,
                stored_kind.decode(),
            ), (
                element,
                text,
            )
            primary = self._format.primary(text, ok)
            # the Redis order is the engine's order (primary, tie)
            here = (primary, self._tie(clock, decode_member(member_key)))
            assert previous is None or previous < here, (previous, here)
            previous = here
            clocks.append(clock)
            inexact += bool(ok) and self._format.columns == 1
            tags.add(member_key[:1])
            dense_key = _canon(float(text)) + b"|" + ok
            histogram[dense_key] = histogram.get(dense_key, 0) + 1
        if self._first:
            assert len(set(clocks)) == len(clocks), "duplicate tie clocks"
            assert not clocks or max(clocks) <= int(state.get(b"clock", 0)), "clock behind a tie"
        else:
            assert len(tags) <= 1, f"member types mixed on a tie_break='member' board: {tags}"
        assert int(state.get(b"inexact", 0)) == inexact, (state.get(b"inexact"), inexact)
        # dense ranks (once built): the distinct scores and counts match the ranking
        if state.get(b"dense") == b"1":
            assert {k: int(v) for k, v in counts.items()} == histogram, (counts, histogram)
            assert sorted(k for k, _ in distinct) == sorted(histogram), distinct
        else:
            assert not counts and not distinct, "dense counts kept before any dense read"
        assert all(key in members for key in metas), "metadata of an absent member"

    def _remove_range(self, selector: str, *args: Any) -> int:
        with self._writing():
            want = self._listener is not None
            result = self._run("REMOVE_RANGE", selector, *args, _flag(want))
            if not want:
                return int(result)
            self._notify([(DEL, decode_member(key)) for key in result])
            return len(result)

    def _pop(self, count: int, *, best: bool, with_meta: bool) -> list[Entry]:
        if count == 0:
            return []
        with self._writing():
            result = self._run("REMOVE_RANGE", "pop", count, _flag(best), _flag(with_meta))
            n = int(result[0])
            out: list[Entry] = []
            for i, (element, text, kind, data) in enumerate(_quads(result[1:])):
                ok, _, key = self._split_element(element)
                rank = i + 1 if best else n - i
                meta = decode_meta(data) if with_meta and data else None
                out.append(
                    Entry(decode_member(key), self._format.decode(text, ok, kind), rank, meta)
                )
            self._notify([(DEL, e.member) for e in out])
        return out

    def _state_of(self, members: list[Any]) -> dict[Any, Any]:
        """Exact current scores of some members (``MISSING`` when absent)."""
        keys = list(dict.fromkeys(self._member(m) for m in members))
        result = self._run("ENTRIES", "-", "0", *keys)
        out: dict[Any, Any] = {}
        for i, key in enumerate(keys):
            text, element, kind = result[5 * i : 5 * i + 3]
            if text is None:
                out[decode_member(key)] = MISSING
            else:
                ok, _, _ = self._split_element(element)
                out[decode_member(key)] = self._format.decode(text, ok, kind)
        return out

    def _exact_incr(
        self, member: Member, key: bytes, step: Score, when: When | None
    ) -> Score | None:
        """incr by compare-and-set: read the exact score, add in Python, commit
        if nobody changed the member meanwhile (retry otherwise)."""
        codec = self._codec
        for _ in range(CAS_ATTEMPTS):
            old = self._state_of([member])[member]
            if old is MISSING:
                if when == "present":
                    return None
                base = 0 if codec.columns is None else (0,) * codec.columns
            else:
                if when == "new":
                    return None
                base = old
            new = codec.add(base, step, member)
            self._format.encode(new)  # refuse what cannot be stored before writing
            if old is not MISSING:
                if when == "better" and not codec.better(new, old):
                    return None
                if when == "worse" and not codec.better(old, new):
                    return None
                if codec.primary(new) == codec.primary(old):
                    return old  # type: ignore[no-any-return]  # equal: the stored score
            with self._writing():
                ops = ("X", key, *self._expected(old), "R", key, *self._format.encode(new), 1)
                result = self._run("COMMIT", self._clock_floor, *ops, "T", 1)
                if int(result[0]):
                    self._notify([(PUT, member, new, int(result[1]) + 1)])
                    return new
        raise RuntimeError(f"incr of {member!r} lost {CAS_ATTEMPTS} races in a row")

    def _exact_incr_many(self, pairs: list[tuple[Any, Score]], keys: list[bytes]) -> dict[Any, Any]:
        codec = self._codec
        zero = 0 if codec.columns is None else (0,) * codec.columns
        for _ in range(CAS_ATTEMPTS):
            before = self._state_of([member for member, _ in pairs])
            current: dict[Any, Any] = {}
            stamps: dict[Any, int] = {}
            results: dict[Any, Any] = {}
            step_no = 0
            for member, step in pairs:
                old = current.get(member, before[member])
                new = codec.add(zero if old is MISSING else old, step, member)
                if old is not MISSING and codec.primary(new) == codec.primary(old):
                    results[member] = old  # an equal sum (5 + 0.0) keeps the stored score
                    continue
                results[member] = new
                step_no += 1
                current[member] = new
                stamps.pop(member, None)
                stamps[member] = step_no
            ops: list[Any] = []
            for member, old in before.items():
                ops.extend(("X", self._member(member), *self._expected(old)))
            for member, stamp in stamps.items():
                value = current[member]
                ops.extend(("R", self._member(member), *self._format.encode(value), stamp))
            if not stamps:
                return results
            with self._writing():
                result = self._run("COMMIT", self._clock_floor, *ops, "T", step_no)
                if int(result[0]):
                    base = int(result[1])
                    self._notify([(PUT, m, current[m], base + s) for m, s in stamps.items()])
                    return results
        raise RuntimeError(f"incr_many lost {CAS_ATTEMPTS} races in a row")

    def _expected(self, old: Any) -> tuple[Any, ...]:
        return ("", "", "") if old is MISSING else self._format.encode(old)


def _fast(step: Score) -> bool:
    """A step the server can add as a double without losing anything."""
    return type(step) is float or (type(step) is int and abs(step) < 2**53)


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


if TYPE_CHECKING:

    def _answers_the_contract(board: RedisLeaderboard) -> Board:
        """mypy checks here that the board answers the contract."""
        return board
