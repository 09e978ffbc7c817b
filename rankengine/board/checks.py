"""Argument checks shared by every board kind: one home for each rule.

Each check returns the value it accepts (converted where the rule allows, as
``operator.index`` converts a NumPy integer) or raises the error the public
API promises, before anything is read or written.  Every board kind -- the
in-memory board, the durable, Redis, sharded and time boards -- calls these,
so a rule and its message are written once.

>>> check_count(3, "count"), check_flag(False, "with_meta")
(3, False)
>>> check_size(0)
Traceback (most recent call last):
...
ValueError: page size must be at least 1, got 0
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Iterable
from typing import Any, Final

__all__ = [
    "PERCENTILE_METHODS",
    "STYLES",
    "WHENS",
    "batch_error",
    "check_comparable",
    "check_count",
    "check_flag",
    "check_int",
    "check_members",
    "check_percentile",
    "check_percentile_method",
    "check_ranks",
    "check_size",
    "check_style",
    "check_when",
    "member_list",
    "not_a_flag",
]

#: The rank styles a read accepts (see :mod:`rankengine.board.leaderboard`).
STYLES: Final = ("unique", "dense", "competition")
#: The ways a percentile read counts a member's own score.
PERCENTILE_METHODS: Final = ("below", "at_or_below", "midpoint")
#: Characters of a member's repr kept in an error about a batch: enough to
#: find the member, and a 1 MB member name does not make a 1 MB message.
MEMBER_REPR_CHARS: Final = 80
#: The errors :func:`batch_error` rewrites: the plain argument errors, whose
#: constructors take the message alone.
_REWORDED: Final = (TypeError, ValueError, OverflowError)
#: The conditions a write takes (``when=``; Redis ``ZADD``'s NX, XX, GT, LT).
WHENS: Final = (None, "new", "present", "better", "worse")


def check_flag(value: object, what: str) -> bool:
    """``value`` if it is a ``bool``, else a ``TypeError``: a flag given as
    ``"no"`` or ``0`` is more likely a slip than a choice (``"no"`` is true).

    Runtime complexity: O(1)

    >>> check_flag(True, "fill")
    True
    >>> check_flag("no", "fill")
    Traceback (most recent call last):
    ...
    TypeError: fill must be a bool, not str
    """
    if value is True or value is False:
        return value
    raise not_a_flag(value, what)


def not_a_flag(value: object, what: str) -> TypeError:
    """The error :func:`check_flag` raises, for a hot read that tests the
    flag inline (``value is not False and value is not True``: the default
    ``False`` costs one identity test, no call).

    >>> not_a_flag(None, "with_meta")
    TypeError('with_meta must be a bool, not NoneType')
    """
    return TypeError(f"{what} must be a bool, not {type(value).__name__}")


def check_int(value: object, what: str) -> int:
    """``value`` as an ``int``: an ``int`` itself, or any integer type that
    says so with ``__index__`` (a NumPy ``int64``), as list indexing takes.
    A ``bool`` is refused: ``top(True)`` is more likely a slip than a count.

    Runtime complexity: O(1)

    >>> check_int(3, "k")
    3
    >>> check_int(2.0, "k")
    Traceback (most recent call last):
    ...
    TypeError: k must be an int, not float
    """
    if type(value) is int:
        return value
    if not isinstance(value, bool) and hasattr(type(value), "__index__"):
        return operator.index(value)  # type: ignore[arg-type]
    raise TypeError(f"{what} must be an int, not {type(value).__name__}")


def check_count(value: object, what: str) -> int:
    value = check_int(value, what)
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {value}")
    return value


def check_size(value: object) -> int:
    value = check_int(value, "page size")
    if value < 1:
        raise ValueError(f"page size must be at least 1, got {value}")
    return value


def check_ranks(start: object, stop: object) -> tuple[int, int]:
    """``(start, stop)`` of a rank range as ints, or the error: each an int
    (see :func:`check_int`), and neither 0 -- ranks are 1-based and negative
    ones count from the bottom.

    Runtime complexity: O(1)

    >>> check_ranks(1, -1)
    (1, -1)
    >>> check_ranks(0, 3)
    Traceback (most recent call last):
    ...
    ValueError: ranks are 1-based: use 1 for the top and -1 for the bottom, not 0
    """
    start = check_int(start, "start")
    stop = check_int(stop, "stop")
    if start == 0 or stop == 0:
        raise ValueError("ranks are 1-based: use 1 for the top and -1 for the bottom, not 0")
    return start, stop


def check_percentile(p: object) -> int | float:
    """``p`` as the ``int`` or ``float`` percentile it stands for, or a
    ``ValueError`` unless it is a number from 0 to 100.

    Any real number is taken (a NumPy ``float32`` or ``int64``, a
    ``Fraction``): an integer as an ``int``, any other as the ``float`` it
    converts to.  A ``bool``, a string, ``None`` and NaN are refused.

    Runtime complexity: O(1)

    >>> from fractions import Fraction
    >>> check_percentile(90), check_percentile(Fraction(25, 2))
    (90, 12.5)
    >>> check_percentile(True)
    Traceback (most recent call last):
    ...
    ValueError: percentile must be a number from 0 to 100, not True
    """
    value: int | float
    if type(p) is int or type(p) is float:
        value = p
    elif isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise ValueError(f"percentile must be a number from 0 to 100, not {p!r}")
    elif isinstance(p, numbers.Integral):
        value = int(p)
    else:
        value = float(p)
    if not 0 <= value <= 100:
        raise ValueError(f"percentile must be a number from 0 to 100, not {p!r}")
    return value


def check_style(style: object) -> None:
    if style not in STYLES:
        raise ValueError(f"rank style must be one of {STYLES}, not {style!r}")


def member_list(members: Iterable[Any]) -> list[Any]:
    """A list of the members; a bare ``str``/``bytes`` is refused, not split
    into one-character members."""
    if isinstance(members, (str, bytes)):
        raise TypeError(f"expected an iterable of members, not a single {type(members).__name__}")
    return list(members)


def check_comparable(member: object, held: type | None) -> None:
    """Raise unless ``member`` compares with the members of a board that
    breaks ties by member and holds ``held`` members (None: any type).

    Runtime complexity: O(1)

    >>> check_comparable(7, str)
    Traceback (most recent call last):
    ...
    TypeError: this board breaks ties by member and holds str members; int members would not compare
    """
    if held is not None and type(member) is not held:
        raise TypeError(
            f"this board breaks ties by member and holds {held.__name__} "
            f"members; {type(member).__name__} members would not compare"
        )


def check_when(when: object) -> None:
    """Raise unless ``when`` is one of :data:`WHENS` (a write's condition).

    Runtime complexity: O(1)

    >>> check_when("better")
    >>> check_when("NX")
    Traceback (most recent call last):
    ...
    ValueError: when must be one of ('new', 'present', 'better', 'worse') or None, not 'NX'
    """
    if when not in WHENS:
        raise ValueError(f"when must be one of {WHENS[1:]} or None, not {when!r}")


def check_percentile_method(method: object) -> None:
    """Raise unless ``method`` is one of :data:`PERCENTILE_METHODS`.

    Runtime complexity: O(1)

    >>> check_percentile_method("median")
    Traceback (most recent call last):
    ...
    ValueError: method must be one of ('below', 'at_or_below', 'midpoint'), not 'median'
    """
    if method not in PERCENTILE_METHODS:
        raise ValueError(f"method must be one of {PERCENTILE_METHODS}, not {method!r}")


def batch_error(exc: Exception, index: int, item: object, *, member: bool = False) -> Exception:
    """``exc``, raised while checking item ``index`` (0-based) of a batch
    write, as the same kind of error naming that item and its member, and
    saying the batch changed nothing (every batch write checks all of its
    items before it changes anything).  ``item`` is the ``(member, value)``
    pair, or the member itself when ``member`` is true.  An error of another
    kind is returned as it is.

    Runtime complexity: O(1)

    >>> print(batch_error(ValueError("score must not be NaN"), 1, ("bad", float("nan"))))
    the batch's item at index 1 (member 'bad'): score must not be NaN; nothing was changed
    """
    if type(exc) not in _REWORDED:
        return exc
    if member:
        who = f" (member {_short_repr(item)})"
    elif isinstance(item, tuple) and len(item) == 2:
        who = f" (member {_short_repr(item[0])})"
    else:
        who = ""
    return type(exc)(f"the batch's item at index {index}{who}: {exc}; nothing was changed")


def _short_repr(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<int of {value.bit_length()} bits>"
    text = repr(value)
    if len(text) > MEMBER_REPR_CHARS:
        return text[: MEMBER_REPR_CHARS - 3] + "..."
    return text


def check_members(check: Callable[[Any], Any], members: list[Any]) -> list[Any]:
    """``[check(m) for m in members]``, an error naming the bad member and its
    index (see :func:`batch_error`).

    Runtime complexity: O(k) calls of ``check``

    >>> check_members(str.upper, ["a", "b"])
    ['A', 'B']
    """
    try:
        return [check(member) for member in members]  # the good path: a comprehension
    except (TypeError, ValueError, OverflowError) as exc:
        error = exc
    for index, member in enumerate(members):  # find the bad one (checks are pure)
        try:
            check(member)
        except (TypeError, ValueError, OverflowError):
            raise batch_error(error, index, member, member=True) from None
    raise error
