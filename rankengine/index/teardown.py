"""Emptying an index in pieces, so that other threads run while it is freed.

Dropping the last reference to an index of N entries frees every node or
block in one C call: CPython holds the interpreter's global lock (GIL)
throughout, so every other thread stops.  At N = 1,000,000 that is tens
to hundreds of milliseconds, and a skip list is worse: its nodes link to
each other both ways (``backward``), so reference counting never frees
them; the cycle collector does, in one full collection, or never when
``gc.freeze()`` has moved them to the permanent generation.

:func:`empty_in_pieces` takes the entries out a piece at a time instead
and calls ``pause`` between pieces (``time.sleep(0)`` lets any waiting
thread take the GIL)::

    sorted list   blocks popped from the end, PIECE // load blocks a piece
    skip list     level 0 walked from the header, each node cleared as it
                  is passed (its links and its entry dropped: the node
                  before it is then freed by reference counting), PIECE
                  nodes a piece
    other         cleared in one call (no layout known)

The index is empty afterwards (``len(index) == 0``) and usable again.
Nothing else may use it meanwhile (the caller owns it alone).

>>> from rankengine.index.skiplist import SkipList
>>> sl = SkipList()
>>> sl.build([(i, 0, f"m{i}") for i in range(10)])
>>> pauses = []
>>> empty_in_pieces(sl, lambda: pauses.append(1), piece=4)
>>> len(sl), list(sl), len(pauses)
(0, [], 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from rankengine.index.protocol import OrderedIndex
from rankengine.index.skiplist import SkipList
from rankengine.index.skipnode import FORWARD
from rankengine.index.sortedlist import SortedListIndex

__all__ = ["PIECE", "empty_in_pieces"]

#: Objects freed between two pauses.  Freeing an entry costs ~50-150 ns
#: (its node or tuple slot, and the member and score objects when this was
#: their last holder), so a piece holds the GIL for ~0.2-0.6 ms: well under
#: a 16.7 ms frame, and few enough hand-overs that the whole costs about
#: what one big free costs.
PIECE: Final = 4096


def empty_in_pieces(index: OrderedIndex, pause: Callable[[], None], *, piece: int = PIECE) -> None:
    """Remove every entry of ``index``, ``piece`` objects at a time, calling
    ``pause()`` between pieces (see the module docstring).

    Runtime complexity: O(N), in O(N / piece) pieces
    """
    if isinstance(index, SkipList):
        _empty_skiplist(index, pause, piece)
    elif isinstance(index, SortedListIndex):
        _empty_sortedlist(index, pause, piece)
    else:
        index.clear()


def _empty_skiplist(sl: SkipList, pause: Callable[[], None], piece: int) -> None:
    # Detach the chain first (the list is empty from here on), then walk it:
    #
    #   header -> a -> b -> c -> ...      clear(a): a's links and entry go;
    #             ^____|                  a itself stays alive while b's
    #                                     backward points at it, and is
    #                                     freed when b is cleared in turn
    level0 = FORWARD[0]
    x: list[Any] | None = sl.header[level0]
    sl.clear()
    done = 0
    while x is not None:
        following = x[level0]
        x.clear()
        x = following
        done += 1
        if done % piece == 0:
            pause()


def _empty_sortedlist(index: SortedListIndex, pause: Callable[[], None], piece: int) -> None:
    # The parallel block lists (primaries, ties, members): the last block of
    # each goes at a time; a block holds at most 2 * load entries.
    lists, members, ties = index._lists, index._members, index._ties
    per_piece = max(1, piece // max(1, index._load))
    while lists:
        for _ in range(min(per_piece, len(lists))):
            lists.pop()
            members.pop()
            ties.pop()
        pause()
    index.clear()
