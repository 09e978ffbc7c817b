"""Merging heavy-hitter trackers: sketches summed, candidates re-queried.

:func:`merge_topk` joins :class:`~rankengine.trending.topk.TopK` trackers
(the partitions of a stream, or the windows of a period) into one new
tracker.  It reads each input's sketch and exact candidate counters, so it
sits beside the tracker in this package; the tracker itself never needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rankengine.trending.hashing import Key
from rankengine.trending.sketch import check_positive
from rankengine.trending.topk import CAND_COUNT, CAND_ERROR, TopK, report_order

__all__ = ["merge_topk"]


def _owner_of(key: Key, owner: Callable[[Key], int], trackers: Sequence[TopK]) -> int:
    """``owner(key)``, checked: an index of ``trackers``, and no other tracker counted ``key``.

    A merge with ``owner`` reads a key's count from its owner alone, so an
    owner that disagrees with the trackers (those of a pipeline with another
    partition count or routing seed) would report counts below the truth.
    """
    i = owner(key)
    if type(i) is not int or not 0 <= i < len(trackers):
        raise ValueError(f"owner({key!r}) is {i!r}, not a tracker index in [0, {len(trackers)})")
    for j, tracker in enumerate(trackers):
        if j != i and key in tracker._cands:
            raise ValueError(
                f"owner({key!r}) is {i} but tracker {j} counted it: the trackers were "
                "not routed by this owner"
            )
    return i


def merge_topk(
    trackers: Sequence[TopK],
    *,
    weights: Sequence[int] | None = None,
    owner: Callable[[Key], int] | None = None,
    k: int | None = None,
    capacity: int | None = None,
) -> TopK:
    """Merge trackers into a new one: sketches summed, candidates re-queried.

    1. Sum the (weighted) sketches, each with its candidates folded in.
    2. Take the union of all candidates: a key heavy overall but in no single
       candidate set is still found if it is a candidate anywhere.
    3. Re-query each key: its estimate is the smaller of two upper bounds,
       the merged sketch's estimate and the sum over inputs of each input's
       own estimate (candidate count, else its sketch's).  With ``owner``
       (keys routed by a deterministic hash, so each key is counted by one
       input only), the sum has the single term ``owner(key)``.
    4. Lower bounds add up the inputs' candidate lower bounds.
    5. Keep the ``capacity`` largest as the merged candidates.

    Stored heap counts are never simply added: that would lose keys that
    were in no local heap and double-count nothing else.

    Runtime complexity: O(P * width * depth + P * C * depth) for P trackers
    and C candidates in the union

    >>> a, b = TopK(k=1, width=64, depth=2), TopK(k=1, width=64, depth=2)
    >>> a.add_many("xxxy"); b.add_many("yyyz")
    >>> merge_topk([a, b]).top()
    [TopItem(key='y', count=4, error=0)]
    >>> merge_topk([a, TopK(k=1, width=32, depth=2)])
    Traceback (most recent call last):
    ...
    ValueError: incompatible count-min sketches: width differs: 64 != 32

    :param trackers: trackers of equal sketch shape, seed and update rule
    :param weights: positive int weight per tracker (default all 1)
    :param owner: index of the only tracker that can have counted a key; a
        candidate of any other tracker raises :class:`ValueError`
    :param k: ``k`` of the result (default: the first tracker's)
    :param capacity: candidate slots of the result (default: the first's)
    :return: a new tracker
    """
    if not trackers:
        raise ValueError("merge_topk needs at least one tracker")
    weights = [1] * len(trackers) if weights is None else list(weights)
    if len(weights) != len(trackers):
        raise ValueError("one weight per tracker")
    for w in weights:
        check_positive(w, "weight")
    first = trackers[0]
    config = first.config()
    config["k"] = first.k if k is None else k
    config["capacity"] = first.capacity if capacity is None else capacity
    result = TopK(**config)
    sketches = [tracker.sketch() for tracker in trackers]
    for sketch in sketches:
        reason = result._sketch.compatible(sketch)
        if reason is not None:
            raise ValueError(f"incompatible count-min sketches: {reason}")
    merged = result._sketch
    for sketch, w in zip(sketches, weights, strict=True):
        merged.merge(sketch, w)
    union: dict[Key, None] = {}
    for tracker in trackers:
        union.update(dict.fromkeys(tracker._cands))
    items: list[tuple[Key, int, int]] = []
    for key in union:
        idx = result._indexes(key)
        upper_sum = 0
        lower = 0
        sources = range(len(trackers)) if owner is None else (_owner_of(key, owner, trackers),)
        for i in sources:
            rec = trackers[i]._cands.get(key)
            if rec is not None:
                upper_sum += weights[i] * rec[CAND_COUNT]
                lower += weights[i] * (rec[CAND_COUNT] - rec[CAND_ERROR])
            else:
                upper_sum += weights[i] * sketches[i]._query_at(idx)
        est = min(merged._query_at(idx), upper_sum)
        # Every key of the union was a candidate somewhere, so lower >= 1.
        lower = min(max(lower, 1), est)
        items.append((key, est, est - lower))
    items.sort(key=report_order)
    result.total = merged.total
    result._load_candidates(items[: result.capacity])
    return result
