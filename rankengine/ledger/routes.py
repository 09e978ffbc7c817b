"""Routes: which events a view takes, and which of its boards each goes to.

A route is declarative, so it can be stored in the ledger's manifest and
come back on reopen (a Python predicate could not):

* ``where={"region": "eu"}``: only events whose attributes hold every
  listed name with that value (a list of values means any of them);
* ``by="mode"``: one board per value of ``attrs["mode"]``, created on
  demand the way a periodic board creates its periods; an event without
  the attribute goes to no board of the view.

Both may be given: the filter first, then the key.

>>> route = Route.of(where={"region": ["eu", "uk"]}, by="mode")
>>> route.key({"region": "uk", "mode": "duo"}), route.key({"region": "us", "mode": "duo"})
('duo', None)
>>> Route.from_map(route.to_map()) == route
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["NO_KEY", "Route"]

#: The key of a view without ``by=``: its one board.
NO_KEY: Final = None
#: What :meth:`Route.key` returns for an event the view does not take.
_SKIP: Final = None


@dataclass(frozen=True)
class Route:
    """A view's route: ``where`` (name -> allowed values) and ``by`` (the
    attribute that names the board), both optional."""

    where: tuple[tuple[str, tuple[str | int, ...]], ...] = ()
    by: str | None = None

    @classmethod
    def of(cls, *, where: Mapping[str, Any] | None = None, by: str | None = None) -> Route:
        """A checked route; ``TypeError`` on a malformed one.

        Runtime complexity: O(size of where)
        """
        pairs: list[tuple[str, tuple[str | int, ...]]] = []
        if where is not None:
            if not isinstance(where, Mapping):
                raise TypeError(f"where must be a dict of attribute -> value(s), not {where!r}")
            for name, allowed in where.items():
                if type(name) is not str:
                    raise TypeError(f"where: attribute names are str, not {name!r}")
                values = tuple(allowed) if isinstance(allowed, (list, tuple)) else (allowed,)
                if not values or any(type(v) not in (str, int) for v in values):
                    raise TypeError(f"where[{name!r}]: a str or int value, or a list of them")
                pairs.append((name, values))
        if by is not None and type(by) is not str:
            raise TypeError(f"by must be an attribute name (str), not {by!r}")
        return cls(tuple(sorted(pairs)), by)

    def to_map(self) -> dict[str, Any]:
        """The route as stored in the manifest."""
        return {"where": {name: list(values) for name, values in self.where}, "by": self.by}

    @classmethod
    def from_map(cls, data: Mapping[str, Any]) -> Route:
        """The route :meth:`to_map` stored."""
        return cls.of(where=data.get("where") or None, by=data.get("by"))

    @property
    def keyed(self) -> bool:
        """True when the view keeps one board per value of ``by``."""
        return self.by is not None

    def takes(self, attrs: Mapping[str, Any] | None) -> bool:
        """True when an event with ``attrs`` passes the filter.

        Runtime complexity: O(size of where)
        """
        for name, values in self.where:
            if attrs is None:
                return False
            value = attrs.get(name)
            if value is None or value not in values or type(value) not in map(type, values):
                return False
        return True

    def key(self, attrs: Mapping[str, Any] | None) -> Any:
        """The board an event with ``attrs`` goes to: its ``by`` value, or
        :data:`NO_KEY` for an unkeyed view that takes it; None-like
        ``_SKIP`` (also None) when it goes nowhere -- use :meth:`target`.

        Runtime complexity: O(size of where)
        """
        found, key = self.target(attrs)
        return key if found else _SKIP

    def target(self, attrs: Mapping[str, Any] | None) -> tuple[bool, Any]:
        """``(taken, key)``: whether the view takes an event with ``attrs``,
        and the key of the board it goes to (None for an unkeyed view).

        Runtime complexity: O(size of where)
        """
        if self.where and not self.takes(attrs):
            return False, None
        if self.by is None:
            return True, NO_KEY
        value = None if attrs is None else attrs.get(self.by)
        if value is None:
            return False, None
        return True, value

    def describe(self) -> str:
        """The route in words (``inspect``).

        >>> Route.of(where={"region": "eu"}, by="mode").describe()
        "where region in ['eu'], one board per mode"
        """
        parts = [f"where {name} in {list(values)}" for name, values in self.where]
        if self.by is not None:
            parts.append(f"one board per {self.by}")
        return ", ".join(parts) or "every event"
