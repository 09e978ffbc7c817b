"""``direct_incr`` against ``Leaderboard.incr``: the same change in every state.

Two boards with the same settings take the same random operations; the
increments go through ``direct_incr`` on one and ``incr`` on the other,
every other operation (a float or int ``set``, a remove, a top read that
fills the top cache, a dense rank that builds the dense counts, many
members set to one score) through the
public API on both.  After each step both return the same value and hold the
same state (items, clock, tie map, cached top rows, dense counts), and both
pass ``_check()``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board.direct import DIRECT_DELTA_LIMIT, direct_incr

NAMES = [f"m{k}" for k in range(30)]
MEMBERS = st.sampled_from(NAMES)

OPS = st.lists(
    st.one_of(
        # mostly increments, small (many ties), zero, and at the limit
        st.tuples(
            st.just("incr"),
            MEMBERS,
            st.one_of(
                st.integers(-3, 3),
                st.integers(-3, 3),
                st.sampled_from([0, 2**64, DIRECT_DELTA_LIMIT, -DIRECT_DELTA_LIMIT]),
            ),
        ),
        st.tuples(st.just("set"), MEMBERS, st.sampled_from([0, 1, 2.5, -1.0, 1e308])),
        st.tuples(st.just("remove"), MEMBERS, st.none()),
        # the first k members onto one score: runs deeper than RUN_SCAN_LIMIT,
        # whose members keep their ties in the tie map
        st.tuples(st.just("flat"), st.integers(9, 30), st.integers(-1, 2)),
        # the first k members, one after another, by one delta: moves into
        # deep runs (each lands behind the ones moved before it)
        st.tuples(st.just("bump"), st.integers(9, 30), st.integers(-1, 1)),
        st.tuples(st.just("top"), st.none(), st.none()),
        st.tuples(st.just("dense"), MEMBERS, st.none()),
    ),
    max_size=80,
)


def state(board: Leaderboard) -> Any:
    top = None if board._top is None else [(e.member, e.score, e.rank) for e in board._top]
    return (
        board.items(),
        board._clock,
        sorted(board._tie.items()),
        top,
        board._counts,
        [(e.member, e.rank) for e in board.top(len(board) or 1)],
    )


def step(board: Leaderboard, op: str, member: Any, value: Any, direct: bool) -> Any:
    try:
        if op == "incr":
            return direct_incr(board, member, value) if direct else board.incr(member, value)
        if op == "bump":
            write = (lambda m, d: direct_incr(board, m, d)) if direct else board.incr
            return [write(name, value) for name in NAMES[:member]]
        if op == "set":
            return board.set(member, value)
        if op == "remove":
            return board.remove(member)
        if op == "flat":
            return board.set_many(dict.fromkeys(NAMES[:member], value))
        if op == "top":
            return [(e.member, e.rank) for e in board.top(3)]
        return board.rank(member, style="dense")
    except Exception as exc:  # the same refusal, word for word
        return ("raised", type(exc).__name__, str(exc))


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_direct_incr_is_incr(backend: str, order: str, ops: list[Any]) -> None:
    direct = Leaderboard(order=order, backend=backend)  # type: ignore[arg-type]
    public = Leaderboard(order=order, backend=backend)  # type: ignore[arg-type]
    for op, member, value in ops:
        got = step(direct, op, member, value, True)
        want = step(public, op, member, value, False)
        assert got == want, (op, member, value)
        assert state(direct) == state(public)
        direct._check()
        public._check()


def test_the_direct_paths_are_taken() -> None:
    """The comparison above compares something: ``direct_incr`` inserts a
    new member and moves a present one itself (``Leaderboard.incr`` is not
    called); with dense counts built it hands the write to ``incr``."""
    board = Leaderboard()
    calls: list[Any] = []
    real = board.incr
    board.incr = lambda *a, **k: calls.append(a) or real(*a, **k)  # type: ignore[method-assign]
    assert direct_incr(board, "ann", 5) == 5  # insert
    assert direct_incr(board, "ann", 2) == 7  # move
    assert direct_incr(board, "ann", 0) == 7  # unchanged: no clock tick
    assert calls == [] and board.clock == 2
    board.rank("ann", style="dense")  # builds the dense counts
    assert direct_incr(board, "ann", 1) == 8
    assert calls == [("ann", 1)]
    board._check()
