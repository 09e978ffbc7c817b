"""Counting what an operation costs, by running the real code on keys that
count their comparisons.

:class:`Counted` wraps a score: every comparison with it adds one to a
:class:`Tally` and notes which stored entry was read.
:func:`count_skiplist` rebuilds a skip list of the same shape (same entries,
same heights) with counted scores, runs one operation of the real
:class:`~rankengine.index.skiplist.SkipList` on it, and reports the score
comparisons it made, the nodes it read (each node is one Python list, a
separate object on the heap: one likely cache miss per node) and the node
slots it wrote (links and spans).

>>> from rankengine.teach.viz import shape_of, teaching_list
>>> shape = shape_of(teaching_list([10, 20, 30, 40], rng=1))
>>> cost = count_skiplist(shape, "position", (30, 2))
>>> cost["comparisons"] > 0, cost["writes"]
(True, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from rankengine.index.skiplist import MAX_LEVEL, SkipList
from rankengine.teach.trace import trace_rank
from rankengine.teach.viz import HeightScript, Shape

__all__ = ["Counted", "Tally", "count_skiplist"]

#: Slots of a skip-list node before its links (primary, tie, member, backward).
_NODE_HEAD: Final = 4


@dataclass
class Tally:
    """Comparisons counted, and the tags of the stored entries they read."""

    comparisons: int = 0
    seen: set[int] = field(default_factory=set)

    def reset(self) -> None:
        self.comparisons = 0
        self.seen.clear()


class Counted:
    """A score that counts its comparisons in ``tally``; ``tag`` names the
    stored entry it belongs to (None for the key searched for).

    Runtime complexity: O(1) per comparison

    >>> t = Tally()
    >>> Counted(3, t, 0) < Counted(5, t), t.comparisons, t.seen
    (True, 1, {0})
    """

    __slots__ = ("tag", "tally", "value")

    def __init__(self, value: Any, tally: Tally, tag: int | None = None) -> None:
        self.value = value
        self.tally = tally
        self.tag = tag

    def _other(self, other: Any) -> Any:
        tally = self.tally
        tally.comparisons += 1
        if self.tag is not None:
            tally.seen.add(self.tag)
        if isinstance(other, Counted):
            if other.tag is not None:
                tally.seen.add(other.tag)
            return other.value
        return other

    def __lt__(self, other: Any) -> bool:
        return bool(self.value < self._other(other))

    def __le__(self, other: Any) -> bool:
        return bool(self.value <= self._other(other))

    def __gt__(self, other: Any) -> bool:
        return bool(self.value > self._other(other))

    def __ge__(self, other: Any) -> bool:
        return bool(self.value >= self._other(other))

    def __eq__(self, other: object) -> bool:
        return bool(self.value == self._other(other))

    def __ne__(self, other: object) -> bool:
        return bool(self.value != self._other(other))

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Counted({self.value!r})"


def _snapshot(sl: SkipList) -> dict[int, list[Any]]:
    """Every node's slots, links as node ids, keyed by node id."""
    out: dict[int, list[Any]] = {}
    for node in [sl.header, *sl._nodes()]:
        out[id(node)] = [id(v) if isinstance(v, list) else v for v in node]
    return out


def count_skiplist(
    shape: Shape, operation: str, *args: Any, height: int | None = None
) -> dict[str, Any]:
    """Run ``operation`` (a :class:`SkipList` method: ``insert``, ``remove``,
    ``move``, ``position``, ``entry``) on a copy of the list ``shape``
    describes, with counted scores; ``args`` are keys ``(primary, tie)``
    (for ``insert`` the key and the member; ``entry`` takes a 1-based rank).

    Returns ``comparisons`` (of scores), ``objects`` (nodes read, the
    header included), ``writes`` (node slots whose value changed, every
    slot of a new node) and ``result``.

    Runtime complexity: O(N * level) (the copy)
    """
    tally = Tally()
    script = HeightScript(0, max_level=MAX_LEVEL)
    script.force(*shape.heights[1:])
    sl = SkipList(script, max_level=MAX_LEVEL)
    for k, (p, t, m) in enumerate(shape.entries):
        sl.insert(Counted(p, tally, k), t, m)
    before = _snapshot(sl)
    tally.reset()
    result: Any = None
    if operation == "insert":
        (p, t), member = args
        script.force(height or 1)
        sl.insert(Counted(p, tally, -1), t, member)
    elif operation == "remove":
        ((p, t),) = args
        sl.remove(Counted(p, tally), t)
    elif operation == "move":
        (p, t), (q, u) = args
        sl.move(Counted(p, tally), t, Counted(q, tally, -1), u)
    elif operation == "position":
        ((p, t),) = args
        result = sl.position(Counted(p, tally), t) + 1
    elif operation == "entry":
        (rank,) = args
        primary, _, member = sl.entry(rank - 1)
        result = [primary.value, member]
        # The rank walk reads spans, never scores: the nodes it stands on.
        tally.seen.update(s.dst - 1 for s in trace_rank(shape, rank).steps)
    else:
        raise ValueError(f"unknown operation {operation!r}")
    comparisons, seen = tally.comparisons, len(tally.seen - {-1})
    after = _snapshot(sl)
    writes = 0
    for key, slots in after.items():
        old = before.get(key)
        if old is None:
            writes += len(slots)
            continue
        writes += sum(1 for a, b in zip(old, slots, strict=False) if a != b)
        writes += abs(len(slots) - len(old))
    sl._check()
    return {
        "comparisons": comparisons,
        "objects": seen + 1,
        "writes": writes,
        "result": result,
    }
