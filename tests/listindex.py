"""A plain sorted-list ``OrderedIndex``: the obviously-correct reference.

O(N) inserts and removes; used only by tests, to check the protocol's
contract independently of the real backends.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any


class ListIndex:
    def __init__(self) -> None:
        self.keys: list[tuple[Any, Any]] = []
        self.members: list[Any] = []

    def __len__(self) -> int:
        return len(self.keys)

    def insert(self, primary: Any, tie: Any, member: Any) -> None:
        key = (primary, tie)
        i = bisect.bisect_left(self.keys, key)
        assert i == len(self.keys) or self.keys[i] != key, "duplicate key"
        self.keys.insert(i, key)
        self.members.insert(i, member)

    def remove(self, primary: Any, tie: Any) -> None:
        i = self.position(primary, tie)
        del self.keys[i]
        del self.members[i]

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        i = self.position(primary, tie)
        member = self.members[i]
        self.remove(primary, tie)
        self.insert(new_primary, new_tie, member)

    def position(self, primary: Any, tie: Any) -> int:
        i = bisect.bisect_left(self.keys, (primary, tie))
        assert i < len(self.keys) and self.keys[i] == (primary, tie), "key not present"
        return i

    def count_less(self, primary: Any, tie: Any) -> int:
        return bisect.bisect_left(self.keys, (primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        prims = [k[0] for k in self.keys]
        return (bisect.bisect_right if inclusive else bisect.bisect_left)(prims, primary)

    def entry(self, position: int) -> tuple[Any, Any, Any]:
        primary, tie = self.keys[position]
        return primary, tie, self.members[position]

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Any]:
        rng = range(stop - 1, start - 1, -1) if reverse else range(start, stop)
        for i in rng:
            yield self.entry(i)

    def clear(self) -> None:
        self.keys.clear()
        self.members.clear()

    def build(self, entries: Iterable[tuple[Any, Any, Any]]) -> None:
        rows = list(entries)
        self.keys = [(p, t) for p, t, _ in rows]
        self.members = [m for _, _, m in rows]

    def _check(self) -> None:
        assert all(a < b for a, b in zip(self.keys, self.keys[1:], strict=False)), (
            "keys out of order"
        )
        assert len(self.keys) == len(self.members)
