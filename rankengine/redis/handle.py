"""A Redis board's handle: its keys, its settings as stored in Redis, and
how its script calls reach the server.

:class:`RedisHandle` is the base of :class:`~rankengine.redis.board.RedisLeaderboard`.
It owns the checks of the constructor's arguments (nothing reaches Redis
before all are good), the six keys that share one ``{hash tag}``, the
settings stored in the state hash (checked on open, stored again when Redis
lost them), and the one path every script call takes (:meth:`RedisHandle._send`):
numbered, bound to the stored settings, guarded by the log when the board
has one, retried once after a lost board or a stale log.

>>> [f"rankengine:{{weekly}}:{suffix}" for suffix in KEY_SUFFIXES][:2]
['rankengine:{weekly}:z', 'rankengine:{weekly}:h']
>>> _board_settings({"version": 2, "order": "desc", "tie_break": "first", "shard": [0, 3]})
{'order': 'desc', 'tie_break': 'first'}
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

from rankengine.board.changes import PUT, Change
from rankengine.board.checks import check_style
from rankengine.board.core import RankStyle, TieBreak
from rankengine.board.leaderboard import Leaderboard
from rankengine.board.packed import PackedScore
from rankengine.board.scoring import (
    Order,
    ScoreCodec,
)
from rankengine.durable.board import DurableLeaderboard, FsyncPolicy, check_fsync
from rankengine.redis.codec import (
    _TAGS,
    TIE_DIGITS,
    ScoreFormat,
)
from rankengine.redis.direct import DirectCalls, direct_calls
from rankengine.redis.incrcall import IncrCall
from rankengine.redis.scripts import ScriptError, ScriptRunner

__all__ = [
    "CONFIG_VERSION",
    "KEY_SUFFIXES",
    "MISSING",
    "SHARD_CONFIG_VERSION",
    "RedisHandle",
    "RedisOptions",
    "client_from_url",
]

#: Key suffixes, in the order every script receives them (see redis_scripts).
KEY_SUFFIXES: Final = ("z", "h", "m", "d", "c", "s")
#: The Redis type each key holds (checked on open: a write that met another
#: application's value half-way through its script would be half-applied).
_KEY_TYPES: Final = ("zset", "hash", "hash", "zset", "hash", "hash")
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
#: Reply keys a handle keeps made (one per thread that wrote; past them the
#: table starts again: a key is cheap to make, this only bounds the table).
_REPLY_KEYS_KEPT: Final = 1000
#: What a score look-up returns for an absent member (shared with the
#: sharded board's merges, which read the same look-ups).
MISSING: Final = object()


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
    rank_trips: Literal[1, 2]


def _resp2(client: Any) -> bool:
    """Whether a redis-py client speaks RESP2 (its default), whose replies
    carry a score as the bytes Redis wrote, as a script gets them."""
    pool = getattr(client, "connection_pool", None)
    if pool is None:  # a cluster client: its nodes' pools share the settings
        pool = getattr(getattr(client, "nodes_manager", None), "connection_kwargs", None)
        kwargs = pool if isinstance(pool, dict) else {}
    else:
        kwargs = getattr(pool, "connection_kwargs", {})
    return str(kwargs.get("protocol", 2) or 2) == "2"


def client_from_url(url: str) -> Any:
    """A redis-py client for ``url`` (``redis://host:port/db``); its owner
    closes it.  Runtime complexity: O(1) (it connects at its first command)."""
    import redis as redis_py  # noqa: PLC0415 -- optional: redis-py is the [redis] extra

    return redis_py.Redis.from_url(url)


def _check_log(log: object, fsync: object, order: Any, tie_break: object) -> None:
    """Refuse ``log``/``fsync`` values a board could not use, before it goes
    to Redis: a directory, or an open durable board of the same ``order`` and
    ``tie_break`` (anything else would fail only at the first write)."""
    check_fsync(fsync)
    if log is None or isinstance(log, (str, os.PathLike)):
        return
    # (or a board that counts its writes as a log's records, ``last_seq``,
    # and says so with ``counts_writes``: a ledger's Redis view keeps one)
    if not isinstance(log, DurableLeaderboard) and not (
        isinstance(log, Leaderboard) and getattr(log, "counts_writes", False)
    ):
        raise TypeError(
            "log must be a directory or an open durable board (Leaderboard.open), "
            f"not {type(log).__name__}"
        )
    if getattr(log, "closed", False):
        raise ValueError("the event log given is closed")
    if log.order != order or log.tie_break != tie_break:
        raise ValueError("the log holds a board with another order or tie_break")


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


def _check_trips(rank_trips: object) -> None:
    """Refuse a ``rank_trips`` that is not 1 or 2 (an int, not a bool).

    >>> _check_trips(True)
    Traceback (most recent call last):
    ...
    ValueError: rank_trips must be 1 or 2, not True
    """
    if type(rank_trips) is not int or rank_trips not in (1, 2):
        raise ValueError(f"rank_trips must be 1 or 2, not {rank_trips!r}")


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


class RedisHandle:
    """The handle's settings, keys and script calls (see the module docstring)."""

    if TYPE_CHECKING:  # supplied by the board (see rankengine.redis.log)

        def rebuild(self, source: Any = None) -> int: ...

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
        rank_trips: Literal[1, 2] = 2,
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
        _check_trips(rank_trips)
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
        # Reads sent as plain commands, no script, where the stored form
        # allows it and the client reads scores as Redis sends them (RESP2):
        # a unique rank on a scalar tie_break="member" board (the element of
        # an exactly stored score is the member), the top rows of a
        # first-to-reach board (the element holds the kind).
        resp2 = _resp2(redis)
        self._plain_rank = resp2 and not self._first and self._format.columns == 1
        self._plain_range = resp2 and self._first
        #: member key -> its element when this handle last saw it (see _seen)
        self._elements: dict[bytes, bytes] = {}
        self._scripts = ScriptRunner(redis)
        #: Calls on the client's connection pool, knowing a first sending
        #: from a resend (None: through execute_command; see _run).
        self._direct: DirectCalls | None = direct_calls(redis)
        #: A scalar board's increment, packed once (see rankengine.redis.incrcall).
        self._incr_sender: IncrCall | None = None
        if self._direct is not None and self._format.columns == 1 and packing is None:
            packer, ranking = self._direct.packer, self._keys[0]
            self._incr_sender = IncrCall(packer, self._scripts, ranking, self._mode)
        #: A member's unique rank by its element, as a plain command.
        self._rank_command = "ZREVRANK" if self._desc else "ZRANK"
        #: Round trips of a unique rank of a member whose element the
        #: handle has not seen, on a first-to-reach board: 2 (plain
        #: commands: see rankengine.redis.plainranks) or 1 (the RANK
        #: function: more server time).
        self._rank_trips = rank_trips
        #: Names this handle's reply keys; its writes are numbered (see _run).
        self._handle = uuid.uuid4().hex[:12]
        #: thread id -> (process id, its reply key), made once (see _reply_key)
        self._reply_keys: dict[int, tuple[int, str]] = {}
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

    # ------------------------------------------------------------------
    # Settings stored in Redis, and script calls
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

    def _read(self, *args: Any) -> Any:
        """One plain read command, its raw reply (an int, bytes or None:
        the commands sent here have no reply callback in redis-py).

        Runtime complexity: one round trip, besides the command's work.
        """
        direct = self._direct
        if direct is not None:
            return direct.read(*args)
        return self._client.execute_command(*args)

    def _run(self, name: str, *args: Any) -> Any:
        direct = self._direct
        if direct is not None:  # (a plain redis.Redis: see rankengine.redis.direct)
            run = self._scripts.direct
            return self._send(name, lambda keys, mode: run(direct, name, keys, mode, args))
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
        thread, pid = threading.get_ident(), os.getpid()
        known = self._reply_keys.get(thread)
        if known is None or known[0] != pid:  # (a forked child names its own)
            known = (pid, f"{self._keys[5][:-1]}r:{self._handle}.{pid}.{thread}")
            if len(self._reply_keys) >= _REPLY_KEYS_KEPT:
                self._reply_keys.clear()
            self._reply_keys[thread] = known
        return known[1]

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
