"""How a :class:`~rankengine.redis.board.RedisLeaderboard` stores its values
in Redis: scores, members and metadata as bytes and doubles.

The board's keys and scripts (:mod:`rankengine.redis.board`,
:mod:`rankengine.redis.scripts`) only move these encodings around; this
module is where they are made and read back.

Exact scores on doubles
-----------------------
A Redis score is an IEEE double, which holds every float but integers only
up to 2**53, and one number per member.  The engine's key is exact: Python
ints of any size, composite scores, and a first-to-reach tie.  The board
stores it without rounding anything:

* the sorted-set score is a double ``d`` that never sorts the wrong way
  round: the largest double at or below the score's first column;
* the element starts with an *ordkey*: the exact rest of the score (what
  ``d`` could not hold, and the other columns of a composite score) in bytes
  that sort like it, then the 16-digit tie clock, then the member::

      element = ordkey + tie + member

Redis orders by ``(double, element bytes)``, so its order *is* the engine's.
For every score a double holds exactly (floats, ints below 2**53: the common
case) the ordkey is empty and costs nothing.

>>> fmt = ScoreFormat(ScoreCodec("desc"))
>>> fmt.encode(10)
('10.0', b'', 'i')
>>> fmt.encode(2**53 + 1)           # one more than a double can hold
('9007199254740992.0', b'\\x81\\x01', 'i')
>>> fmt.decode('9007199254740992', b'\\x81\\x01', 'i')
9007199254740993

The alternative, :class:`~rankengine.board.packed.PackedScore`, folds a
``(score, time)`` composite into one double and refuses any value whose
packed form would pass 2**53 (pass ``packing=PackedScore(...)``): other Redis
clients then read one meaningful number per member.

Members
-------
A member is stored as a type tag and its bytes, in an encoding that sorts as
Python compares members of one type (``tie_break="member"`` is Redis order):

>>> encode_member("ann"), encode_member(b"ann"), encode_member(-1)
(b'sann', b'bann', b'i~\\xff')
>>> sorted([5, -300, 0, 2**70], key=encode_member) == sorted([5, -300, 0, 2**70])
True

Metadata
--------
Metadata is msgpack (as in the event log) with the keys of every map in
sorted order: equal dicts have one encoding, so the scripts can tell whether
a write changes a member's metadata by comparing bytes.

>>> encode_meta({"b": 1, "a": 2}) == encode_meta({"a": 2, "b": 1})
True
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any, Final

from rankengine.board.packed import PackedScore
from rankengine.board.scoring import Member, Score, ScoreCodec, check_member, describe
from rankengine.durable.records import pack as pack_meta
from rankengine.durable.records import unpack as unpack_meta

__all__ = [
    "MAXCLOCK",
    "MAX_INT_SCORE",
    "MAX_MEMBER_BITS",
    "TIE_DIGITS",
    "ScoreFormat",
    "decode_member",
    "decode_meta",
    "encode_member",
    "encode_meta",
]

#: Largest tie clock: the 16-digit prefix is ``MAXCLOCK - clock`` on
#: descending boards, and every clock stays an exact double.
MAXCLOCK: Final = 2**53 - 1
#: Digits of the tie prefix (``MAXCLOCK`` has 16).
TIE_DIGITS: Final = 16
#: Largest magnitude of an int score: what a double's range can hold.
MAX_INT_SCORE: Final = (2**53 - 1) * 2**971
_MAX_DOUBLE: Final = float(MAX_INT_SCORE)
#: Largest bit length of an int member's magnitude (126 bytes after a length byte).
MAX_MEMBER_BITS: Final = 126 * 8
#: Type of a member, by the tag byte that starts its stored form.
_TAGS: Final = {ord("s"): "str", ord("b"): "bytes", ord("i"): "int"}


# ----------------------------------------------------------------------
# Members
# ----------------------------------------------------------------------
def encode_member(member: Member) -> bytes:
    """The stored form of a member: tag ``s``/``b``/``i`` then its bytes.

    ``str`` is UTF-8 (lone surrogates allowed), which sorts in code point
    order; ``int`` is a length byte then big-endian bytes, so the bytes sort
    numerically (magnitudes up to ``MAX_MEMBER_BITS`` = 1008 bits).

    Runtime complexity: O(len(member))

    >>> encode_member(0), encode_member(256)
    (b'i\\x80', b'i\\x82\\x01\\x00')
    >>> encode_member(True)
    Traceback (most recent call last):
    ...
    TypeError: member must be str, bytes or int, not bool
    """
    kind = type(member)
    if kind is str:
        return b"s" + member.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
    if kind is bytes:
        return b"b" + member  # type: ignore[operator]
    if kind is int:
        n: int = member  # type: ignore[assignment]
        size = (abs(n).bit_length() + 7) // 8
        if size > 126:
            raise ValueError(
                f"int member {describe(n)} is too large for a Redis board "
                f"({abs(n).bit_length()} bits; at most {MAX_MEMBER_BITS})"
            )
        if n >= 0:
            return b"i" + bytes([0x80 + size]) + n.to_bytes(size, "big")
        return b"i" + bytes([0x7F - size]) + ((1 << (8 * size)) + n).to_bytes(size, "big")
    check_member(member)  # raises for anything but (subclasses of) str, bytes, int
    if isinstance(member, str):
        return encode_member(str(member))
    return encode_member(bytes(member) if isinstance(member, bytes) else int(member))


def decode_member(data: bytes) -> Member:
    """Inverse of :func:`encode_member`.

    Runtime complexity: O(len(data))

    >>> [decode_member(encode_member(m)) for m in ("é", b"\\x00", -70000)]
    ['é', b'\\x00', -70000]
    """
    tag, body = data[0], data[1:]
    if tag == ord("s"):
        return body.decode("utf-8", "surrogatepass")
    if tag == ord("b"):
        return bytes(body)
    lead = body[0]
    if lead >= 0x80:
        return int.from_bytes(body[1:], "big")
    size = 0x7F - lead
    return int.from_bytes(body[1:], "big") - (1 << (8 * size))


# ----------------------------------------------------------------------
# Numbers: a double plus an exact remainder
# ----------------------------------------------------------------------
def _split(value: float | int, *, bound: bool = False) -> tuple[float, int]:
    """``(d, r)``: ``d`` the largest double <= value, ``r = value - d`` (an int).

    An int beyond the double range is refused as a score; as a range bound
    it becomes a key just inside the infinities.
    """
    if type(value) is float:
        return (0.0 if value == 0 else value), 0
    n: int = value  # type: ignore[assignment]
    if not -MAX_INT_SCORE <= n <= MAX_INT_SCORE:
        if not bound:
            raise ValueError(
                f"score {describe(n)} is outside the range of a Redis board "
                "(a double's range, about 1.8e308, holds every score but such ints)"
            )
        return (_MAX_DOUBLE, 1 << 971) if n > 0 else (-math.inf, 1)
    d = float(n)
    if d > n:
        d = math.nextafter(d, -math.inf)
    return d, n - int(d)


def _residual(r: int, composite: bool) -> bytes:
    """A remainder as bytes that sort like it: 0x80 + length, then big-endian."""
    if r == 0:
        return b"\x00" if composite else b""
    size = (r.bit_length() + 7) // 8
    return bytes([0x80 + size]) + r.to_bytes(size, "big")


def _read_residual(ok: bytes, at: int, composite: bool) -> tuple[int, int]:
    if at >= len(ok) or ok[at] < 0x80:
        return 0, at + (1 if composite else 0)
    size = ok[at] - 0x80
    return int.from_bytes(ok[at + 1 : at + 1 + size], "big"), at + 1 + size


def _enc_double(x: float) -> bytes:
    """8 bytes that sort like the double (sign bit flipped, negatives inverted)."""
    raw = struct.pack(">d", 0.0 if x == 0 else x)
    if raw[0] & 0x80:
        return bytes(b ^ 0xFF for b in raw)
    return bytes([raw[0] ^ 0x80]) + raw[1:]


def _dec_double(data: bytes) -> float:
    positive = data[0] & 0x80
    raw = bytes([data[0] ^ 0x80]) + data[1:] if positive else bytes(b ^ 0xFF for b in data)
    return float(struct.unpack(">d", raw)[0])


def _kind(value: float | int) -> str:
    if type(value) is int:
        return "i"
    return "z" if value == 0 and math.copysign(1.0, value) < 0 else "f"


def _join(d: float, r: int, kind: str) -> float | int:
    if kind == "i":
        return int(d) + r
    if kind == "z":
        return -0.0
    return d


class ScoreFormat:
    """How a board's scores are stored: ``(double text, ordkey, kind)``.

    ``kind`` has one letter per primary column: ``i`` int, ``f`` float,
    ``z`` the float -0.0 (a double in Redis forgets the sign of zero).

    Runtime complexity: O(columns) per conversion.

    >>> fmt = ScoreFormat(ScoreCodec(("desc", "asc")))
    >>> text, ok, kind = fmt.encode((10, 30))
    >>> text, kind, fmt.decode(text, ok, kind)
    ('10.0', 'ii', (10, 30))
    """

    def __init__(self, codec: ScoreCodec, packing: PackedScore | None = None) -> None:
        self.codec = codec
        self.packing = packing
        composite = codec.columns is not None
        if packing is not None:
            if codec.columns != 2:
                raise ValueError(
                    "packing folds a (score, time) pair into one double: it needs "
                    'a two-column board such as order=("desc", "asc")'
                )
            want = codec.directions[0] != codec.directions[1]
            if packing.descending != want:
                raise ValueError(
                    f"order={codec.directions!r} needs PackedScore(..., descending={want})"
                )
        #: Columns whose ordkey an element carries (1: scalar or packed).
        self.columns: int = (codec.columns or 1) if composite and packing is None else 1
        self.composite = composite and packing is None

    # -- scores -------------------------------------------------------------
    def encode(self, score: Score) -> tuple[str, bytes, str]:
        """The stored form of a valid score; ``ValueError`` if it cannot be held."""
        if self.packing is not None:
            return self._pack(score)
        primary = self.codec.primary(score)
        if not self.composite:
            d, r = _split(primary)
            return repr(d), _residual(r, False), _kind(primary)
        d0, r0 = _split(primary[0])
        parts = [_residual(r0, True)]
        for column in primary[1:]:
            d, r = _split(column)
            parts.append(_enc_double(d) + _residual(r, True))
        return repr(d0), b"".join(parts), "".join(_kind(c) for c in primary)

    def bound(self, score: Score) -> tuple[str, bytes]:
        """A range bound (or a hypothetical score) as ``(double text, ordkey)``."""
        if self.packing is not None:
            return self._pack(score)[:2]
        primary = self.codec.primary(score)
        if not self.composite:
            d, r = _split(primary, bound=True)
            return repr(d), _residual(r, False)
        d0, r0 = _split(primary[0], bound=True)
        parts = [_residual(r0, True)]
        for column in primary[1:]:
            d, r = _split(column, bound=True)
            parts.append(_enc_double(d) + _residual(r, True))
        return repr(d0), b"".join(parts)

    def rounded_bound(self, score: Score, *, up: bool) -> tuple[str, bytes, bool]:
        """A range bound on any score: ``(double text, ordkey, exact)``.

        The exact encoding holds every score (``exact`` is True).  A packed
        board holds only whole points on whole ticks of its window; a bound
        between two packed values (a fraction of a point, a time between
        ticks or outside the window) becomes its neighbour in index order:
        the next packed value above it when ``up``, below it otherwise, or
        an infinity when there is none.  ``exact`` is False then: no member
        holds the bound itself, so the caller counts its neighbour in.

        >>> day = PackedScore(0, 86400)
        >>> fmt = ScoreFormat(ScoreCodec(("desc", "asc")), day)
        >>> day.pack(10, 7), day.pack(10, 8)              # the earlier time is higher
        (1441784, 1441783)
        >>> fmt.rounded_bound((10, 7.5), up=True), fmt.rounded_bound((10, 7.5), up=False)
        (('1441784.0', b'', False), ('1441783.0', b'', False))
        >>> fmt.rounded_bound((10, 7), up=True), fmt.rounded_bound((2**60, 0), up=True)
        (('1441784.0', b'', True), ('inf', b'', False))
        """
        if self.packing is None:
            return (*self.bound(score), True)
        assert isinstance(score, tuple)
        points, t = score
        below = self.packing.floor(points, t)
        if below is not None and self.packing.unpack(below) == (points, t):
            return repr(float(below)), b"", True
        top = (self.packing.max_score << self.packing.bits) + self.packing.max_tick
        if up:
            above = self.packing.min_score << self.packing.bits if below is None else below + 1
            return ("inf" if above > top else repr(float(above))), b"", False
        return ("-inf" if below is None else repr(float(below))), b"", False

    def decode(self, text: str | bytes, ok: bytes, kind: str | bytes) -> Score:
        """The score back from its stored form, exactly and with its type."""
        kinds = kind.decode() if isinstance(kind, bytes) else kind
        d0 = float(text)
        if self.packing is not None:
            s, t = self.packing.unpack(int(d0))
            return (_join(float(s), 0, kinds[0]), _join(t, 0, kinds[1]))
        r0, at = _read_residual(ok, 0, self.composite)
        first = _join(d0, r0, kinds[0])
        if not self.composite:
            return first
        columns = [first]
        for letter in kinds[1:]:
            d = _dec_double(ok[at : at + 8])
            r, at = _read_residual(ok, at + 8, True)
            columns.append(_join(d, r, letter))
        return self.codec.score(tuple(columns))  # type: ignore[no-any-return]

    def primary(self, text: str | bytes, ok: bytes) -> Any:
        """The index primary of a stored score, whatever its kind (for merges)."""
        d0 = float(text)
        if self.packing is not None:
            s, t = self.packing.unpack(int(d0))
            return self.codec.primary((s, t))
        r0, at = _read_residual(ok, 0, self.composite)
        first = int(d0) + r0 if r0 else d0
        if not self.composite:
            return first
        columns: list[Any] = [first]
        for _ in range(self.columns - 1):
            d = _dec_double(ok[at : at + 8])
            r, at = _read_residual(ok, at + 8, True)
            columns.append(int(d) + r if r else d)
        return tuple(columns)

    def ok_end(self, element: bytes) -> int:
        """Length of the ordkey at the start of an element."""
        at = 0
        for column in range(self.columns):
            if column:
                at += 8
            lead = element[at]
            if lead >= 0x80:
                at += 1 + lead - 0x80
            elif self.composite:
                at += 1
        return at

    def _pack(self, score: Score) -> tuple[str, bytes, str]:
        assert self.packing is not None and isinstance(score, tuple)
        points, t = score
        packed = self.packing.pack(points, t)
        back = self.packing.unpack(packed)
        if back != (points, t):
            raise ValueError(
                f"time {t!r} is not a whole number of {self.packing.resolution} s ticks "
                f"from the window start: packing would round it to {back[1]!r}"
            )
        return repr(float(packed)), b"", _kind(points) + _kind(t)


def _canon(x: float) -> bytes:
    """The scripts' canonical text of a double (C's ``%.17g``, -0 as 0)."""
    return b"%.17g" % (0.0 if x == 0 else x)


# ----------------------------------------------------------------------
# Metadata
# ----------------------------------------------------------------------
def encode_meta(meta: Mapping[str, Any]) -> bytes:
    """The stored form of (checked) metadata: msgpack, every map's keys sorted.

    One encoding per value, whatever order its keys were given in, so
    ``encode_meta(a) == encode_meta(b)`` when the dicts ``a == b`` (values
    compared by type as well: ``1`` and ``1.0`` encode apart).

    Runtime complexity: O(size of meta)

    >>> encode_meta({"z": [{"b": 1, "a": 2}], "y": None}).hex()
    '82a179c0a17a9182a16102a16201'
    >>> decode_meta(encode_meta({"z": [{"b": 1, "a": 2}], "y": None}))
    {'y': None, 'z': [{'a': 2, 'b': 1}]}
    """
    return pack_meta(_sorted_keys(meta))


def decode_meta(data: bytes) -> dict[str, Any]:
    """Inverse of :func:`encode_meta` (keys come back sorted).

    Runtime complexity: O(len(data))
    """
    return unpack_meta(data)  # type: ignore[no-any-return]


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_sorted_keys(item) for item in value]
    return value
