"""Events of the PostgreSQL store: what one row holds, and how it is encoded.

An event is one request to the rankings: "``ann`` scored 30" (``incr``),
"``ann`` now has 120" (``set``), "``ann`` is gone" (``remove``), or
"``ann``'s metadata is this" (``meta``), with the time it happened and
optional attributes (region, mode, ...) that views route on.  Unlike a
durable board's record (:mod:`rankengine.durable.records`), which holds the
*results* a write had on one board (absolute scores and tie clocks), an
event holds the *request*: several processes append to one stream, and each
view turns the same requests into the same results by applying them in the
store's order.

A row is ``(seq bigint, payload bytea)``: the sequence number the database
gave it (see :mod:`rankengine.pg.store`, which also keeps each append's key
so a retried append is recognised), and the payload, packed with the record
format's msgpack (:func:`~rankengine.durable.records.pack`: integers of any
size survive)::

    payload = msgpack [op, member, value, time_ms, attrs]
            | msgpack [op, member, value, time_ms, attrs, when, meta]

The last two fields, written only when one is set, are the ledger's
(:mod:`rankengine.pg.ledger`): ``when=`` of an ``incr``/``set`` and the
metadata a ``set`` gives its member.

>>> new = NewEvent("incr", "ann", 30, 1_700_000_000_000, {"region": "eu"})
>>> decode_event(7, encode_event(new))
StoreEvent(seq=7, op='incr', member='ann', value=30, time_ms=1700000000000,
           attrs={'region': 'eu'}, when=None, meta=None)
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

import msgpack

from rankengine.board.checks import check_when
from rankengine.board.scoring import Member, check_meta
from rankengine.durable.records import decode_ext, pack

__all__ = [
    "INCR",
    "META",
    "OPS",
    "REMOVE",
    "SET",
    "NewEvent",
    "StoreEvent",
    "check_event",
    "decode_event",
    "decode_rows",
    "encode_event",
    "new_packer",
    "now_ms",
]

#: Add ``value`` to the member's score (absent: start from zero).
INCR: Final = "incr"
#: The member's score becomes ``value``.
SET: Final = "set"
#: The member (and its metadata) is removed; ``value`` is None.
REMOVE: Final = "remove"
#: The member's metadata becomes ``value`` (a dict, or None to remove it).
META: Final = "meta"
#: Every operation an event may carry.
OPS: Final = frozenset((INCR, SET, REMOVE, META))

_MEMBER_TYPES: Final = (str, bytes, int)
_new_event: Final = tuple.__new__


class NewEvent(NamedTuple):
    """An event a writer appends (the store gives it its ``seq``)."""

    op: str
    member: Member
    value: Any = None
    time_ms: int = 0
    attrs: dict[str, Any] | None = None
    when: str | None = None
    meta: dict[str, Any] | None = None


class StoreEvent(NamedTuple):
    """An event read back from the store, with its sequence number."""

    seq: int
    op: str
    member: Member
    value: Any
    time_ms: int
    attrs: dict[str, Any] | None
    when: str | None = None
    meta: dict[str, Any] | None = None


def new_packer() -> Any:
    """A msgpack Packer for :func:`encode_event` (one per writer: not thread-safe)."""
    return msgpack.Packer(use_bin_type=True)


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (an event's default time)."""
    return time.time_ns() // 1_000_000


def check_event(event: NewEvent) -> NewEvent:
    """Return ``event`` if it is well formed; ``ValueError``/``TypeError`` saying why not.

    The checks a store can make without a board: the operation, the
    member's type, a number for ``incr``/``set`` (not NaN), a dict or None
    for ``meta``, a non-negative integer time, a dict of attributes.  What
    a particular view refuses (a score of the wrong kind for a composite
    board, say) surfaces when that view applies it.

    Runtime complexity: O(1) (O(size) for metadata and attributes)

    >>> check_event(NewEvent("jump", "ann"))
    Traceback (most recent call last):
    ValueError: unknown event op 'jump' (one of incr, meta, remove, set)
    """
    op, member, value, time_ms, attrs, when, meta = event
    if op not in OPS:
        raise ValueError(f"unknown event op {op!r} (one of {', '.join(sorted(OPS))})")
    if type(member) not in _MEMBER_TYPES:
        raise TypeError(f"member must be str, bytes or int, not {type(member).__name__}")
    if op in (INCR, SET):
        if type(value) not in (int, float) and not (
            type(value) is tuple and value and all(type(v) in (int, float) for v in value)
        ):
            raise TypeError(f"{op} needs a number, not {type(value).__name__}")
        if value != value:
            raise ValueError(f"{op} value must not be NaN")
    elif op == META and value is not None:
        value = check_meta(value)
    elif op == REMOVE and value is not None:
        raise ValueError("remove takes no value")
    if type(time_ms) is not int or time_ms < 0:
        raise ValueError(f"time_ms must be a non-negative int, not {time_ms!r}")
    if attrs is not None and not isinstance(attrs, dict):
        raise TypeError(f"attrs must be a dict or None, not {type(attrs).__name__}")
    if when is not None:
        if op not in (INCR, SET):
            raise ValueError(f"when= goes with incr and set, not {op}")
        check_when(when)
    if meta is not None:
        if op != SET:
            raise ValueError(f"meta= goes with set, not {op} (a meta event's value is the meta)")
        meta = check_meta(meta)
    elif op != META and type(event) is NewEvent:
        return event  # nothing normalised: the same tuple (Speed: no new NamedTuple)
    return NewEvent(op, member, value, time_ms, attrs, when, meta)


def encode_event(event: NewEvent, packer: Any = None) -> bytes:
    """The payload of one row (msgpack, as the record format packs it).

    ``packer``: a ``msgpack.Packer(use_bin_type=True)`` to reuse (a writer's
    own: it saves building one per event, about half the cost); integers
    beyond 64 bits and strings that are not UTF-8 take the general path.

    Runtime complexity: O(size of the event)
    """
    value = event.value
    if type(value) is tuple:
        value = list(value)
    if event.when is None and event.meta is None:
        if packer is not None:
            try:
                return packer.pack(  # type: ignore[no-any-return]
                    [event.op, event.member, value, event.time_ms, event.attrs]
                )
            except (OverflowError, UnicodeEncodeError):
                pass  # the Packer resets itself after an error
        return pack([event.op, event.member, value, event.time_ms, event.attrs])
    return pack([event.op, event.member, value, event.time_ms, event.attrs, event.when, event.meta])


def decode_event(seq: int, payload: bytes | memoryview) -> StoreEvent:
    """The event of one row; ``ValueError`` if the payload is not one.

    Runtime complexity: O(len(payload))
    """
    try:
        # unpack() inlined, and the NamedTuple built without its Python-level
        # __new__ (as durable/records.py does: ~0.3 us of ~1.5 us an event)
        raw = msgpack.unpackb(payload, raw=False, use_list=True, ext_hook=decode_ext)
        if len(raw) == 5:
            op, member, value, time_ms, attrs = raw
            when = meta = None
        else:
            op, member, value, time_ms, attrs, when, meta = raw
    except (ValueError, TypeError, msgpack.ExtraData) as exc:
        raise ValueError(f"event {seq}: payload is not an event ({exc})") from None
    if type(value) is list:
        value = tuple(value)
    return _new_event(StoreEvent, (seq, op, member, value, time_ms, attrs, when, meta))


def decode_rows(rows: Iterable[tuple[int, bytes]]) -> list[StoreEvent]:
    """The events of ``(seq, payload)`` rows: :func:`decode_event` for each,
    its common case (five fields, a plain value) inlined (the catch-up path:
    a call less per event).

    Runtime complexity: O(total payload size)
    """
    unpackb, new, hook = msgpack.unpackb, _new_event, decode_ext
    out: list[StoreEvent] = []
    append = out.append
    for seq, payload in rows:
        try:
            raw = unpackb(payload, raw=False, use_list=True, ext_hook=hook)
        except (ValueError, TypeError, msgpack.ExtraData):
            raw = None
        if type(raw) is list and len(raw) == 5 and type(raw[2]) is not list:
            append(new(StoreEvent, (seq, *raw, None, None)))
        else:
            append(decode_event(seq, payload))  # reports a bad one
    return out
