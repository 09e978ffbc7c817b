"""Score events: what a ledger records, and how one is checked and logged.

An event is the request itself, "ann scored 30 at 12:00 in region eu", not
the score it results in: each view folds it into its own state (an
all-time board adds 30, a weekly board adds 30 to this week's board, a
trending view counts one more).  It is logged as one change of kind
``EVENT`` in the durable record format
(:mod:`rankengine.durable.records`)::

    [EVENT, member, op, value, t_ms, attrs, when, meta]

=========  ===================================================  ==========
op         meaning                                              value
=========  ===================================================  ==========
``incr``   add ``value`` (``when=`` as the boards take it)      the delta
``set``    set the score (``when=``, ``meta=`` as boards take)  the score
``remove`` remove the member                                    None
``meta``   set the member's metadata where it is present        None
=========  ===================================================  ==========

``t_ms`` is the event's time in milliseconds since the epoch (the time
views route and decay by); ``attrs`` a small map of ``str`` to ``str`` or
``int`` that routes choose views by (``{"region": "eu", "mode": "duo"}``).

>>> event = make_event("ann", 30, op="incr", t_ms=1_000, attrs={"region": "eu"})
>>> event.member, event.op, event.value, event.t_ms, event.attrs
('ann', 'incr', 30, 1000, {'region': 'eu'})
>>> from_change(to_change(event)) == event
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple, TypeAlias

from rankengine.board.checks import check_when
from rankengine.board.scoring import check_member, check_meta
from rankengine.durable.records import EVENT

__all__ = [
    "INCR",
    "MAX_ATTRS",
    "MAX_T_MS",
    "OPS",
    "LedgerEvent",
    "Op",
    "check_attrs",
    "from_change",
    "make_event",
    "to_change",
]

Op: TypeAlias = Literal["incr", "set", "remove", "meta"]
#: The operations, in the order of their codes in the log.
OPS: Final[tuple[Op, ...]] = ("incr", "set", "remove", "meta")
_CODE: Final = {op: code for code, op in enumerate(OPS)}
#: The logged code of an ``incr`` (what :func:`to_change` writes for it).
INCR: Final = _CODE["incr"]
#: Most attributes one event may carry: they are routing keys, not a
#: payload (metadata is), and every event in the log carries its own.
MAX_ATTRS: Final = 16
#: Longest attribute name or string value, in characters (routing keys).
MAX_ATTR_CHARS: Final = 256
#: Largest event time accepted: the year 9999 in milliseconds, as far as
#: the calendars go.
MAX_T_MS: Final = 253_402_300_799_999


class LedgerEvent(NamedTuple):
    """One score event (see the module docstring for the fields)."""

    member: Any
    op: Op
    value: Any
    t_ms: int
    attrs: dict[str, str | int] | None
    when: str | None
    meta: dict[str, Any] | None


def check_attrs(attrs: object) -> dict[str, str | int] | None:
    """``attrs`` as a plain dict (None when empty), or raise ``TypeError`` /
    ``ValueError``: at most :data:`MAX_ATTRS` names, each a ``str``, each
    value a ``str`` or an ``int`` (not a ``bool``).

    Runtime complexity: O(len(attrs))

    >>> check_attrs({"region": "eu", "level": 3})
    {'region': 'eu', 'level': 3}
    >>> check_attrs({"region": 1.5})
    Traceback (most recent call last):
    ...
    TypeError: attribute 'region' must be a str or an int, not float
    """
    if attrs is None:
        return None
    if not isinstance(attrs, Mapping):
        raise TypeError(f"attrs must be a dict of str to str or int, not {type(attrs).__name__}")
    if len(attrs) > MAX_ATTRS:
        raise ValueError(f"an event carries at most {MAX_ATTRS} attributes, not {len(attrs)}")
    out: dict[str, str | int] = {}
    for name, value in attrs.items():
        if type(name) is not str:
            raise TypeError(f"attribute names must be str, not {type(name).__name__}")
        kind = type(value)
        if kind is not str and kind is not int:
            raise TypeError(
                f"attribute {name!r} must be a str or an int, not {type(value).__name__}"
            )
        if len(name) > MAX_ATTR_CHARS or (kind is str and len(value) > MAX_ATTR_CHARS):
            raise ValueError(f"attribute {name!r}: names and values are at most 256 characters")
        out[name] = value
    return out or None


def make_event(
    member: object,
    value: object = None,
    *,
    op: str = "incr",
    t_ms: int,
    attrs: Mapping[str, Any] | None = None,
    when: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> LedgerEvent:
    """An event checked for its own shape (member, op, time, attributes,
    ``when``, metadata); whether its value suits each view is the views'
    check.  Raises ``TypeError`` / ``ValueError`` on bad input.

    Runtime complexity: O(size of attrs and meta)
    """
    if op not in _CODE:
        raise ValueError(f"op must be one of {OPS}, not {op!r}")
    clean = check_member(member)
    if isinstance(t_ms, bool) or not isinstance(t_ms, int):
        raise TypeError(f"t_ms must be an int (milliseconds since the epoch), not {t_ms!r}")
    if not 0 <= t_ms <= MAX_T_MS:
        raise ValueError(f"t_ms must be between 0 and {MAX_T_MS} (the year 9999), not {t_ms}")
    if when is not None:
        if op not in ("incr", "set"):
            raise ValueError(f"when= goes with incr and set, not {op}")
        check_when(when)
    if op in ("incr", "set"):
        if value is None:
            raise TypeError(f"{op} needs a value")
    elif value is not None:
        raise ValueError(f"{op} takes no value (got {value!r})")
    clean_meta = None if meta is None else check_meta(meta)
    if op != "meta" and clean_meta is not None and op != "set":
        raise ValueError(f"meta= goes with set and meta events, not {op}")
    return LedgerEvent(clean, op, value, t_ms, check_attrs(attrs), when, clean_meta)


def to_change(event: LedgerEvent) -> tuple[Any, ...]:
    """The log's change for ``event``.

    Runtime complexity: O(1)
    """
    member, op, value, t_ms, attrs, when, meta = event
    return (EVENT, member, _CODE[op], value, t_ms, attrs, when, meta)


def from_change(change: tuple[Any, ...] | list[Any]) -> LedgerEvent:
    """The event a logged change holds (as the record decoder returned it).

    Runtime complexity: O(1)
    """
    _, member, code, value, t_ms, attrs, when, meta = change
    return LedgerEvent(member, OPS[code], value, t_ms, attrs, when, meta)
