"""The explorer's sorted-list side: the same operation on a real
:class:`~rankengine.index.sortedlist.SortedListIndex`, recorded while it runs.

The index is kept with the smallest load (:data:`LOAD`), so a board of a
dozen entries already has several blocks.  Its scores are
:class:`~rankengine.teach.explore_count.Counted` (so its columns are lists, as
for any score that is not a machine integer or float).  For one operation,
every block, the block maxima, the block lengths and the cached block
offsets are swapped for look-alikes that note each slot read and each slot
written or shifted; the real code runs; the plain containers come back.
The record says which slots were read, in order, and what it cost.

>>> mirror = SortedMirror([(10, 0, "a"), (20, 1, "b"), (30, 2, "c")])
>>> out = mirror.run("position", (20, 1))
>>> out["result"], out["cost"]["comparisons"] > 0
(2, True)
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any, Final

from rankengine.index.protocol import Entry3
from rankengine.index.sortedlist import MIN_LOAD, SortedListIndex
from rankengine.teach.explore_count import Counted, Tally

__all__ = ["LOAD", "SortedMirror"]

#: Block load of the mirror: blocks of 2 to 8 entries, so that a board of a
#: dozen shows a few (the speed backend uses 500).
LOAD: Final = MIN_LOAD


class _Log:
    """Slot reads and writes of one operation, in order."""

    def __init__(self) -> None:
        self.reads: list[list[Any]] = []
        self.writes = 0
        self.objects: set[str] = set()


def _watched(base: Any) -> Any:
    """A subclass of ``list`` or ``array`` that logs reads and writes."""

    def getitem(self: Any, i: Any) -> Any:
        value = base.__getitem__(self, i)
        log: _Log = self._log
        log.objects.add(self._name)
        if isinstance(i, int):
            log.reads.append([self._name, self._block, i if i >= 0 else len(self) + i])
        return value

    def setitem(self: Any, i: Any, value: Any) -> None:
        self._log.writes += 1 if isinstance(i, int) else len(value)
        base.__setitem__(self, i, value)

    def delitem(self: Any, i: Any) -> None:
        if isinstance(i, int):
            self._log.writes += len(self) - (i if i >= 0 else len(self) + i) - 1
        base.__delitem__(self, i)

    def insert(self: Any, i: int, value: Any) -> None:
        self._log.writes += len(self) - min(i, len(self)) + 1
        base.insert(self, i, value)

    def pop(self: Any, i: int = -1) -> Any:
        self._log.writes += len(self) - (i if i >= 0 else len(self) + i) - 1
        return base.pop(self, i)

    return type(
        f"Watched{base.__name__}",
        (base,),
        {
            "__getitem__": getitem,
            "__setitem__": setitem,
            "__delitem__": delitem,
            "insert": insert,
            "pop": pop,
        },
    )


_WatchedList: Final = _watched(list)
_WatchedArray: Final = _watched(array)


def _watch(values: Any, log: _Log, name: str, block: int) -> Any:
    if isinstance(values, array):
        out = _WatchedArray(values.typecode, values)
    else:
        out = _WatchedList(values)
    out._log = log
    out._name = name
    out._block = block
    return out


def _plain(values: Any) -> Any:
    return array(values.typecode, values) if isinstance(values, array) else list(values)


def _raw(value: Any) -> Any:
    return value.value if isinstance(value, Counted) else value


class SortedMirror:
    """A :class:`SortedListIndex` with tiny blocks and counted scores,
    holding ``entries``.

    Runtime complexity: O(N log N) to build
    """

    def __init__(self, entries: Iterable[Entry3]) -> None:
        self.tally = Tally()
        self.index = SortedListIndex(load=LOAD)
        for p, t, m in entries:
            self.index.insert(Counted(p, self.tally), t, m)
        self.tally.reset()

    def entries(self) -> list[Entry3]:
        """The entries, scores unwrapped.

        Runtime complexity: O(N)
        """
        return [(_raw(p), t, m) for p, t, m in self.index.iter_range(0, len(self.index))]

    def check(self, entries: list[Entry3]) -> None:
        """The index is sound and holds ``entries``.

        Runtime complexity: O(N)
        """
        self.index._check()
        assert self.entries() == entries, (self.entries(), entries)

    def blocks(self) -> dict[str, Any]:
        """The layout: scores and members per block, the block maxima, the
        cached offsets still exact, the block lengths.

        Runtime complexity: O(N)
        """
        index = self.index
        return {
            "scores": [[_raw(p) for p in block] for block in index._lists],
            "members": [[str(m) for m in block] for block in index._members],
            "maxes": [_raw(p) for p in index._maxes],
            "offsets": list(index._offsets[: index._valid]),
            "lens": list(index._lens),
            "load": LOAD,
        }

    def _swap(self, log: _Log | None) -> None:
        """Put watched containers in (``log``) or plain ones back (None)."""
        index = self.index

        def swap(values: Any, name: str, block: int = -1) -> Any:
            return _plain(values) if log is None else _watch(values, log, name, block)

        for column, name in ((index._lists, "p"), (index._ties, "t"), (index._members, "m")):
            for k in range(len(column)):
                column[k] = swap(column[k], name, k)
        index._set_maxes(swap(index._maxes, "maxes"))
        index._offsets = swap(index._offsets, "offsets")
        index._lens = swap(index._lens, "lens")

    def run(self, operation: str, *args: Any) -> dict[str, Any]:
        """Run ``operation`` (``insert``, ``remove``, ``move``, ``position``,
        ``entry``) with ``args`` as :func:`~rankengine.teach.explore_count.count_skiplist`
        takes them; return the layouts before and after, the slots read in
        order (``[column, block, slot]``: ``maxes``, ``offsets``, ``lens``,
        or a block of the ``p``/``t``/``m`` column), the blocks split or
        merged and the cost.

        Runtime complexity: O(N) (the layouts)
        """
        before = self.blocks()
        log = _Log()
        self.tally.reset()
        self._swap(log)
        result: Any = None
        index = self.index
        try:
            if operation == "insert":
                (p, t), member = args
                index.insert(Counted(p, self.tally), t, member)
            elif operation == "remove":
                ((p, t),) = args
                index.remove(Counted(p, self.tally), t)
            elif operation == "move":
                (p, t), (q, u) = args
                index.move(Counted(p, self.tally), t, Counted(q, self.tally), u)
            elif operation == "position":
                ((p, t),) = args
                result = index.position(Counted(p, self.tally), t) + 1
            elif operation == "entry":
                (rank,) = args
                primary, _, member = index.entry(rank - 1)
                result = [_raw(primary), member]
            else:
                raise ValueError(f"unknown operation {operation!r}")
        finally:
            self._swap(None)
        after = self.blocks()
        blocks = {(c, b) for c, b, _ in log.reads if c in ("p", "t", "m")}
        others = {c for c, _, _ in log.reads if c not in ("p", "t", "m")}
        return {
            "before": before,
            "after": after,
            "reads": log.reads,
            "result": result,
            "blocks_before": len(before["scores"]),
            "blocks_after": len(after["scores"]),
            "cost": {
                "comparisons": self.tally.comparisons,
                "objects": len(blocks) + len(others),
                "writes": log.writes,
                "reads": len(log.reads),
            },
        }
