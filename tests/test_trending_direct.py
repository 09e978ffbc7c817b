"""``direct_add`` against ``TopK.add``: the same change in every state.

Two trackers with the same settings count the same random keys, one
through ``direct_add`` and one through ``add(key, 1)``, with other writes
(a weighted ``add``, a batch) between them through the public API on
both.  The trackers are small (a narrow sketch, two or three candidates)
so that keys are admitted, evicted and counted as candidates all the time.
After each step both hold the same state (their serialised bytes: sketch,
candidates, totals; and their top items), and both pass ``_check()``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import TopK
from rankengine.trending.direct import CellMemo, direct_add

KEYS = st.sampled_from([f"k{n}" for n in range(12)] + ["", "\ud800"])

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("one"), KEYS, st.none()),
        st.tuples(st.just("one"), KEYS, st.none()),
        st.tuples(st.just("add"), KEYS, st.integers(1, 5)),
        st.tuples(st.just("many"), st.lists(KEYS, max_size=5), st.none()),
    ),
    max_size=60,
)


def state(topk: TopK) -> Any:
    return topk.to_bytes(), [(item.key, item.count) for item in topk.top()], topk.total


@pytest.mark.parametrize("conservative", [True, False])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=STEPS,
    k=st.integers(1, 3),
    width=st.sampled_from([4, 16]),
    memo=st.sampled_from([None, 3, 1000]),
)
def test_direct_add_is_add(
    conservative: bool, steps: list[Any], k: int, width: int, memo: int | None
) -> None:
    """With no memo, and with a memo small enough to be emptied often."""
    direct, public = (
        TopK(k=k, capacity=k, width=width, depth=3, conservative=conservative) for _ in range(2)
    )
    cells = None if memo is None else CellMemo(limit=memo)
    for op, key, n in steps:
        if op == "one":
            direct_add(direct, key, cells)
            public.add(key, 1)
        elif op == "add":
            direct.add(key, n)
            public.add(key, n)
        else:
            direct.add_many(key)
            public.add_many(key)
        assert state(direct) == state(public), (op, key, n)
        direct._check()
        public._check()
        assert cells is None or len(cells) <= cells.limit


def test_a_memo_gives_only_its_trackers_cells() -> None:
    """A memo used with a tracker of another seed or width (a view's
    tracker replaced) forgets the cells of the first: the counts stay
    exact."""
    memo = CellMemo()
    first, other = TopK(k=1, capacity=1, width=8, depth=2), TopK(k=1, capacity=1, width=8, seed=7)
    twin = TopK(k=1, capacity=1, width=8, seed=7)
    for key in ["a", "b", "c", "a", "b"]:
        direct_add(first, key, memo)
    assert memo.indexes is first._indexes and sorted(memo) == ["a", "b", "c"]
    for key in ["b", "c", "d", "b"]:
        direct_add(other, key, memo)
        twin.add(key, 1)
    assert memo.indexes is other._indexes and sorted(memo) == ["b", "c", "d"]
    assert state(other) == state(twin)
    other._check()


def test_a_frozen_tracker_refuses_as_add_does() -> None:
    """A frozen tracker is handed to ``add``, which refuses: nothing changes
    (counting a candidate in place first would change its count)."""
    topk = TopK(k=2)
    topk.add("a", 3)
    frozen = topk.freeze()
    before = state(frozen)
    with pytest.raises(TypeError, match="read-only"):
        direct_add(frozen, "a")  # a candidate
    with pytest.raises(TypeError, match="read-only"):
        direct_add(frozen, "b")
    assert state(frozen) == before
