"""The reference ordered index: a plain sorted list, obviously correct.

``ListIndex`` is the one model every index test compares with
(``tests/test_index_conformance.py`` runs it as a backend too), and the
index of the ``reference`` board of ``tests/conftest.py``.  It implements
:class:`rankengine.index.protocol.OrderedIndex` and nothing more: no
optional hook (``tie_of``, ``oldest_last``, ``columns``, ...), so a board
over it takes every fallback path of the board.  The answers the hooks give
are computed by the model's own helpers (:meth:`ListIndex.run_distance`,
:meth:`ListIndex.where`), which have other names for that reason.

O(N) inserts and removes; for tests only.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any

from rankengine.index.protocol import DuplicateKeyError, Entry3


class ListIndex:
    """Entries as two parallel sorted lists: keys ``(primary, tie)`` and members."""

    def __init__(self) -> None:
        self.keys: list[tuple[Any, Any]] = []
        self.members: list[Any] = []

    def __len__(self) -> int:
        return len(self.keys)

    # -- model helpers (not part of the protocol) ---------------------------

    def has(self, primary: Any, tie: Any) -> bool:
        """Is the key ``(primary, tie)`` present?"""
        i = bisect.bisect_left(self.keys, (primary, tie))
        return i < len(self.keys) and self.keys[i] == (primary, tie)

    def rows(self) -> list[Entry3]:
        """Every entry, in key order."""
        return [(p, t, m) for (p, t), m in zip(self.keys, self.members, strict=True)]

    def where(self, primary: Any, member: Any) -> int:
        """Position of the entry holding ``member`` among those with
        ``primary`` (``KeyError`` if none)."""
        lo = self.count_primary(primary, inclusive=False)
        hi = self.count_primary(primary, inclusive=True)
        for i in range(lo, hi):
            if self.members[i] == member:
                return i
        raise KeyError((primary, member))

    def run_distance(self, primary: Any, member: Any, *, oldest_last: bool | None) -> int:
        """Entries of the run of ``primary`` between ``member``'s entry and
        the run's oldest end: its last entry when ``oldest_last``, else its
        first (see :mod:`rankengine.index.protocol`)."""
        i = self.where(primary, member)
        if oldest_last:
            return self.count_primary(primary, inclusive=True) - 1 - i
        return i - self.count_primary(primary, inclusive=False)

    # -- OrderedIndex --------------------------------------------------------

    def insert(self, primary: Any, tie: Any, member: Any) -> None:
        key = (primary, tie)
        i = bisect.bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            raise DuplicateKeyError(f"key {key!r} is already present")
        self.keys.insert(i, key)
        self.members.insert(i, member)

    def remove(self, primary: Any, tie: Any) -> None:
        i = self.position(primary, tie)
        del self.keys[i]
        del self.members[i]

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        i = self.position(primary, tie)
        if (new_primary, new_tie) == (primary, tie):
            self.keys[i] = (new_primary, new_tie)  # an equal key: the new values
            return
        if self.has(new_primary, new_tie):
            raise DuplicateKeyError(f"key {(new_primary, new_tie)!r} is already present")
        member = self.members[i]
        self.remove(primary, tie)
        self.insert(new_primary, new_tie, member)

    def position(self, primary: Any, tie: Any) -> int:
        i = bisect.bisect_left(self.keys, (primary, tie))
        if i == len(self.keys) or self.keys[i] != (primary, tie):
            raise KeyError((primary, tie))
        return i

    def count_less(self, primary: Any, tie: Any) -> int:
        return bisect.bisect_left(self.keys, (primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        prims = [k[0] for k in self.keys]
        return (bisect.bisect_right if inclusive else bisect.bisect_left)(prims, primary)

    def entry(self, position: int) -> Entry3:
        if not 0 <= position < len(self.keys):
            raise IndexError(f"position {position} out of range")
        primary, tie = self.keys[position]
        return primary, tie, self.members[position]

    def iter_range(self, start: int, stop: int, *, reverse: bool = False) -> Iterator[Entry3]:
        rng = range(stop - 1, start - 1, -1) if reverse else range(start, stop)
        for i in rng:
            yield self.entry(i)

    def clear(self) -> None:
        self.keys.clear()
        self.members.clear()

    def build(self, entries: Iterable[Entry3]) -> None:
        try:
            rows = [tuple(row) for row in entries]
            if any(len(row) != 3 for row in rows):
                raise ValueError("entries must be (primary, tie, member) triples")
        except BaseException:
            self.clear()  # as the real backends: a failed load leaves it empty
            raise
        self.keys = [(p, t) for p, t, _ in rows]
        self.members = [m for _, _, m in rows]

    def _check(self) -> None:
        assert all(a < b for a, b in zip(self.keys, self.keys[1:], strict=False)), (
            "keys out of order"
        )
        assert len(self.keys) == len(self.members)
