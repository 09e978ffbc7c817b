"""A call with several bad arguments raises what one in-process board
raises, on every board kind: the sharded board (in process and over Redis)
and the Redis board check arguments in the same order, and a refused call
changes nothing.

One explicit case per divergence found, then a small property test: random
writes, then random reads whose arguments are often bad (NaN, wrong types,
non-bool flags, unknown styles and methods, negative counts), each read's
result or error type compared with an in-process board's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from conftest import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import apply, outcome
from redis_service import redis_board

from rankengine import Leaderboard
from rankengine.sharded.board import ShardedLeaderboard

NAN = math.nan
INF = math.inf

KINDS = [
    "sharded",
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("sharded-redis", marks=pytest.mark.redis),
]


def make(kind: str, **config: Any) -> Any:
    if kind == "sharded":
        return ShardedLeaderboard.local(3, **config)
    if kind == "redis":
        return redis_board(**config)
    return ShardedLeaderboard([redis_board(**config), redis_board(**config)])


CASES: list[Any] = [
    # the bound is checked before the flags: ValueError, not TypeError
    pytest.param(
        lambda b: b.by_score(None, NAN, min_inclusive=0), id="by-score-nan-bound-int-flag"
    ),
    pytest.param(lambda b: b.count(NAN, None, max_inclusive=None), id="count-nan-bound-none-flag"),
    pytest.param(
        lambda b: b.remove_by_score(None, NAN, min_inclusive=0), id="remove-by-score-nan-bound"
    ),
    # the style is checked before the range, and for an absent member
    pytest.param(lambda b: b.by_score(min_inclusive=0, style="bad"), id="by-score-bad-style-flag"),
    pytest.param(lambda b: b.around("nobody", style="bad"), id="around-absent-bad-style"),
    pytest.param(lambda b: b.around(1.5, style="bad"), id="around-non-member-bad-style"),
    pytest.param(lambda b: b.around(["x"], style="bad"), id="around-unhashable-bad-style"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("call", CASES)
def test_the_first_bad_argument_decides_the_error(kind: str, call: Callable[[Any], Any]) -> None:
    one = Leaderboard()
    board = make(kind)
    for b in (one, board):
        b.set_many({"ann": 3, "bob": 1})
    before = snapshot(board)
    want = outcome(lambda: call(one))
    assert want[0] == "raises"
    assert outcome(lambda: call(board)) == want
    assert snapshot(board) == before
    board._check()


CONFIGS = [{"order": "desc"}, {"order": "asc", "tie_break": "member"}, {"order": ("desc", "asc")}]
VALUES = st.sampled_from([0, 1, 1.0, 2, -1, 0.5, INF, -INF, -0.0, 3])
BAD = st.sampled_from([NAN, "x", True, (1,), 5, (1, 2), (NAN, 1)])
FLAG = st.one_of(st.booleans(), st.sampled_from([0, 1, None]))
COUNT = st.one_of(st.integers(-2, 6), st.sampled_from([True, 1.0, None]))
MEMBER = st.sampled_from(["a", "b", "c", "d", "e", "f"])
STYLE = st.sampled_from([None, "unique", "dense", "competition", "bad"])


def scores(config: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.tuples(VALUES, VALUES) if isinstance(config["order"], tuple) else VALUES


def writes(config: dict[str, Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    s = scores(config)
    when = st.sampled_from([None, None, "new", "present", "better", "worse"])
    bound = st.one_of(st.none(), s, BAD)
    return st.one_of(
        st.tuples(st.just("set"), MEMBER, s, when),
        st.tuples(st.just("set_many"), st.lists(st.tuples(MEMBER, s), max_size=5), when),
        st.tuples(st.just("incr"), MEMBER, s, when),
        st.tuples(st.just("pop_worst"), COUNT),
        st.tuples(st.just("remove_by_rank"), st.integers(-5, 5), st.integers(-5, 5)),
        st.tuples(st.just("keep_top"), COUNT),
        st.tuples(st.just("remove_by_score"), bound, bound, FLAG, FLAG),
    )


def reads(config: dict[str, Any]) -> st.SearchStrategy[Callable[[Any], Any]]:
    bound = st.one_of(st.none(), scores(config), BAD)
    by_score = st.builds(
        lambda lo, hi, a, b, off, lim, style: lambda x: x.by_score(
            lo, hi, min_inclusive=a, max_inclusive=b, offset=off, limit=lim, style=style
        ),
        bound, bound, FLAG, FLAG, COUNT, st.one_of(st.none(), COUNT), STYLE,
    )  # fmt: skip
    count = st.builds(
        lambda lo, hi, a, b: lambda x: x.count(lo, hi, min_inclusive=a, max_inclusive=b),
        bound, bound, FLAG, FLAG,
    )  # fmt: skip
    around = st.builds(
        lambda m, a, b, fill, style: lambda x: x.around(m, a, b, fill=fill, style=style),
        st.one_of(MEMBER, st.just(["x"])), COUNT, COUNT, st.booleans(), STYLE,
    )  # fmt: skip
    percentile = st.builds(
        lambda m, how: lambda x: x.percentile(m, method=how),
        MEMBER, st.sampled_from(["below", "at_or_below", "midpoint", "x"]),
    )  # fmt: skip
    at_percentile = st.builds(
        lambda p: lambda x: x.score_at_percentile(p),
        st.one_of(st.sampled_from([0, 100, 33.3, -1, 101, True, NAN, "5"]), st.floats(0, 100)),
    )
    rank_for = st.builds(
        lambda s, style: lambda x: x.rank_for_score(s, style=style),
        st.one_of(scores(config), BAD), STYLE,
    )  # fmt: skip
    return st.one_of(by_score, count, around, percentile, at_percentile, rank_for)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", CONFIGS, ids=["desc", "asc-member", "composite"])
def test_reads_with_bad_arguments_answer_as_one_board(kind: str, config: dict[str, Any]) -> None:
    @given(ops=st.lists(writes(config), max_size=10), asks=st.lists(reads(config), max_size=20))
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(ops: list[tuple[Any, ...]], asks: list[Callable[[Any], Any]]) -> None:
        one, board = Leaderboard(**config), make(kind, **config)
        for op in ops:
            assert apply(board, op) == apply(one, op), op
            assert (board.items(), board.clock) == (one.items(), one.clock), op
        for ask in asks:
            assert outcome(partial(ask, board)) == outcome(partial(ask, one))
        board._check()

    run()
