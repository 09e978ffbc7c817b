"""A count whose checks the caller has made: ``TopK.add``'s work, no more.

A ledger's trending view counts each ``int`` increment of a ``str`` member
once, and checks before it logs the event that the tracker's counters have
room for one more.  :meth:`TopK.add <rankengine.trending.topk.TopK.add>`
would check the count, the room and the key's type again;
:func:`direct_add` makes the same change without those checks: a
candidate's exact count, or the key's cells in the sketch and the
heavy-hitter heap's admission test.  A tracker of another class (a frozen
one refuses every write) is handed to ``add``, so it is exact in every
state.

Measured (valgrind ``cachegrind``, 20,000 keys of ``bench/ledger.py``'s
stream): 15,500 -> 14,600 instructions a count; in a record of the
ledger's four views, see ``docs/ledger.md``.

>>> from rankengine.trending.topk import TopK
>>> tracker = TopK(k=2)
>>> for key in ["a", "b", "a", "c", "a"]:
...     direct_add(tracker, key)
>>> [(item.key, item.count) for item in tracker.top()], tracker.total
([('a', 3), ('b', 1)], 5)
>>> tracker._check()
"""

from __future__ import annotations

from rankengine.trending.topk import TopK

__all__ = ["direct_add"]


def direct_add(topk: TopK, key: str) -> None:
    """``topk.add(key, 1)`` for a caller that has checked what ``add``
    would check: ``key`` a ``str``, room for one more count
    (``topk.total`` below the counters' limit).  The same change; the
    evicted key, which ``add`` returns, is not returned.

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
    idx = topk._indexes(key)
    topk.total += 1
    sketch = topk._sketch
    sketch.total += 1
    est = sketch._update(sketch._table, idx, 1)
    heap = topk._heap
    if len(heap) == topk.capacity and est <= heap[0][0]:
        return
    topk._admit(key, 1, idx, est)
