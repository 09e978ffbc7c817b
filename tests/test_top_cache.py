"""The cached best rows of a board stay equal to a fresh sort.

Boards keep their top ``TOP_CACHE_SIZE`` rows ready for ``top()`` and clear
them when a write reaches them.  These tests drive boards larger than the
cache with writes above, at and below the cached floor, and compare every
top-k read with a plain sort (and ``_check()``, which compares the cache
with the index).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board.core import TOP_CACHE_SIZE

OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "incr", "remove", "set_many", "remove_many", "top"]),
        st.integers(0, 59),
        st.integers(-5, 40),
    ),
    max_size=80,
)


def expected_top(scores: dict[str, int], clocks: dict[str, int], k: int, desc: bool) -> list:
    def key(m: str) -> tuple[int, int]:
        return (-scores[m] if desc else scores[m], clocks[m])

    ranked = sorted(scores, key=key)
    return [(m, scores[m], i + 1) for i, m in enumerate(ranked[:k])]


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@settings(max_examples=60, deadline=None)
@given(ops=OPS, seed=st.integers(0, 2**16))
def test_top_reads_match_a_fresh_sort(backend: str, order: str, ops: list, seed: int) -> None:
    rng = random.Random(seed)
    desc = order == "desc"
    board = Leaderboard(backend=backend, order=order)  # type: ignore[arg-type]
    scores: dict[str, int] = {}
    clocks: dict[str, int] = {}
    clock = 0

    def put(member: str, score: int) -> None:
        nonlocal clock
        if scores.get(member) != score:
            clock += 1
            clocks[member] = clock
        scores[member] = score

    start = {f"p{i}": rng.randrange(30) for i in range(TOP_CACHE_SIZE + 15)}
    board.set_many(start)
    for member, score in start.items():
        put(member, score)
    for op, i, value in ops:
        member = f"p{i}"
        if op == "set":
            board.set(member, value)
            put(member, value)
        elif op == "incr":
            board.incr(member, value)
            put(member, scores.get(member, 0) + value)
        elif op == "remove":
            board.remove(member)
            scores.pop(member, None)
            clocks.pop(member, None)
        elif op == "set_many":
            batch = [(f"p{(i + j) % 60}", (value + j) % 30) for j in range(3)]
            board.set_many(batch)
            for m, s in batch:
                put(m, s)
        elif op == "remove_many":
            doomed = [m for m, _, _ in expected_top(scores, clocks, len(scores), desc)][i % 7 :: 9]
            board.remove_many(doomed)
            for m in doomed:
                del scores[m], clocks[m]
        k = 1 + (i % TOP_CACHE_SIZE)
        assert [tuple(e[:3]) for e in board.top(k)] == expected_top(scores, clocks, k, desc)
        board._check()


def test_a_write_below_the_floor_keeps_the_cache_and_one_above_clears_it() -> None:
    board = Leaderboard()
    board.set_many({f"p{i}": i for i in range(100)})
    first = board.top(10)
    assert board._top is not None
    board.incr("p0", 1)  # far below the 25 best
    assert board._top is not None and board.top(10) == first
    board.incr("p1", 1000)  # into first place
    assert board._top is None
    assert board.top(1)[0].member == "p1"
    board._check()


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("delta", [-1, 1, -3, 3])
def test_increments_of_the_rows_around_the_floor(backend: str, order: str, delta: int) -> None:
    """The cached floor row and its neighbours below, moved by small
    increments in both directions (onto the floor's own score, past it, out
    of the cache): every top read equals a fresh sort."""
    desc = order == "desc"
    n = TOP_CACHE_SIZE + 10
    for target in range(TOP_CACHE_SIZE - 2, TOP_CACHE_SIZE + 3):
        board = Leaderboard(backend=backend, order=order)  # type: ignore[arg-type]
        # scores 0, 2, 4, ...: gaps, so that +-1 lands between rows, +-3 past one
        start = {f"p{i}": 2 * i for i in range(n)}
        board.set_many(start)
        ranked = [e.member for e in board.top(n)]
        board.top(10)  # fills the cache
        assert board._top is not None
        member = ranked[target]
        for step in (delta, delta, -delta):
            board.incr(member, step)
            start[member] += step
            clocks = dict.fromkeys(start, 0)
            clocks[member] = 1  # the moved member is the newest
            k = TOP_CACHE_SIZE
            assert [tuple(e[:3]) for e in board.top(k)] == expected_top(start, clocks, k, desc)
            board._check()
