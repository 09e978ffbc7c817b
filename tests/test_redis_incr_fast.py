"""Differential test of the writes' fast paths on Redis (``incr.lua`` and
``set.lua``: a member on the board, an exact double, no condition, no
metadata, no dense counts, written out without the general path's
helpers): random sequences of sets and increments, most of them on
members already on the board, with and without conditions and metadata, give
the in-memory board's results, scores (with their types: 5 is not 5.0,
-0.0 keeps its sign), clocks and ranks, on every order and tie-break,
with and without dense counts built, on a client that never sends a call
again and on one that may (its writes keep their reply).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import apply, exact, outcome
from redis_service import redis_board, shared_server, unique_name

from rankengine import Leaderboard

pytestmark = pytest.mark.redis

INF = math.inf
CONFIGS = [
    {"order": "desc", "tie_break": "first"},
    {"order": "asc", "tie_break": "first"},
    {"order": "desc", "tie_break": "member"},
    {"order": "asc", "tie_break": "member"},
]
MEMBERS = ["a", "b", "c", "d"]

start = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([0.0, -0.0, 2.5, -1.5, INF, -INF, 2**53 - 2, -(2**53) + 2, 2**53 + 1]),
)
step = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 1.0, INF, -INF, 2**52, -(2**52)]),
)
whens = st.sampled_from([None, None, None, None, "better", "worse", "present"])
member = st.sampled_from(MEMBERS)
operation = st.one_of(
    st.tuples(st.just("set"), member, start, st.just(None)),
    st.tuples(st.just("set"), member, start, whens),
    st.tuples(st.just("set"), member, start, st.just(None), st.sampled_from([None, {"n": 1}])),
    st.tuples(st.just("incr"), member, step, whens),
    st.tuples(st.just("incr"), member, step, st.just(None)),
    st.tuples(st.just("incr"), member, step, st.just(None)),
)


def resending_board(**config: Any) -> Any:
    """A board on a client whose connections send a call again after a
    dropped connection (``redis.Redis(host, port)``): its writes keep a
    reply for a resend."""
    import redis

    from rankengine.redis.board import RedisLeaderboard

    server = shared_server()
    client = redis.Redis(host="127.0.0.1", port=server.port)
    return RedisLeaderboard(client, unique_name("incr"), **config)


@pytest.mark.parametrize("dense", [False, True], ids=["plain", "dense"])
@pytest.mark.parametrize("resending", [False, True], ids=["once", "resends"])
@pytest.mark.parametrize(
    "config", CONFIGS, ids=["desc-first", "asc-first", "desc-member", "asc-member"]
)
def test_increments_agree_with_the_in_memory_board(
    config: dict[str, Any], dense: bool, resending: bool
) -> None:
    @given(
        seed=st.lists(st.tuples(member, start), min_size=1, max_size=4),
        ops=st.lists(operation, min_size=1, max_size=25),
    )
    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def run(seed: list[tuple[str, Any]], ops: list[tuple[Any, ...]]) -> None:
        model = Leaderboard(**config)
        board = resending_board(**config) if resending else redis_board(**config)
        try:
            for name, score in seed:
                model.set(name, score)
                board.set(name, score)
            if dense:  # builds the Redis board's distinct-score counts
                assert board.rank(MEMBERS[0], style="dense") == model.rank(
                    MEMBERS[0], style="dense"
                )
            for i, op in enumerate(ops):
                got, want = apply(board, op), apply(model, op)
                assert got == want, (i, op, got, want)
                assert exact((board.items(), board.clock)) == exact((model.items(), model.clock))
            for style in ("unique", "dense", "competition"):
                for name in MEMBERS:
                    assert outcome(lambda n=name, s=style: board.rank(n, style=s)) == outcome(
                        lambda n=name, s=style: model.rank(n, style=s)
                    )
            assert outcome(lambda: board.top(4)) == outcome(lambda: model.top(4))
            board._check()
        finally:
            board.clear()
            if resending:
                board.redis.close()

    run()
