"""Adapters: one small class per system that ``bench/compare.py`` measures.

Every system answers the same five questions with the same arguments, the
way a competent user of that system would write them:

============  ==================================================================
``incr``      add ``delta`` to a member's score and return the new score
``rank``      1-based rank of a member, best first
``top``       the best ``k`` (member, score) rows
``around``    a member with ``above`` rows ahead of it and ``below`` behind it
``page``      page ``number`` (1-based) of ``size`` rows
============  ==================================================================

plus ``build(pairs)`` (bulk load from ``(member, score)`` pairs) and
``close()``.  The harness calls the bound methods in a plain loop (see
:meth:`System.runner`), so the loop costs every system the same; a system
that can batch (Redis with a pipeline) replaces the loop instead.

The peers, and why each is written the way it is:

``sortedcontainers-naive``
    The recipe people post: a ``dict`` member -> score plus a
    ``SortedList`` of ``(-score, member)`` tuples.  An increment is remove +
    add, a rank is ``bisect_left``, a range is ``islice``.
``pyskiplist``
    ``pyskiplist.SkipList`` keyed by ``(-score, member)`` plus a ``dict``
    (the skip list cannot find a member by itself).  It has no bulk load, so
    ``build`` inserts one by one.
``redis`` / ``redis-pipelined``
    A real ``redis-server`` (started by :class:`RedisServer`, no persistence)
    through redis-py: ``ZINCRBY``, ``ZREVRANK``, ``ZREVRANGE ... WITHSCORES``.
    Unpipelined is one round trip per operation; pipelined sends 100
    operations per round trip and reads all 100 replies (so a batch counts as
    100 operations).  Replies are left as bytes (no decoding), which favours
    Redis slightly.  Both pin redis-py's pure-Python reply parser and command
    packer, whether or not the ``hiredis`` C extension is installed, so that
    their figures mean the same client in every run (and beside the earlier
    runs, all made without hiredis).
``rankengine-redis`` / ``rankengine-redis-pipelined``
    rankengine's own Redis board (``Leaderboard.connect(client, name)``,
    the defaults) on the same server and the same client as ``redis``:
    ``board.incr``, ``board.rank``, ``board.top``...; pipelined, 100 calls
    per ``board.pipeline()``.  The ratio to ``redis`` is what the board's
    guarantees (retries applied once, the settings guard, first-to-reach
    ties, exact scores) cost over the raw sorted set.
``redis-hiredis`` / ``redis-pipelined-hiredis``
    The same two, with redis-py's hiredis parser and packer (the C
    extension ``pip install redis[hiredis]`` adds): the fastest way to talk
    to Redis from Python.  Skipped with a note when hiredis is missing.
``sqlite``
    An in-memory database with ``(member TEXT PRIMARY KEY, score REAL)`` and
    an index on ``(score, member)``.  Rank is ``COUNT(*)`` of the rows ahead,
    top-k is ``ORDER BY ... LIMIT``, around-me uses row-value comparisons on
    the index (O(log N)), a page uses ``LIMIT/OFFSET`` (O(offset)).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

#: Operation codes of a prepared op list (see ``compare.py``).
INCR, TOP, RANK, AROUND, PAGE = range(5)

#: Operations per Redis pipeline round trip (the issue's "pipelined by 100").
PIPELINE = 100

#: Members per ``ZADD`` command when loading Redis.
ZADD_CHUNK = 1000

#: Members per ``set_many`` when loading rankengine's Redis board (one
#: script: a few ms of server time each).
BOARD_CHUNK = 2000

#: Argument size above which redis-py's pure-Python packer sends an
#: argument as its own buffer instead of joining it (redis-py's own default,
#: repeated because the packer is built here; see ``RedisServer.client``).
PACKER_BUFFER_CUTOFF = 6000

Pair = tuple[str, int]
Op = tuple[int, Any, Any]


class Unavailable(Exception):
    """A peer that cannot run here (package or server missing)."""


class System:
    """Base class: a named system with the five operations."""

    name: ClassVar[str] = "?"
    #: workloads this system cannot run (the harness skips them with a note)
    unsupported: ClassVar[frozenset[str]] = frozenset({"recovery", "durable-mixed"})
    #: ops the runner sends together (a pipeline); the harness gives it whole
    #: batches only, so that no round trip carries a short batch
    batch: ClassVar[int] = 1

    def build(self, pairs: Sequence[Pair]) -> None:
        raise NotImplementedError

    def incr(self, member: str, delta: int) -> Any:
        raise NotImplementedError

    def rank(self, member: str) -> Any:
        raise NotImplementedError

    def top(self, k: int) -> Any:
        raise NotImplementedError

    def around(self, member: str, above: int, below: int) -> Any:
        raise NotImplementedError

    def page(self, number: int, size: int) -> Any:
        raise NotImplementedError

    def top_scores(self, k: int) -> list[float]:
        """The best ``k`` scores, for the harness's cross-check (not timed)."""
        raise NotImplementedError

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        """The scores of ``members`` (None when absent), for the harness's
        cross-check (not timed)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the system holds (the harness drops it afterwards)."""

    def runner(self, workload: str) -> Callable[[Sequence[Op]], None]:
        """A function that runs a prepared op list; the timed code.

        The loop dispatches on the op code and calls bound methods, so every
        system pays the same loop overhead.
        """
        incr, top, rank = self.incr, self.top, self.rank
        around, page = self.around, self.page

        def run(ops: Sequence[Op]) -> None:
            for kind, a, b in ops:
                if kind == INCR:
                    incr(a, b)
                elif kind == RANK:
                    rank(a)
                elif kind == TOP:
                    top(a)
                elif kind == AROUND:
                    around(a, b, b)
                else:
                    page(a, b)

        return run


# ----------------------------------------------------------------------
# rankengine
# ----------------------------------------------------------------------
class RankEngine(System):
    """A :class:`rankengine.Leaderboard`; its methods are used unwrapped."""

    backend: ClassVar[str] = "sortedlist"

    def __init__(self) -> None:
        from rankengine import Leaderboard

        self.board = Leaderboard(backend=self.backend)  # type: ignore[arg-type]
        self._bind()

    def _bind(self) -> None:
        board = self.board
        # The board's own bound methods: no adapter layer in the timed loop.
        self.incr = board.incr  # type: ignore[method-assign]
        self.rank = board.rank  # type: ignore[method-assign]
        self.top = board.top  # type: ignore[method-assign]
        self.around = board.around  # type: ignore[method-assign]
        self.page = board.page  # type: ignore[method-assign]

    def build(self, pairs: Sequence[Pair]) -> None:
        self.board.set_many(pairs)

    def top_scores(self, k: int) -> list[float]:
        return [float(e.score) for e in self.board.top(k)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        return [_float_or_none(self.board.score(m)) for m in members]


class RankEngineSortedList(RankEngine):
    name = "rankengine-sortedlist"
    backend = "sortedlist"
    unsupported = frozenset()


class RankEngineSkipList(RankEngine):
    name = "rankengine-skiplist"
    backend = "skiplist"
    unsupported = frozenset()


# ----------------------------------------------------------------------
# sortedcontainers, the naive recipe
# ----------------------------------------------------------------------
class NaiveSortedList(System):
    """``dict`` member -> score plus ``SortedList`` of ``(-score, member)``."""

    name = "sortedcontainers-naive"

    def __init__(self) -> None:
        from sortedcontainers import SortedList

        self._sorted_list = SortedList
        self.scores: dict[str, float] = {}
        self.order = SortedList()

    def build(self, pairs: Sequence[Pair]) -> None:
        self.scores = dict(pairs)
        self.order = self._sorted_list((-s, m) for m, s in self.scores.items())

    def incr(self, member: str, delta: int) -> Any:
        old = self.scores.get(member)
        if old is None:
            new = delta
        else:
            self.order.remove((-old, member))
            new = old + delta
        self.scores[member] = new
        self.order.add((-new, member))
        return new

    def rank(self, member: str) -> Any:
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.bisect_left((-score, member)) + 1

    def top(self, k: int) -> Any:
        return [(m, -s) for s, m in self.order.islice(0, k)]

    def around(self, member: str, above: int, below: int) -> Any:
        r = self.order.bisect_left((-self.scores[member], member))
        return [(m, -s) for s, m in self.order.islice(max(r - above, 0), r + below + 1)]

    def page(self, number: int, size: int) -> Any:
        start = (number - 1) * size
        return [(m, -s) for s, m in self.order.islice(start, start + size)]

    def top_scores(self, k: int) -> list[float]:
        return [float(-s) for s, _ in self.order.islice(0, k)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        return [_float_or_none(self.scores.get(m)) for m in members]


# ----------------------------------------------------------------------
# pyskiplist
# ----------------------------------------------------------------------
class PySkipList(System):
    """``dict`` member -> score plus ``pyskiplist.SkipList`` keyed ``(-score, member)``."""

    name = "pyskiplist"

    def __init__(self) -> None:
        try:
            import pyskiplist
        except ImportError as exc:
            raise Unavailable("pyskiplist is not installed (pip install pyskiplist)") from exc
        self.scores: dict[str, float] = {}
        self.order = pyskiplist.SkipList()

    def build(self, pairs: Sequence[Pair]) -> None:
        # No bulk load in pyskiplist: one insert per member.
        self.scores = dict(pairs)
        insert = self.order.insert
        for m, s in self.scores.items():
            insert((-s, m), None)

    def incr(self, member: str, delta: int) -> Any:
        old = self.scores.get(member)
        if old is None:
            new = delta
        else:
            self.order.remove((-old, member))
            new = old + delta
        self.scores[member] = new
        self.order.insert((-new, member), None)
        return new

    def rank(self, member: str) -> Any:
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.index((-score, member)) + 1

    def top(self, k: int) -> Any:
        return [(m, -s) for (s, m), _ in self.order[0:k]]

    def around(self, member: str, above: int, below: int) -> Any:
        r = self.order.index((-self.scores[member], member))
        return [(m, -s) for (s, m), _ in self.order[max(r - above, 0) : r + below + 1]]

    def page(self, number: int, size: int) -> Any:
        start = (number - 1) * size
        return [(m, -s) for (s, m), _ in self.order[start : start + size]]

    def top_scores(self, k: int) -> list[float]:
        return [float(-s) for (s, _), _ in self.order[0:k]]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        return [_float_or_none(self.scores.get(m)) for m in members]


# ----------------------------------------------------------------------
# Redis
# ----------------------------------------------------------------------
def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A private ``redis-server`` on a free 127.0.0.1 port, in its own
    temporary directory (for ``DEBUG RELOAD``'s dump file), without
    persistence.  Use as a context manager; the server is always stopped.
    """

    def __init__(self, executable: str | None = None, *, appendfsync: str | None = None) -> None:
        #: None: no persistence; "everysec"/"always": an append-only file
        #: with that fsync policy (the durable peers of ``durable-mixed``)
        self.appendfsync = appendfsync
        self.executable = executable or shutil.which("redis-server")
        if self.executable is None:
            raise Unavailable("redis-server is not on PATH")
        try:
            import redis
        except ImportError as exc:
            raise Unavailable("redis-py is not installed (pip install redis)") from exc
        self._redis = redis
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="rankengine-bench-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [
                self.executable or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no" if self.appendfsync is None else "yes",
                "--appendfsync",
                self.appendfsync or "everysec",
                "--dir",
                self.dir,
                "--enable-debug-command",
                "yes",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = self.client()
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except self._redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise Unavailable("redis-server did not start") from None
                time.sleep(0.05)
        self.version = str(client.info("server")["redis_version"])
        client.close()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, *, hiredis: bool = False) -> Any:
        """A redis-py client of this server, replies left as bytes.

        ``hiredis=False`` pins redis-py's pure-Python reply parser and
        command packer even when the ``hiredis`` extension is installed
        (redis-py would pick it by itself); ``True`` uses the extension for
        both, and raises :class:`Unavailable` without it.  The parser and
        packer classes are redis-py internals (``redis.connection``), hence
        the guarded import.
        """
        try:
            from redis.connection import (
                ConnectionPool,
                Encoder,
                HiredisRespSerializer,
                PythonRespSerializer,
                _HiredisParser,
                _RESP2Parser,
            )
        except ImportError as exc:  # a redis-py that moved its internals
            raise Unavailable(f"this redis-py cannot choose its parser: {exc}") from exc
        if hiredis:
            try:
                import hiredis as _  # noqa: F401
            except ImportError as exc:
                raise Unavailable("hiredis is not installed (pip install hiredis)") from exc
            parser: Any = _HiredisParser
            packer: Any = HiredisRespSerializer()
        else:
            parser = _RESP2Parser
            encoder = Encoder("utf-8", "strict", decode_responses=False)
            packer = PythonRespSerializer(PACKER_BUFFER_CUTOFF, encoder.encode)
        pool = ConnectionPool(
            host="127.0.0.1",
            port=self.port,
            decode_responses=False,
            parser_class=parser,
            command_packer=packer,
        )
        return self._redis.Redis.from_pool(pool)  # closing the client closes the pool

    def used_memory(self) -> int:
        client = self.client()
        try:
            return int(client.info("memory")["used_memory"])
        finally:
            client.close()


class Redis(System):
    """A sorted set in a real Redis, one round trip per operation."""

    name = "redis"
    unsupported = frozenset({"durable-mixed"})
    #: whether the client uses the hiredis C parser and packer
    hiredis: ClassVar[bool] = False

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.r = server.client(hiredis=self.hiredis)
        self.key = f"bench:{self.name}"
        self.r.delete(self.key)

    def build(self, pairs: Sequence[Pair]) -> None:
        r, key = self.r, self.key
        r.delete(key)
        pipe = r.pipeline(transaction=False)
        for i in range(0, len(pairs), ZADD_CHUNK):
            pipe.zadd(key, dict(pairs[i : i + ZADD_CHUNK]))
            if len(pipe) >= PIPELINE:
                pipe.execute()
        pipe.execute()

    def incr(self, member: str, delta: int) -> Any:
        return self.r.zincrby(self.key, delta, member)

    def rank(self, member: str) -> Any:
        r = self.r.zrevrank(self.key, member)
        return None if r is None else r + 1

    def top(self, k: int) -> Any:
        return self.r.zrevrange(self.key, 0, k - 1, withscores=True)

    def around(self, member: str, above: int, below: int) -> Any:
        r = self.r.zrevrank(self.key, member)
        return self.r.zrevrange(self.key, max(r - above, 0), r + below, withscores=True)

    def page(self, number: int, size: int) -> Any:
        start = (number - 1) * size
        return self.r.zrevrange(self.key, start, start + size - 1, withscores=True)

    def top_scores(self, k: int) -> list[float]:
        return [s for _, s in self.r.zrevrange(self.key, 0, k - 1, withscores=True)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        pipe = self.r.pipeline(transaction=False)
        for m in members:
            pipe.zscore(self.key, m)
        return [_float_or_none(s) for s in pipe.execute()]

    def reload_seconds(self) -> float:
        """Time of ``DEBUG RELOAD``: save the dataset to RDB and load it back."""
        t0 = time.perf_counter()
        self.r.execute_command("DEBUG", "RELOAD")
        return time.perf_counter() - t0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.r.delete(self.key)
        self.r.close()


class RedisAOF(Redis):
    """Redis with an append-only file (``appendonly yes``), one round trip
    per operation: the durable peer for ``durable-mixed``."""

    unsupported = frozenset({"recovery"})

    def __init__(self, server: RedisServer) -> None:
        self.name = f"redis-aof-fsync-{server.appendfsync}"  # type: ignore[misc]
        super().__init__(server)


class RedisPipelined(Redis):
    """The same sorted set, 100 operations per round trip, every reply read."""

    name = "redis-pipelined"
    batch = PIPELINE
    unsupported = frozenset({"durable-mixed", "recovery"})

    def runner(self, workload: str) -> Callable[[Sequence[Op]], None]:
        r, key = self.r, self.key

        def run(ops: Sequence[Op]) -> None:
            for i in range(0, len(ops), PIPELINE):
                batch = ops[i : i + PIPELINE]
                pipe = r.pipeline(transaction=False)
                # around-me needs the rank first: one round trip for the ranks
                # of the batch, a second for the ranges.
                arounds = [a for kind, a, _ in batch if kind == AROUND]
                ranks = iter(())
                if arounds:
                    for m in arounds:
                        pipe.zrevrank(key, m)
                    ranks = iter(pipe.execute())
                for kind, a, b in batch:
                    if kind == INCR:
                        pipe.zincrby(key, b, a)
                    elif kind == RANK:
                        pipe.zrevrank(key, a)
                    elif kind == TOP:
                        pipe.zrevrange(key, 0, a - 1, withscores=True)
                    elif kind == AROUND:
                        rk = next(ranks)
                        pipe.zrevrange(key, max(rk - b, 0), rk + b, withscores=True)
                    else:
                        start = (a - 1) * b
                        pipe.zrevrange(key, start, start + b - 1, withscores=True)
                pipe.execute()

        return run


class RedisHiredis(Redis):
    """:class:`Redis` through the hiredis C parser and packer."""

    name = "redis-hiredis"
    hiredis = True
    # Memory, bulk load and recovery happen in the server: the client's
    # parser does not change them, and ``redis`` already measures them.
    unsupported = frozenset({"durable-mixed", "recovery", "memory", "bulk-load"})


class RedisPipelinedHiredis(RedisPipelined):
    """:class:`RedisPipelined` through the hiredis C parser and packer."""

    name = "redis-pipelined-hiredis"
    hiredis = True
    unsupported = frozenset({"durable-mixed", "recovery", "memory", "bulk-load"})


class RankEngineRedis(Redis):
    """rankengine's Redis board (``Leaderboard.connect(client, name)``, the
    defaults: first-to-reach ties, retries applied once, the settings
    guard) on the same server and client as :class:`Redis`, one round trip
    per operation: what the board's guarantees cost over the raw sorted set.
    (This client's connections never send a call again -- a pool made
    without ``retry`` -- so the board's writes keep no reply for a resend:
    see "A lost reply is not a second write" in docs/redis.md.)"""

    name = "rankengine-redis"
    unsupported = frozenset({"durable-mixed", "recovery", "memory"})

    def __init__(self, server: RedisServer) -> None:
        super().__init__(server)
        from rankengine import Leaderboard

        self.board = Leaderboard.connect(self.r, self.key)
        self.board.clear()

    def build(self, pairs: Sequence[Pair]) -> None:
        board = self.board
        board.clear()
        for i in range(0, len(pairs), BOARD_CHUNK):
            board.set_many(pairs[i : i + BOARD_CHUNK])

    def incr(self, member: str, delta: int) -> Any:
        return self.board.incr(member, delta)

    def rank(self, member: str) -> Any:
        return self.board.rank(member)

    def top(self, k: int) -> Any:
        return self.board.top(k)

    def around(self, member: str, above: int, below: int) -> Any:
        return self.board.around(member, above, below)

    def page(self, number: int, size: int) -> Any:
        return self.board.page(number, size)

    def top_scores(self, k: int) -> list[float]:
        return [float(entry.score) for entry in self.board.top(k)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        found = self.board.entries(members)
        return [None if entry is None else float(entry.score) for entry in found]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.board.clear()
        self.r.close()


class RankEngineRedisPipelined(RankEngineRedis):
    """:class:`RankEngineRedis`, 100 operations per round trip through the
    board's pipeline (``with board.pipeline() as p``), every answer decoded.
    Around-me is one call there (the board finds the rank and the rows in
    one script), where the raw sorted set needs two round trips per batch."""

    name = "rankengine-redis-pipelined"
    batch = PIPELINE

    def runner(self, workload: str) -> Callable[[Sequence[Op]], None]:
        board = self.board

        def run(ops: Sequence[Op]) -> None:
            for i in range(0, len(ops), PIPELINE):
                with board.pipeline() as p:
                    for kind, a, b in ops[i : i + PIPELINE]:
                        if kind == INCR:
                            p.incr(a, b)
                        elif kind == RANK:
                            p.rank(a)
                        elif kind == TOP:
                            p.top(a)
                        elif kind == AROUND:
                            p.around(a, b, b)
                        else:
                            p.page(a, b)

        return run


# ----------------------------------------------------------------------
# SQLite
# ----------------------------------------------------------------------
class SQLite(System):
    """An in-memory SQLite table with an index on (score, member).

    Ties are ordered as Redis orders them on a descending board (member
    descending), so every range is a backward walk of one index.
    """

    name = "sqlite"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE board (member TEXT PRIMARY KEY, score REAL NOT NULL)")
        self.db.execute("CREATE INDEX board_score ON board (score, member)")

    def build(self, pairs: Sequence[Pair]) -> None:
        db = self.db
        db.execute("DROP INDEX board_score")
        db.execute("DELETE FROM board")
        db.execute("BEGIN")
        db.executemany("INSERT INTO board (member, score) VALUES (?, ?)", pairs)
        db.execute("COMMIT")
        db.execute("CREATE INDEX board_score ON board (score, member)")
        db.execute("ANALYZE")

    def incr(self, member: str, delta: int) -> Any:
        row = self.db.execute(
            "INSERT INTO board (member, score) VALUES (?1, ?2) "
            "ON CONFLICT (member) DO UPDATE SET score = score + ?2 RETURNING score",
            (member, delta),
        ).fetchone()
        return row[0]

    def rank(self, member: str) -> Any:
        row = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM board AS o "
            "WHERE (o.score, o.member) > (b.score, b.member)) + 1 "
            "FROM board AS b WHERE b.member = ?",
            (member,),
        ).fetchone()
        return None if row is None else row[0]

    def top(self, k: int) -> Any:
        return self.db.execute(
            "SELECT member, score FROM board ORDER BY score DESC, member DESC LIMIT ?", (k,)
        ).fetchall()

    def around(self, member: str, above: int, below: int) -> Any:
        db = self.db
        row = db.execute("SELECT score FROM board WHERE member = ?", (member,)).fetchone()
        if row is None:
            return []
        key = (row[0], member)
        ahead = db.execute(
            "SELECT member, score FROM board WHERE (score, member) > (?, ?) "
            "ORDER BY score, member LIMIT ?",
            (*key, above),
        ).fetchall()
        behind = db.execute(
            "SELECT member, score FROM board WHERE (score, member) < (?, ?) "
            "ORDER BY score DESC, member DESC LIMIT ?",
            (*key, below),
        ).fetchall()
        return [*reversed(ahead), (member, key[0]), *behind]

    def page(self, number: int, size: int) -> Any:
        return self.db.execute(
            "SELECT member, score FROM board ORDER BY score DESC, member DESC LIMIT ? OFFSET ?",
            (size, (number - 1) * size),
        ).fetchall()

    def top_scores(self, k: int) -> list[float]:
        return [float(s) for _, s in self.top(k)]

    def scores_of(self, members: Sequence[str]) -> list[float | None]:
        get = "SELECT score FROM board WHERE member = ?"
        rows = [self.db.execute(get, (m,)).fetchone() for m in members]
        return [None if row is None else float(row[0]) for row in rows]

    def database_bytes(self) -> int:
        """Pages in use times the page size: table plus both indexes."""
        (pages,) = self.db.execute("PRAGMA page_count").fetchone()
        (size,) = self.db.execute("PRAGMA page_size").fetchone()
        return int(pages) * int(size)

    def close(self) -> None:
        self.db.close()


# ----------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------
PYTHON_SYSTEMS: dict[str, type[System]] = {
    cls.name: cls for cls in (RankEngineSkipList, RankEngineSortedList, NaiveSortedList, PySkipList)
}
REDIS_SYSTEMS: dict[str, type[Redis]] = {
    cls.name: cls
    for cls in (
        Redis,
        RedisPipelined,
        RedisHiredis,
        RedisPipelinedHiredis,
        RankEngineRedis,
        RankEngineRedisPipelined,
    )
}
ALL_SYSTEMS: tuple[str, ...] = (*PYTHON_SYSTEMS, *REDIS_SYSTEMS, SQLite.name)


def system_class(name: str) -> type[System]:
    """The adapter class of a system name."""
    if name in PYTHON_SYSTEMS:
        return PYTHON_SYSTEMS[name]
    if name in REDIS_SYSTEMS:
        return REDIS_SYSTEMS[name]
    if name == SQLite.name:
        return SQLite
    raise ValueError(f"unknown system {name!r}; known: {', '.join(ALL_SYSTEMS)}")


def make_system(name: str, server: RedisServer | None) -> System:
    """Create an empty system by name; :class:`Unavailable` if it cannot run."""
    if name in PYTHON_SYSTEMS:
        return PYTHON_SYSTEMS[name]()
    if name in REDIS_SYSTEMS:
        if server is None:
            raise Unavailable("no redis-server")
        return REDIS_SYSTEMS[name](server)
    if name == SQLite.name:
        return SQLite()
    raise ValueError(f"unknown system {name!r}; known: {', '.join(ALL_SYSTEMS)}")


def _float_or_none(score: Any) -> float | None:
    return None if score is None else float(score)


def members(n: int, *, start: int = 0) -> Iterable[str]:
    """Fresh member strings ``player:<i>`` (about 13 characters at N = 10**6)."""
    return (f"player:{i}" for i in range(start, start + n))


__all__ = [
    "ALL_SYSTEMS",
    "AROUND",
    "INCR",
    "PAGE",
    "RANK",
    "TOP",
    "Redis",
    "RedisAOF",
    "RedisServer",
    "SQLite",
    "System",
    "Unavailable",
    "make_system",
    "members",
    "system_class",
]
