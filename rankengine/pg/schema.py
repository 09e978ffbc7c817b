"""The event store's tables, their two versions, and the upgrade from the first.

Version 2 (what a new store creates) keeps the common event in typed
columns, so a catch-up reads plain columns (no msgpack to decode) and
PostgreSQL itself can fold a run of events per member
(:mod:`rankengine.pg.catchup`)::

    <table>          seq      bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY
                     payload  bytea   NULL    msgpack of the whole event (see
                                              rankengine.pg.events), only when
                                              it does not fit the columns below
                     op       smallint NULL   0 incr, 1 set, 2 remove
                     member   text     NULL
                     value    bigint   NULL   (NULL for remove)
                     t_ms     bigint   NULL
                     attrs    bytea    NULL   msgpack of the attributes, if any
                     (index <table>_payload_rows: seq WHERE payload IS NOT NULL)
    <table>_batches  ident    bytea   PRIMARY KEY  the writer's key for one append
                     first    bigint, n integer    the sequence numbers it was given
                     made     timestamptz          when it was stored (indexed:
                                                   pruning, rankengine.pg.keys)

A row is *typed* (``payload IS NULL``) when its event is an ``incr``,
``set`` or ``remove`` of a ``str`` member (no NUL character) with an
integer value that fits 64 bits, and no ``when=`` or ``meta=``; every other
event (a float, a tuple score, ``meta``, a bytes or int member, ...) is a
*payload row*, exactly as version 1 stored every event.

Version 1 (what earlier releases created) has only ``seq`` and ``payload``,
and no ``made``.  A store opens either: on a version 1 table it reads and
appends payload rows, as before.  :meth:`EventStore.upgrade
<rankengine.pg.store.EventStore.upgrade>` turns a version 1 table into
version 2 in one transaction (PostgreSQL's DDL is transactional: a crash
leaves version 1 or version 2, never half), adding nullable columns (a
catalog change, no table rewrite).  The rows already there stay payload
rows (readers take both kinds; :meth:`EventStore.convert_rows
<rankengine.pg.store.EventStore.convert_rows>` rewrites the ones that fit
as typed rows, batch by batch); the version 1 append function stays, so a
process of the earlier release still appends (payload rows).  Upgrade once
every *reader* runs this release: an earlier reader cannot read a typed
row (its payload is NULL).

>>> "op smallint" in create_sql("events", 0x524B, 7)[0]
True
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "OP_CODES",
    "OP_NAMES",
    "SCHEMA_VERSION",
    "TYPED_COLUMNS",
    "append_function_sql",
    "create_sql",
    "legacy_create_sql",
    "upgrade_sql",
    "version_sql",
]

#: The version a new store creates.
SCHEMA_VERSION: Final = 2
#: A typed row's ``op`` column: the code of each operation it may hold.
OP_CODES: Final = {"incr": 0, "set": 1, "remove": 2}
#: ``op`` code -> operation name (a typed row's ``op``, read back).
OP_NAMES: Final = ("incr", "set", "remove")
#: The columns a version 2 read selects, in the order the decoders take them.
TYPED_COLUMNS: Final = "seq, payload, op, member, value, t_ms, attrs"


def _append_sql(
    table: str, lock_class: int, lock_key: int, *, params: str, counted: str, insert: str
) -> str:
    """An append function of either version: they share all but their
    parameters, the array that counts the batch and the ``INSERT``.

    Under the batch's advisory lock (commits in seq order: see
    :mod:`rankengine.pg.store`) a batch sent again gets the seqs its first
    send was given; a new one takes ``total`` seqs at once, inserts its
    rows, notes itself in ``{table}_batches`` and wakes the listeners.
    """
    t = table
    return f"""CREATE OR REPLACE FUNCTION {t}_append({params})
    RETURNS SETOF bigint LANGUAGE plpgsql AS $fn$
    DECLARE
      seqs text := pg_get_serial_sequence('{t}', 'seq');
      total integer;
      start bigint;
    BEGIN
      -- commits in seq order: see rankengine.pg.store
      PERFORM pg_advisory_xact_lock({lock_class}, {lock_key});
      SELECT b.first, b.n INTO start, total FROM {t}_batches b WHERE b.ident = batch;
      IF FOUND THEN  -- sent again: what the first one was given
        RETURN QUERY SELECT generate_series(start, start + total - 1);
        RETURN;
      END IF;
      total := cardinality({counted});
      start := nextval(seqs);
      IF total > 1 THEN PERFORM setval(seqs, start + total - 1); END IF;
      {insert}
      INSERT INTO {t}_batches (ident, first, n) VALUES (batch, start, total);
      PERFORM pg_notify('{t}', '');
      RETURN QUERY SELECT generate_series(start, start + total - 1);
    END
    $fn$"""


def _v1_append_sql(table: str, lock_class: int, lock_key: int) -> str:
    """The version 1 append function: payloads only (kept in version 2 for
    writers of the earlier release)."""
    t = table
    insert = f"""INSERT INTO {t} (seq, payload) OVERRIDING SYSTEM VALUE
        SELECT start + u.k - 1, u.p FROM unnest(payloads) WITH ORDINALITY AS u(p, k);"""
    return _append_sql(
        t,
        lock_class,
        lock_key,
        params="batch bytea, payloads bytea[]",
        counted="payloads",
        insert=insert,
    )


def append_function_sql(table: str, lock_class: int, lock_key: int) -> str:
    """The version 2 append function: one array per column, all of one length
    (an element is NULL where the event does not use that column; ``attrs``
    and ``payloads`` may be NULL as a whole when no event uses them:
    ``unnest`` pads them with NULLs, and the server decodes two arrays less,
    measured ~1/4 of its time for an append of plain increments)."""
    t = table
    params = """
        batch bytea, ops smallint[], members text[], vals bigint[], times bigint[],
        attrs bytea[], payloads bytea[]"""
    insert = f"""INSERT INTO {t} (seq, payload, op, member, value, t_ms, attrs)
        OVERRIDING SYSTEM VALUE
        SELECT start + u.k - 1, u.p, u.o, u.m, u.v, u.t, u.a
        FROM unnest(payloads, ops, members, vals, times, attrs)
          WITH ORDINALITY AS u(p, o, m, v, t, a, k);"""
    return _append_sql(t, lock_class, lock_key, params=params, counted="ops", insert=insert)


def legacy_create_sql(table: str, lock_class: int, lock_key: int) -> list[str]:
    """The statements with which the earlier release (version 1) created its
    tables: for the upgrade's tests and the benchmark's before/after."""
    t = table
    return [
        f"CREATE TABLE IF NOT EXISTS {t} ("
        " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " payload bytea NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {t}_batches ("
        " ident bytea PRIMARY KEY, first bigint NOT NULL, n integer NOT NULL)",
        _v1_append_sql(t, lock_class, lock_key),
    ]


def create_sql(table: str, lock_class: int, lock_key: int) -> list[str]:
    """The statements that create a version 2 store (each a no-op when its
    object exists already; an existing version 1 table stays version 1).

    Runtime complexity: O(1) statements
    """
    t = table
    return [
        f"CREATE TABLE IF NOT EXISTS {t} ("
        " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " payload bytea, op smallint, member text, value bigint, t_ms bigint, attrs bytea)",
        f"CREATE TABLE IF NOT EXISTS {t}_batches ("
        " ident bytea PRIMARY KEY, first bigint NOT NULL, n integer NOT NULL,"
        " made timestamptz NOT NULL DEFAULT now())",
        f"CREATE INDEX IF NOT EXISTS {t}_batches_made ON {t}_batches (made)",
        f"CREATE INDEX IF NOT EXISTS {t}_payload_rows ON {t} (seq) WHERE payload IS NOT NULL",
        _v1_append_sql(t, lock_class, lock_key),
        append_function_sql(t, lock_class, lock_key),
    ]


def upgrade_sql(table: str, lock_class: int, lock_key: int) -> list[str]:
    """The statements that turn a version 1 store into version 2 (run in one
    transaction; each is a no-op on a version 2 store).

    Runtime complexity: O(1) statements; O(B) for the B rows of the batches
    table (its ``made`` index is built), no rewrite of the events table
    """
    t = table
    return [
        f"ALTER TABLE {t} ALTER COLUMN payload DROP NOT NULL",
        f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS op smallint,"
        " ADD COLUMN IF NOT EXISTS member text, ADD COLUMN IF NOT EXISTS value bigint,"
        " ADD COLUMN IF NOT EXISTS t_ms bigint, ADD COLUMN IF NOT EXISTS attrs bytea",
        # now() at the upgrade for the keys already there: kept a whole
        # horizon from now, which is never too early
        f"ALTER TABLE {t}_batches ADD COLUMN IF NOT EXISTS made timestamptz NOT NULL DEFAULT now()",
        f"CREATE INDEX IF NOT EXISTS {t}_batches_made ON {t}_batches (made)",
        # the catch-up's fold stops at the first payload row: found by this
        # index (every row of a version 1 table is one)
        f"CREATE INDEX IF NOT EXISTS {t}_payload_rows ON {t} (seq) WHERE payload IS NOT NULL",
        append_function_sql(t, lock_class, lock_key),
    ]


def version_sql() -> str:
    """A query of the version of table ``%s`` (0: no table, 1, or 2)."""
    return (
        "SELECT CASE WHEN to_regclass(%s) IS NULL THEN 0"
        " WHEN EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s)"
        " AND attname = 'op' AND NOT attisdropped) THEN 2 ELSE 1 END"
    )
