"""The event store: one PostgreSQL table of events, in the order the database gives them.

Many processes append; every process reads the same events in the same
order, from any position.  The tables (both versions, and the upgrade
from the first: :mod:`rankengine.pg.schema`)::

    <table>          seq      bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY
                     op, member, value, t_ms, attrs   the common event, typed
                     payload  bytea   msgpack of any other event (rankengine.pg.events)
    <table>_batches  ident    bytea   PRIMARY KEY  the writer's key for one append
                     first    bigint, n integer    the sequence numbers it was given
                     made     timestamptz          when it was stored (pruning)

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
caller can try again later with it, within the store's key horizon: keys
are pruned past it, and a retry that old is refused unsent
(:mod:`rankengine.pg.keys`).

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
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TypeVar

try:
    import psycopg
except ImportError as exc:  # the optional dependency, named in the error
    raise ImportError("rankengine.pg needs psycopg 3: pip install 'rankengine[postgres]'") from exc

from rankengine.pg.columns import (
    BinaryArray,
    ByteaArray,
    Int2Array,
    Int8Array,
    TextArray,
    binary_columns,
    decode_typed_rows,
    encode_columns,
    is_typed,
)
from rankengine.pg.events import (
    NewEvent,
    StoreEvent,
    check_event,
    decode_rows,
    encode_event,
    new_packer,
    now_ms,
)
from rankengine.pg.keys import (
    KEY_BYTES,
    KEY_HORIZON,
    KEY_MARGIN,
    PRUNE_EVERY,
    check_key_age,
    new_key,
)
from rankengine.pg.schema import (
    SCHEMA_VERSION,
    TYPED_COLUMNS,
    create_sql,
    legacy_create_sql,
    upgrade_sql,
    version_sql,
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


def _array_dumper(cls: type[BinaryArray]) -> type[psycopg.adapt.Dumper]:
    """A psycopg dumper sending a :class:`~rankengine.pg.columns.BinaryArray`
    as it is (it is in the wire format already; measured: the driver's
    own list dumper spent ~5 us an element, more than all the rest of an
    append's client side)."""

    class ArrayDumper(psycopg.adapt.Dumper):
        format = psycopg.pq.Format.BINARY
        oid = cls.oid

        def dump(self, obj: Any) -> bytes:
            return obj  # type: ignore[no-any-return]

    return ArrayDumper


class _Upgraded(Exception):
    """A version 1 read met a typed row: the table was upgraded meanwhile."""


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
        key_horizon: float = KEY_HORIZON,
    ) -> None:
        if not key_horizon > KEY_MARGIN:
            raise ValueError(f"key_horizon must be more than {KEY_MARGIN:g} s, not {key_horizon!r}")
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
        #: How long an append's key is kept (seconds; see rankengine.pg.keys).
        self.key_horizon = float(key_horizon)
        #: Appends by this store since it last pruned the keys table.
        self._since_prune = 0
        #: The table's schema version (rankengine.pg.schema): 2, or 1 for a
        #: table an earlier release made and nobody upgraded (0: none yet).
        self.version = 0
        if create:
            self._retrying(self._create)
        else:
            self._retrying(self.detect_version)

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
        for cls in (Int2Array, Int8Array, TextArray, ByteaArray):
            conn.adapters.register_dumper(cls, _array_dumper(cls))
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
    def detect_version(self) -> int:
        """Read the table's schema version into :attr:`version` (0: no table).

        Runtime complexity: one round trip
        """
        row = self._reader_conn().execute(version_sql(), (self.table, self.table)).fetchone()
        self.version = 0 if row is None else int(row[0])
        return self.version

    def _create(self) -> None:
        conn = self._writer_conn()
        with conn.transaction():
            # Two processes creating the store at once would race on the
            # catalog: the first creates, the second finds it there.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
            row = conn.execute(version_sql(), (self.table, self.table)).fetchone()
            found = 0 if row is None else int(row[0])
            if found == 1:  # an earlier release's table: kept as it is until upgrade()
                statements = legacy_create_sql(self.table, LOCK_CLASS, self._lock_key)
            else:
                statements = create_sql(self.table, LOCK_CLASS, self._lock_key)
            for statement in statements:
                conn.execute(statement)
        self.version = found or SCHEMA_VERSION

    def create_legacy(self) -> None:
        """Create the table as the earlier release did (schema version 1), if
        there is none: for tests of :meth:`upgrade` and the benchmark's
        before/after; a new store creates version 2.

        Runtime complexity: O(1) statements
        """

        def run() -> None:
            conn = self._writer_conn()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
                for statement in legacy_create_sql(self.table, LOCK_CLASS, self._lock_key):
                    conn.execute(statement)
            self.detect_version()

        self._retrying(run)

    def upgrade(self) -> bool:
        """Turn a version 1 table into version 2 (see :mod:`rankengine.pg.schema`):
        one transaction, so a crash leaves one version or the other; True if
        it upgraded, False if the table was version 2 already.

        Upgrade once every process that *reads* the table runs this release
        (an earlier reader cannot read a typed row); earlier writers go on
        appending payload rows.  The rows there stay as they are.

        Runtime complexity: O(B) for the B keys of the batches table (its
        index is built); waits for the appends in progress (it takes the
        append lock)
        """

        def run() -> bool:
            conn = self._writer_conn()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, self._lock_key))
                row = conn.execute(version_sql(), (self.table, self.table)).fetchone()
                found = 0 if row is None else int(row[0])
                if found == 0:
                    raise ValueError(f"no event store table {self.table!r} to upgrade")
                if found == SCHEMA_VERSION:
                    self.version = found
                    return False
                for statement in upgrade_sql(self.table, LOCK_CLASS, self._lock_key):
                    conn.execute(statement)
            self.version = SCHEMA_VERSION
            return True

        return self._retrying(run)

    def drop(self) -> None:
        """Remove the table and its functions (every event is lost)."""

        def run() -> None:
            conn = self._writer_conn()
            conn.execute(f"DROP TABLE IF EXISTS {self.table}, {self.table}_batches")
            conn.execute(f"DROP FUNCTION IF EXISTS {self.table}_append(bytea, bytea[])")
            conn.execute(
                f"DROP FUNCTION IF EXISTS {self.table}_append(bytea, smallint[], text[],"
                " bigint[], bigint[], bytea[], bytea[])"
            )
            self.version = 0

        self._retrying(run)

    def convert_rows(self, batch: int = CHUNK) -> int:
        """Rewrite the payload rows of an upgraded table whose events fit the
        typed columns (the rows a version 1 writer stored) as typed rows, so
        a catch-up can fold them in SQL; return how many were converted.

        Each batch of ``batch`` rows is one transaction: a crash leaves some
        rows converted and the rest as they were, both readable, and the
        call can simply be made again.  Readers see either form of a row
        (the same event).  An ``UPDATE`` leaves the old row versions to
        ``VACUUM``: the table takes up to twice its size until then.

        Runtime complexity: O(n) for n payload rows, n / batch round trips
        """
        if self.version < 2 and self.detect_version() < 2:
            raise ValueError(f"table {self.table!r} is version 1: upgrade() it first")
        t = self.table
        converted = 0
        position = 0
        while True:

            def step(after: int = position) -> tuple[int, int]:
                conn = self._writer_conn()
                with conn.transaction():
                    rows = (
                        conn.cursor(binary=True)
                        .execute(
                            f"SELECT seq, payload FROM {t} WHERE payload IS NOT NULL"
                            " AND seq > %s ORDER BY seq LIMIT %s FOR UPDATE",
                            (after, batch),
                        )
                        .fetchall()
                    )
                    if not rows:
                        return 0, -1
                    events = decode_rows(rows)
                    fit = [e for e in events if is_typed(NewEvent(*e[1:]))]
                    if fit:
                        ops, members, values, times, attrs, _ = encode_columns(
                            [NewEvent(*e[1:]) for e in fit]
                        )
                        conn.cursor().execute(
                            f"UPDATE {t} SET payload = NULL, op = u.o, member = u.m,"
                            " value = u.v, t_ms = u.t, attrs = u.a"
                            " FROM unnest(%b::bigint[], %b::smallint[], %b::text[],"
                            " %b::bigint[], %b::bigint[], %b::bytea[]) AS u(s, o, m, v, t, a)"
                            f" WHERE {t}.seq = u.s",
                            ([e.seq for e in fit], ops, members, values, times, attrs),
                        )
                    return len(fit), int(rows[-1][0])

            done, last = self._retrying(step)
            if last < 0:
                return converted
            converted += done
            position = last

    def prune_keys(self, horizon: float | None = None) -> int:
        """Delete the append keys stored more than ``horizon`` seconds ago
        (the store's :attr:`key_horizon` by default; never less than it
        allows, see :mod:`rankengine.pg.keys`); return how many.

        A store also prunes by itself every :data:`~rankengine.pg.keys.PRUNE_EVERY`
        of its appends.  A version 1 table has no key times: nothing is
        pruned until it is upgraded.

        Runtime complexity: O(log B + d) for d keys deleted (an index range)
        """
        horizon = self.key_horizon if horizon is None else float(horizon)
        if not horizon >= self.key_horizon:
            raise ValueError(
                f"horizon {horizon:g} s is shorter than the store's key horizon "
                f"({self.key_horizon:g} s): a retry inside it could store twice"
            )

        def run() -> int:
            if self.version < 2 and self.detect_version() < 2:
                return 0
            cur = self._writer_conn().execute(
                f"DELETE FROM {self.table}_batches WHERE made < now() - make_interval(secs => %s)",
                (horizon,),
            )
            return max(cur.rowcount, 0)

        self._since_prune = 0
        return self._retrying(run)

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
        append's, :func:`~rankengine.pg.keys.new_key` by default) makes a
        retry safe: an append whose key is stored already stores nothing
        again and returns the sequence numbers the first one was given.  A
        key of ``new_key`` older than the store's key horizon is refused
        (:class:`~rankengine.pg.keys.StaleKeyError`, nothing sent): its
        first attempt's key may have been pruned.

        Runtime complexity: O(k) for k events, one round trip, one commit.
        """
        checked = [check_event(e if type(e) is NewEvent else NewEvent(*e)) for e in events]
        if key is None:
            key = new_key()
        elif not isinstance(key, bytes) or not key:
            raise ValueError("key must be a non-empty bytes value (one per append)")
        else:
            check_key_age(key, horizon=self.key_horizon)
        if not checked:
            return []
        batch = key
        seqs = self._retrying(lambda: self._insert(batch, checked), batch, len(checked))
        self._since_prune += 1
        if self._since_prune >= PRUNE_EVERY:
            with contextlib.suppress(StoreUnavailableError):
                self.prune_keys()  # the append is stored: a failed prune waits for the next
        return seqs

    def _insert(self, key: bytes, events: list[NewEvent]) -> list[int]:
        conn = self._writer_conn()
        if not self.version:
            self.detect_version()
        # %b: the arrays go in binary (measured: ~66 us an event instead of
        # ~126 us for batches of 1,000, most of it the server's text parsing)
        if self.version >= 2:
            arrays = binary_columns(encode_columns(events, self._packer))
            rows = conn.execute(
                f"SELECT * FROM {self.table}_append(%b, %b, %b, %b, %b, %b, %b)", (key, *arrays)
            ).fetchall()
        else:
            packer = self._packer
            rows = conn.execute(
                f"SELECT * FROM {self.table}_append(%b, %b)",
                (key, [encode_event(e, packer) for e in events]),
            ).fetchall()
        seqs = [int(row[0]) for row in rows]
        if len(seqs) != len(events):
            raise ValueError(
                f"key {key.hex()} was used for an append of {len(seqs)} event(s), "
                f"not {len(events)}: a key names one append"
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

    def count(self, after: int, upto: int) -> int:
        """How many events have ``after < seq <= upto`` (gaps are not events).

        Runtime complexity: O(k) for k events (an index range), one round trip
        """
        rows = self.select(
            f"SELECT count(*) FROM {self.table} WHERE seq > %s AND seq <= %s", (after, upto)
        )
        return int(rows[0][0])

    def read(self, after: int = 0, limit: int = CHUNK) -> list[StoreEvent]:
        """Up to ``limit`` events with ``seq > after``, in order.

        Runtime complexity: O(limit), one round trip.
        """

        def run() -> list[StoreEvent]:
            cur = self._reader_conn().cursor(binary=True)
            version = self.version or self.detect_version()
            cur.execute(
                f"SELECT {self._columns(version)} FROM {self.table}"
                " WHERE seq > %s ORDER BY seq LIMIT %s",
                (after, limit),
            )
            return self._decode(version, cur.fetchall())

        try:
            return self._retrying(run)
        except _Upgraded:
            return self._retrying(run)  # as version 2 now

    @staticmethod
    def _columns(version: int) -> str:
        return TYPED_COLUMNS if version >= 2 else "seq, payload"

    def _decode(self, version: int, rows: list[Any]) -> list[StoreEvent]:
        """The events of rows read as ``version``; a version 1 read that
        meets a typed row (the table was upgraded meanwhile) is read again."""
        if version >= 2:
            return decode_typed_rows(rows)
        try:
            return decode_rows(rows)
        except ValueError:
            if self.detect_version() >= 2:
                raise _Upgraded from None
            raise

    def select(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only ``query`` (binary), retried on a lost
        connection: for modules that fold in SQL (:mod:`rankengine.pg.catchup`).

        Runtime complexity: the query's, one round trip
        """

        def run() -> list[tuple[Any, ...]]:
            cur = self._reader_conn().cursor(binary=True)
            cur.execute(query, params)
            return cur.fetchall()

        return self._retrying(run)

    def select_each(
        self, queries: list[tuple[str, tuple[Any, ...]]], *, setup: str | None = None
    ) -> list[list[tuple[Any, ...]]]:
        """The rows of each read-only query, all run at once, each on a
        connection of its own (``setup`` run first on each), in threads: a
        server with several cores works on them side by side.

        Runtime complexity: the longest query's, one round trip each
        """

        def one(query: str, params: tuple[Any, ...], out: list[Any], i: int) -> None:
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5) as conn:
                    if setup is not None:
                        conn.execute(setup)
                    out[i] = conn.cursor(binary=True).execute(query, params).fetchall()
            except Exception as exc:  # handed to the caller's thread
                out[i] = exc

        def run() -> list[list[tuple[Any, ...]]]:
            out: list[Any] = [None] * len(queries)
            threads = [
                threading.Thread(target=one, args=(q, p, out, i))
                for i, (q, p) in enumerate(queries)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for result in out:
                if isinstance(result, BaseException):
                    raise result
            return out

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
            except _Upgraded:
                continue  # read again as version 2, after the last event yielded
            except _TRANSIENT:
                # resumed after the last event handed out (never one twice)
                self._drop()
                self.reconnects += 1
                self._retrying(self._reader_conn)

    def _cursor_chunks(self, after: int, size: int) -> Iterator[list[StoreEvent]]:
        conn = psycopg.connect(self.conninfo, connect_timeout=5)
        try:
            version = self.version or self.detect_version()
            with conn.transaction(), conn.cursor("rankengine_catch_up", binary=True) as cur:
                cur.itersize = size
                cur.execute(
                    f"SELECT {self._columns(version)} FROM {self.table}"
                    " WHERE seq > %s ORDER BY seq",
                    (after,),
                )
                while rows := cur.fetchmany(size):
                    yield self._decode(version, rows)
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
