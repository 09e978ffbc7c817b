"""The record format: checksummed frames holding msgpack records.

Every accepted write of a durable board becomes one *record*: its sequence
number, a wall-clock timestamp and the list of changes it made (see
:mod:`rankengine.board.changes`), packed with msgpack (integers beyond 64
bits as an extension type) and wrapped in a *frame*::

    prefix   = magic (8 bytes) | version u16 | flags u16          12 bytes
    frame    = length u32 | crc32(length) u32 | crc32(payload) u32 | payload
    record   = msgpack [seq, time_ms, [change, change, ...]]

All integers are big-endian.  The length has a checksum of its own, so a
flipped bit in a length field is reported where it happened instead of
silently swallowing the records after it.  How frames are laid out in
segment files, and how a reader tells a torn tail from damage, is
:mod:`rankengine.durable.eventlog`.  This module also holds the errors every
durable file reports.

>>> payload = encode_record(1, 1_700_000_000_000, [(0, "ann", 10, 1)])
>>> data = frame(payload)
>>> len(data) - len(payload)
12
>>> decode_record(data[FRAME_HEADER_BYTES:])
Event(seq=1, time_ms=1700000000000, changes=[(0, 'ann', 10, 1)])
"""

from __future__ import annotations

import os
import signal
import struct
import zlib
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import msgpack

from rankengine.board.changes import DEL, META, PUT, Change
from rankengine.board.scoring import check_meta

__all__ = [
    "BIGINT_EXT",
    "CRASH_ENV",
    "EVENT",
    "FORMAT_VERSION",
    "FRAME",
    "FRAME_HEADER_BYTES",
    "MAX_FRAME_BYTES",
    "PREFIX",
    "PREFIX_BYTES",
    "SEGMENT_MAGIC",
    "CorruptionError",
    "Event",
    "LogError",
    "RecordFramer",
    "RecordTooLargeError",
    "RecoveryWarning",
    "TornTail",
    "TornTailError",
    "TornTailWarning",
    "check_prefix",
    "crash_point",
    "decode_ext",
    "decode_record",
    "encode_record",
    "frame",
    "pack",
    "unpack",
    "write_prefix",
]

#: Format version written in every file prefix; readers refuse a newer one.
FORMAT_VERSION: Final = 1
#: Magic of a log segment.  Like PNG's, the first byte has its high bit set
#: (caught by 7-bit transfers) and the CR LF pair catches newline translation.
SEGMENT_MAGIC: Final = b"\x89RKLOG\r\n"
PREFIX: Final = struct.Struct(">8sHH")
#: Bytes before the first frame of every file.
PREFIX_BYTES: Final = PREFIX.size
FRAME: Final = struct.Struct(">III")
#: Bytes in front of every payload: length, its checksum, payload checksum.
FRAME_HEADER_BYTES: Final = FRAME.size
#: Largest payload accepted.  One record is one public write, so a huge
#: ``set_many`` makes a huge record; 1 GiB leaves room for ~30 million members
#: in one batch, and a reader never allocates more than the file holds.
MAX_FRAME_BYTES: Final = 1 << 30
#: msgpack extension code for integers beyond 64 bits (Python ints are
#: unbounded; msgpack's are not): signed big-endian two's complement bytes.
BIGINT_EXT: Final = 1
#: Change kind of a ledger's score event (see :mod:`rankengine.ledger`):
#: ``[EVENT, member, op, value, t_ms, attrs, when, meta]``, the request itself
#: (a ledger's views each fold it into their own state), beside the
#: PUT/DEL/META results a board logs (:mod:`rankengine.board.changes`).
EVENT: Final = 3
#: Fault injection for crash tests: when this environment variable names a
#: step (see :func:`crash_point`), the process kills itself with SIGKILL there.
CRASH_ENV: Final = "RANKENGINE_CRASH_AT"

_INT64_MIN: Final = -(1 << 63)
_UINT64_MAX: Final = (1 << 64) - 1
_MEMBER_TYPES: Final = (str, bytes, int)
_U32: Final = struct.Struct(">I")
#: ``_new_event(Event, (seq, time_ms, changes))`` builds an Event without the
#: Python-level ``__new__`` of a NamedTuple (Speed: ~0.3 us -> ~0.2 us per Event).
_new_event: Final = tuple.__new__
#: The first 8 bytes of a frame (length and its CRC32), as one int, for
#: every payload shorter than this, computed once: saves an int-to-bytes
#: conversion and a ``crc32`` call per small record (measured: ~0.1 us of
#: the ~0.8 us it takes to encode and frame a one-change record).  Records
#: of one write to a few members are 30-100 bytes.
_SMALL_FRAME: Final = 512
_LENGTH_HEADS: Final = tuple((n << 32) | zlib.crc32(_U32.pack(n)) for n in range(_SMALL_FRAME))
#: A small frame's 12-byte header in one ``pack``: the int above and the
#: payload's CRC32 (a bytes concatenation less than packing the CRC alone).
_SMALL_HEAD: Final = struct.Struct(">QI")
#: A :class:`RecordFramer` replaces its msgpack Packer after a payload larger
#: than this: a Packer never shrinks its buffer, and one huge ``set_many``
#: should not pin tens of megabytes for the life of the board.
_PACKER_KEEP_BYTES: Final = 1 << 20


class LogError(Exception):
    """Base class of every error about the files of a durable board."""


class CorruptionError(LogError):
    """A file holds bytes that are not what was written: a damaged frame,
    a record that does not decode, a gap in the sequence numbers.

    ``path`` and ``offset`` say where; ``reason`` says what.
    """

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(
            f"{path}: {reason} at offset {offset}; nothing past this point can be read "
            "(a board does not open, a replay does not go through it). Run `rankengine "
            "verify DIR` for details and `rankengine repair DIR` to keep everything before "
            "this point"
        )


class TornTail(NamedTuple):
    """An incomplete final record: where the good data ends, why, and how
    many bytes follow (those that a truncation cuts)."""

    path: str
    offset: int
    reason: str
    size: int

    @property
    def cut_bytes(self) -> int:
        """Bytes a truncation at :attr:`offset` removes."""
        return self.size - self.offset


class TornTailError(LogError):
    """Opening with ``on_torn_tail="refuse"`` met a torn tail."""

    def __init__(self, torn: TornTail) -> None:
        self.torn = torn
        super().__init__(
            f"{torn.path}: torn tail at offset {torn.offset} ({torn.reason}, "
            f"{torn.cut_bytes} bytes); refusing to open as asked (on_torn_tail='refuse'). "
            "Open with on_torn_tail='truncate' or run `rankengine repair DIR` to cut it"
        )


class RecordTooLargeError(ValueError):
    """One write would make a log record over :data:`MAX_FRAME_BYTES`
    (``size`` bytes against ``limit``); nothing was logged or applied.
    ``what`` names the write and ``advice`` says what to do instead.

    >>> str(RecordTooLargeError(5000, 4096))
    'one write would make a 5000-byte log record, over the 4096-byte limit: split the batch'
    """

    def __init__(
        self, size: int, limit: int, *, what: str = "one write", advice: str = "split the batch"
    ) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} would make a {size}-byte log record, over the {limit}-byte limit: {advice}"
        )


class RecoveryWarning(UserWarning):
    """Opening a board had to work around something (and says what)."""


class TornTailWarning(RecoveryWarning):
    """A torn tail (an interrupted last append) was cut off on open."""


class Event(NamedTuple):
    """One record of the log: one public write, applied atomically on replay."""

    seq: int
    time_ms: int
    changes: list[Change]


def crash_point(step: str) -> None:
    """Kill this process with SIGKILL if :data:`CRASH_ENV` names ``step``.

    A fault-injection hook for crash tests (``tests/test_crash.py``); the
    steps are listed in ``docs/durability.md``.  Costs one environment
    look-up, and is only called on rare paths (compaction, creation).

    >>> crash_point("nowhere")  # the variable is not set: nothing happens
    """
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


# ----------------------------------------------------------------------
# msgpack with unbounded integers
# ----------------------------------------------------------------------
def _widen(value: Any) -> Any:
    """Replace ints outside msgpack's 64-bit range by extension objects."""
    if type(value) is int:
        if _INT64_MIN <= value <= _UINT64_MAX:
            return value
        size = (value.bit_length() + 8) // 8
        return msgpack.ExtType(BIGINT_EXT, value.to_bytes(size, "big", signed=True))
    if isinstance(value, dict):
        return {k: _widen(v) for k, v in value.items()}
    if isinstance(value, msgpack.ExtType):  # a tuple, but already encoded
        return value
    if isinstance(value, (list, tuple)):
        return [_widen(v) for v in value]
    return value


def decode_ext(code: int, data: bytes) -> Any:
    """msgpack's ``ext_hook`` for the log's extension types: an int past 64
    bits (:data:`BIGINT_EXT`); any other code is refused.

    Runtime complexity: O(len(data))

    >>> decode_ext(BIGINT_EXT, (2**70).to_bytes(10, "big", signed=True)) == 2**70
    True
    """
    if code == BIGINT_EXT and data:
        return int.from_bytes(data, "big", signed=True)
    raise ValueError(f"unknown msgpack extension type {code}")


def pack(value: Any) -> bytes:
    """msgpack-encode ``value``; ints of any size survive (extension type 1).

    Runtime complexity: O(size of value)

    >>> unpack(pack([2**70, -(2**70), "a", b"b", 1.5]))
    [1180591620717411303424, -1180591620717411303424, 'a', b'b', 1.5]
    """
    try:
        return msgpack.packb(value, use_bin_type=True)  # type: ignore[no-any-return]
    except OverflowError:
        return msgpack.packb(_widen(value), use_bin_type=True)  # type: ignore[no-any-return]
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"a string in this write is not valid UTF-8 ({exc.reason}) and cannot be logged"
        ) from exc


def unpack(data: bytes | memoryview, ext_hook: Callable[[int, bytes], Any] | None = None) -> Any:
    """Decode one msgpack value, refusing trailing bytes.

    msgpack bounds every string, array and map by the input size, so a
    forged length cannot make it allocate more than ``len(data)``.

    ``ext_hook`` decodes extension types beyond the big-int one (it gets
    every extension object; see the snapshot's typed columns).

    Runtime complexity: O(len(data))
    """
    return msgpack.unpackb(
        data,
        raw=False,
        use_list=True,
        strict_map_key=True,
        ext_hook=decode_ext if ext_hook is None else ext_hook,
    )


# ----------------------------------------------------------------------
# Frames and records
# ----------------------------------------------------------------------
def frame(payload: bytes) -> bytes:
    """Frame ``payload``: length, its CRC32, the payload's CRC32, payload.

    Runtime complexity: O(len(payload))

    >>> frame(b"hi").hex()
    '00000002cf4abe30d8932aac6869'
    """
    size = len(payload)
    if size < _SMALL_FRAME:
        return _SMALL_HEAD.pack(_LENGTH_HEADS[size], zlib.crc32(payload)) + payload
    if size > MAX_FRAME_BYTES:
        raise RecordTooLargeError(size, MAX_FRAME_BYTES)
    head = size.to_bytes(4, "big")
    return FRAME.pack(size, zlib.crc32(head), zlib.crc32(payload)) + payload


def encode_record(seq: int, time_ms: int, changes: list[Change]) -> bytes:
    """The msgpack payload of one record.

    Runtime complexity: O(size of the changes)
    """
    return pack([seq, time_ms, changes])


def _new_packer() -> Any:
    return msgpack.Packer(use_bin_type=True)


class RecordFramer:
    """Encodes and frames records for one writer, reusing a msgpack Packer.

    ``framer.frame(seq, time_ms, changes)`` returns exactly the bytes of
    ``frame(encode_record(seq, time_ms, changes))``.  It is the per-write
    path of a durable board, so it avoids what :func:`msgpack.packb` does on
    every call: building a Packer and allocating (and freeing) its 256 KiB
    buffer.  Measured on a one-change record: ~0.4 us to encode instead of
    ~0.9 us, ~0.7 us to encode and frame instead of ~1.6 us.

    Not thread-safe (the Packer has one buffer): a durable board calls it
    under the board's lock.

    >>> framer = RecordFramer()
    >>> changes = [(0, "ann", 2**70, 1)]
    >>> framer.frame(3, 99, changes) == frame(encode_record(3, 99, changes))
    True
    """

    __slots__ = ("_packer",)

    def __init__(self) -> None:
        self._packer = _new_packer()

    def frame(self, seq: int, time_ms: int, changes: list[Change]) -> bytes:
        """The framed record: length, checksums, msgpack payload.

        Runtime complexity: O(size of the changes)
        """
        try:
            payload: bytes = self._packer.pack([seq, time_ms, changes])
        except (OverflowError, UnicodeEncodeError):
            # An int beyond 64 bits (widened by the general path) or a string
            # that is not UTF-8 (reported by it).  The Packer resets its
            # buffer after an error, so it stays usable.
            payload = encode_record(seq, time_ms, changes)
        size = len(payload)
        if size < _SMALL_FRAME:  # the common case, inlined from frame()
            return _SMALL_HEAD.pack(_LENGTH_HEADS[size], zlib.crc32(payload)) + payload
        if size > _PACKER_KEEP_BYTES:
            self._packer = _new_packer()  # drop the grown buffer
        return frame(payload)


def _bad(reason: str) -> ValueError:
    return ValueError(reason)


def _check_number(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return value
    if kind is float:
        if value != value:
            raise _bad("score is NaN")
        return value
    if kind is list and value:
        return tuple(_check_number_scalar(v) for v in value)
    raise _bad(f"score of type {kind.__name__}")


def _check_number_scalar(value: Any) -> Any:
    if type(value) is int or (type(value) is float and value == value):
        return value
    raise _bad("composite score column is not an int or a float")


def _check_member(value: Any) -> Any:
    if type(value) in _MEMBER_TYPES:
        return value
    raise _bad(f"member of type {type(value).__name__}")


def _decode_change(raw: Any) -> Change:
    if type(raw) is not list or not raw:
        raise _bad("a change is not a non-empty array")
    kind = raw[0]
    if kind == PUT and type(kind) is int:
        if len(raw) != 4:
            raise _bad("PUT change does not have 4 fields")
        clock = raw[3]
        if type(clock) is not int or clock < 0:
            raise _bad("PUT clock is not a non-negative int")
        return (PUT, _check_member(raw[1]), _check_number(raw[2]), clock)
    if kind == DEL and type(kind) is int:
        if len(raw) != 2:
            raise _bad("DEL change does not have 2 fields")
        return (DEL, _check_member(raw[1]))
    if kind == META and type(kind) is int:
        if len(raw) != 3:
            raise _bad("META change does not have 3 fields")
        meta = raw[2]
        if meta is not None:
            try:
                meta = check_meta(meta)
            except (TypeError, ValueError) as exc:
                raise _bad(f"META value is not valid metadata ({exc})") from None
        return (META, _check_member(raw[1]), meta)
    if kind == EVENT and type(kind) is int:
        return _decode_event(raw)
    raise _bad(f"unknown change kind {kind!r} (written by a newer version?)")


#: Highest op code of an EVENT change (incr, set, remove, meta).
_EVENT_OPS: Final = 3


def _decode_event(raw: list[Any]) -> Change:
    """An EVENT change, its fields checked for shape (the ledger checks what
    they mean against its views when it records and replays them)."""
    if len(raw) != 8:
        raise _bad("EVENT change does not have 8 fields")
    _, member, op, value, t_ms, attrs, when, meta = raw
    if type(op) is not int or not 0 <= op <= _EVENT_OPS:
        raise _bad(f"EVENT op is not an int from 0 to {_EVENT_OPS}")
    if type(t_ms) is not int:
        raise _bad("EVENT time is not an int")
    if attrs is not None and type(attrs) is not dict:
        raise _bad("EVENT attrs are not a map")
    if when is not None and type(when) is not str:
        raise _bad("EVENT when is not a string")
    if value is not None:
        value = _check_number(value)
    if meta is not None:
        try:
            meta = check_meta(meta)
        except (TypeError, ValueError) as exc:
            raise _bad(f"EVENT meta is not valid metadata ({exc})") from None
    return (EVENT, _check_member(member), op, value, t_ms, attrs, when, meta)


def decode_record(payload: bytes | memoryview) -> Event:
    """Decode and validate one record payload; ``ValueError`` if it is not one.

    Runtime complexity: O(len(payload))
    """
    try:
        # unpack() inlined (Speed: ~0.1 us a record)
        raw = msgpack.unpackb(
            payload, raw=False, use_list=True, strict_map_key=True, ext_hook=decode_ext
        )
    except Exception as exc:  # msgpack raises several unrelated types
        raise _bad(f"payload is not valid msgpack ({type(exc).__name__}: {exc})") from None
    # Speed: the common record, one PUT, with the checks below and those of
    # _decode_change(), _check_member() and _check_number() inlined; anything
    # else (or a check that fails, to report it) takes the general path.
    # Measured on a one-change record: ~1.6 us -> ~1.05 us per call.
    if type(raw) is list and len(raw) == 3:
        seq, time_ms, changes = raw
        if (
            type(seq) is int
            and seq >= 1
            and type(time_ms) is int
            and time_ms >= 0
            and type(changes) is list
            and len(changes) == 1
        ):
            change = changes[0]
            if type(change) is list and len(change) == 4:
                kind, member, score, clock = change
                if (
                    type(kind) is int
                    and kind == PUT
                    and type(clock) is int
                    and clock >= 0
                    and type(member) in _MEMBER_TYPES
                    and (type(score) is int or (type(score) is float and score == score))
                ):
                    return _new_event(Event, (seq, time_ms, [(PUT, member, score, clock)]))
    if type(raw) is not list or len(raw) != 3:
        raise _bad("record is not a 3-element array")
    seq, time_ms, changes = raw
    if type(seq) is not int or seq < 1:
        raise _bad("sequence number is not a positive int")
    if type(time_ms) is not int or time_ms < 0:
        raise _bad("timestamp is not a non-negative int")
    if type(changes) is not list:  # (empty: every change was forgotten)
        raise _bad("changes are not an array")
    return Event(seq, time_ms, [_decode_change(c) for c in changes])


def write_prefix(magic: bytes, version: int = FORMAT_VERSION) -> bytes:
    """The 12 bytes that start every file: magic, version, flags (0)."""
    return PREFIX.pack(magic, version, 0)


def check_prefix(
    data: bytes,
    magic: bytes,
    path: str,
    what: str,
    versions: tuple[int, ...] = (FORMAT_VERSION,),
) -> int:
    """Raise :class:`CorruptionError` unless ``data`` is a valid prefix of
    one of ``versions``; return the file's version."""
    if len(data) < PREFIX_BYTES:
        raise CorruptionError(path, 0, f"file too short to be a {what} ({len(data)} bytes)")
    found, version, _flags = PREFIX.unpack_from(data)
    if found != magic:
        raise CorruptionError(path, 0, f"not a rankengine {what} (bad magic {found!r})")
    if version not in versions:
        known = " and ".join(map(str, versions))
        raise CorruptionError(
            path, 8, f"{what} format version {version}; this rankengine reads {known}"
        )
    return int(version)
