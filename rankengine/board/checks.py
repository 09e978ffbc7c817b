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

import operator
from collections.abc import Iterable
from typing import Any, Final

__all__ = [
    "STYLES",
    "check_comparable",
    "check_count",
    "check_flag",
    "check_int",
    "check_size",
    "check_style",
    "member_list",
    "not_a_flag",
]

#: The rank styles a read accepts (see :mod:`rankengine.board.leaderboard`).
STYLES: Final = ("unique", "dense", "competition")


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
