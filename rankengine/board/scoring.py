"""Scores, members and metadata: what a board accepts, and how a score
becomes the ``primary`` half of an index key.

Every check here runs *before* a board mutates anything, so a bad value is
reported with a clear error and leaves the board unchanged.

Supported values
----------------
score
    ``int`` (any size: Python ints are exact, there is no 2^53 limit) or
    ``float`` (``+inf`` and ``-inf`` allowed, NaN refused).  ``bool`` is
    refused (``True`` is an ``int`` in Python, but a score of ``True`` is
    almost always a bug).  Integer-like and float-like objects (NumPy scalars)
    are converted to ``int``/``float``; ``Fraction`` and ``Decimal`` are
    refused rather than silently rounded.
composite score
    On a board created with several column directions, e.g.
    ``order=("desc", "asc")``, a score is a tuple with one number per column.
member
    ``str``, ``bytes`` or ``int`` (not ``bool``).  On a board that breaks ties
    by member, all members must be of one type so that they compare.
metadata
    A ``dict`` with ``str`` keys whose values are ``None``, ``bool``, ``int``,
    ``float``, ``str``, ``bytes``, lists/tuples or dicts of those: exactly what
    the event log can store.  It is copied on the way in.

>>> codec = ScoreCodec(("desc", "asc"))
>>> codec.primary((10, 3))
(10, -3)
>>> codec.score(codec.primary((10, 3)))
(10, 3)
>>> check_score(float("nan"))
Traceback (most recent call last):
...
ValueError: score must not be NaN
"""

from __future__ import annotations

import math
import numbers
import struct
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "Member",
    "Order",
    "Score",
    "ScoreCodec",
    "check_member",
    "check_meta",
    "check_score",
]

Order: TypeAlias = Literal["desc", "asc"]
Number: TypeAlias = int | float
Score: TypeAlias = int | float | tuple[int | float, ...]
Member: TypeAlias = str | bytes | int

#: Deepest nesting accepted in metadata.  Metadata is a small record (name,
#: avatar, country); a deeper value is a mistake, and a bound keeps the copy
#: and the log encoder from recursing without limit.
MAX_META_DEPTH: Final = 16

_ORDERS: Final = ("desc", "asc")

#: A float's IEEE 754 bits: two floats are the same metadata value when
#: these are (``0.0`` and ``-0.0`` differ, and a NaN matches itself).
_FLOAT_BITS: Final = struct.Struct("<d")

#: Digits up to which an int is shown in full in an error message; a longer
#: one (10**400 has 401 digits) is described by its length, so the message
#: stays readable.
MAX_SHOWN_DIGITS: Final = 30


def describe(value: object) -> str:
    """``repr(value)``, with an int too long to print usefully given by its
    size instead (column by column for a composite score).

    Runtime complexity: O(digits)

    >>> describe(0.5), describe(-(10**400)), describe((10**400, 3))
    ('0.5', 'a negative int of 401 digits', '(an int of 401 digits, 3)')
    >>> describe(2**100_000)
    'a positive int of 100001 bits'

    """
    if type(value) is tuple:
        return "(" + ", ".join(map(describe, value)) + ")"
    if type(value) is int:
        try:
            digits = len(str(abs(value)))
        except ValueError:  # past Python's int-to-string limit: by its size in bits
            sign = "a negative" if value < 0 else "a positive"
            return f"{sign} int of {value.bit_length()} bits"
        if digits > MAX_SHOWN_DIGITS:
            return f"{'a negative' if value < 0 else 'an'} int of {digits} digits"
    return repr(value)


def out_of_float_range(subject: str, a: object, op: str, b: object) -> OverflowError:
    """The error for arithmetic that mixes an int beyond the float range
    with a float (Python's own, "int too large to convert to float", names
    neither the member nor the values).

    Runtime complexity: O(digits)

    >>> out_of_float_range("increment of 'ann'", 10**400, "+", 0.5).args[0][:60]
    "increment of 'ann': an int of 401 digits + 0.5 has no float "
    """
    return OverflowError(
        f"{subject}: {describe(a)} {op} {describe(b)} has no float value "
        "(an int beyond the float range, about 1.8e308, mixed with a float)"
    )


def check_score(score: object, what: str = "score") -> Number:
    """Return ``score`` as an ``int`` or ``float``, or raise.

    Runtime complexity: O(1)

    >>> check_score(3), check_score(2.5), check_score(float("-inf"))
    (3, 2.5, -inf)
    >>> check_score(True)
    Traceback (most recent call last):
    ...
    TypeError: score must be an int or a float, not bool
    """
    kind = type(score)
    if kind is int:
        return score  # type: ignore[return-value]
    if kind is float:
        if score != score:
            raise ValueError(f"{what} must not be NaN")
        return score  # type: ignore[return-value]
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise TypeError(f"{what} must be an int or a float, not {kind.__name__}")
    if isinstance(score, numbers.Integral):
        return int(score)
    if isinstance(score, numbers.Rational):
        raise TypeError(
            f"{what} must be an int or a float, not {kind.__name__} "
            "(convert it yourself: rankengine will not round it silently)"
        )
    value = float(score)
    if math.isnan(value):
        raise ValueError(f"{what} must not be NaN")
    return value


def check_member(member: object) -> Member:
    """Return ``member`` as the plain ``str``, ``bytes`` or ``int`` it is or
    equals (an instance of a subclass, such as an ``IntEnum``, becomes the
    plain value, as the event log and Redis keep it), or raise
    ``TypeError``.

    Runtime complexity: O(1) for a plain value, O(length) for a subclass's

    >>> import enum
    >>> class Level(enum.IntEnum):
    ...     GOLD = 1
    >>> check_member("player:1"), check_member(Level.GOLD)
    ('player:1', 1)
    >>> check_member(["a"])
    Traceback (most recent call last):
    ...
    TypeError: member must be str, bytes or int, not list
    """
    kind = type(member)
    if kind is str or kind is int or kind is bytes:
        return member  # type: ignore[return-value]
    if not is_member(member):
        raise member_error(member)
    # The base type's own conversion, not one the subclass overrides.
    if isinstance(member, str):
        return str.__str__(member)
    if isinstance(member, bytes):
        return bytes(memoryview(member))
    return int.__int__(member)  # type: ignore[arg-type]


def is_member(member: object) -> bool:
    """True for a value writes take as a member: a ``str``, ``bytes`` or
    ``int``, or an instance of a subclass of one (stored as the plain value
    it equals), but not a ``bool``.  Reads that find members by their stored
    form use it, so that they find what a write stored.

    Runtime complexity: O(1)

    >>> class Name(str): ...
    >>> is_member(Name("ann")), is_member(7), is_member(True), is_member(1.5)
    (True, True, False, False)
    """
    return isinstance(member, (str, bytes, int)) and not isinstance(member, bool)


def member_error(member: object) -> TypeError:
    """The error for a value that is not a member: it names the value's type
    and the member types accepted.

    Writes raise it for any value that is not a member (see
    :func:`check_member`).  Reads raise it only for a value that cannot even
    be looked up (an unhashable one, such as a list); any hashable value that
    is not on the board is simply absent there.

    Runtime complexity: O(1)

    >>> member_error(["a"])
    TypeError('member must be str, bytes or int, not list')
    """
    return TypeError(f"member must be str, bytes or int, not {type(member).__name__}")


def check_lookup(member: object) -> None:
    """Raise :func:`member_error` if ``member`` cannot be looked up (it is
    unhashable), for reads that find members without a ``dict`` (which
    raises for them itself).  Any hashable value passes: a read answers that
    it is absent.

    Runtime complexity: that of ``hash(member)``

    >>> check_lookup(("a", 1))
    >>> check_lookup({"a": 1})
    Traceback (most recent call last):
    ...
    TypeError: member must be str, bytes or int, not dict
    """
    try:
        hash(member)
    except TypeError:
        raise member_error(member) from None


def check_meta(meta: object) -> dict[str, Any]:
    """Validate metadata and return a deep copy of it.

    Runtime complexity: O(size of the metadata)

    >>> check_meta({"name": "Ada", "tags": ["a", "b"]})
    {'name': 'Ada', 'tags': ['a', 'b']}
    >>> check_meta({"when": object()})
    Traceback (most recent call last):
    ...
    TypeError: metadata value at ['when'] has unsupported type object
    """
    if not isinstance(meta, Mapping):
        raise TypeError(f"metadata must be a dict, not {type(meta).__name__}")
    copied = _copy_meta(meta, [], 0)
    assert isinstance(copied, dict)
    return copied


def _copy_meta(value: object, path: list[object], depth: int) -> object:
    """A checked copy of one metadata value, every key and leaf as the plain
    ``str``, ``int``, ``float`` or ``bytes`` it equals (an ``IntEnum`` or a
    ``str`` subclass is stored as what the event log keeps of it, so a read
    answers alike before and after a reopen).

    Runtime complexity: O(size of the value)

    >>> import enum
    >>> class Level(enum.IntEnum):
    ...     GOLD = 1
    >>> _copy_meta({"level": Level.GOLD, "tags": ("a",)}, [], 0)
    {'level': 1, 'tags': ['a']}
    """
    if depth > MAX_META_DEPTH:
        raise ValueError(f"metadata nested deeper than {MAX_META_DEPTH} levels")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str or kind is bytes:
        return value
    if kind is float:
        return value
    # Subclasses: the base type's own conversion, not one the subclass overrides.
    if isinstance(value, int):  # bool cannot be subclassed
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return bytes(memoryview(value))
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"metadata keys must be str, not {type(key).__name__} at {path}")
            name = str.__str__(key)
            out[name] = _copy_meta(item, [*path, name], depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_copy_meta(item, [*path, i], depth + 1) for i, item in enumerate(value)]
    raise TypeError(f"metadata value at {path} has unsupported type {type(value).__name__}")


def same_meta(a: object, b: object) -> bool:
    """Are two checked metadata values the same, types included?  ``==``
    would take ``1``, ``1.0`` and ``True`` (or ``0.0`` and ``-0.0``) for one
    another, and a write of the new one would then be skipped as a no-op,
    leaving the old one in memory and out of the log.  Floats are the same
    when their bits are: a NaN is then the same as itself (``==`` says it is
    not, and the same metadata written again would count as a change).

    Runtime complexity: O(size of the metadata)

    >>> same_meta({"k": [1, "a"]}, {"k": [1, "a"]}), same_meta({"k": 1}, {"k": 1.0})
    (True, False)
    >>> same_meta({"k": math.nan}, {"k": math.nan}), same_meta(0.0, -0.0)
    (True, False)
    """
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(same_meta(a[k], b[k]) for k in a)
    if type(a) is list:
        assert isinstance(b, list)
        return len(a) == len(b) and all(map(same_meta, a, b))
    if type(a) is float:
        assert isinstance(b, float)
        return _FLOAT_BITS.pack(a) == _FLOAT_BITS.pack(b)
    return a == b


class ScoreCodec:
    """Turns user scores into index primaries and back.

    The index always sorts ascending.  A scalar score is its own primary (a
    descending board simply reads the index from the other end).  A composite
    score ``(c0, c1, ...)`` becomes a tuple in which every column whose
    direction differs from column 0's is negated, so that plain tuple order is
    the board's order.  Negation is exact for ints and floats, so nothing is
    rounded.

    Runtime complexity: O(columns) per conversion.

    >>> ScoreCodec("desc").primary(7)
    7
    >>> ScoreCodec(("asc", "desc", "asc")).primary((1, 2, 3))
    (1, -2, 3)
    >>> ScoreCodec(["desc", "asc"]).order
    ('desc', 'asc')
    """

    __slots__ = ("_flip", "columns", "descending", "directions", "order")

    def __init__(self, order: Order | tuple[Order, ...]) -> None:
        if isinstance(order, str):
            directions: tuple[Any, ...] = (order,)
        elif isinstance(order, (bytes, bytearray, AbstractSet)) or not isinstance(order, Iterable):
            # (a set has no column order: its directions would follow string hashing)
            raise TypeError(
                f"order must be 'desc', 'asc' or a tuple of them, not {type(order).__name__}"
            )
        else:
            directions = tuple(order)
        if not directions:
            raise ValueError("order needs at least one column direction")
        for direction in directions:
            if direction not in _ORDERS:
                raise ValueError(
                    f"order must be 'desc' or 'asc' (or a tuple of them), not {direction!r}"
                )
        self.directions: tuple[Order, ...] = directions
        #: The order as the board keeps it: the direction, or the tuple of
        #: them (its own, never the list a caller passed and may change).
        self.order: Order | tuple[Order, ...] = order if isinstance(order, str) else directions
        self.columns: int | None = None if isinstance(order, str) else len(directions)
        self.descending: bool = directions[0] == "desc"
        self._flip = tuple(direction != directions[0] for direction in directions)

    def check(self, score: object, what: str = "score") -> Score:
        """Validate a score for this board and return it normalised; an
        error about one column of a composite score names the column
        (0-based).

        Runtime complexity: O(columns)

        >>> ScoreCodec(("desc", "asc")).check((10, float("nan")))
        Traceback (most recent call last):
        ...
        ValueError: score column 1 must not be NaN
        """
        if self.columns is None:
            return check_score(score, what)
        if not isinstance(score, (tuple, list)):
            raise TypeError(
                f"{what} must be a tuple of {self.columns} numbers on this composite board, "
                f"not {type(score).__name__}"
            )
        if len(score) != self.columns:
            raise ValueError(f"{what} must have {self.columns} columns, not {len(score)}")
        return tuple(
            check_score(value, f"{what} column {column}") for column, value in enumerate(score)
        )

    def primary(self, score: Score) -> Any:
        """The index primary of a valid score."""
        if self.columns is None:
            return score
        assert isinstance(score, tuple)
        return tuple(-v if flip else v for v, flip in zip(score, self._flip, strict=True))

    # The mapping is its own inverse: negating twice gives the column back.
    score = primary

    def add(self, score: Score, delta: Score, member: object = None) -> Score:
        """``score + delta`` column by column; raise before a NaN appears, or
        an ``OverflowError`` naming ``member`` when an int beyond the float
        range meets a float (``10**400 + 0.5``)."""
        if self.columns is None:
            try:
                result = score + delta  # type: ignore[operator]
            except OverflowError:
                raise out_of_float_range(f"increment of {member!r}", score, "+", delta) from None
            if result != result:
                raise ValueError(f"increment would make the score NaN ({score!r} + {delta!r})")
            return result
        assert isinstance(score, tuple) and isinstance(delta, tuple)
        out = []
        for old, step in zip(score, delta, strict=True):
            try:
                value = old + step
            except OverflowError:
                raise out_of_float_range(f"increment of {member!r}", score, "+", delta) from None
            if value != value:
                raise ValueError(f"increment would make the score NaN ({score!r} + {delta!r})")
            out.append(value)
        return tuple(out)

    def better(self, a: Score, b: Score) -> bool:
        """True when score ``a`` ranks strictly ahead of score ``b``."""
        pa, pb = self.primary(a), self.primary(b)
        return bool(pa > pb) if self.descending else bool(pa < pb)

    def blocks(self, when: str | None, old: Score | None, new: Score) -> bool:
        """Does the ``when`` rule of a ``set`` skip writing ``new`` over
        ``old`` (``None``: the member is absent)?  ``"new"`` only adds,
        ``"present"`` only updates, ``"better"``/``"worse"`` only move the
        member ahead/behind; a new member is always added by those two.

        Runtime complexity: O(columns)

        >>> codec = ScoreCodec("desc")
        >>> codec.blocks("better", 10, 5), codec.blocks("better", 10, 12)
        (True, False)
        >>> codec.blocks("new", None, 1), codec.blocks("present", None, 1)
        (False, True)
        """
        if old is None:
            return when == "present"
        return (
            when == "new"
            or (when == "better" and not self.better(new, old))
            or (when == "worse" and not self.better(old, new))
        )
