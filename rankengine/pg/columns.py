"""Events as typed columns (version 2 of the store's table), and back.

The common event, an ``incr``/``set``/``remove`` of a ``str`` member by a
64-bit integer, goes into plain columns (``op``, ``member``, ``value``,
``t_ms``, and its attributes as msgpack in ``attrs``); anything else
into ``payload``, the whole event in msgpack as version 1 stored every
event (see :mod:`rankengine.pg.schema`).  What it buys: a reader gets
Python ints and strs from the driver's binary loaders, with no msgpack
to decode, and PostgreSQL can aggregate the typed rows itself
(:mod:`rankengine.pg.catchup`).

>>> from rankengine.pg.events import NewEvent
>>> cols = encode_columns([NewEvent("incr", "ann", 5, 7), NewEvent("incr", "bob", 0.5, 8)])
>>> cols[0], cols[1], cols[2], cols[5][0]
([0, None], ['ann', None], [5, None], None)
>>> rows = [(1, None, 0, "ann", 5, 7, None), (2, cols[5][1], None, None, None, None, None)]
>>> [(e.seq, e.member, e.value) for e in decode_typed_rows(rows)]
[(1, 'ann', 5), (2, 'bob', 0.5)]
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from typing import Any, Final

import msgpack

from rankengine.durable.records import decode_ext, pack
from rankengine.pg.events import NewEvent, StoreEvent, decode_event, encode_event
from rankengine.pg.schema import OP_CODES, OP_NAMES

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "BinaryArray",
    "ByteaArray",
    "Columns",
    "Int2Array",
    "Int8Array",
    "TextArray",
    "array_of_bytes",
    "array_of_ints",
    "array_of_texts",
    "binary_columns",
    "decode_typed_rows",
    "encode_columns",
    "is_typed",
]

#: The range of a ``bigint`` column (a value outside it goes into the payload).
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

#: ``(ops, members, values, times, attrs, payloads)``: one list per column,
#: all of one length, None where an event does not use the column.
Columns = tuple[
    list[int | None],
    list[str | None],
    list[int | None],
    list[int | None],
    list[bytes | None],
    list[bytes | None],
]

_new_event: Final = tuple.__new__

#: PostgreSQL's type numbers of the arrays an append sends.
INT2_ARRAY_OID: Final = 1005
INT8_ARRAY_OID: Final = 1016
TEXT_ARRAY_OID: Final = 1009
BYTEA_ARRAY_OID: Final = 1001
_HEADER: Final = struct.Struct(">iiIii")  # ndim, has nulls, element type, length, lower bound
_LENGTH: Final = struct.Struct(">i")
_NULL: Final = _LENGTH.pack(-1)  # an element's length -1: NULL


class BinaryArray(bytes):
    """A one-dimensional array in PostgreSQL's binary wire format; each
    subclass names its type's number (``oid``).  The store sends it as is."""

    oid: int = 0


class Int2Array(BinaryArray):
    """A ``smallint[]``."""

    oid = INT2_ARRAY_OID


class Int8Array(BinaryArray):
    """A ``bigint[]``."""

    oid = INT8_ARRAY_OID


class TextArray(BinaryArray):
    """A ``text[]``."""

    oid = TEXT_ARRAY_OID


class ByteaArray(BinaryArray):
    """A ``bytea[]``."""

    oid = BYTEA_ARRAY_OID


_ARRAY_CLASS: Final[dict[int, type[BinaryArray]]] = {
    cls.oid: cls for cls in (Int2Array, Int8Array, TextArray, ByteaArray)
}


def array_of_ints(values: Sequence[int | None], *, size: int = 8) -> BinaryArray:
    """``values`` as an ``int8[]`` (``size`` 8) or ``int2[]`` (``size`` 2).

    Why not the driver's own list dumper: it spends ~5 us an element in
    Python (measured, batches of 1,000), three times what a whole event
    costs to encode otherwise; here a list without NULLs is one
    ``struct.pack`` (C), and one with NULLs one short step an element.

    Runtime complexity: O(n)

    >>> array_of_ints([1, None], size=2).hex()
    '0000000100000001000000150000000200000001000000020001ffffffff'
    """
    code, oid = ("q", INT8_ARRAY_OID) if size == 8 else ("h", INT2_ARRAY_OID)
    n = len(values)
    if None not in values:
        body = struct.pack(f">{n * ('i' + code)}", *chain.from_iterable(zip(repeat(size), values)))
        return _ARRAY_CLASS[oid](_HEADER.pack(1, 0, _ELEMENT[oid], n, 1) + body)
    one = struct.Struct(f">i{code}").pack
    body = b"".join([_NULL if v is None else one(size, v) for v in values])
    return _ARRAY_CLASS[oid](_HEADER.pack(1, 1, _ELEMENT[oid], n, 1) + body)


def _array_of_buffers(items: Sequence[bytes | None], oid: int) -> BinaryArray:
    length = _LENGTH.pack
    body = b"".join([_NULL if b is None else length(len(b)) + b for b in items])
    header = _HEADER.pack(1, int(None in items), _ELEMENT[oid], len(items), 1)
    return _ARRAY_CLASS[oid](header + body)


def array_of_texts(texts: Sequence[str | None]) -> BinaryArray:
    """``texts`` as a ``text[]`` (UTF-8).

    Runtime complexity: O(total length)
    """
    return _array_of_buffers([None if t is None else t.encode() for t in texts], TEXT_ARRAY_OID)


def array_of_bytes(items: Sequence[bytes | None]) -> BinaryArray:
    """``items`` as a ``bytea[]``.

    Runtime complexity: O(total length)
    """
    return _array_of_buffers(items, BYTEA_ARRAY_OID)


#: array type -> its element type (int2, int8, text, bytea)
_ELEMENT: Final = {INT2_ARRAY_OID: 21, INT8_ARRAY_OID: 20, TEXT_ARRAY_OID: 25, BYTEA_ARRAY_OID: 17}


def binary_columns(columns: Columns) -> tuple[BinaryArray | None, ...]:
    """The append function's arrays (``smallint[]``, ``text[]``, ``bigint[]``,
    ``bigint[]``, ``bytea[]``, ``bytea[]``) in the binary wire format; the
    last two None (SQL NULL) when every element is.

    Runtime complexity: O(total size)
    """
    ops, members, values, times, attrs, payloads = columns
    return (
        array_of_ints(ops, size=2),
        array_of_texts(members),
        array_of_ints(values),
        array_of_ints(times),
        None if attrs.count(None) == len(attrs) else array_of_bytes(attrs),
        None if payloads.count(None) == len(payloads) else array_of_bytes(payloads),
    )


def is_typed(event: NewEvent) -> bool:
    """Whether ``event`` fits the typed columns (checked already by
    :func:`~rankengine.pg.events.check_event`).

    Runtime complexity: O(len(member))

    >>> is_typed(NewEvent("incr", "ann", 2**63)), is_typed(NewEvent("remove", "ann"))
    (False, True)
    """
    op, member, value, time_ms, _attrs, when, meta = event
    if op not in OP_CODES or type(member) is not str or when is not None or meta is not None:
        return False
    if op == "remove":
        if value is not None:
            return False
    elif type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
        return False
    if time_ms > INT64_MAX or "\x00" in member:
        return False  # PostgreSQL's text holds no NUL
    if not member.isascii():
        try:
            member.encode()
        except UnicodeEncodeError:  # a lone surrogate: msgpack's path keeps it
            return False
    return True


def encode_columns(events: Sequence[NewEvent], packer: Any = None) -> Columns:
    """The column arrays of ``events`` (checked already) for the append function.

    Runtime complexity: O(total size of the events)
    """
    n = len(events)
    ops: list[int | None] = [None] * n
    members: list[str | None] = [None] * n
    values: list[int | None] = [None] * n
    times: list[int | None] = [None] * n
    attrs: list[bytes | None] = [None] * n
    payloads: list[bytes | None] = [None] * n
    codes = OP_CODES
    for i, event in enumerate(events):
        if is_typed(event):
            ops[i] = codes[event.op]
            members[i] = event.member  # type: ignore[assignment]  # a str: is_typed
            values[i] = event.value
            times[i] = event.time_ms
            if event.attrs is not None:
                attrs[i] = pack(event.attrs)
        else:
            payloads[i] = encode_event(event, packer)
    return ops, members, values, times, attrs, payloads


def decode_typed_rows(rows: Iterable[Sequence[Any]]) -> list[StoreEvent]:
    """The events of version 2 rows ``(seq, payload, op, member, value, t_ms,
    attrs)`` (:data:`~rankengine.pg.schema.TYPED_COLUMNS`): a typed row
    becomes its event with one tuple (no decoding), a payload row is
    decoded as version 1's.

    Runtime complexity: O(total row size)
    """
    new, names, unpackb, hook = _new_event, OP_NAMES, msgpack.unpackb, decode_ext
    out: list[StoreEvent] = []
    append = out.append
    for seq, payload, op, member, value, t_ms, attrs in rows:
        if payload is not None:
            append(decode_event(seq, payload))
        elif attrs is None:
            append(new(StoreEvent, (seq, names[op], member, value, t_ms, None, None, None)))
        else:
            found = unpackb(attrs, raw=False, use_list=True, ext_hook=hook)
            append(new(StoreEvent, (seq, names[op], member, value, t_ms, found, None, None)))
    return out
