"""The tie map of a first-to-reach board, split in shards so that no insert stops the board.

A first-to-reach board keeps ``member -> tie clock`` for the members that
lie deep in a run of equal scores (see :mod:`rankengine.index.protocol`).
In a game server nearly every new player is one (a crowd sits on the
lowest scores), so the map grows with the board.  A ``dict`` grows by
doubling: the insert that fills it past two thirds copies every entry
into a table twice as large, in one step.  For a bare ``dict`` of
``player:N`` strings that step is 2.8-4.3 ms at 87,382 entries, 7.3-9.0
ms at 174,763 and 18-20 ms at 349,526 (thread CPU time, fresh memory
included): one ``incr`` stops the board that long, and every call queued
behind it waits (``docs/performance.md``, "The maps' resizes").

:class:`TieMap` is the same map as :data:`TIE_SHARDS` small dicts; a
member's shard is ``hash(member) & TIE_SHARD_MASK``, so equal members
(which hash alike) always meet in one shard.  Each shard doubles on its
own, at 1/256 of the size::

    member "player:17"
       |  hash(member) & TIE_SHARD_MASK  (= 201, say)
       v
    shards [0]   {"player:3": -12, ...}
           [1]   {}
           ...
           [201] {"player:17": -40, "player:90": -77}   <- one small dict
           ...
           [255] {...}

The board's hot write path picks the shard once (a ``hash`` of a ``str``
is cached in the string) and then reads, pops and sets in that ``dict``
directly; every other user goes through the ``dict``-like methods here.
Iteration runs shard by shard (no order is promised: the board never
relies on one).

A shard that never held an entry is the map's one *vacant* shard: an
empty ``dict`` shared by every such slot, whose ``__setitem__`` gives the
slot a dict of its own, so that an empty map is a list of 256 references
to one object (a board made ~1 us slower, not ~10 us with 256 dicts) and
a board with few deep ties reads one cached empty dict.

Runtime complexity: O(1) per look-up, set or pop (a doubling copies one
shard: O(N / TIE_SHARDS)); O(N + TIE_SHARDS) to iterate, copy or count.

>>> ties = TieMap()
>>> ties["ann"] = -3
>>> ties["bob"] = -5
>>> ties.get("ann"), ties.pop("bob"), "bob" in ties, len(ties)
(-3, -5, False, 1)
>>> sorted(ties.items())
[('ann', -3)]
>>> ties._check()
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any, Final

__all__ = ["TIE_SHARDS", "TIE_SHARD_MASK", "TieMap"]

#: Shards of a tie map: a power of two (the shard is a mask of the hash).
#: 256 keeps a shard's doubling short at the sizes a board reaches: at
#: 10^6 entries a shard holds ~3,900 and doubles at 2,731 or 5,462
#: entries, median 0.14 ms and at most 0.5 ms of CPU with fresh memory
#: (``python bench/tie_stops.py maps``, load 3.5), where one dict's
#: doubling took 5-16 ms at 349,526 entries and 18-86 ms at 699,051.
TIE_SHARDS: Final = 256
#: ``hash(member) & TIE_SHARD_MASK`` is the member's shard.
TIE_SHARD_MASK: Final = TIE_SHARDS - 1

#: What ``pop`` returns when no default is given and nothing is there
#: (it raises KeyError then, as ``dict.pop`` does).
_NO_DEFAULT: Final = object()


class _Vacant(dict[Any, Any]):
    """The empty shard every unused slot of one :class:`TieMap` holds: reads
    find nothing, and a set puts a dict of its own in the member's slot.
    It holds its map by a weak reference (no cycle: a map dropped is freed
    at once, by reference counting)."""

    __slots__ = ("_owner",)

    def __init__(self, owner: TieMap) -> None:
        super().__init__()
        self._owner = weakref.ref(owner)

    def __setitem__(self, member: Any, tie: Any) -> None:
        owner = self._owner()
        if owner is None:  # pragma: no cover - a map is alive while written to
            raise RuntimeError("a set into the vacant shard of a dropped tie map")
        shards = owner.shards
        number = hash(member) & TIE_SHARD_MASK
        if shards[number] is self:
            shards[number] = {member: tie}
        else:  # (reached through another slot: the member's has its dict)
            shards[number][member] = tie


class TieMap:
    """``member -> tie`` as :data:`TIE_SHARDS` dicts (see the module's
    docstring); the ``dict`` operations the board uses, and ``_check()``.

    ``shards`` is the list of dicts itself, for the board's hot path:
    ``shards[hash(member) & TIE_SHARD_MASK]`` is the member's dict.

    Runtime complexity: O(TIE_SHARDS) to make (empty, in C), or O(N) from ``items``

    >>> ties = TieMap([("ann", 1), ("bob", 2)])
    >>> ties.shards[hash("ann") & TIE_SHARD_MASK]["ann"]
    1
    >>> ties == ties.copy(), ties == TieMap()
    (True, False)
    """

    __slots__ = ("__weakref__", "_vacant", "shards")

    def __init__(self, items: Iterable[tuple[Any, Any]] = ()) -> None:
        self._vacant = _Vacant(self)
        self.shards: list[dict[Any, Any]] = [self._vacant] * TIE_SHARDS
        shards = self.shards
        for member, tie in items:
            shards[hash(member) & TIE_SHARD_MASK][member] = tie

    def get(self, member: Any, default: Any = None) -> Any:
        """The member's tie, or ``default``.

        Runtime complexity: O(1)
        """
        return self.shards[hash(member) & TIE_SHARD_MASK].get(member, default)

    def __getitem__(self, member: Any) -> Any:
        return self.shards[hash(member) & TIE_SHARD_MASK][member]

    def __setitem__(self, member: Any, tie: Any) -> None:
        self.shards[hash(member) & TIE_SHARD_MASK][member] = tie

    def __delitem__(self, member: Any) -> None:
        del self.shards[hash(member) & TIE_SHARD_MASK][member]

    def pop(self, member: Any, default: Any = _NO_DEFAULT) -> Any:
        """Remove the member and return its tie; ``default`` when it is
        absent (KeyError without one), as ``dict.pop``.

        Runtime complexity: O(1)
        """
        shard = self.shards[hash(member) & TIE_SHARD_MASK]
        if default is _NO_DEFAULT:
            return shard.pop(member)
        return shard.pop(member, default)

    def __contains__(self, member: object) -> bool:
        return member in self.shards[hash(member) & TIE_SHARD_MASK]

    def __len__(self) -> int:
        """Entries in all shards.  Runtime complexity: O(TIE_SHARDS)"""
        return sum(map(len, self.shards))

    def __bool__(self) -> bool:
        return any(self.shards)

    def __iter__(self) -> Iterator[Any]:
        """The members, shard by shard."""
        return chain.from_iterable(self.shards)

    def items(self) -> Iterator[tuple[Any, Any]]:
        """``(member, tie)`` pairs, shard by shard."""
        return chain.from_iterable(shard.items() for shard in self.shards)

    def copy(self) -> TieMap:
        """A map of its own with the same entries (a C-level copy of each shard).

        Runtime complexity: O(N + TIE_SHARDS)
        """
        twin = TieMap()
        for number, shard in enumerate(self.shards):
            if shard:
                twin.shards[number] = shard.copy()
        return twin

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TieMap):
            return NotImplemented
        # equal members hash alike, so equal maps have equal shards
        return self.shards == other.shards

    __hash__ = None  # type: ignore[assignment]  # (mutable, as a dict)

    def __repr__(self) -> str:
        return f"TieMap({dict(self.items())!r})"

    def _check(self) -> None:
        """Every member lies in its own shard, and the vacant shard is
        empty and this map's; raise AssertionError."""
        assert len(self.shards) == TIE_SHARDS, len(self.shards)
        assert not self._vacant and self._vacant._owner() is self, "vacant shard"
        for number, shard in enumerate(self.shards):
            assert type(shard) is dict or shard is self._vacant, (number, type(shard))
            for member in shard:
                assert hash(member) & TIE_SHARD_MASK == number, ("wrong shard", member, number)
