"""The event store: one PostgreSQL table of events, in the order the database gives them.

Many processes append; every process reads the same events in the same
order, from any position.  The tables::

    <table>          seq      bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY
                     payload  bytea   NOT NULL     msgpack, see rankengine.pg.events
    <table>_batches  ident    bytea   PRIMARY KEY  the writer's key for one append
                     first    bigint, n integer    the sequence numbers it was given

Appending (one round trip: a function the store creates beside its table)::

    1. take the table's transaction-level advisory lock
    2. a batch key stored already?  return its sequence numbers, insert nothing
    3. take n sequence numbers at once (nextval, setval), INSERT the events
       with them, and the batch key with the first and n
    4. pg_notify(channel)             -- delivered at commit: a wake-up only
    5. COMMIT                         -- the lock is released after the
                                      -- commit is visible

Gaps and late commits.  A sequence value is taken when a row is inserted
and never given back, so a transaction that rolls back leaves a gap that
stays a gap.  The danger is the other case: without step 1, two
transactions take 7 and 8, 8 commits first, a reader reads up to 8 and
moves its position past 7, and 7 commits a moment later, never to be read.
Step 1 rules this out: appends hold one lock from their first sequence
value to after their commit is visible (PostgreSQL makes a transaction
visible before it releases its locks), so commits happen in ``seq`` order
and a reader that sees ``seq = n`` has seen every event below ``n`` that
will ever exist.  Readers then need no watermark and no snapshot
arithmetic: ``WHERE seq > position ORDER BY seq``.  The cost is that appends
to one table are serial: one transaction at a time, commit (and its WAL
flush under ``synchronous_commit = on``) included, so a writer batches
(:meth:`EventStore.append_many`) to share a commit between many events;
``bench/fleet.py`` measures it.  (The alternative, concurrent inserts with
readers stopping below ``pg_snapshot_xmin``, keeps group commit but makes
every read take a snapshot and turns each reader's position into a pair.)

Retries without double counting.  A connection lost during ``COMMIT``
leaves the writer not knowing whether its events are stored.  Every append
carries a 16-byte key chosen by the writer, stored in the same transaction
as its events (all or none); an append sent again with the same key inserts
nothing and gets back the sequence numbers the first one was given.  One
key per append, not per event: a unique index entry per event would more
than double the server's cost of an insert (measured: ~46 us against ~20 us
an event in batches of 1,000).  :meth:`EventStore.append_many` retries on a
lost connection (a restarting server, a failover) for ``retry_seconds``,
then raises :class:`StoreUnavailableError`, which carries the key so the
caller can try again later with it.  The batches table grows by one small
row per append; rows older than any retry can be deleted at will.

Reading: :meth:`EventStore.read` (one chunk) and :meth:`EventStore.chunks`
(a server-side cursor fetching binary rows, for catch-up).  Following:
:meth:`EventStore.wait` blocks on ``LISTEN`` until an append commits (or the
timeout passes); the notification carries nothing: the reader reads.

psycopg (3.x, the ``postgres`` extra) is imported by this module only.

>>> EventStore.check_table("rankengine_events")
'rankengine_events'
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TypeVar

try:
    import psycopg
except ImportError as exc:  # the optional dependency, named in the error
    raise ImportError("rankengine.pg needs psycopg 3: pip install 'rankengine[postgres]'") from exc

from rankengine.pg.events import (
    NewEvent,
    StoreEvent,
    check_event,
    decode_rows,
    encode_event,
    new_packer,
    now_ms,
)

__all__ = [
    "CHUNK",
    "DEFAULT_TABLE",
    "KEY_BYTES",
    "LOCK_CLASS",
    "EventStore",
    "StoreUnavailableError",
]

#: The table a store uses unless told otherwise.
DEFAULT_TABLE: Final = "rankengine_events"
#: Events per read: large enough that a round trip is a small share of the
#: time (measured: ~20,000 rows of ~40 bytes fetch in ~25 ms on loopback),
#: small enough that a chunk of big events stays a few megabytes.
CHUNK: Final = 20_000
#: Bytes of an append's key: random, so two writers never choose the same one
#: (2**128 keys: a collision is as likely as a hardware fault).
KEY_BYTES: Final = 16
#: First half of the advisory lock's key (``"RK"``): the second half is a
#: hash of the table name, so two stores in one database do not share a lock.
LOCK_CLASS: Final = 0x524B
#: Pause before the first retry after a lost connection; doubled each time.
RETRY_FIRST_PAUSE: Final = 0.05
#: The longest pause between retries.
RETRY_MAX_PAUSE: Final = 1.0

_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,47}")
#: Errors after which a call is tried again on a new connection: the server
#: went away (shut down, restarted, crashed) or is not ready yet.
_TRANSIENT: Final = (psycopg.OperationalError, psycopg.InterfaceError)

_T = TypeVar("_T")


class StoreUnavailableError(ConnectionError):
    """The store could not be reached for ``retry_seconds``.

    For an append, the events may or may not be stored (a commit may have
    gone through before the connection was lost): ``key`` is the append's
    key, and ``store.append_many(events, key=error.key)`` later stores them
    exactly once.
    """

    def __init__(self, message: str, key: bytes | None = None) -> None:
        super().__init__(message)
        self.key = key


class EventStore:
    """A stream of events in one PostgreSQL table, shared by many processes.

    :param conninfo: a libpq connection string or URL.
    :param table: the table's name (lower-case letters, digits, ``_``);
        created, with its append function, if missing.
    :param synchronous_commit: ``False`` sets ``synchronous_commit = off``
        for this store's appends: a commit returns before its WAL is
        flushed, so a *server* crash may lose the last ~0.6 s of
        acknowledged events (never reorder them, never half-apply one);
        ``None`` keeps the server's setting.
    :param retry_seconds: how long a call keeps trying after a lost
        connection before raising :class:`StoreUnavailableError`.

    One store object is for one thread (psycopg connections are not shared
    here); each process opens its own.

    >>> store = EventStore("host=127.0.0.1 port=5432")   # doctest: +SKIP
    >>> store.append("incr", "ann", 30)                  # doctest: +SKIP
    1
    """

    def __init__(
        self,
        conninfo: str,
        *,
        table: str = DEFAULT_TABLE,
        synchronous_commit: bool | None = None,
        retry_seconds: float = 10.0,
        create: bool = True,
    ) -> None:
        self.conninfo = conninfo
        self.table = self.check_table(table)
        self.synchronous_commit = synchronous_commit
        self.retry_seconds = float(retry_seconds)
        #: Connections lost and made again (appends, reads and the listener).
        self.reconnects = 0
        self._lock_key = zlib.crc32(table.encode()) & 0x7FFFFFFF
        self._writer: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._listener: psycopg.Connection[Any] | None = None
        self._packer = new_packer()
        if create:
            self._retrying(self._create)

    @staticmethod
    def check_table(table: str) -> str:
        """``table`` if it is a plain lower-case SQL name; ``ValueError`` otherwise."""
        if not isinstance(table, str) or not _NAME.fullmatch(table):
            raise ValueError(
                f"table name {table!r}: use 1-48 lower-case letters, digits and _ "
                "(not starting with a digit)"
            )
        return table

    # ------------------------------------------------------------------
    # Connections
    # ------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
        if self.synchronous_commit is not None:
            conn.execute(f"SET synchronous_commit = {'on' if self.synchronous_commit else 'off'}")
        return conn

    def _writer_conn(self) -> psycopg.Connection[Any]:
        if self._writer is None or self._writer.closed:
            self._writer = self._connect()
        return self._writer

    def _reader_conn(self) -> psycopg.Connection[Any]:
        if self._reader is None or self._reader.closed:
            self._reader = self._connect()
        return self._reader

    def _drop(self) -> None:
        """Forget the connections (after a failure: they are made again)."""
        for conn in (self._writer, self._reader):
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
        self._writer = self._reader = None

    def _retrying(self, call: Callable[[], _T], key: bytes | None = None, count: int = 0) -> _T:
        """``call()``, tried again on new connections after a lost one, for
        up to :attr:`retry_seconds`."""
        deadline = time.monotonic() + self.retry_seconds
        pause = RETRY_FIRST_PAUSE
        while True:
            try:
                return call()
            except _TRANSIENT as exc:
                self._drop()
                self.reconnects += 1
                if time.monotonic() + pause > deadline:
                    what = (
                        f"{count} event(s) may or may not be stored: append them again "
                        "with key=error.key to store them exactly once"
                        if key is not None
                        else "nothing was read"
                    )
                    raise StoreUnavailableError(
                        f"PostgreSQL event store {self.table!r} unreachable for "
                        f"{self.retry_seconds:g} s ({type(exc).__name__}: "
                        f"{str(exc).strip() or 'connection lost'}); {what}",
                        key,
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_PAUSE)

    def close(self) -> None:
        """Close every connection (the store can be used again: it reconnects)."""
        self._drop()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                self._listener.close()
            self._listener = None

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------
    # Schema
    # ------------------------------------------------------------------
    def _create(self) -> None:
        t = self.table
        conn = self._writer_conn()
        with conn.transaction():
            # Two processes creating the store at once would race on the
            # catalog: the first creates, the second finds it there.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {t} ("
                " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                " payload bytea NOT NULL)"
            )
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {t}_batches ("
                " ident bytea PRIMARY KEY, first bigint NOT NULL, n integer NOT NULL)"
            )
            conn.execute(
                f"""CREATE OR REPLACE FUNCTION {t}_append(batch bytea, payloads bytea[])
                RETURNS SETOF bigint LANGUAGE plpgsql AS $fn$
                DECLARE
                  seqs text := pg_get_serial_sequence('{t}', 'seq');
                  total integer;
                  start bigint;
                BEGIN
                  -- commits in seq order: see rankengine.pg.store
                  PERFORM pg_advisory_xact_lock({LOCK_CLASS}, {self._lock_key});
                  SELECT b.first, b.n INTO start, total FROM {t}_batches b WHERE b.ident = batch;
                  IF FOUND THEN  -- sent again: what the first one was given
                    RETURN QUERY SELECT generate_series(start, start + total - 1);
                    RETURN;
                  END IF;
                  total := cardinality(payloads);
                  start := nextval(seqs);
                  IF total > 1 THEN PERFORM setval(seqs, start + total - 1); END IF;
                  INSERT INTO {t} (seq, payload) OVERRIDING SYSTEM VALUE
                    SELECT start + u.k - 1, u.p FROM unnest(payloads) WITH ORDINALITY AS u(p, k);
                  INSERT INTO {t}_batches VALUES (batch, start, total);
                  PERFORM pg_notify('{t}', '');
                  RETURN QUERY SELECT generate_series(start, start + total - 1);
                END
                $fn$"""
            )

    def drop(self) -> None:
        """Remove the table and its function (every event is lost)."""

        def run() -> None:
            conn = self._writer_conn()
            conn.execute(f"DROP TABLE IF EXISTS {self.table}, {self.table}_batches")
            conn.execute(f"DROP FUNCTION IF EXISTS {self.table}_append(bytea, bytea[])")

        self._retrying(run)

    # ------------------------------------------------------------------
    # Appending
    # ------------------------------------------------------------------
    def append(
        self,
        op: str,
        member: Any,
        value: Any = None,
        *,
        time_ms: int | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> int:
        """Append one event; return its sequence number once it is committed.

        ``time_ms`` defaults to now.  Bad input raises before anything is
        sent.

        Runtime complexity: one round trip and one commit (serial with
        every other append to the table).
        """
        event = NewEvent(op, member, value, now_ms() if time_ms is None else time_ms, attrs)
        return self.append_many([event])[0]

    def append_many(self, events: Iterable[NewEvent], *, key: bytes | None = None) -> list[int]:
        """Append events in one transaction (all or none); return their
        sequence numbers, in order, once committed.

        Every event is checked before anything is sent.  ``key`` (the
        append's, :data:`KEY_BYTES` random bytes by default) makes a retry
        safe: an append whose key is stored already stores nothing again
        and returns the sequence numbers the first one was given.

        Runtime complexity: O(k) for k events, one round trip, one commit.
        """
        checked = [check_event(e if type(e) is NewEvent else NewEvent(*e)) for e in events]
        if key is None:
            key = os.urandom(KEY_BYTES)
        elif not isinstance(key, bytes) or not key:
            raise ValueError("key must be a non-empty bytes value (one per append)")
        if not checked:
            return []
        packer = self._packer
        payloads = [encode_event(e, packer) for e in checked]
        batch = key
        return self._retrying(lambda: self._insert(batch, payloads), batch, len(payloads))

    def _insert(self, key: bytes, payloads: list[bytes]) -> list[int]:
        conn = self._writer_conn()
        # %b: the array goes in binary (measured: ~66 us an event instead of
        # ~126 us for batches of 1,000, most of it the server's text parsing)
        rows = conn.execute(
            f"SELECT * FROM {self.table}_append(%b, %b)", (key, payloads)
        ).fetchall()
        seqs = [int(row[0]) for row in rows]
        if len(seqs) != len(payloads):
            raise ValueError(
                f"key {key.hex()} was used for an append of {len(seqs)} event(s), "
                f"not {len(payloads)}: a key names one append"
            )
        return seqs

    # ------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------
    def head(self) -> int:
        """The highest sequence number committed (0 for an empty store).

        Runtime complexity: O(log n), one round trip.
        """

        def run() -> int:
            row = self._reader_conn().execute(f"SELECT max(seq) FROM {self.table}").fetchone()
            return 0 if row is None or row[0] is None else int(row[0])

        return self._retrying(run)

    def read(self, after: int = 0, limit: int = CHUNK) -> list[StoreEvent]:
        """Up to ``limit`` events with ``seq > after``, in order.

        Runtime complexity: O(limit), one round trip.
        """

        def run() -> list[StoreEvent]:
            cur = self._reader_conn().cursor(binary=True)
            cur.execute(
                f"SELECT seq, payload FROM {self.table} WHERE seq > %s ORDER BY seq LIMIT %s",
                (after, limit),
            )
            return decode_rows(cur.fetchall())

        return self._retrying(run)

    def chunks(self, after: int = 0, *, size: int = CHUNK) -> Iterator[list[StoreEvent]]:
        """Every event with ``seq > after`` committed when the call starts,
        in chunks of up to ``size``: one query, rows fetched in binary from a
        server-side cursor (the catch-up path).

        A lost connection ends the iteration with :class:`StoreUnavailableError`
        only after ``retry_seconds``; until then it resumes after the last
        event yielded.

        Runtime complexity: O(n) for n events, n / size round trips.
        """
        position = after
        while True:
            try:
                for chunk in self._cursor_chunks(position, size):
                    position = chunk[-1].seq
                    yield chunk
                return
            except _TRANSIENT:
                # resumed after the last event handed out (never one twice)
                self._drop()
                self.reconnects += 1
                self._retrying(self._reader_conn)

    def _cursor_chunks(self, after: int, size: int) -> Iterator[list[StoreEvent]]:
        conn = psycopg.connect(self.conninfo, connect_timeout=5)
        try:
            with conn.transaction(), conn.cursor("rankengine_catch_up", binary=True) as cur:
                cur.itersize = size
                cur.execute(
                    f"SELECT seq, payload FROM {self.table} WHERE seq > %s ORDER BY seq", (after,)
                )
                while rows := cur.fetchmany(size):
                    yield decode_rows(rows)
        finally:
            conn.close()

    # ------------------------------------------------------------------
    # Following
    # ------------------------------------------------------------------
    def wait(self, timeout: float) -> bool:
        """Block until an append commits (True) or ``timeout`` seconds pass
        (False).  A wake-up only: read with :meth:`read` after it.  The first
        call starts listening (an append committed before it is not waited
        for: read first, then wait).  A lost connection returns True at once
        (appends may have been missed while it was down: read again).

        Runtime complexity: O(1) per notification.
        """
        try:
            if self._listener is None or self._listener.closed:
                self._listener = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
                self._listener.execute(f"LISTEN {self.table}")
                return True  # listening only from now: the caller reads again first
            woke = False
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                woke = True
            return woke
        except _TRANSIENT:
            if self._listener is not None:
                with contextlib.suppress(Exception):
                    self._listener.close()
            self._listener = None
            self.reconnects += 1
            time.sleep(min(timeout, RETRY_FIRST_PAUSE))
            return True
