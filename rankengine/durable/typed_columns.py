"""Typed columns: how a snapshot stores a column of scores or clocks that
are all 64-bit ints (or all floats), and the clocks' sign.

A typed column is one msgpack extension object holding the raw 8-byte
little-endian values, which loads with one memory copy into an ``array``::

    scores   = [1, 5, 9]            (a msgpack array: any values)
             | ext 2 (int64 LE)     (a typed column: 8 bytes per value)
             | ext 3 (float64 LE)

A descending board's index keeps its clocks negated; a snapshot stores
them as they are and says so in its header (:func:`negated_clocks`).

>>> column = typed_column([3, 1, 2])
>>> column_hook(column.code, column.data)
array('q', [3, 1, 2])
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgpack

from rankengine.durable.records import decode_ext

__all__ = [
    "EXT_OF_TYPECODE",
    "FLOAT64_COLUMN_EXT",
    "INT64_COLUMN_EXT",
    "SIGN_PIECE_ROWS",
    "TYPECODE_OF_EXT",
    "column_hook",
    "concat_columns",
    "negated_clocks",
    "negated_pieces",
    "signs_agree",
    "typed_column",
]

#: msgpack extension codes of typed columns: little-endian signed 64-bit
#: ints, or IEEE-754 doubles, 8 bytes per value (code 1 is the log's big-int
#: extension).  Decoding a typed column is one memory copy into an
#: ``array``; a msgpack array of a million ints makes a million int objects
#: that the index then packs back into arrays.  Measured at N = 1,000,000:
#: recovery 0.3 s faster, snapshot save 0.2 s faster.
INT64_COLUMN_EXT: Final = 2
FLOAT64_COLUMN_EXT: Final = 3
TYPECODE_OF_EXT: Final = {INT64_COLUMN_EXT: "q", FLOAT64_COLUMN_EXT: "d"}
EXT_OF_TYPECODE: Final = {"q": INT64_COLUMN_EXT, "d": FLOAT64_COLUMN_EXT}
_VALUE_BYTES: Final = 8
assert array("q").itemsize == array("d").itemsize == _VALUE_BYTES
_BIG_ENDIAN: Final = sys.byteorder == "big"
#: Where the sign bit of each 8-byte value of an ``array`` sits in its bytes.
_SIGN_BYTE: Final = 0 if _BIG_ENDIAN else _VALUE_BYTES - 1
#: Byte values with the top bit clear / set, for ``bytes.translate``.
_LOW_BYTES: Final = bytes(range(0x80))
_HIGH_BYTES: Final = bytes(range(0x80, 0x100))

#: Clocks read per ``min()`` / ``max()`` while a live board's snapshot looks
#: for their sign (see :func:`negated_pieces`): one such call over a whole
#: column of 10**6 held the GIL for 20-95 ms, a writer's longest wait in a
#: snapshot; 16 Ki values take ~0.2 ms.
SIGN_PIECE_ROWS: Final = 16_384


def typed_column(values: Sequence[Any]) -> Any:
    """``values`` ready for msgpack: a typed column (extension object) when
    they are all 64-bit ints or all floats, else a plain list.

    Runtime complexity: O(len(values)), in C

    >>> column = typed_column([3, 1, 2])
    >>> column.code == INT64_COLUMN_EXT, column.data[:8] == (3).to_bytes(8, "little")
    (True, True)
    >>> typed_column([1, 2.5]), typed_column([2**70])
    ([1, 2.5], [1180591620717411303424])
    """
    if type(values) is array and values.typecode in EXT_OF_TYPECODE:
        column = values
    else:
        kinds = set(map(type, values))
        if kinds == {int}:
            try:
                column = array("q", values)
            except OverflowError:  # an int beyond 64 bits: msgpack's own ints
                return list(values)
        elif kinds == {float}:
            column = array("d", values)
        else:
            return list(values)
    if _BIG_ENDIAN:  # pragma: no cover - the file is little-endian everywhere
        column = array(column.typecode, column)
        column.byteswap()
    return msgpack.ExtType(EXT_OF_TYPECODE[column.typecode], column.tobytes())


def column_hook(code: int, data: bytes) -> Any:
    """msgpack extension hook of snapshot chunks: typed columns to ``array``."""
    typecode = TYPECODE_OF_EXT.get(code)
    if typecode is None:
        return decode_ext(code, data)
    if len(data) % _VALUE_BYTES:
        raise ValueError(f"a typed column of {len(data)} bytes is not whole 8-byte values")
    column = array(typecode)
    column.frombytes(data)
    if _BIG_ENDIAN:  # pragma: no cover
        column.byteswap()
    return column


def concat_columns(parts: list[Any]) -> Sequence[Any]:
    """One column from chunk columns: an ``array`` if every part is a typed
    column of the same kind, else a list."""
    if parts and all(type(p) is array for p in parts) and len({p.typecode for p in parts}) == 1:
        whole = array(parts[0].typecode)
        for part in parts:
            whole += part
        return whole
    values: list[Any] = []
    for part in parts:
        values += part
    return values


def negated_clocks(clocks: Sequence[int]) -> bool:
    """Are ``clocks`` stored negated (all <= 0, some < 0)?  A descending
    board's index keeps its clocks negated, and writing them as they are
    saves a negation pass on both save and load (0.06-0.1 s at N = 10**6).

    >>> negated_clocks([0, 3, 1]), negated_clocks([-2, 0, -1]), negated_clocks([])
    (False, True, False)
    >>> typed = array("q", [0, 3]), array("q", [-2, 0]), array("q")
    >>> [negated_clocks(clocks) for clocks in typed]
    [False, True, False]

    :raises ValueError: if the clocks mix signs
    """
    if type(clocks) is array and clocks.typecode == "q":
        # An index's typed column: read the sign bytes (see signs_agree),
        # 5 ms per million values where min() and max() take 0.09 s.
        if signs_agree(clocks, False):
            return False
        if signs_agree(clocks, True):
            return True
    elif not clocks or min(clocks) >= 0:
        return False
    elif max(clocks) <= 0:
        return True
    raise ValueError("snapshot clocks mix signs")


def signs_agree(clocks: array[int], negated: bool) -> bool:
    """Are the int64 ``clocks`` all <= 0 (``negated``) or all >= 0?

    Reads only the byte holding each value's sign bit (a strided slice,
    then ``bytes.translate`` deletes the bytes that pass): 3 ms per million
    values, where ``min()`` makes a million int objects (40 ms).

    >>> signs_agree(array("q", [0, 5, 2**62]), False), signs_agree(array("q", [1, -1]), False)
    (True, False)
    >>> signs_agree(array("q", [-3, 0, -1]), True), signs_agree(array("q", [-3, 1]), True)
    (True, False)
    """
    signs = clocks.tobytes()[_SIGN_BYTE::_VALUE_BYTES]
    if not negated:
        return not signs.translate(None, _LOW_BYTES)  # no sign bit set
    # every sign bit set: all negative; a zero among them takes the slow test
    return not signs.translate(None, _HIGH_BYTES) or max(clocks) <= 0


def negated_pieces(columns: list[Sequence[int]], pause: Callable[[], None] | None) -> bool:
    """:func:`negated_clocks` of the clock ``columns`` joined, looking at
    :data:`SIGN_PIECE_ROWS` values at a time with ``pause()`` between them
    (one piece and no ``pause``: :func:`negated_clocks` itself).

    >>> negated_pieces([[0, 3], (1,)], None), negated_pieces([[-2], array("q", [0, -1])], None)
    (False, True)
    >>> negated_pieces([[-1], [2]], lambda: None)
    Traceback (most recent call last):
    ...
    ValueError: snapshot clocks mix signs

    :raises ValueError: if the clocks mix signs
    """
    if pause is None and len(columns) == 1:
        return negated_clocks(columns[0])
    if not _any_part(columns, pause, _has_negative):
        return False
    if _any_part(columns, pause, _has_positive):
        raise ValueError("snapshot clocks mix signs")
    return True


def _any_part(
    columns: list[Sequence[int]],
    pause: Callable[[], None] | None,
    test: Callable[[Sequence[int]], bool],
) -> bool:
    """Is ``test`` true of a part of :data:`SIGN_PIECE_ROWS` values of the
    ``columns``?  ``pause()`` runs after each part."""
    for clocks in columns:
        for lo in range(0, len(clocks), SIGN_PIECE_ROWS):
            found = test(clocks[lo : lo + SIGN_PIECE_ROWS])
            if pause is not None:
                pause()
            if found:
                return True
    return False


def _has_negative(clocks: Sequence[int]) -> bool:
    """Is a value of the (non-empty) ``clocks`` below zero?  An int64
    ``array`` is read by its sign bytes (see :func:`signs_agree`)."""
    if type(clocks) is array and clocks.typecode == "q":
        return not signs_agree(clocks, False)
    return min(clocks) < 0


def _has_positive(clocks: Sequence[int]) -> bool:
    """Is a value of the (non-empty) ``clocks`` above zero?"""
    return max(clocks) > 0
