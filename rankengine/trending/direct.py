"""A count whose checks the caller has made: ``TopK.add``'s work, no more.

A ledger's trending view counts each ``int`` increment of a ``str`` member
once, and checks before it logs the event that the tracker's counters have
room for one more.  :meth:`TopK.add <rankengine.trending.topk.TopK.add>`
would check the count, the room and the key's type again;
:func:`direct_add` makes the same change without those checks: a
candidate's exact count, or the key's cells in the sketch and the
heavy-hitter heap's admission test.  A tracker of another class (a frozen
one refuses every write) is handed to ``add``, so it is exact in every
state.  With a :class:`CellMemo` it also skips the hash of a key counted
lately (a ledger's trending view keeps one).

Measured (valgrind ``cachegrind``, instructions per count): 15,500 ->
14,600 without a memo (20,000 keys over 50,000 players, most counted
once).  With the memo, in a record of the ledger's four views
(``bench/ledger.py``'s stream, 20,000 events): -3,900 over 10,000
players (57% of the keys counted before), +300 over 50,000 (17%): see
``docs/ledger.md``.

>>> from rankengine.trending.topk import TopK
>>> tracker = TopK(k=2)
>>> for key in ["a", "b", "a", "c", "a"]:
...     direct_add(tracker, key)
>>> [(item.key, item.count) for item in tracker.top()], tracker.total
([('a', 3), ('b', 1)], 5)
>>> tracker._check()
"""

from __future__ import annotations

from typing import Any, Final

from rankengine.trending.topk import TopK

__all__ = ["MEMO_KEYS", "CellMemo", "direct_add"]

#: How many keys a :class:`CellMemo` holds before it starts again: the
#: cells of up to 16,384 keys (~4 MB of tuples and dict entries at most),
#: the players active in a few minutes of a busy game.
MEMO_KEYS: Final = 16384


class CellMemo(dict[str, tuple[int, ...]]):
    """key -> the sketch cells of a key a tracker counted lately, so that a
    key counted again is not hashed again (the key's BLAKE2b hash and the
    cell arithmetic: ~60% of a new key's count).

    Bounded the cheapest way: once it holds ``limit`` keys it is emptied
    and fills again.  The cells belong to the tracker's indexer (its seed,
    depth and width, :attr:`indexes`): :func:`direct_add` empties a memo
    used with another indexer first, so the cells it gives are always the
    indexer's own.

    Runtime complexity: O(1) per key

    >>> tracker, memo = TopK(k=2), CellMemo(limit=2)
    >>> for key in ["a", "b", "a", "c"]:
    ...     direct_add(tracker, key, memo)
    >>> sorted(memo), memo.indexes is tracker._indexes, tracker.total
    (['c'], True, 4)
    """

    __slots__ = ("indexes", "limit")

    def __init__(self, limit: int = MEMO_KEYS) -> None:
        super().__init__()
        #: the indexer whose cells are remembered (None: none yet)
        self.indexes: Any = None
        #: the most keys held before it is emptied
        self.limit = limit


def direct_add(topk: TopK, key: str, memo: CellMemo | None = None) -> None:
    """``topk.add(key, 1)`` for a caller that has checked what ``add``
    would check: ``key`` a ``str``, room for one more count
    (``topk.total`` below the counters' limit).  The same change; the
    evicted key, which ``add`` returns, is not returned.  With ``memo``,
    the cells of a key counted lately are not computed again (see
    :class:`CellMemo`).

    Runtime complexity: O(1) for a candidate; amortised O(depth + log k')
    otherwise (as ``add``)
    """
    if type(topk) is not TopK:  # (a frozen tracker refuses; a subclass adds its own way)
        topk.add(key, 1)
        return
    rec = topk._cands.get(key)
    if rec is not None:
        # a candidate is counted exactly, without hashing (as add)
        rec[0] += 1
        topk.total += 1
        return
    indexes = topk._indexes
    if memo is None:
        idx = indexes(key)
    else:
        got = memo.get(key)  # (a key counted lately: no hash)
        if got is None or memo.indexes is not indexes:
            got = indexes(key)
            if len(memo) >= memo.limit or memo.indexes is not indexes:
                memo.clear()  # (full, or another indexer's cells)
                memo.indexes = indexes
            memo[key] = got
        idx = got
    topk.total += 1
    sketch = topk._sketch
    sketch.total += 1
    est = sketch._update(sketch._table, idx, 1)
    heap = topk._heap
    if len(heap) == topk.capacity and est <= heap[0][0]:
        return
    topk._admit(key, 1, idx, est)
