"""Every storable value as text and as strict JSON.

A board stores Python ints of any size and the floats ``inf`` and
``-inf`` as scores (metadata may also hold a NaN).  Two things stop them
from printing as they are:

* Python refuses to turn an int of more than ``sys.get_int_max_str_digits()``
  decimal digits (4,300 by default) into a string: the conversion takes time
  quadratic in the digits.  :func:`int_text` writes such an int in
  hexadecimal instead (``0x...``, ``-0x...``), which is exact, linear in
  time and what ``int(text, 0)`` reads back;
* JSON has no infinity, no NaN and no integers that some parsers read
  whole.  :func:`to_json` writes those as one-key objects, and
  :func:`from_json` reads them back:

  ===================================  ========================================
  ``{"$int": "0x1f..."}``              an int beyond the int-to-string limit
                                       (hexadecimal, ``-0x...`` when negative)
  ``{"$float": "inf"}``                ``inf``; likewise ``"-inf"``, ``"nan"``
  ``{"$dict": {...}}``                 a metadata dict that itself has exactly
                                       one key, ``$int``, ``$float`` or
                                       ``$dict`` (so it is not read as one of
                                       the above)
  ===================================  ========================================

  Every other int is a JSON number (exact in Python's parser; JavaScript's
  ``JSON.parse`` rounds those beyond 2**53), every finite float a JSON
  number, ``bytes`` a string (UTF-8, undecodable bytes as ``\\xNN``), a
  tuple a list.  The output never holds ``Infinity`` or ``NaN``.

>>> big = 2**20000
>>> int_text(big)[:6], int(int_text(big), 0) == big
('0x1000', True)
>>> import json
>>> text = json.dumps(to_json({"score": -big, "best": float("-inf")}))
>>> text[:40]
'{"score": {"$int": "-0x10000000000000000'
>>> from_json(json.loads(text)) == {"score": -big, "best": float("-inf")}
True
"""

from __future__ import annotations

import math
from typing import Any, Final

__all__ = ["DICT_KEY", "FLOAT_KEY", "INT_KEY", "from_json", "int_text", "plain_repr", "to_json"]

#: The JSON object keys of the encodings above.
INT_KEY: Final = "$int"
FLOAT_KEY: Final = "$float"
DICT_KEY: Final = "$dict"
_TAGS: Final = frozenset({INT_KEY, FLOAT_KEY, DICT_KEY})
#: Bits below which an int always has fewer decimal digits than Python's
#: smallest allowed limit (640): ``2**2000`` has 603 digits, so no check is
#: needed below it.
_SAFE_BITS: Final = 2000


def int_text(value: int) -> str:
    """``value`` in decimal, or in hexadecimal (``0x...``) when Python
    refuses the decimal string (see the module docstring).

    Runtime complexity: O(digits) (Python rejects an int far past the limit
    from its size, before converting it)

    >>> int_text(-42), int_text(-(2**20000))[:5]
    ('-42', '-0x10')
    """
    try:
        return int.__repr__(value)
    except ValueError:  # past sys.get_int_max_str_digits()
        return hex(value)


def _too_long(value: int) -> bool:
    """Does Python refuse ``str(value)``?"""
    if value.bit_length() < _SAFE_BITS:
        return False
    try:
        int.__repr__(value)
    except ValueError:
        return True
    return False


def plain_repr(value: Any) -> str:
    """``repr(value)`` for a score, member or metadata value, with every int
    written by :func:`int_text` (so a huge one prints as ``0x...``, a Python
    literal of the same value).

    Runtime complexity: O(size of the value)

    >>> plain_repr({"k": [2**20000, "a", b"b"]})[:14]
    "{'k': [0x10000"
    """
    kind = type(value)
    if kind is int:
        return int_text(value)
    if kind is bool or value is None:
        return repr(value)
    if kind is tuple:
        inner = ", ".join(map(plain_repr, value))
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is list:
        return "[" + ", ".join(map(plain_repr, value)) + "]"
    if kind is dict:
        return "{" + ", ".join(f"{plain_repr(k)}: {plain_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def to_json(value: Any) -> Any:
    """``value`` as something ``json.dumps(..., allow_nan=False)`` writes
    exactly (the encodings of the module docstring).

    Runtime complexity: O(size of the value)

    >>> to_json([float("inf"), (1, b"a\\xff"), {"$int": 1}])
    [{'$float': 'inf'}, [1, 'a\\\\xff'], {'$dict': {'$int': 1}}]
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return {INT_KEY: hex(value)} if _too_long(value) else int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {FLOAT_KEY: repr(float(value))}
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        out = {str(key): to_json(item) for key, item in value.items()}
        return {DICT_KEY: out} if len(out) == 1 and next(iter(out)) in _TAGS else out
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def from_json(value: Any) -> Any:
    """The inverse of :func:`to_json` on what ``json.loads`` returns (bytes
    come back as the strings they were written as, tuples as lists).

    Runtime complexity: O(size of the value)

    :raises ValueError: for a ``$int`` or ``$float`` whose text is not a number.

    >>> from_json({"$int": "-0x10"}), from_json([{"$float": "-inf"}])
    (-16, [-inf])
    """
    if isinstance(value, list):
        return [from_json(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, item),) = value.items()
        if key == DICT_KEY and isinstance(item, dict):
            return {k: from_json(v) for k, v in item.items()}
        if key in (INT_KEY, FLOAT_KEY):
            return _number(key, item)
        if key == DICT_KEY:
            raise ValueError(f"a {key!r} object holds {item!r}, not an object")
    return {key: from_json(item) for key, item in value.items()}


def _number(key: str, item: object) -> int | float:
    """The number a ``$int`` or ``$float`` object holds."""
    try:
        if isinstance(item, str):
            number = int(item, 0) if key == INT_KEY else float(item)
            if not (key == FLOAT_KEY and math.isfinite(number)):  # finite: a JSON number
                return number
    except ValueError:
        pass
    what = "an int's text" if key == INT_KEY else "'inf', '-inf' or 'nan'"
    raise ValueError(f"a {key!r} object holds {item!r}, not {what}")
