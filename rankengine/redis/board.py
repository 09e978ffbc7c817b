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

>>> fmt = ScoreFormat(ScoreCodec("desc"))
>>> fmt.encode(2**53 + 1)           # one more than a double can hold
('9007199254740992.0', b'\\x81\\x01', 'i')
>>> decode_member(encode_member("ann"))
'ann'
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypedDict, overload

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.checks import (
    batch_error,
    check_members,
    check_style,
    check_when,
    member_list,
)
from rankengine.board.combine import aggregate_scores, board_list, check_new, weigh, weight_list
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
    ScoreCodec,
    check_lookup,
    check_meta,
    is_member,
    same_meta,
)
from rankengine.durable.board import DurableLeaderboard, FsyncPolicy, check_fsync, open_board_as
from rankengine.redis.codec import (
    _TAGS,
    MAXCLOCK,
    TIE_DIGITS,
    ScoreFormat,
    _canon,
    _kind,
    decode_member,
    decode_meta,
    encode_member,
    encode_meta,
)
from rankengine.redis.scripts import ScriptError, ScriptRunner

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

#: Key suffixes, in the order every script receives them (see redis_scripts).
KEY_SUFFIXES: Final = ("z", "h", "m", "d", "c", "s")
#: The Redis type each key holds (checked on open: a write that met another
#: application's value half-way through its script would be half-applied).
_KEY_TYPES: Final = ("zset", "hash", "hash", "zset", "hash", "hash")
#: Changes per COMMIT script when restoring a whole board (a script blocks
#: the server while it runs: about 10 ms per 2000 members).
RESTORE_CHUNK: Final = 2000
#: Members per LOAD script when a union or intersection fills its new board;
#: a bigger result goes as several, in one MULTI/EXEC transaction.  A
#: chunk is one command of five arguments per member: a few MB with
#: typical metadata, well below what Redis takes in one command (512 MB
#: per argument, 1 GB of query buffer per client), and a command redis-py
#: builds and sends without holding the whole result twice in memory.
LOAD_CHUNK: Final = 5000
#: ... and at most this many bytes of arguments per chunk (large metadata).
LOAD_CHUNK_BYTES: Final = 32 * 1024 * 1024
#: Attempts of an exact (read, compute, compare-and-set) write under contention.
CAS_ATTEMPTS: Final = 100
#: Format of the stored configuration.
CONFIG_VERSION: Final = 1
#: The format of a sharded board's shard: the settings and ``"shard"``, its
#: place ``[index, count]`` (a member's shard depends on both).  A board of
#: its own stays in format 1, which earlier versions of rankengine open; they
#: refuse a shard, whose place they would not check.
SHARD_CONFIG_VERSION: Final = 2
#: The fields of the stored configuration, by format version.
_CONFIG_FIELDS: Final = {
    CONFIG_VERSION: frozenset(("version", "order", "tie_break", "packing")),
    SHARD_CONFIG_VERSION: frozenset(("version", "order", "tie_break", "packing", "shard")),
}

#: Scripts that write: on a logged board they carry the write guard.
_WRITES: Final = frozenset(
    (
        "SET",
        "INCR",
        "SET_MANY",
        "INCR_MANY",
        "REMOVE",
        "CLEAR",
        "SET_META",
        "REMOVE_RANGE",
        "COMMIT",
        "LOAD",
    )
)
_STYLE_CODE: Final = {"unique": "u", "competition": "c", "dense": "d"}
#: What a score look-up returns for an absent member (shared with the
#: sharded board's merges, which read the same look-ups).
MISSING: Final = object()


# ----------------------------------------------------------------------
# The board
# ----------------------------------------------------------------------
class RedisOptions(TypedDict, total=False):
    """The keyword options of :class:`RedisLeaderboard` (and so of
    ``Leaderboard.connect(redis, name, **options)``), for type checkers."""

    prefix: str
    order: Order | tuple[Order, ...]
    tie_break: TieBreak
    rank_style: RankStyle
    packing: PackedScore | None
    log: str | os.PathLike[str] | Leaderboard | None
    fsync: FsyncPolicy


class RedisLeaderboard(Uncopyable, ItemWrites, BoardAPI):
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

    def _setup(
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
    ) -> None:
        """Check every argument and set the handle up, without a round trip:
        nothing reaches Redis (or the log directory) before all are good."""
        if not isinstance(redis, str) and not hasattr(redis, "evalsha"):
            raise TypeError(f"redis must be a redis-py client or a URL, not {type(redis).__name__}")
        if not isinstance(name, str) or not name or "{" in name or "}" in name:
            raise ValueError(f"name must be a non-empty str without braces, not {name!r}")
        # Braces before the name would make the prefix the hash tag: every
        # board in one slot ("{app}:"), or each key in its own ("app{}:").
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ValueError(f"prefix must be a str without braces, not {prefix!r}")
        if tie_break not in ("first", "member"):
            raise ValueError(f"tie_break must be 'first' or 'member', not {tie_break!r}")
        check_style(rank_style)
        if packing is not None and not isinstance(packing, PackedScore):
            raise TypeError(f"packing must be a PackedScore or None, not {type(packing).__name__}")
        self._codec = ScoreCodec(order)
        _check_log(log, fsync, self._codec.order, tie_break)
        #: a client this board made from a URL is its own, closed by close()
        self._own_client = isinstance(redis, str)
        if isinstance(redis, str):
            redis = client_from_url(redis)
        encoder = redis.get_encoder() if hasattr(redis, "get_encoder") else None
        if getattr(encoder, "decode_responses", False):
            raise ValueError(
                "the client decodes replies (decode_responses=True); the board reads "
                "bytes: give it a client without decode_responses"
            )
        self._client = redis
        self._name = name
        self._prefix = prefix
        self._order = self._codec.order
        self._desc = self._codec.descending
        self._tie_break: TieBreak = tie_break
        self._rank_style: RankStyle = rank_style
        self._format = ScoreFormat(self._codec, packing)
        self._first = tie_break == "first"
        #: Letters of a score's kind (one per column; two for packed pairs).
        self._klen = 1 if self._codec.columns is None else self._codec.columns
        self._plen = TIE_DIGITS + self._klen if self._first else 0
        self._mode = ("d" if self._desc else "a") + ("f" if self._first else "m")
        self._mode += f"{self._format.columns}{self._klen}"
        self._keys = [f"{prefix}{{{name}}}:{suffix}" for suffix in KEY_SUFFIXES]
        self._scripts = ScriptRunner(redis)
        #: Names this handle's reply keys; its writes are numbered (see _run).
        self._handle = uuid.uuid4().hex[:12]
        self._calls = itertools.count(1)
        #: The SHA1 of the settings as stored when this handle opened the
        #: board (or stored them again): every write passes it, and refuses
        #: a board stored with others (see _send).
        self._stored_sha = ""
        # Lock order: this board's lock, then its log's (a logged write and
        # rebuild() from the log).  No other board's lock is taken under it:
        # rebuild(source) and verify(source) copy the source under its own
        # lock first.
        self._lock = threading.RLock()
        #: Called with each list of changes *after* Redis applied it (the log).
        self._listener: Callable[[list[Change]], None] | None = None
        #: Sharded boards raise the clock of a shard to their global clock.
        self._clock_floor = 0
        #: The largest tie clock this client has seen a write use, raised
        #: under ``_clock_lock`` (writes on several threads note theirs at
        #: once, and an unguarded read-compare-write can lower it).
        self._last_clock = 0
        self._clock_lock = threading.Lock()
        self._restoring = False
        self._log: Any = None
        #: True when opening found Redis behind its log and rebuilt it.
        self.recovered = False
        #: How many times a write found Redis out of step with the log and
        #: rebuilt it first.
        self.repairs = 0
        # The order as the board keeps it (the directions, not the iterable
        # given), so that every order one in-process board takes is one board.
        self._config: dict[str, Any] = {
            "version": CONFIG_VERSION,
            "order": list(self._order) if isinstance(self._order, tuple) else self._order,
            "tie_break": tie_break,
            "packing": None
            if packing is None
            else [packing.window_start, packing.bits, packing.resolution, packing.descending],
        }

    def _place(self, index: int, count: int) -> None:
        """Make this unopened handle shard ``index`` of a sharded board of
        ``count`` shards: opening it stores that place with a new board's
        settings, and refuses a board stored with another place."""
        self._config = {**self._config, "version": SHARD_CONFIG_VERSION, "shard": [index, count]}

    @property
    def _shard_place(self) -> tuple[int, int] | None:
        """The board's place in a sharded board as stored in Redis
        (``(index, count)``), or None for a board created on its own or by
        an earlier version of rankengine."""
        place = self._config.get("shard")
        return None if place is None else (place[0], place[1])

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

    # ------------------------------------------------------------------
    # Configuration
    # ------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The board's name (its hash tag)."""
        return self._name

    @property
    def keys(self) -> list[str]:
        """The board's six Redis keys: ranking, members, metadata, distinct
        scores, their counts, state."""
        return list(self._keys)

    @property
    def redis(self) -> Any:
        """The redis-py client."""
        return self._client

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
    def packing(self) -> PackedScore | None:
        """The packed-score scheme, or None for the exact encoding."""
        return self._format.packing

    @property
    def log(self) -> Any:
        """The event log (a :class:`~rankengine.durable.board.DurableLeaderboard`), or None."""
        return self._log

    @property
    def clock(self) -> int:
        """The logical clock (stored in Redis, shared by every client).

        Runtime complexity: O(1), one round trip.
        """
        return int(self._client.hget(self._keys[5], "clock") or 0)

    @property
    def writes(self) -> int:
        """How many writes changed this board (compared with the log's records;
        a rebuild counts as one); -1 while a rebuild runs, or after one was
        cut short."""
        return int(self._client.hget(self._keys[5], "writes") or 0)

    def config(self) -> dict[str, Any]:
        """Settings for an empty in-process twin: ``Leaderboard(**board.config())``."""
        return {"order": self._order, "tie_break": self._tie_break, "rank_style": self._rank_style}

    def __len__(self) -> int:
        return int(self._client.zcard(self._keys[0]))

    def __contains__(self, member: object) -> bool:
        key = self._key_or_none(member)
        return key is not None and bool(self._client.hexists(self._keys[1], key))

    def __iter__(self) -> Iterator[Member]:
        """Members in rank order, best first (one read of the whole board)."""
        return iter([member for member, _ in self.items()])

    def __repr__(self) -> str:
        return (
            f"RedisLeaderboard({self._name!r}, order={self._order!r}, "
            f"tie_break={self._tie_break!r}, rank_style={self._rank_style!r})"
        )

    def __getitem__(self, member: Member) -> Score:
        value = self.score(member, MISSING)
        if value is MISSING:
            raise KeyError(member)
        return value  # type: ignore[no-any-return]

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
    # Writes
    # ------------------------------------------------------------------
    def set(
        self,
        member: Member,
        score: Score,
        *,
        when: When | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Set ``member``'s score, optionally only under a condition; see
        :meth:`Leaderboard.set <rankengine.Leaderboard.set>`.

        Runtime complexity: O(log N), one round trip.
        """
        key = self._member(member)
        value = self._codec.check(score)
        check_when(when)
        clean = None if meta is None else check_meta(meta)
        text, ok, kind = self._format.encode(value)
        blob = b"" if clean is None else encode_meta(clean)
        with self._writing():
            clock, meta_changed = self._run(
                "SET",
                key,
                text,
                ok,
                kind,
                when or "",
                "0" if clean is None else "1",
                blob,
                self._clock_floor,
            )
            changes: list[Change] = []
            if clock:
                changes.append((PUT, member, value, int(clock)))
            if meta_changed:
                changes.append((META, member, clean))
            self._notify(changes)
        return bool(changes)

    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: None = None) -> Score: ...
    @overload
    def incr(self, member: Member, delta: Score = 1, *, when: When) -> Score | None: ...
    def incr(self, member: Member, delta: Score = 1, *, when: When | None = None) -> Score | None:
        """Add ``delta`` to ``member``'s score; see
        :meth:`Leaderboard.incr <rankengine.Leaderboard.incr>`.

        Exact for every score: the server adds doubles when the result is
        exact, and otherwise the client adds the exact values and commits
        with a compare-and-set.

        Runtime complexity: O(log N), one round trip (three on the exact path).
        """
        key = self._member(member)
        step = self._codec.check(delta, "delta")
        check_when(when)
        if self._format.columns == 1 and self._format.packing is None and _fast(step):
            number: float = step  # type: ignore[assignment]  # a scalar board's delta
            with self._writing():
                result = self._run(
                    "INCR", key, repr(float(number)), _kind(number), when or "", self._clock_floor
                )
                status = int(result[0])
                if status == 0:
                    return None
                if status != 3:
                    new = self._format.decode(result[1], b"", result[2])
                    if status == 1:
                        self._notify([(PUT, member, new, int(result[3]))])
                    return new
        return self._exact_incr(member, key, step, when)

    def set_many(
        self,
        items: Mapping[Member, Score] | Iterable[tuple[Member, Score]],
        *,
        when: When | None = None,
    ) -> int:
        """Set many scores in one atomic script; all are validated first.  See
        :meth:`Leaderboard.set_many <rankengine.Leaderboard.set_many>`.

        Runtime complexity: O(k log N), one round trip.
        """
        check_when(when)
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

    def incr_many(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]]
    ) -> dict[Member, Score]:
        """Increment many members in one atomic script; see
        :meth:`Leaderboard.incr_many <rankengine.Leaderboard.incr_many>`.

        Runtime complexity: O(k log N), one round trip (three on the exact path).
        """
        pairs, keys, tag = self._check_pairs(items, "delta")
        if not pairs:
            return {}
        fast = self._format.columns == 1 and self._format.packing is None
        if fast and all(_fast(step) for _, step in pairs):
            args: list[Any] = [self._clock_floor, tag]
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

    def remove(self, member: Member) -> bool:
        """Remove a member and its metadata; True if it was present.

        Runtime complexity: O(log N), one round trip.
        """
        return self.remove_many([member]) == 1

    def remove_many(self, members: Iterable[Member]) -> int:
        """Remove several members in one script; return how many were present.

        Runtime complexity: O(k log N), one round trip.
        """
        wanted = member_list(members)
        keys = check_members(self._member, wanted)
        if not keys:
            return 0
        with self._writing():
            gone = self._run("REMOVE", *keys)
            self._notify([(DEL, decode_member(key)) for key in gone])
        return len(gone)

    def clear(self) -> None:
        """Remove every member (the clock and the configuration stay).

        Runtime complexity: O(N), one round trip.
        """
        with self._writing():
            want = self._listener is not None
            gone = self._run("CLEAR", "1" if want else "0")
            if want:
                self._notify([(DEL, decode_member(key)) for key in gone])

    def set_meta(self, member: Member, meta: Mapping[str, Any] | None) -> None:
        """Replace (or with ``None`` remove) a present member's metadata.

        Runtime complexity: O(size of meta), one round trip.
        """
        key = self._member(member)
        clean = None if meta is None else check_meta(meta)
        blob = b"" if clean is None else encode_meta(clean)
        with self._writing():
            status = self._run("SET_META", key, "0" if clean is None else "1", blob)
            if status < 0:
                raise KeyError(f"no member {member!r}: add a score before its metadata")
            if status:
                self._notify([(META, member, clean)])

    def meta(self, member: Member) -> dict[str, Any] | None:
        """The member's metadata, or None.

        Runtime complexity: O(size of meta), one round trip.
        """
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
        """The member's score, or ``default`` when absent.

        Runtime complexity: O(1), one round trip.
        """
        found = self._entries([member], "-", False)[0]
        return default if found is None else found.score

    def _rank_of_member(self, member: Member, style: RankStyle) -> int | None:
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
        return self._range(style, with_meta, "win", 0, k)

    def _rank_rows(self, start: int, stop: int, style: RankStyle, with_meta: bool) -> list[Entry]:
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
        """``(member, score)`` pairs in rank order, best first.

        Runtime complexity: O(N), one round trip.
        """
        return [(e.member, e.score) for e in self._range("unique", False, "rank", 1, -1)]

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
    ) -> RedisLeaderboard:
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
    ) -> RedisLeaderboard:
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

    # ------------------------------------------------------------------
    # Durability: the event log, verification, rebuild
    # ------------------------------------------------------------------
    def _attach_log(self, log: str | os.PathLike[str], fsync: FsyncPolicy) -> None:
        # Not rank_style: it is each handle's default, not the board's, and
        # a log directory refuses a style other than the one it stored.
        durable = open_board_as(
            Leaderboard, log, fsync=fsync, order=self._order, tie_break=self._tie_break
        )
        try:
            self._adopt_log(durable, self._init())
        except BaseException:
            # A board that failed to open leaves its log closed (unlocked),
            # free to be opened again.
            self._log = self._listener = None
            durable.close()
            raise

    def _adopt_log(self, durable: Leaderboard, writes: int) -> None:
        self._log = durable
        self._listener = self._log_changes
        logged = int(getattr(durable, "last_seq", 0))
        if writes > logged:
            raise ValueError(
                f"Redis board {self._name!r} has {writes} writes but its log only {logged}: "
                "another process writes to it, or the log is not this board's"
            )
        self.recovered = writes < logged
        if self.recovered:
            self.rebuild()

    def _log_changes(self, changes: list[Change]) -> None:
        log = self._log
        with log._lock:
            log._commit(changes)

    def verify(self, source: Any = None) -> list[str]:
        """Differences between the board in Redis and ``source`` (default: the
        log); an empty list means they agree, scores, ties, metadata and clock.

        Runtime complexity: O(N), two round trips.
        """
        source = self._log if source is None else source
        if source is None:
            raise ValueError("verify() needs a log (or a board to compare with)")
        with source._lock:
            want = list(source._export())
            want_clock = source.clock
        got = list(self._export())
        notes: list[str] = []
        if got != want:
            have = {row[0]: row for row in got}
            wanted = {row[0]: row for row in want}
            for member in wanted.keys() | have.keys():
                if wanted.get(member) != have.get(member):
                    notes.append(
                        f"{member!r}: Redis has {have.get(member)}, log {wanted.get(member)}"
                    )
            if not notes:
                notes.append("same members, different order")
        clock = self.clock
        if clock != want_clock:
            notes.append(f"clock: Redis {clock}, log {want_clock}")
        return sorted(notes)

    def rebuild(self, source: Any = None) -> int:
        """Replace the board in Redis with ``source``'s state: the event log by
        default, or any in-process board (for instance
        ``rankengine.durable.board.rebuild(path)``).  Returns the number of members.

        This is the recovery for a Redis that lost data (restarted without
        persistence, or a failover that lost the last replicated writes).
        Readers may see a partial board while it runs.

        On a board with an event log, the log is the board's truth: a
        ``source`` other than the log is first written to the log, as one
        write of the changes that turn the log's board into ``source``'s
        (every row is checked before anything is written), and Redis is then
        rebuilt from the log.  So the write counter stays in step with the
        log, and the rebuilt contents survive the next write and a reopen.

        The logical clock becomes at least the source's, so later writes
        order after everything the source had seen, even writes of members
        it has since removed.  An unlogged board takes the source's clock:
        it is a copy (its write counter counts the rebuild as one write; a
        durable source's ``last_seq`` is not copied).  A logged board's
        clock is the log's, which never goes back: the larger of the log's
        and the source's.  The rebuild's logged write records it (the log
        holds no clock of its own, only its changes': one member is put with
        the clock and put back as the source has it), so it survives a
        reopen; only an empty source copied onto an empty logged board has
        no member to carry it, and keeps the log's clock.

        ``source`` must have this board's ``order`` and ``tie_break`` (a
        ``ValueError`` otherwise, before anything changes): its rows are
        copied as they are, tie clocks included, never converted.

        Runtime complexity: O(N log N), about N / 2000 round trips.
        """
        source = self._log if source is None else source
        if source is None:
            raise ValueError("rebuild() needs a log (or a board to copy)")
        for setting, mine in (("order", self._order), ("tie_break", self._tie_break)):
            theirs = getattr(source, setting)
            if theirs != mine:
                raise ValueError(
                    f"rebuild() needs a source with this board's {setting} ({mine!r}), "
                    f"not {theirs!r}: its rows would not rank as this board ranks them"
                )
        if source is self._log:
            # A logged write holds this board's lock, then the log's: the same here.
            with self._lock, source._lock:
                rows = list(source._export())
                self._restore(rows, int(source.clock), writes=self._log.last_seq)
                return len(rows)
        # Any other source is copied under its own lock alone, released before
        # this board's is taken: holding both would take them in the opposite
        # order to a rebuild the other way (a.rebuild(b) on one thread while
        # b.rebuild(a) runs on another), and the two would wait for each other.
        with source._lock:
            rows = list(source._export())
            clock = int(source.clock)
        with self._lock:
            rows = self._checked_rows(rows, clock)  # before Redis (or the log) changes
            if self._log is None:
                # An unlogged board becomes a copy of the source, clock
                # included, but not its place in a log: the write counter
                # (read only when a log is attached) counts this board's own
                # writes, the rebuild as one.  A durable source's last_seq
                # would let a later attach of that source's log take Redis
                # for in step after both went on by as many writes.
                self._restore(rows, clock, writes=max(self.writes, 0) + 1)
                return len(rows)
            log = self._log
            with self._writing(), log._lock:
                have = list(log._export())
                self._notify(
                    _clock_mark(have, rows, clock, log.clock) or _changes_between(have, rows)
                )
                self._restore(list(log._export()), log.clock, writes=log.last_seq)
        return len(rows)

    def _checked_rows(
        self, rows: list[tuple[Member, Score, int, dict[str, Any] | None]], clock: int
    ) -> list[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Rows of another board (whose clock is ``clock``), each checked as a
        write to this board would be (member, score, metadata, a tie clock
        Redis can hold); raises on the first bad one."""
        out = []
        tags: set[bytes] = set()
        if clock > MAXCLOCK:  # every member's clock is at most the board's
            raise ValueError(
                f"the source's tie clock {clock} is past 2**53 - 1, the largest a Redis board holds"
            )
        for member, score, member_clock, meta in rows:
            tags.add(self._member(member)[:1])
            value = self._codec.check(tuple(score) if isinstance(score, list) else score)
            self._format.encode(value)  # refuse what cannot be stored
            out.append((member, value, member_clock, None if meta is None else check_meta(meta)))
        if not self._first and len(tags) > 1:
            raise TypeError(
                "this board breaks ties by member: the source's members are of "
                f"{len(tags)} types, which would not compare"
            )
        return out

    def _export(self) -> Iterator[tuple[Member, Score, int, dict[str, Any] | None]]:
        """Every member as ``(member, score, clock, meta)`` in ascending index
        order, as :meth:`Leaderboard._export <rankengine.Leaderboard._export>`."""
        pipe = self._client.pipeline(transaction=False)
        pipe.zrange(self._keys[0], 0, -1, withscores=True, score_cast_func=bytes)
        pipe.hgetall(self._keys[1])
        pipe.hgetall(self._keys[2])
        elements, kinds, metas = pipe.execute()
        for element, text in elements:
            ok, clock, key = self._split_element(element)
            kind = kinds[key].split(b":", 1)[0]
            data = metas.get(key)
            yield (
                decode_member(key),
                self._format.decode(text, ok, kind),
                clock if self._first else 0,
                None if data is None else decode_meta(data),
            )

    def _restore(
        self,
        rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]],
        clock: int,
        *,
        writes: int | None = None,
    ) -> None:
        """Replace the whole board with ``rows`` (as :meth:`_export` yields them)."""
        self._restoring = True
        try:
            self._restore_rows(rows, clock, writes)
        finally:
            self._restoring = False

    def _restore_rows(
        self,
        rows: Iterable[tuple[Member, Score, int, dict[str, Any] | None]],
        clock: int,
        writes: int | None,
    ) -> None:
        # Until the last chunk is in, the write counter is -1, which matches
        # no log: a restore cut short (a crash, a lost connection, Redis out
        # of memory) is redone by the guard or on open, never taken for a
        # board in step with its log.
        unfinished: tuple[Any, ...] = () if writes is None else ("W", -1)
        if writes is not None:
            self._client.hset(self._keys[5], "writes", -1)
        self._client.delete(*self._keys[:5])
        self._client.hdel(self._keys[5], "inexact", "clock", "dense")
        ops: list[Any] = []
        for member, score, member_clock, meta in rows:
            value = self._codec.check(tuple(score) if isinstance(score, list) else score)
            ops.extend(("P", self._member(member), *self._format.encode(value), member_clock))
            if meta is not None:
                ops.extend(("M", self._member(member), "1", encode_meta(meta)))
            if len(ops) >= 6 * RESTORE_CHUNK:
                self._run("COMMIT", 0, *ops, *unfinished)
                ops = []
        ops.extend(("C", clock))
        if writes is not None:
            ops.extend(("W", writes))
        self._run("COMMIT", 0, *ops)

    def _commit(self, changes: list[Change], expect: Iterable[tuple[Member, Any]] = ()) -> bool:
        """Apply explicit changes (``PUT`` with its own clock, ``DEL``,
        ``META``) in one script, after checking ``expect``: ``(member, score
        or MISSING)`` pairs the board must hold.  False (nothing written)
        when a precondition failed.  Used by sharded batches and replay."""
        ops: list[Any] = []
        for member, expected in expect:
            if expected is MISSING:
                ops.extend(("X", self._member(member), "", "", ""))
            else:
                ops.extend(("X", self._member(member), *self._format.encode(expected)))
        for change in changes:
            if change[0] == PUT:
                value = self._codec.check(change[2])
                ops.extend(("P", self._member(change[1]), *self._format.encode(value), change[3]))
            elif change[0] == DEL:
                ops.extend(("D", self._member(change[1])))
            else:
                data = change[2]
                ops.extend(("M", self._member(change[1]), _flag(data is not None)))
                ops.append(b"" if data is None else encode_meta(check_meta(data)))
        with self._writing():
            if not int(self._run("COMMIT", self._clock_floor, *ops)[0]):
                return False
            self._notify(changes)
        return True

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

    # ------------------------------------------------------------------
    # Helpers
    # ------------------------------------------------------------------
    def _init(self, *, store: bool = True) -> int:
        """Check the board's keys and stored settings against this handle's,
        storing them first (``store``) unless the board has some, and return
        the write counter."""
        from redis.exceptions import ResponseError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

        try:
            stored, writes = self._run(
                "INIT", json.dumps(self._config, sort_keys=True), _flag(store)
            )
        except ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise
            # Every script reads the state hash first: it is the key at fault.
            raise self._wrong_type(5, self._client.type(self._keys[5])) from None
        if stored is None:  # no board yet, and asked not to store
            return int(writes)
        config = self._stored_config(stored)
        raw_config = stored if isinstance(stored, bytes) else stored.encode()
        if _board_settings(config) != _board_settings(self._config):
            raise ValueError(
                f"Redis board {self._name!r} was created with {config}; "
                f"it cannot be opened with {self._config}"
            )
        have, want = config.get("shard"), self._config.get("shard")
        if have is not None and want is not None and have != want:
            raise ValueError(
                f"Redis board {self._name!r} was created as shard {have[0]} of {have[1]} "
                f"of a sharded board; it cannot be opened as shard {want[0]} of {want[1]}: "
                "a member's shard depends on both, so members would be looked up on the "
                "wrong shard and written to two"
            )
        # The handle takes the place stored (none on a board created on its
        # own or by an earlier version), so storing the settings again after
        # Redis lost them keeps it.
        self._config = config
        self._stored_sha = hashlib.sha1(raw_config, usedforsecurity=False).hexdigest()
        return int(writes)

    def _recheck(self) -> None:
        """A write found the board stored with settings other than those this
        handle opened it with (Redis lost it, another process created it
        again): read them again, and go on if they agree with this handle's
        (the same settings, stored by another version or without a shard's
        place); otherwise raise a ``ValueError``.

        Runtime complexity: O(1), one round trip (only after such a refusal).
        """
        try:
            self._init(store=False)
        except ValueError as exc:
            raise ValueError(
                f"Redis board {self._name!r} was lost while this handle had it open (a "
                "restart without persistence, a flush) and created again with other "
                f"settings; this handle's writes would corrupt it, so none is made: {exc}"
            ) from None

    def _stored_config(self, stored: bytes | str) -> dict[str, Any]:
        """The settings stored in Redis, parsed; ``ValueError`` when they are
        damaged or in a format of another version of rankengine."""
        try:
            parsed = json.loads(stored)
        except ValueError:  # not JSON (or not UTF-8)
            parsed = None
        config: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        version = config.get("version")
        fields = _CONFIG_FIELDS.get(version) if type(version) is int else None
        if type(version) is not int or (
            fields is not None
            and (config.keys() != fields or ("shard" in config and not _is_place(config["shard"])))
        ):
            raise ValueError(
                f"Redis board {self._name!r} has damaged settings in {self._keys[5]!r} "
                f"(field 'config'): {stored!r}"
            )
        if fields is None:
            raise ValueError(
                f"Redis board {self._name!r} was stored by another version of rankengine "
                f"(settings format version {version}; this one reads versions "
                f"{CONFIG_VERSION} and {SHARD_CONFIG_VERSION})"
            )
        return config

    def _wrong_type(self, index: int, have: bytes | str) -> ValueError:
        """The error for a board key that holds a value of another type."""
        kind = have.decode() if isinstance(have, bytes) else have
        return ValueError(
            f"Redis key {self._keys[index]!r} of board {self._name!r} holds a {kind}, not "
            f"the {_KEY_TYPES[index]} the board keeps there: another application uses it"
        )

    def _run(self, name: str, *args: Any) -> Any:
        return self._send(name, lambda keys, mode: self._scripts(name, keys, [mode, *args]))

    def _run_together(self, name: str, calls: list[list[Any]]) -> list[Any]:
        """Run script ``name`` once per argument list of ``calls``, in one
        MULTI/EXEC transaction, as ONE write: every call carries the same
        call number (and write guard), so the script must count the write
        and keep its reply in its last call only (see ``load.lua``)."""
        chunks = self._scripts.transaction
        return self._send(  # type: ignore[no-any-return]
            name, lambda keys, mode: chunks(name, keys, [[mode, *args] for args in calls])
        )

    def _send(self, name: str, send: Callable[[list[str], str], Any]) -> Any:
        """``send(keys, mode)`` a call of script ``name``: numbered, bound to
        the stored settings and guarded if it writes, sent again after the
        board's settings are stored (or read) again, or after Redis is
        rebuilt from the log.

        Runtime complexity: one round trip, plus one after a lost board or
        a failed write guard; besides the script's own work.
        """
        writes = name in _WRITES
        guarded = self._log is not None and writes and not self._restoring
        keys = [*self._keys, self._reply_key()] if writes else self._keys
        stored = repaired = rechecked = False
        while True:
            # A write is numbered: sent again by the client after a lost
            # reply, it gets the reply of its first run (see lib_core.lua),
            # and names the settings it was encoded for.
            mode = self._mode
            if writes:
                mode += f"#{next(self._calls)}"
                if self._stored_sha:  # (none before the settings are first stored)
                    mode += f"@{self._stored_sha}"
            if guarded:
                mode += f":{self._log.last_seq}"
            try:
                return send(keys, mode)
            except ScriptError as exc:
                if exc.code == "CONFIG" and not stored:
                    # Redis lost the board (a restart, a flush) since it was
                    # opened: its settings go back before it is written again,
                    # so another process cannot open it with other ones.
                    self._init()
                    stored = True
                    continue
                if exc.code == "SETTINGS" and not rechecked:
                    # The board was stored again with other settings: they
                    # are read again, and the write goes on only if they
                    # agree with this handle's.
                    self._recheck()
                    rechecked = True
                    continue
                if exc.code != "STALE" or repaired:
                    raise self._error(exc) from None
            # Redis and the log disagree (Redis lost writes, or holds one that
            # was never logged): Redis becomes the log's state again.
            self.rebuild()
            self.repairs += 1
            repaired = True

    def _reply_key(self) -> str:
        """Where this handle's writes from this thread leave their last reply.

        One key per handle, process and thread: the calls of one thread
        run one after the other, so the call a lost reply belongs to is
        the last one written there.
        """
        return f"{self._keys[5][:-1]}r:{self._handle}.{os.getpid()}.{threading.get_ident()}"

    def _error(self, exc: ScriptError) -> Exception:
        if exc.code == "KEYTYPE":
            index, have = exc.detail.split(" ", 1)
            return self._wrong_type(int(index) - 1, have)
        if exc.code == "TYPE":
            have, got = (_TAGS.get(ord(c), c) for c in exc.detail[:2])
            return TypeError(
                f"this board breaks ties by member and holds {have} members; "
                f"{got} members would not compare"
            )
        if exc.code == "VALUE" and exc.detail == "NaN":
            return ValueError("increment would make the score NaN (inf + -inf)")
        return ValueError(exc.detail)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Writes and their log records stay in one order: under the lock when logged."""
        if self._listener is None:
            yield
            return
        if self._log is not None and getattr(self._log, "closed", False):
            raise ValueError(f"the event log of Redis board {self._name!r} is closed")
        with self._lock:
            yield

    def _notify(self, changes: list[Change]) -> None:
        for change in changes:
            # Compared again under the lock: a racing write may have raised it.
            if change[0] == PUT and change[3] > self._last_clock:
                with self._clock_lock:
                    self._last_clock = max(self._last_clock, change[3])
        if changes and self._listener is not None:
            self._listener(changes)

    def _member(self, member: object) -> bytes:
        return encode_member(member)  # type: ignore[arg-type]

    def _key_or_none(self, member: object) -> bytes | None:
        """The stored form of a member to look up, or None if it cannot be one
        (a hashable value of another type); an unhashable value raises."""
        kind = type(member)
        if kind is str or kind is bytes or kind is int or is_member(member):
            try:
                return encode_member(member)  # type: ignore[arg-type]
            except ValueError:
                return None
        check_lookup(member)  # a hashable value of another type is just absent
        return None

    def _check_pairs(
        self, items: Mapping[Member, Score] | Iterable[tuple[Member, Score]], what: str
    ) -> tuple[list[tuple[Any, Score]], list[bytes], bytes]:
        source = items.items() if isinstance(items, Mapping) else items
        pairs: list[tuple[Any, Score]] = []
        keys: list[bytes] = []
        tag = b""
        pair: object = None
        try:
            for pair in source:
                if not isinstance(pair, tuple) or len(pair) != 2:
                    raise TypeError(f"expected (member, {what}) pairs, got {pair!r}")
                member, value = pair
                key = self._member(member)
                if not self._first:
                    if not tag:
                        tag = key[:1]
                    elif key[:1] != tag:
                        raise TypeError(
                            f"this board breaks ties by member: {_TAGS[tag[0]]} and "
                            f"{type(member).__name__} members would not compare"
                        )
                pairs.append((member, self._codec.check(value, what)))
                keys.append(key)
        except (TypeError, ValueError, OverflowError) as exc:
            raise batch_error(exc, len(pairs), pair) from None
        return pairs, keys, tag

    def _tie(self, clock: int, member: Member) -> Any:
        if not self._first:
            return member
        return -clock if self._desc else clock

    def _split_element(self, element: bytes) -> tuple[bytes, int, bytes]:
        """``(ordkey, clock, member key)`` of a sorted-set element."""
        end = self._format.ok_end(element)
        clock = 0
        if self._first:
            digits = int(element[end : end + TIE_DIGITS])
            clock = MAXCLOCK - digits if self._desc else digits
        return element[:end], clock, element[end + self._plen :]

    def _score_of_row(self, element: bytes, text: bytes, kind: bytes) -> Score:
        ok, _, _ = self._split_element(element)
        return self._format.decode(text, ok, kind)

    def _span(
        self, low: Score | None, high: Score | None, low_inclusive: bool, high_inclusive: bool
    ) -> list[Any]:
        # the bounds first, then the flags: the order an in-process board checks them in
        low = None if low is None else self._codec.check(low, "min")
        high = None if high is None else self._codec.check(high, "max")
        if not isinstance(low_inclusive, bool) or not isinstance(high_inclusive, bool):
            raise TypeError("inclusive flags must be bools")
        out: list[Any] = []
        # A bound that no stored score can equal (on a packed board: a
        # fraction of a point, a time between ticks) becomes the nearest
        # storable score inside the range, counted in: the low end rounds up,
        # the high end down, whether the bound was inclusive or not.
        for value, inclusive, what, up in (
            (low, low_inclusive, "min", True),
            (high, high_inclusive, "max", False),
        ):
            if value is None:
                out.extend(("", "", ""))
            else:
                text, ok, exact = self._format.rounded_bound(self._codec.check(value, what), up=up)
                out.extend((text, ok, _flag(inclusive or not exact)))
        return out

    def _hypothetical(self, score: Score, style: RankStyle) -> tuple[str, bytes]:
        """``score`` for a hypothetical rank, as ``(double text, ordkey)``.

        A score no member can hold (see :meth:`_span`) ranks as its storable
        neighbour on the side that gives the same count: a unique rank counts
        the members at or ahead of the score (the better neighbour), the
        others those strictly ahead (the worse one).
        """
        better_is_up = self._desc  # the index ascends; a descending board reads it down
        up = better_is_up if style == "unique" else not better_is_up
        text, ok, _ = self._format.rounded_bound(self._codec.check(score), up=up)
        return text, ok

    def _entries(self, members: list[Any], style: str, with_meta: bool) -> list[Entry | None]:
        keys = [self._key_or_none(member) for member in members]
        present = [key for key in keys if key is not None]
        result = self._run("ENTRIES", style, _flag(with_meta), *present) if present else []
        out: list[Entry | None] = []
        at = 0
        for member, key in zip(members, keys, strict=True):
            if key is None:
                out.append(None)
                continue
            text, element, kind, rank, data = result[at : at + 5]
            at += 5
            if text is None:
                out.append(None)
                continue
            ok, _, _ = self._split_element(element)
            score = self._format.decode(text, ok, kind)
            meta = decode_meta(data) if with_meta and data else None
            out.append(Entry(member, score, 0 if rank is None else int(rank), meta))
        return out

    def _range(self, style: RankStyle | None, with_meta: bool, *selector: Any) -> list[Entry]:
        style = self._style(style)
        result = self._run("RANGE", _STYLE_CODE[style], _flag(with_meta), *selector)
        if int(result[0]) < 0:
            return []
        return self._rows(result, style, with_meta)

    def _rows(self, result: list[Any], style: RankStyle, with_meta: bool) -> list[Entry]:
        """Entries from a RANGE reply, ranked as ``Leaderboard._entries_between`` does."""
        lo, comp, dense = int(result[0]), int(result[2]), int(result[3])
        out: list[Entry] = []
        rank = lo + 1
        prev: Any = MISSING
        shared = 0
        for element, text, kind, data in _quads(result[4:]):
            ok, _, key = self._split_element(element)
            order_key = (float(text), ok)
            if style == "unique":
                shown = rank
            elif prev is MISSING or order_key != prev:
                if style == "competition":
                    shown = rank if prev is not MISSING else comp + 1
                else:
                    shown = dense + 1 if prev is MISSING else shared + 1
                shared = shown
            else:
                shown = shared
            prev = order_key
            meta = decode_meta(data) if with_meta and data else None
            score = self._format.decode(text, ok, kind)
            out.append(Entry(decode_member(key), score, shown, meta))
            rank += 1
        return out

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


# ----------------------------------------------------------------------
# Many boards, one round trip per client
# ----------------------------------------------------------------------
class Pending(NamedTuple):
    """A read script to run on a board, and how to decode its reply."""

    board: RedisLeaderboard
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


def client_from_url(url: str) -> Any:
    """A redis-py client for ``url`` (``redis://host:port/db``); its owner
    closes it.  Runtime complexity: O(1) (it connects at its first command)."""
    import redis as redis_py  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

    return redis_py.Redis.from_url(url)


def _pipeline(client: Any, calls: list[Pending]) -> list[Any]:
    """One pipeline of script calls; loads the scripts and retries once on NOSCRIPT."""
    from redis.exceptions import NoScriptError  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for board, name, args, _ in calls:
            keys = board._keys
            pipe.evalsha(board._scripts.sha[name], len(keys), *keys, board._mode, *args)
        replies = pipe.execute(raise_on_error=False)
        if attempt == 0 and any(isinstance(r, NoScriptError) for r in replies):
            ScriptRunner(client).load()
            continue
        break
    return list(replies)


# ----------------------------------------------------------------------
# Module helpers
# ----------------------------------------------------------------------
def _check_log(log: object, fsync: object, order: Any, tie_break: object) -> None:
    """Refuse ``log``/``fsync`` values a board could not use, before it goes
    to Redis: a directory, or an open durable board of the same ``order`` and
    ``tie_break`` (anything else would fail only at the first write)."""
    check_fsync(fsync)
    if log is None or isinstance(log, (str, os.PathLike)):
        return
    if not isinstance(log, DurableLeaderboard):
        raise TypeError(
            "log must be a directory or an open durable board (Leaderboard.open), "
            f"not {type(log).__name__}"
        )
    if log.closed:
        raise ValueError("the event log given is closed")
    if log.order != order or log.tie_break != tie_break:
        raise ValueError("the log holds a board with another order or tie_break")


def _fast(step: Score) -> bool:
    """A step the server can add as a double without losing anything."""
    return type(step) is float or (type(step) is int and abs(step) < 2**53)


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _board_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Stored settings without the format version and the shard's place:
    what every handle on the board must have alike.

    Runtime complexity: O(1)

    >>> _board_settings({"version": 2, "order": "desc", "shard": [0, 3]})
    {'order': 'desc'}
    """
    return {k: v for k, v in config.items() if k not in ("version", "shard")}


def _is_place(value: object) -> bool:
    """Whether ``value`` is a stored shard place ``[index, count]``: two ints
    (not bools) with ``0 <= index < count``.

    Runtime complexity: O(1)

    >>> _is_place([2, 3]), _is_place([3, 3]), _is_place([0, True]), _is_place("0/3")
    (True, False, False, False)
    """
    if type(value) is not list or len(value) != 2:
        return False
    index, count = value
    return type(index) is int and type(count) is int and 0 <= index < count


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


def _pairs(flat: list[Any]) -> Iterator[tuple[Any, Any]]:
    it = iter(flat)
    return zip(it, it, strict=True)


def _quads(flat: list[Any]) -> Iterator[tuple[Any, Any, Any, Any]]:
    it = iter(flat)
    return zip(it, it, it, it, strict=True)


def _same_score(a: Any, b: Any) -> bool:
    """Are two scores the same, types and the sign of zero included?"""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(map(_same_score, a, b))
        )
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)


def _changes_between(
    have: list[tuple[Member, Score, int, dict[str, Any] | None]],
    want: list[tuple[Member, Score, int, dict[str, Any] | None]],
) -> list[Change]:
    """Changes that turn a board holding the rows ``have`` into one holding
    ``want`` (rows as ``_export`` yields them): a member whose score or clock
    differs is removed and put again (so two members never share a clock on
    the way), and metadata follows.

    Runtime complexity: O(N) for N rows in all.
    """
    current = {row[0]: row for row in have}
    target = {row[0]: row for row in want}
    removed: list[Change] = []
    put: list[Change] = []
    metas: list[Change] = []
    for member, (_, score, clock, _) in current.items():
        row = target.get(member)
        if row is None or row[2] != clock or not _same_score(row[1], score):
            removed.append((DEL, member))
    gone = {change[1] for change in removed}
    for member, (_, score, clock, meta) in target.items():
        if member not in current or member in gone:
            put.append((PUT, member, score, clock))
            if meta is not None:
                metas.append((META, member, meta))
        elif not same_meta(current[member][3], meta):
            metas.append((META, member, meta))
    return removed + put + metas


def _clock_mark(
    have: list[tuple[Member, Score, int, dict[str, Any] | None]],
    want: list[tuple[Member, Score, int, dict[str, Any] | None]],
    clock: int,
    logged: int,
) -> list[Change]:
    """The changes of :func:`_changes_between` that also bring a log's clock
    (now ``logged``) up to ``clock``; empty when there is no need, or no
    member to carry it.

    A log's clock is the largest tie clock it holds (see the log format):
    there is no change for the clock alone.  So one member is put with
    ``clock`` and removed again, then put back as ``want`` has it (with its
    metadata), all in the one logged write.  ``clock`` is past every clock
    of ``want`` and of the log's board, so no two members share it on the way.

    Runtime complexity: O(N) for N rows in all.
    """
    if clock <= logged or not (want or have):
        return []
    member, score, _, _ = want[0] if want else have[0]
    rest = [row for row in have if row[0] != member]
    return [(PUT, member, score, clock), (DEL, member), *_changes_between(rest, want)]


def _combine(
    cls: type[RedisLeaderboard],
    inputs: list[Any],
    weights: Iterable[float] | None,
    aggregate: str,
    *,
    intersect: bool,
    config: dict[str, Any],
) -> RedisLeaderboard:
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
    if isinstance(first, RedisLeaderboard):
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


if TYPE_CHECKING:

    def _answers_the_contract(board: RedisLeaderboard) -> Board:
        """mypy checks here that the board answers the contract."""
        return board
