"""Every board kind against the plain model, on boards larger than the
state machine's.

One random history of writes (conditional sets, increments and decrements,
batches, removals and prunes) goes to a board of each kind -- both in-process
backends, a sharded board, and where a server is available a Redis board and
a sharded board over Redis -- and to ``tests/model.py`` (a dict and a sort).
Every write must answer as the model does; then every read must too, with
random arguments that reach the edges: pages below 1 and past the end, any
size; around-me with any ``above``/``below``, ``fill``, near both ends and
for an absent member; every rank style; every percentile method; score
ranges with inclusive, exclusive, infinite and open bounds; hypothetical
ranks.  Scores are drawn so that values of different types compare equal
(``1`` and ``1.0``, ``0`` and ``-0.0``, ``2**60`` and ``2.0**60``) and ties
are common; boards reach a few dozen members, past the cached top rows
(``TOP_CACHE_SIZE``), so the cache's floor is in play.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Model
from outcomes import apply
from outcomes import outcome as typed_outcome
from redis_service import redis_board

import rankengine
from rankengine import Leaderboard
from rankengine.board.core import TOP_CACHE_SIZE
from rankengine.sharded.board import ShardedLeaderboard

INF = math.inf
BIG = 2**60

#: Scores with equal values of different types, infinities and a big int.
SCORES = st.sampled_from(
    [0, -0.0, 0.0, 1, 1.0, 2, 2.0, 3, -1, -1.0, 0.5, INF, -INF, BIG, float(BIG)]
)
DELTAS = st.sampled_from([1, -1, 2, -2, 0, -0.0, 0.5, -0.5, 1.0, INF, -INF])
WHENS = st.sampled_from([None, None, "new", "present", "better", "worse"])
STYLES = st.sampled_from(["unique", "dense", "competition"])
METHODS = ["below", "at_or_below", "midpoint"]
MEMBERS = [f"p{i:02d}" for i in range(40)]
MEMBER = st.sampled_from(MEMBERS)
BOUND = st.one_of(st.none(), SCORES)
FLAG = st.booleans()

WRITE = st.one_of(
    st.tuples(st.just("set"), MEMBER, SCORES, WHENS),
    st.tuples(st.just("incr"), MEMBER, DELTAS, WHENS),
    st.tuples(st.just("set_many"), st.lists(st.tuples(MEMBER, SCORES), max_size=12), WHENS),
    st.tuples(st.just("incr_many"), st.lists(st.tuples(MEMBER, DELTAS), max_size=4)),
    st.tuples(st.just("remove"), MEMBER),
    st.tuples(st.just("remove_many"), st.lists(MEMBER, max_size=3)),
    st.tuples(st.just("pop_best"), st.integers(0, 2)),
    st.tuples(st.just("pop_worst"), st.integers(0, 2)),
    st.tuples(
        st.just("remove_by_rank"), st.integers(-5, 5).filter(bool), st.integers(-5, 5).filter(bool)
    ),
    st.tuples(st.just("remove_by_score"), SCORES, SCORES, FLAG, FLAG),
    st.tuples(st.just("keep_top"), st.integers(30, 45)),
)


#: Where the ledger boards of these tests keep their directories.
_LEDGER_ROOT = tempfile.TemporaryDirectory(prefix="rankengine-model-")
_LEDGERS = itertools.count()


def _ledger(**config: Any) -> Any:
    """A one-view ledger opened as a board: every write is an event."""
    path = f"{_LEDGER_ROOT.name}/{next(_LEDGERS)}"
    return rankengine.open_board(path, format="ledger", fsync="never", **config)


def _sharded(**config: Any) -> ShardedLeaderboard:
    return ShardedLeaderboard.local(3, **config)


def _sharded_redis(**config: Any) -> ShardedLeaderboard:
    return ShardedLeaderboard([redis_board(**config), redis_board(**config)])


KINDS: dict[str, Callable[..., Any]] = {
    "sortedlist": lambda **config: Leaderboard(backend="sortedlist", **config),
    "skiplist": lambda **config: Leaderboard(backend="skiplist", **config),
    "sharded": _sharded,
    "redis": redis_board,
    "sharded-redis": _sharded_redis,
    "ledger": _ledger,
}


#: What a call returned or raised, numbers typed; the model's plain tuples
#: compare equal to the boards' Entry rows.
outcome = functools.partial(typed_outcome, containers=False)


def write(target: Any, op: tuple[Any, ...]) -> Any:
    """:func:`outcomes.apply`, the model's plain tuples equal to Entry rows."""
    return apply(target, op, containers=False)


def reads(target: Any, data: Any) -> list[Any]:
    """A battery of reads with arguments drawn once (``data`` is a dict of draws)."""
    out: list[Any] = []
    for style in ("unique", "dense", "competition"):
        out.append(outcome(lambda s=style: target.items()))
        out.append(outcome(lambda s=style: target.entries(MEMBERS[:12], style=s)))
        out.append(outcome(lambda s=style: target.top(TOP_CACHE_SIZE + 2, style=s)))
        for number, size in data["pages"]:
            out.append(outcome(lambda n=number, z=size, s=style: target.page(n, z, style=s)))
            out.append(outcome(lambda z=size: target.pages(z)))
        for member, above, below, fill in data["around"]:
            out.append(
                outcome(
                    lambda m=member, a=above, b=below, f=fill, s=style: target.around(
                        m, a, b, fill=f, style=s
                    )
                )
            )
        for start, stop in data["ranks"]:
            out.append(outcome(lambda a=start, b=stop, s=style: target.by_rank(a, b, style=s)))
        for rank in data["at"]:
            out.append(outcome(lambda r=rank, s=style: target.at(r, style=s)))
        for score in data["probes"]:
            out.append(outcome(lambda x=score, s=style: target.rank_for_score(x, style=s)))
        for low, high, low_in, high_in, offset, limit in data["spans"]:
            flags = {"min_inclusive": low_in, "max_inclusive": high_in}
            out.append(
                outcome(
                    lambda lo=low, hi=high, o=offset, li=limit, fl=flags, s=style: target.by_score(
                        lo, hi, offset=o, limit=li, style=s, **fl
                    )
                )
            )
    for low, high, low_in, high_in, _, _ in data["spans"]:
        flags = {"min_inclusive": low_in, "max_inclusive": high_in}
        out.append(outcome(lambda lo=low, hi=high, fl=flags: target.count(lo, hi, **fl)))
    for method in METHODS:
        out.append(outcome(lambda m=method: [target.percentile(x, method=m) for x in MEMBERS]))
    out.append(outcome(lambda: [target.score_at_percentile(p) for p in data["percentiles"]]))
    out.append(outcome(lambda: [target.score(m) for m in MEMBERS]))
    out.append(outcome(lambda: len(target)))
    return out


READ_ARGS = st.fixed_dictionaries(
    {
        "pages": st.lists(
            st.tuples(st.integers(-2, 12), st.integers(1, 30)), min_size=1, max_size=4
        ),
        "around": st.lists(
            st.tuples(MEMBER, st.integers(0, 8), st.integers(0, 8), FLAG), min_size=1, max_size=5
        ),
        "ranks": st.lists(
            st.tuples(st.integers(-45, 45).filter(bool), st.integers(-45, 45).filter(bool)),
            max_size=3,
        ),
        "at": st.lists(st.integers(-45, 45).filter(bool), max_size=3),
        "probes": st.lists(SCORES, min_size=1, max_size=4),
        "spans": st.lists(
            st.tuples(BOUND, BOUND, FLAG, FLAG, st.integers(0, 5), st.none() | st.integers(0, 8)),
            min_size=1,
            max_size=4,
        ),
        "percentiles": st.lists(st.floats(0, 100), min_size=1, max_size=3),
    }
)

CONFIGS = st.fixed_dictionaries(
    {
        "order": st.sampled_from(["desc", "asc"]),
        "tie_break": st.sampled_from(["first", "member"]),
        "rank_style": STYLES,
    }
)


@contextlib.contextmanager
def opened(kinds: list[str], config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One new board of each kind with ``config``, closed afterwards."""
    boards = {kind: KINDS[kind](**config) for kind in kinds}
    try:
        yield boards
    finally:
        for board in boards.values():
            close = getattr(board, "close", None)
            if close is not None:
                close()


def assert_reads_agree(kind: str, got: list[Any], expected: list[Any]) -> None:
    """Each read of a board of ``kind`` equals the model's, one by one."""
    for j, (g, w) in enumerate(zip(got, expected, strict=True)):
        assert g == w, (kind, j, g, w)


def check_kinds(kinds: list[str], examples: int) -> None:
    @given(
        config=CONFIGS,
        start=st.lists(st.tuples(MEMBER, SCORES), min_size=0, max_size=40),
        ops=st.lists(WRITE, max_size=25),
        args=READ_ARGS,
    )
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def run(config: dict[str, Any], start: list[Any], ops: list[Any], args: dict[str, Any]) -> None:
        model = Model(**config)
        with opened(kinds, config) as boards:
            want = write(model, ("set_many", start, None))
            for kind, board in boards.items():
                assert write(board, ("set_many", start, None)) == want, kind
            for i, op in enumerate(ops):
                want = write(model, op)
                for kind, board in boards.items():
                    got = write(board, op)
                    assert got == want, (kind, i, op, got, want)
            expected = reads(model, args)
            for kind, board in boards.items():
                assert_reads_agree(kind, reads(board, args), expected)
                board._check()

    run()


def test_in_process_boards_match_the_model() -> None:
    check_kinds(["sortedlist", "skiplist", "sharded"], examples=60)


def test_the_ledger_board_matches_the_model() -> None:
    """A one-view ledger opened as a board: each write an event of the
    ledger, each read its view's board."""
    check_kinds(["ledger"], examples=30)


@pytest.mark.redis
def test_redis_boards_match_the_model() -> None:
    check_kinds(["redis", "sharded-redis"], examples=15)


# ----------------------------------------------------------------------
# Metadata, iteration and friends lists
# ----------------------------------------------------------------------
#: Metadata to write: none, flat, nested, and an empty dict (not "none").
METAS = st.sampled_from([None, {"n": 1}, {"n": 2}, {"l": [1, {"x": 2}]}, {}])
#: A friends list: members present or not, repeated, and hashable values
#: that are no member at all (the member list holds only strings).
FRIENDS = st.lists(st.sampled_from([*MEMBERS[:16], "zed", 5, b"p01", ("p01",), None]), max_size=6)
META_WRITE = st.one_of(
    WRITE,
    st.tuples(st.just("set"), MEMBER, SCORES, WHENS, METAS),
    st.tuples(st.just("set_meta"), MEMBER, METAS),
    st.tuples(st.just("pop_best"), st.integers(0, 2), st.just(True)),
)


def meta_reads(target: Any, data: dict[str, Any]) -> list[Any]:
    """Every range and point read with ``with_meta=True``, iteration,
    membership, and a friends list with repeats and non-members."""
    out: list[Any] = [
        outcome(lambda: list(target)),
        outcome(lambda: [m in target for m in MEMBERS]),
        outcome(lambda: [target.meta(m) for m in MEMBERS]),
    ]
    for style in ("unique", "dense", "competition"):
        with_meta: dict[str, Any] = {"style": style, "with_meta": True}
        out.append(outcome(lambda kw=with_meta: target.entries(data["friends"], **kw)))
        out.append(outcome(lambda kw=with_meta: target.top(TOP_CACHE_SIZE + 2, **kw)))
        out.append(outcome(lambda kw=with_meta: target.by_rank(1, -1, **kw)))
        out.append(outcome(lambda kw=with_meta: target.by_score(**kw)))
        for number, size in data["pages"]:
            out.append(outcome(lambda n=number, z=size, kw=with_meta: target.page(n, z, **kw)))
        for member, above, below, fill in data["around"]:
            out.append(
                outcome(
                    lambda m=member, a=above, b=below, f=fill, kw=with_meta: target.around(
                        m, a, b, fill=f, **kw
                    )
                )
            )
        for rank in data["at"]:
            out.append(outcome(lambda r=rank, kw=with_meta: target.at(r, **kw)))
    return out


META_ARGS = st.fixed_dictionaries(
    {
        "friends": FRIENDS,
        "pages": st.lists(st.tuples(st.integers(-1, 10), st.integers(1, 12)), max_size=2),
        "around": st.lists(
            st.tuples(MEMBER, st.integers(0, 6), st.integers(0, 6), FLAG), max_size=3
        ),
        "at": st.lists(st.integers(-45, 45).filter(bool), max_size=2),
    }
)


def check_meta_kinds(kinds: list[str], examples: int) -> None:
    @given(
        config=CONFIGS,
        start=st.lists(st.tuples(st.just("set"), MEMBER, SCORES, st.none(), METAS), max_size=40),
        ops=st.lists(META_WRITE, max_size=25),
        args=META_ARGS,
    )
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def run(
        config: dict[str, Any],
        start: list[Any],
        ops: list[Any],
        args: dict[str, Any],
    ) -> None:
        model = Model(**config)
        with opened(kinds, config) as boards:
            for op in [*start, *ops]:
                want = write(model, op)
                for kind, board in boards.items():
                    assert write(board, op) == want, (kind, op)
            expected = meta_reads(model, args)
            for kind, board in boards.items():
                assert_reads_agree(kind, meta_reads(board, args), expected)
                # the rows' metadata are copies: changing them changes nothing
                for entry in board.by_rank(1, -1, with_meta=True):
                    if entry.meta is not None:
                        entry.meta["changed"] = True
                assert meta_reads(board, args) == expected, kind

    run()


def test_in_process_reads_with_metadata_match_the_model() -> None:
    check_meta_kinds(["sortedlist", "skiplist", "sharded"], examples=30)


def test_the_ledger_board_reads_with_metadata_match_the_model() -> None:
    check_meta_kinds(["ledger"], examples=20)


@pytest.mark.redis
def test_redis_reads_with_metadata_match_the_model() -> None:
    check_meta_kinds(["redis", "sharded-redis"], examples=10)
