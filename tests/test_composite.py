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
from outcomes import exact

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
