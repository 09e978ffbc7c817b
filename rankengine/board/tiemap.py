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

The board's hot paths pick the shard once (a ``hash`` of a ``str`` is
cached in the string) and then read and pop in that ``dict`` directly;
every other user goes through the ``dict``-like methods here.  Iteration
runs shard by shard (no order is promised: the board never relies on
one).

A slot that never held an entry holds :data:`VACANT_SHARD`, one empty
``dict`` shared by every map, so that an empty map is one list of 256
references (1.5 us to make, not 15 us for 256 dicts of its own, and
~2 KB, not ~18 KB) and a board with few deep ties reads
one cached exact ``dict``.  It must stay empty: a write goes to the
member's slot only when that slot is not vacant, else through
:meth:`TieMap.__setitem__`, which gives the slot a dict of its own::

    if ties is VACANT_SHARD:
        tie_map[member] = tie       # the slot's first entry
    else:
        ties[member] = tie

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

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any, Final

__all__ = ["TIE_SHARDS", "TIE_SHARD_MASK", "VACANT_SHARD", "TieMap"]

#: Shards of a tie map: a power of two (the shard is a mask of the hash).
#: 256 keeps a shard's doubling short at the sizes a board reaches: at
#: 10^6 entries a shard holds ~3,900 and doubles at 2,731 or 5,462
#: entries, median 0.14 ms and at most 0.5 ms of CPU with fresh memory
#: (``python bench/tie_stops.py maps``, load 3.5), where one dict's
#: doubling took 5-16 ms at 349,526 entries and 18-86 ms at 699,051.
TIE_SHARDS: Final = 256
#: ``hash(member) & TIE_SHARD_MASK`` is the member's shard.
TIE_SHARD_MASK: Final = TIE_SHARDS - 1

#: The shard of every slot that never held an entry, in every map: always
#: empty (``TieMap._check`` says so).  Reads and pops find nothing in it.
VACANT_SHARD: Final[dict[Any, Any]] = {}

#: What ``pop`` returns when no default is given and nothing is there
#: (it raises KeyError then, as ``dict.pop`` does).
_NO_DEFAULT: Final = object()


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

    __slots__ = ("shards",)

    def __init__(self, items: Iterable[tuple[Any, Any]] = ()) -> None:
        self.shards: list[dict[Any, Any]] = [VACANT_SHARD] * TIE_SHARDS
        for member, tie in items:
            self[member] = tie

    def get(self, member: Any, default: Any = None) -> Any:
        """The member's tie, or ``default``.

        Runtime complexity: O(1)
        """
        return self.shards[hash(member) & TIE_SHARD_MASK].get(member, default)

    def __getitem__(self, member: Any) -> Any:
        return self.shards[hash(member) & TIE_SHARD_MASK][member]

    def __setitem__(self, member: Any, tie: Any) -> None:
        shards = self.shards
        number = hash(member) & TIE_SHARD_MASK
        shard = shards[number]
        if shard is VACANT_SHARD:
            shards[number] = {member: tie}  # the slot's first entry: a dict of its own
        else:
            shard[member] = tie

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
        empty; raise AssertionError."""
        assert len(self.shards) == TIE_SHARDS, len(self.shards)
        assert not VACANT_SHARD, ("an entry in the vacant shard", VACANT_SHARD)
        for number, shard in enumerate(self.shards):
            assert type(shard) is dict, (number, type(shard))
            for member in shard:
                assert hash(member) & TIE_SHARD_MASK == number, ("wrong shard", member, number)
