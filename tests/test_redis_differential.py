"""Differential test: one random sequence of operations, applied to every
in-process backend and to a board on a real Redis, gives the same answers.

Every write's result (or the type of the error it raises) must agree, and
after every write the boards' contents and clocks must agree, scores
compared with their types (5 is not 5.0).  After the sequence a battery of
reads (every rank style, pages, around-me with and without fill, score
ranges, percentiles, hypothetical ranks) must agree too.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import FACTORIES, missing_reason
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import apply, exact, outcome
from redis_service import redis_board

pytestmark = pytest.mark.redis

INF = math.inf
STYLES = ("unique", "dense", "competition")
CONFIGS = [
    {"order": "desc", "tie_break": "first"},
    {"order": "asc", "tie_break": "member"},
    {"order": ("desc", "asc"), "tie_break": "first"},
]

number = st.one_of(
    st.integers(-4, 4),
    st.sampled_from([0.5, -2.5, INF, -INF, -0.0, 2**53, 2**53 + 1, -(2**53) - 3, 10**20]),
    st.floats(-8, 8, allow_nan=False).map(lambda x: round(x, 1)),
)
step = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2**53, INF]))
whens = st.sampled_from([None, None, "new", "present", "better", "worse"])
metas = st.one_of(st.none(), st.fixed_dictionaries({"n": st.integers(0, 3)}))
flags = st.booleans()


def scores(config: dict[str, Any], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    if isinstance(config["order"], tuple):
        return st.tuples(values, values)
    return values


def members(config: dict[str, Any]) -> st.SearchStrategy[Any]:
    if config["tie_break"] == "member":
        return st.sampled_from(["a", "b", "c", "d", "e", "f"])
    return st.sampled_from(["a", "b", "c", b"a", 1, -7])


def operations(config: dict[str, Any]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    m, s, d = members(config), scores(config, number), scores(config, step)
    ranks = st.integers(-4, 4).filter(bool)
    op = st.one_of(
        st.tuples(st.just("set"), m, s, whens, metas),
        st.tuples(st.just("set"), m, s, whens, metas),
        st.tuples(st.just("incr"), m, d, whens),
        st.tuples(st.just("set_many"), st.lists(st.tuples(m, s), max_size=5), whens),
        st.tuples(st.just("incr_many"), st.lists(st.tuples(m, d), max_size=4)),
        st.tuples(st.just("remove"), m),
        st.tuples(st.just("remove_many"), st.lists(m, max_size=3)),
        st.tuples(st.just("set_meta"), m, metas),
        st.tuples(st.just("pop_best"), st.integers(0, 2), flags),
        st.tuples(st.just("pop_worst"), st.integers(0, 2), flags),
        st.tuples(st.just("remove_by_rank"), ranks, ranks),
        st.tuples(st.just("remove_by_score"), st.one_of(st.none(), s), s, flags, flags),
        st.tuples(st.just("keep_top"), st.integers(0, 6)),
    )
    return st.lists(op, min_size=1, max_size=18)


def reads(board: Any, config: dict[str, Any]) -> list[Any]:
    """Everything worth asking a board, as comparable values."""
    out: list[Any] = []
    names = ["a", "b", "c", "d", "e", "f"]
    if config["tie_break"] == "first":
        names += [b"a", 1, -7]
    probes = [0, 1.5, INF, -INF, 2**53 + 1]
    if isinstance(config["order"], tuple):
        probes = [(p, q) for p in (0, 2**53 + 1) for q in (0, -1.5)]
    for style in STYLES:
        out.append(outcome(lambda style=style: board.entries(names, style=style, with_meta=True)))
        for member in names:
            for fill in (False, True):
                out.append(
                    outcome(
                        lambda m=member, f=fill, s=style: board.around(m, 1, 2, fill=f, style=s)
                    )
                )
        out.append(outcome(lambda s=style: [board.page(n, 2, style=s) for n in (1, 2, 3)]))
        out.append(outcome(lambda s=style: board.by_rank(2, -2, style=s)))
        out.append(outcome(lambda s=style: [board.rank_for_score(p, style=s) for p in probes]))
        for low in probes:
            out.append(outcome(lambda lo=low, s=style: board.by_score(lo, None, style=s, limit=3)))
    for low in probes:
        for high in probes:
            out.append(outcome(lambda lo=low, hi=high: board.count(lo, hi, min_inclusive=False)))
    for method in ("below", "at_or_below", "midpoint"):
        out.append(outcome(lambda m=method: [board.percentile(x, method=m) for x in names]))
    out.append(outcome(lambda: [board.score_at_percentile(p) for p in (0, 12.5, 50, 99, 100)]))
    out.append(outcome(lambda: [board.at(1), board.at(-1)]))
    out.append(outcome(lambda: (board.top(3), board.pages(2), len(board), list(board))))
    return out


def boards(config: dict[str, Any]) -> list[tuple[str, Any]]:
    out = [
        (name, FACTORIES[name](**config))
        for name in ("reference", "sortedlist", "skiplist")
        if missing_reason(name) is None
    ]
    out.append(("redis", redis_board(**config)))
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=["desc-first", "asc-member", "composite"])
def test_same_answers_on_every_backend(config: dict[str, Any]) -> None:
    @given(ops=operations(config))
    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def run(ops: list[tuple[Any, ...]]) -> None:
        contenders = boards(config)
        for i, op in enumerate(ops):
            results = {name: apply(b, op) for name, b in contenders}
            reference = results["reference"]
            for name, result in results.items():
                assert result == reference, (i, op, name, result, reference)
            states = {name: exact((b.items(), b.clock)) for name, b in contenders}
            for name, state in states.items():
                assert state == states["reference"], (i, op, name)
        answers = {name: reads(b, config) for name, b in contenders}
        for name, answer in answers.items():
            for j, (got, want) in enumerate(zip(answer, answers["reference"], strict=True)):
                assert got == want, (name, j, got, want)
        for _, b in contenders:
            b._check()

    run()
