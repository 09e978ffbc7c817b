"""Composite scores against a plain model: a board ranks members exactly as
sorting their tuples column by column would, returns each tuple as stored
(the type of every column included), and keeps all of it across a durable
reopen.  Metadata is stored
as plain values, whatever subclass of one it came in as."""

from __future__ import annotations

import enum
import functools
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Model
from outcomes import apply, exact
from outcomes import outcome as typed_outcome

from rankengine import Leaderboard

ORDERS = st.lists(st.sampled_from(["desc", "asc"]), min_size=2, max_size=3).map(tuple)
COLUMN = st.one_of(
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, math.inf, -math.inf]),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 10**30, float(2**53)]),
)
MEMBERS = st.sampled_from(["a", "b", "c", "d", "e", "f"])


def model_order(
    order: tuple[str, ...], tie_break: str, writes: list[tuple[str, tuple[Any, ...]]]
) -> tuple[dict[str, tuple[Any, ...]], list[str]]:
    """The stored scores and the rank order, by sorting: a write of a tuple
    equal to the one held changes nothing; ties go to the member who reached
    the score first, or by member (reversed when column 0 is descending)."""
    held: dict[str, tuple[Any, ...]] = {}
    when: dict[str, int] = {}
    for clock, (member, score) in enumerate(writes):
        if held.get(member) != score:
            held[member], when[member] = score, clock

    def cmp(x: str, y: str) -> int:
        for a, b, direction in zip(held[x], held[y], order, strict=True):
            if a != b:
                return (-1 if a > b else 1) if direction == "desc" else (-1 if a < b else 1)
        if tie_break == "first":
            return -1 if when[x] < when[y] else 1
        better = x > y if order[0] == "desc" else x < y
        return -1 if better else 1

    return held, sorted(held, key=functools.cmp_to_key(cmp))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    order=ORDERS,
    tie_break=st.sampled_from(["first", "member"]),
    data=st.data(),
)
def test_composite_board_ranks_as_sorting_the_tuples(
    make_board: Any, order: tuple[str, ...], tie_break: str, data: Any
) -> None:
    width = len(order)
    writes = data.draw(
        st.lists(st.tuples(MEMBERS, st.tuples(*[COLUMN] * width)), min_size=1, max_size=12)
    )
    board = make_board(order=order, tie_break=tie_break)
    for member, score in writes:
        board.set(member, score)
    board._check()
    held, ranked = model_order(order, tie_break, writes)
    assert list(board) == ranked
    for member, score in held.items():
        assert exact(board.score(member)) == exact(score)
    scores = [held[m] for m in ranked]
    for position, member in enumerate(ranked):
        score = held[member]
        better = [s for s in scores[:position] if s != score]
        assert board.rank(member, style="competition") == 1 + len(better)
        assert board.rank(member, style="dense") == 1 + len(set(better))
        assert board.count(score, score) == scores.count(score)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    order=ORDERS,
    data=st.data(),
)
def test_composite_board_reopens_with_every_column_as_stored(
    tmp_path: Path, order: tuple[str, ...], data: Any
) -> None:
    width = len(order)
    writes = data.draw(
        st.lists(st.tuples(MEMBERS, st.tuples(*[COLUMN] * width)), min_size=1, max_size=6)
    )
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "board"
    board = Leaderboard.open(path, order=order)
    for member, score in writes:
        board.set(member, score, meta={"s": list(score)})
    before = exact(board.items()), {m: exact(board.meta(m)) for m in board}
    board.snapshot() if data.draw(st.booleans()) else None
    board.close()
    again = Leaderboard.open(path, order=order)
    try:
        assert (exact(again.items()), {m: exact(again.meta(m)) for m in again}) == before
    finally:
        again.close()


class Level(enum.IntEnum):
    GOLD = 1


class Name(str):
    pass


class Ratio(float):
    pass


def test_metadata_of_subclassed_values_is_stored_as_plain_values(tmp_path: Path) -> None:
    """Metadata holding an ``IntEnum``, a ``str`` or ``float`` subclass (as
    a value or a key) is stored as the plain ``int``, ``str`` or ``float``
    it equals: that is what the event log keeps, so a read answers the same
    before and after a reopen, and the board never holds the caller's
    objects."""
    meta = {"level": Level.GOLD, "name": Name("Ann"), Name("ratio"): Ratio(0.5)}
    plain = {"level": 1, "name": "Ann", "ratio": 0.5}
    board = Leaderboard.open(tmp_path / "board")
    board.set("ann", 1, meta=meta)
    read = board.meta("ann")
    assert exact(read) == exact(plain)
    assert [type(k) for k in read] == [str] * 3
    assert [type(v) for v in read.values()] == [int, str, float]
    board.close()
    again = Leaderboard.open(tmp_path / "board")
    try:
        assert exact(again.meta("ann")) == exact(read)
    finally:
        again.close()


#: Columns that tie across types (1 and 1.0, 0 and -0.0), infinities and an
#: int beyond 2**53, few enough values that runs of equal scores are common.
TIED_COLUMN = st.sampled_from([0, -0.0, 1, 1.0, -1, 0.5, math.inf, -math.inf, 2**53 + 1])
DELTA_COLUMN = st.sampled_from([0, -0.0, 1, -1, 0.5, math.inf, -math.inf])
MANY_MEMBERS = st.sampled_from([f"p{i:02d}" for i in range(16)])
WHENS = st.sampled_from([None, None, "new", "present", "better", "worse"])
STYLES = ("unique", "dense", "competition")
#: What a read returned or raised, numbers typed; the model's plain tuples
#: equal the board's Entry rows.
outcome = functools.partial(typed_outcome, containers=False)


def _reads(target: Any, probes: list[Any], spans: list[Any], ps: list[float]) -> list[Any]:
    """Every read of this area, as comparable outcomes: rows in each style,
    percentiles, hypothetical ranks, score ranges and score percentiles."""
    out: list[Any] = []
    members = [f"p{i:02d}" for i in range(16)]
    for style in STYLES:
        out.append(outcome(lambda s=style: target.by_rank(1, -1, style=s)))
        out.append(outcome(lambda s=style: [target.rank(m, style=s) for m in members]))
        for score in probes:
            out.append(outcome(lambda x=score, s=style: target.rank_for_score(x, style=s)))
        for low, high, low_in, high_in in spans:
            flags = {"min_inclusive": low_in, "max_inclusive": high_in}
            out.append(
                outcome(lambda a=low, b=high, f=flags, s=style: target.by_score(a, b, style=s, **f))
            )
            out.append(outcome(lambda a=low, b=high, f=flags: target.count(a, b, **f)))
    for method in ("below", "at_or_below", "midpoint"):
        out.append(outcome(lambda m=method: [target.percentile(x, method=m) for x in members]))
    out.append(outcome(lambda: [target.score_at_percentile(p) for p in [0, 50, 100, *ps]]))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    order=ORDERS,
    tie_break=st.sampled_from(["first", "member"]),
    backend=st.sampled_from(["sortedlist", "skiplist"]),
    data=st.data(),
)
def test_composite_reads_after_any_writes_match_the_model(
    order: tuple[str, ...], tie_break: str, backend: str, data: Any
) -> None:
    # Ranks in every style, hypothetical ranks, percentiles and score ranges
    # of a composite board, after increments, batches, pops and prunes (the
    # dense counts are built before the writes half of the time, so they are
    # maintained through them), against the plain model's sort.
    score = st.tuples(*[TIED_COLUMN] * len(order))
    delta = st.tuples(*[DELTA_COLUMN] * len(order))
    write = st.one_of(
        st.tuples(st.just("set"), MANY_MEMBERS, score, WHENS),
        st.tuples(st.just("incr"), MANY_MEMBERS, delta, WHENS),
        st.tuples(
            st.just("set_many"), st.lists(st.tuples(MANY_MEMBERS, score), max_size=12), WHENS
        ),
        st.tuples(st.just("incr_many"), st.lists(st.tuples(MANY_MEMBERS, delta), max_size=4)),
        st.tuples(st.just("remove"), MANY_MEMBERS),
        st.tuples(st.just("pop_best"), st.integers(0, 2)),
        st.tuples(st.just("pop_worst"), st.integers(0, 2)),
        st.tuples(st.just("remove_by_rank"), st.integers(-4, 4).filter(bool), st.just(-1)),
        st.tuples(st.just("remove_by_score"), score, score, st.booleans(), st.booleans()),
        st.tuples(st.just("keep_top"), st.integers(4, 16)),
    )
    model = Model(order=order, tie_break=tie_break)
    board = Leaderboard(order=order, tie_break=tie_break, backend=backend)  # type: ignore[arg-type]
    if data.draw(st.booleans()):
        # builds the dense counts on the empty board
        assert board.rank_for_score((0,) * len(order), style="dense") == 1
    for op in data.draw(st.lists(write, min_size=1, max_size=15)):
        assert apply(board, op, containers=False) == apply(model, op, containers=False), op
    board._check()
    bound = st.none() | score
    probes = data.draw(st.lists(score, min_size=1, max_size=3))
    spans = data.draw(st.lists(st.tuples(bound, bound, st.booleans(), st.booleans()), max_size=3))
    ps = data.draw(st.lists(st.floats(0, 100), max_size=2))
    assert _reads(board, probes, spans, ps) == _reads(model, probes, spans, ps)
