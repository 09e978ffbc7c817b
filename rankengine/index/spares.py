"""Spare lists: old, empty list objects for the blocks a split makes.

A split of a block of ``2 * load`` member references makes a new list of
``load`` of them (``ms[half:]``).  A new container is *young*: the cycle
collector's next young pass walks every reference it holds (a cache miss
each, on the member it points to), and the middle generation's pass walks
it again before it settles in the oldest one.  At N = 1,000,000 in the
latency mix (``bench/latency.py``), the ~230 blocks split between two young
passes made each pass take 2.9-3.3 ms (4.6 ms in another run) of CPU, the
longest pauses of an in-memory board, and the ~2,300 split since a
middle-generation pass would make that one ten times longer.

A container that has aged holds its references in the oldest generation,
which the young passes do not walk.  So a split fills a list made long
before, empty while it aged (an empty list is one object to the collector,
not hundreds): :class:`SpareLists` keeps a first-in first-out stock of them,
as deep as the index has blocks, and puts a fresh empty one at the back for
each one it hands out.  A list handed out was made that many splits before,
through several collections: it is usually in the oldest generation by
then.  A merge gives its emptied list back, at the front (it is old).
(``gc.freeze()`` after a bulk load does the same for what exists at that
moment; the stock keeps working as the board grows.)

>>> spares = SpareLists()
>>> spares.stock(2)
>>> block = [1, 2, 3, 4]
>>> new = spares.take(block, 2, 2)
>>> new, len(spares) == SPARE_MIN
([3, 4], True)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["SPARE_MIN", "SpareLists"]

#: The smallest stock: a board of a few blocks keeps this many spares (each an
#: empty list, 56 bytes), so that a young board's splits get aged lists too.
SPARE_MIN: Final = 16


class SpareLists:
    """A first-in first-out stock of empty lists, refilled as it is used.

    Runtime complexity: O(1) per list handed out or given back, plus the
    copy of the references it receives
    """

    __slots__ = ("_stock",)

    def __init__(self) -> None:
        self._stock: deque[list[Any]] = deque()

    def __len__(self) -> int:
        """Spare lists in stock.

        Runtime complexity: O(1)

        >>> len(SpareLists())
        0
        """
        return len(self._stock)

    def stock(self, blocks: int) -> None:
        """Top the stock up to ``max(SPARE_MIN, blocks)`` fresh empty lists.

        Runtime complexity: O(blocks)

        >>> spares = SpareLists()
        >>> spares.stock(3)
        >>> len(spares) == SPARE_MIN
        True
        """
        stock = self._stock
        for _ in range(max(SPARE_MIN, blocks) - len(stock)):
            stock.append([])

    def take(self, block: list[Any], half: int, blocks: int) -> list[Any]:
        """A list holding ``block[half:]``: the oldest spare, filled.

        The stock is then topped up for ``blocks`` blocks (a fresh empty list
        at the back, to age).  With no spare, a new list.

        Runtime complexity: O(len(block) - half)

        >>> spares = SpareLists()
        >>> spares.take([1, 2, 3], 1, 1), len(spares) == SPARE_MIN
        ([2, 3], True)
        """
        stock = self._stock
        if stock:
            spare = stock.popleft()
            spare += block[half:]
        else:
            spare = block[half:]
        if len(stock) < blocks or len(stock) < SPARE_MIN:
            self.stock(blocks)
        return spare

    def give(self, block: list[Any], blocks: int) -> None:
        """Keep an emptied-out block, old, to be handed out first; beyond
        twice the stock for ``blocks`` blocks it is let go.

        Runtime complexity: O(len(block))

        >>> spares = SpareLists()
        >>> spares.stock(0)
        >>> old = [7, 8]
        >>> spares.give(old, 0)
        >>> spares.take([1, 2], 1, 0) is old
        True
        """
        stock = self._stock
        if len(stock) < 2 * max(SPARE_MIN, blocks):
            block.clear()
            stock.appendleft(block)

    def _check(self, blocks: Iterable[object]) -> None:
        """Every spare is an empty list and none is one of ``blocks``.

        Runtime complexity: O(B + spares)

        >>> SpareLists()._check([])
        """
        used = set(map(id, blocks))
        for k, spare in enumerate(self._stock):
            assert type(spare) is list and not spare, f"spare {k} is not an empty list"
            assert id(spare) not in used, f"spare {k} is a block in use"
