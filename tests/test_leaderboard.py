"""The shared behaviour suite: every public method of a board, on every backend.

Expected values are worked by hand in each test (or, for random inputs, come
from the plain model in ``tests/model.py``).  Every mutation is followed by
``board._check()``.
"""

from __future__ import annotations

import itertools
import math
import numbers
import random
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import snapshot, untied_far_members
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model import Model, combine

from rankengine import Leaderboard
from rankengine.index.protocol import RUN_SCAN_LIMIT

INF = math.inf
STYLES = ("unique", "dense", "competition")


def rows(entries: list[Any]) -> list[tuple[Any, ...]]:
    """Entries as plain ``(member, score, rank, meta)`` tuples."""
    return [(e.member, e.score, e.rank, e.meta) for e in entries]


def row(entry: Any) -> tuple[Any, ...] | None:
    return None if entry is None else (entry.member, entry.score, entry.rank, entry.meta)


def members(entries: list[Any]) -> list[Any]:
    return [e.member for e in entries]


def ranks(entries: list[Any]) -> list[int]:
    return [e.rank for e in entries]


def exact(value: Any) -> Any:
    """A score with its type, so that 5 and 5.0 (or 2**53 and 2.0**53) differ."""
    if isinstance(value, tuple):
        return tuple(exact(v) for v in value)
    return (type(value).__name__, value)


def ten(make_board: Any, **kwargs: Any) -> Any:
    """A board with p0..p9 scoring 0..9 (desc: p9 is rank 1, p0 rank 10)."""
    board = make_board(**kwargs)
    assert board.set_many({f"p{i}": i for i in range(10)}) == 10
    board._check()
    return board


def tied(make_board: Any, **kwargs: Any) -> Any:
    """The worked tie example: 50, 50, 30, 30, 10."""
    board = make_board(**kwargs)
    board.set_many([("ann", 50), ("bob", 50), ("cid", 30), ("dee", 30), ("eve", 10)])
    board._check()
    return board


# ----------------------------------------------------------------------
# Construction and configuration
# ----------------------------------------------------------------------
def test_empty_board(make_board: Any) -> None:
    board = make_board()
    board._check()
    assert len(board) == 0
    assert board.items() == []
    assert list(board) == []
    assert board.top(5) == []
    assert board.by_rank() == []
    assert board.page(1) == []
    assert board.pages() == 0
    assert board.by_score() == []
    assert board.count() == 0
    assert board.rank("x") is None
    assert board.entry("x") is None
    assert board.score("x", "dflt") == "dflt"
    assert board.percentile("x") is None
    assert board.score_at_percentile(50) is None
    assert board.rank_for_score(7) == 1
    assert board.around("x") == []
    assert board.pop_best(3) == []
    assert board.pop_worst(3) == []
    assert board.clock == 0
    with pytest.raises(IndexError):
        board.at(1)


def test_configuration_properties(make_board: Any) -> None:
    board = make_board(order="asc", tie_break="member", rank_style="dense")
    assert board.order == "asc"
    assert board.tie_break == "member"
    assert board.rank_style == "dense"
    composite = make_board(order=("desc", "asc"))
    assert composite.order == ("desc", "asc")
    assert composite.tie_break == "first"
    assert composite.rank_style == "unique"


def test_container_protocol(make_board: Any) -> None:
    board = make_board()
    board.set_many({"ann": 3, "bob": 9})
    assert len(board) == 2
    assert "ann" in board and "zed" not in board
    assert list(board) == ["bob", "ann"]
    assert board["bob"] == 9
    with pytest.raises(KeyError):
        board["zed"]
    assert board.score("ann") == 3
    assert board.score("zed") is None
    assert board.score("zed", -1) == -1


def test_item_assignment_and_deletion(make_or_sharded: Any) -> None:
    board = make_or_sharded()
    board["ann"] = 10
    board["bob"] = 20
    board.set_meta("ann", {"name": "Ann"})
    board["ann"] = 30  # a set with no options: the metadata stays
    assert board.items() == [("ann", 30), ("bob", 20)]
    assert board.meta("ann") == {"name": "Ann"}
    assert board.rank("ann") == 1
    del board["bob"]
    assert board.items() == [("ann", 30)]
    board._check()
    with pytest.raises(KeyError, match="bob"):
        del board["bob"]
    with pytest.raises(TypeError, match="score must be"):
        board["cid"] = "high"
    with pytest.raises(ValueError, match="NaN"):
        board["ann"] = math.nan
    with pytest.raises(TypeError, match="member must be"):
        del board[["ann"]]
    assert board.items() == [("ann", 30)]
    assert board.meta("ann") == {"name": "Ann"}
    board._check()


# ----------------------------------------------------------------------
# Rank styles, orders, ties
# ----------------------------------------------------------------------
def test_tie_styles_worked_example_desc(make_board: Any) -> None:
    board = tied(make_board)
    order = ["ann", "bob", "cid", "dee", "eve"]
    expected = {
        "unique": [1, 2, 3, 4, 5],
        "dense": [1, 1, 2, 2, 3],
        "competition": [1, 1, 3, 3, 5],
    }
    assert list(board) == order
    for style, want in expected.items():
        assert [board.rank(m, style=style) for m in order] == want, style
        assert ranks(board.top(5, style=style)) == want, style
        assert ranks(board.by_rank(1, -1, style=style)) == want, style
        assert [board.at(i, style=style).rank for i in range(1, 6)] == want, style
        assert [e.rank for e in board.entries(order, style=style)] == want, style
        assert [board.entry(m, style=style).rank for m in order] == want, style
        # windows that start inside a run of ties still report the shared rank
        assert ranks(board.by_rank(2, 4, style=style)) == want[1:4], style
        assert ranks(board.page(2, 2, style=style)) == want[2:4], style
        assert ranks(board.around("dee", 0, 1, style=style)) == want[3:5], style
        assert ranks(board.by_score(10, 30, style=style)) == want[2:], style


def test_tie_styles_worked_example_asc(make_board: Any) -> None:
    board = make_board(order="asc")
    board.set_many([("a", 10), ("b", 30), ("c", 30), ("d", 50), ("e", 50)])
    board._check()
    order = ["a", "b", "c", "d", "e"]
    assert list(board) == order
    assert [board.rank(m, style="unique") for m in order] == [1, 2, 3, 4, 5]
    assert [board.rank(m, style="dense") for m in order] == [1, 2, 2, 3, 3]
    assert [board.rank(m, style="competition") for m in order] == [1, 2, 2, 4, 4]
    assert ranks(board.by_rank(3, 5, style="competition")) == [2, 4, 4]


@pytest.mark.parametrize("style", STYLES)
def test_default_rank_style(make_board: Any, style: str) -> None:
    board = tied(make_board, rank_style=style)
    want = {"unique": 4, "dense": 2, "competition": 3}[style]
    assert board.rank("dee") == want
    assert board.entry("dee").rank == want
    assert board.at(4).rank == want
    assert board.top(4)[-1].rank == want
    # an explicit style overrides the default
    assert board.rank("dee", style="unique") == 4


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_first_to_reach_breaks_ties(make_board: Any, order: str) -> None:
    board = make_board(order=order)
    for m in ("a", "b", "c"):
        board.set(m, 5)
    board._check()
    assert list(board) == ["a", "b", "c"]
    clock = board.clock
    # re-setting the same score keeps the member's place and the clock
    assert board.set("a", 5) is False
    assert board.incr("a", 0) == 5
    assert board.clock == clock
    assert list(board) == ["a", "b", "c"]
    # leaving the score and coming back puts it last among the ties
    board.set("a", 6)
    board.set("a", 5)
    board._check()
    assert list(board) == ["b", "c", "a"]
    assert board.clock == clock + 2


def test_tie_break_by_member(make_board: Any) -> None:
    desc = make_board(tie_break="member")
    asc = make_board(order="asc", tie_break="member")
    for board in (desc, asc):
        board.set_many([("b", 1), ("c", 1), ("a", 1), ("z", 2)])
        board._check()
    # Redis order: tied members by member, reversed on a descending board
    assert list(desc) == ["z", "c", "b", "a"]
    assert list(asc) == ["a", "b", "c", "z"]


@pytest.mark.parametrize("kind", [int, bytes])
def test_tie_break_by_member_other_member_types(make_board: Any, kind: type) -> None:
    board = make_board(tie_break="member")
    names = [3, 1, 2] if kind is int else [b"c", b"a", b"b"]
    board.set_many([(m, 7) for m in names])
    board._check()
    assert list(board) == sorted(names, reverse=True)


def test_member_types_mix_on_first_to_reach_board(make_board: Any) -> None:
    board = make_board()
    board.set_many([("a", 1), (2, 1), (b"c", 1)])
    board._check()
    assert list(board) == ["a", 2, b"c"]
    assert board.rank(2) == 2 and board.rank(b"c") == 3


def test_member_type_follows_a_board_emptied_and_refilled(make_board: Any) -> None:
    board = make_board(tie_break="member")
    board.set("a", 1)
    board.remove("a")
    # empty again: a new member type may start
    board.set(5, 1)
    board.set(6, 1)
    board._check()
    assert list(board) == [6, 5]
    board.clear()
    board.set_many([(b"x", 1), (b"y", 1)])
    board._check()
    assert list(board) == [b"y", b"x"]


def test_redis_rescore_moves_position(make_board: Any) -> None:
    asc = make_board(order="asc")
    asc.set_many({"x": 10, "y": 20, "z": 30})
    assert list(asc) == ["x", "y", "z"]
    asc.set("y", 1)
    asc._check()
    assert list(asc) == ["y", "x", "z"]
    desc = make_board()
    desc.set_many({"x": 10, "y": 20, "z": 30})
    desc.set("y", 1)
    desc._check()
    assert list(desc) == ["z", "x", "y"]


def test_thousand_rescores_among_ten_members_keep_strict_order(make_board: Any) -> None:
    rng = random.Random(1000)
    for order, tie_break in (("desc", "member"), ("asc", "first")):
        board = make_board(order=order, tie_break=tie_break)
        model = Model(order=order, tie_break=tie_break)
        names = [f"m{i}" for i in range(10)]
        for name in names:
            board.set(name, 0)
            model.set(name, 0)
        for step in range(1000):
            member = rng.choice(names)
            score = rng.choice([rng.randint(-3, 3), rng.uniform(-3, 3)])
            assert board.set(member, score) == model.set(member, score)
            items = board.items()
            assert items == model.items(), step
            # strict order: each neighbour pair is ordered by score, then tie
            for (m1, s1), (m2, s2) in itertools.pairwise(items):
                assert model.compare(s1, s2) <= 0
                if s1 == s2 and tie_break == "member":
                    assert (m1 > m2) if order == "desc" else (m1 < m2)
        board._check()


# ----------------------------------------------------------------------
# Writes
# ----------------------------------------------------------------------
# (order, present score or None, when, new score, expected score afterwards or None)
MATRIX = [
    ("desc", None, None, 5, 5),
    ("desc", None, "new", 5, 5),
    ("desc", None, "present", 5, None),
    ("desc", None, "better", 5, 5),
    ("desc", None, "worse", 5, 5),
    ("desc", None, "better", -INF, -INF),
    ("desc", None, "worse", INF, INF),
    ("desc", 10, None, 5, 5),
    ("desc", 10, "new", 20, 10),
    ("desc", 10, "present", 20, 20),
    ("desc", 10, "better", 20, 20),
    ("desc", 10, "better", 5, 10),
    ("desc", 10, "better", 10, 10),
    ("desc", 10, "worse", 5, 5),
    ("desc", 10, "worse", 20, 10),
    ("desc", 10, "worse", 10, 10),
    ("desc", 10, "better", INF, INF),
    ("desc", 10, "worse", -INF, -INF),
    ("desc", INF, "better", INF, INF),
    ("desc", INF, "worse", INF, INF),
    ("desc", INF, "better", 1e308, INF),
    ("desc", INF, "worse", -INF, -INF),
    ("desc", -INF, "worse", -INF, -INF),
    ("desc", -INF, "better", INF, INF),
    ("desc", -INF, "present", 0, 0),
    ("desc", INF, "new", 0, INF),
    ("asc", None, "better", 5, 5),
    ("asc", None, "present", 5, None),
    ("asc", 10, "better", 5, 5),
    ("asc", 10, "better", 20, 10),
    ("asc", 10, "worse", 20, 20),
    ("asc", 10, "worse", 5, 10),
    ("asc", 10, "better", -INF, -INF),
    ("asc", -INF, "better", -INF, -INF),
    ("asc", INF, "better", -INF, -INF),
    ("asc", INF, "worse", 5, INF),
]


@pytest.mark.parametrize("case", MATRIX)
def test_conditional_write_matrix(make_board: Any, case: tuple[Any, ...]) -> None:
    order, old, when, new, after = case
    board = make_board(order=order)
    board.set("other", 0)
    if old is not None:
        board.set("m", old)
    changed = board.set("m", new, when=when)
    board._check()
    assert board.score("m") == after
    assert changed == (after != old)
    assert board.score("other") == 0


# (order, present score or None, when, delta, expected return, expected score afterwards)
INCR_MATRIX = [
    ("desc", None, None, 5, 5, 5),
    ("desc", None, "new", 5, 5, 5),
    ("desc", None, "present", 5, None, None),
    ("desc", None, "better", -5, -5, -5),
    ("desc", None, "worse", 5, 5, 5),
    ("desc", 10, None, -3, 7, 7),
    ("desc", 10, "new", 1, None, 10),
    ("desc", 10, "present", 1, 11, 11),
    ("desc", 10, "better", 1, 11, 11),
    ("desc", 10, "better", -1, None, 10),
    ("desc", 10, "better", 0, None, 10),
    ("desc", 10, "worse", -1, 9, 9),
    ("desc", 10, "worse", 1, None, 10),
    ("desc", 10, "worse", 0, None, 10),
    ("desc", 10, None, 0, 10, 10),
    ("desc", 10, None, INF, INF, INF),
    ("desc", INF, None, 5, INF, INF),
    ("desc", INF, "better", 5, None, INF),
    ("desc", -INF, "worse", -1, None, -INF),
    ("asc", 10, "better", -1, 9, 9),
    ("asc", 10, "better", 1, None, 10),
    ("asc", 10, "worse", 1, 11, 11),
]


@pytest.mark.parametrize("case", INCR_MATRIX)
def test_incr_matrix(make_board: Any, case: tuple[Any, ...]) -> None:
    order, old, when, delta, ret, after = case
    board = make_board(order=order)
    if old is not None:
        board.set("m", old)
    assert board.incr("m", delta, when=when) == ret
    board._check()
    assert board.score("m") == after


def test_set_returns_whether_the_board_changed(make_board: Any) -> None:
    board = make_board()
    assert board.set("a", 1) is True
    assert board.set("a", 1) is False
    assert board.set("a", 1.0) is False  # 1 == 1.0: the same score
    assert exact(board.score("a")) == exact(1)
    assert board.set("a", 2) is True
    assert board.set("a", 3, when="new") is False
    assert board.clock == 2
    board._check()


def test_incr_defaults_and_float_steps(make_board: Any) -> None:
    board = make_board()
    assert board.incr("a") == 1
    assert board.incr("a") == 2
    assert board.incr("a", 2.5) == 4.5
    assert board.incr("a", -10) == -5.5
    assert board.incr("b", -1) == -1
    board._check()
    assert board.items() == [("b", -1), ("a", -5.5)]


#: (stored score, delta): increments whose result equals the stored score
#: although ``stored + delta`` has another type or sign in Python.
EQUAL_INCREMENTS = [(5, 0.0), (5, -0.0), (5.0, 0), (0, -0.0), (-0.0, 0), (-0.0, 0.0), (7, 0)]


def agreed_scores(board: Any, results: dict[Any, Any]) -> None:
    """Each increment's result is what the board holds, value and type (and
    sign): in score() and in items()."""
    held = dict(board.items())
    for member, result in results.items():
        assert exact(result) == exact(board.score(member)) == exact(held[member]), member
        if isinstance(result, float):
            assert math.copysign(1.0, result) == math.copysign(1.0, board.score(member)), member


@pytest.mark.parametrize(("stored", "delta"), EQUAL_INCREMENTS)
def test_an_increment_that_keeps_the_score_returns_the_stored_score(
    make_board: Any, stored: Any, delta: Any
) -> None:
    # An increment of 0 changes nothing: the board keeps its score (5 stays
    # the int 5 after + 0.0, as set(5.0) keeps it), and incr returns it.
    board = make_board()
    board.set_many({"m": stored, "other": stored, "batch": stored})
    clock = board.clock
    results = {"m": board.incr("m", delta), "other": board.incr("other", delta, when="present")}
    results.update(board.incr_many([("batch", delta), ("batch", delta)]))
    board._check()
    agreed_scores(board, results)
    assert exact(results["m"]) == exact(stored)
    assert board.clock == clock  # nothing was written
    assert [m for m, _ in board.items()] == ["m", "other", "batch"]  # ties keep their places


def test_set_many_counts_and_order(make_board: Any) -> None:
    board = make_board()
    assert board.set_many([("ann", 3), ("bob", 5), ("ann", 4)]) == 2
    assert board.items() == [("bob", 5), ("ann", 4)]
    # unchanged scores are not counted; new and changed ones are
    assert board.set_many({"ann": 4, "bob": 6, "cid": 1}) == 2
    assert board.set_many([]) == 0
    assert board.set_many({"ann": 99, "dee": 1}, when="new") == 1
    assert board.set_many({"ann": 99, "eve": 1}, when="present") == 1
    board._check()
    assert board.items() == [("ann", 99), ("bob", 6), ("cid", 1), ("dee", 1)]


def test_set_many_applies_pairs_in_order_for_ties(make_board: Any) -> None:
    # one at a time: a=3, b=5, a=5 -> b reached 5 first
    board = make_board()
    board.set_many([("a", 3), ("b", 5), ("a", 5)])
    board._check()
    assert list(board) == ["b", "a"]
    # a member that leaves its score and comes back within a batch goes behind
    board.set("c", 5)
    board.set_many([("a", 1), ("a", 5)])
    board._check()
    assert list(board) == ["b", "c", "a"]
    # the same on a tie-by-member board changes nothing visible
    by_member = make_board(tie_break="member")
    by_member.set_many({"a": 5, "b": 5})
    by_member.set_many([("a", 1), ("a", 5)])
    by_member._check()
    assert list(by_member) == ["b", "a"]


@pytest.mark.parametrize("tie_break", ["member", "first"])
def test_batch_back_to_an_equal_score_of_another_type(make_board: Any, tie_break: str) -> None:
    # 2 -> 0 -> 2.0 in one batch: the key compares equal to where it started,
    # but the board now holds the float, in its reads as in score()
    board = make_board(tie_break=tie_break)
    board.set_many([("a", 2), ("b", 7)])
    board.set_many([("a", 0), ("a", 2.0)])
    board._check()
    assert [(m, type(s)) for m, s in board.items()] == [("b", int), ("a", float)]
    assert type(board.score("a")) is float


@pytest.mark.parametrize("tie_break", ["member", "first"])
def test_batch_back_to_a_zero_of_the_other_sign(make_board: Any, tie_break: str) -> None:
    # -0.0 -> 1.0 -> 0.0 in one batch: 0.0 == -0.0, but the board now holds
    # 0.0, in its reads as in score()
    board = make_board(tie_break=tie_break)
    board.set_many([("a", -0.0), ("b", 7)])
    assert board.incr_many([("a", 1), ("a", -1)]) == {"a": 0.0}
    board._check()
    assert [math.copysign(1, s) for _, s in board.items()] == [1, 1]
    assert math.copysign(1, board.score("a")) == 1
    # the same in one column of a composite score
    board = make_board(tie_break=tie_break, order=("desc", "asc"))
    board.set_many([("a", (0.0, 1)), ("b", (7, 1))])
    board.set_many([("a", (1, 1)), ("a", (-0.0, 1))])
    board._check()
    assert [math.copysign(1, s[0]) for _, s in board.items()] == [1, -1]
    assert math.copysign(1, board.score("a")[0]) == -1


def test_set_many_with_when_applies_to_the_batch_so_far(make_board: Any) -> None:
    board = make_board()
    board.set("a", 10)
    assert board.set_many([("a", 12), ("a", 11), ("b", 1), ("b", 5)], when="better") == 2
    assert board.items() == [("a", 12), ("b", 5)]
    assert board.set_many([("c", 1), ("c", 2)], when="new") == 1
    assert board.score("c") == 1
    board._check()


def test_incr_many(make_board: Any) -> None:
    board = make_board()
    board.set("ann", 10)
    assert board.incr_many([("ann", 3), ("bob", 5), ("ann", 4)]) == {"ann": 17, "bob": 5}
    assert board.incr_many({"bob": 0}) == {"bob": 5}
    assert board.incr_many([]) == {}
    board._check()
    assert board.items() == [("ann", 17), ("bob", 5)]


def test_batch_writes_match_the_model_small_and_bulk(make_board: Any) -> None:
    rng = random.Random(7)
    for tie_break in ("first", "member"):
        board = make_board(tie_break=tie_break)
        model = Model(tie_break=tie_break)
        base = [(f"m{i}", rng.randint(0, 5)) for i in range(100)]
        board.set_many(base)
        model.set_many(base)
        board.rank("m0", style="dense")  # build the dense counts before the writes
        for size in (3, 10, 60, 250):  # small batches go one by one, big ones rebuild
            pairs = [(f"m{rng.randint(0, 150)}", rng.randint(0, 5)) for _ in range(size)]
            assert board.set_many(pairs) == model.set_many(pairs)
            deltas = [(f"m{rng.randint(0, 150)}", rng.randint(-2, 2)) for _ in range(size)]
            assert board.incr_many(deltas) == model.incr_many(deltas)
            board._check()
            assert board.items() == model.items()
            assert board.clock == model.clock
            assert rows(board.top(200, style="dense")) == model.top(200, style="dense")


def test_remove_remove_many_clear(make_board: Any) -> None:
    board = ten(make_board)
    assert board.remove("p3") is True
    assert board.remove("p3") is False
    assert board.remove_many(["p1", "p2", "p1", "zz"]) == 2
    assert board.remove_many([]) == 0
    board._check()
    assert list(board) == ["p9", "p8", "p7", "p6", "p5", "p4", "p0"]
    assert board.rank("p0") == 7
    board.clear()
    board._check()
    assert len(board) == 0 and board.items() == []
    board.clear()
    assert len(board) == 0


def test_clock_ticks_only_on_score_changes(make_board: Any) -> None:
    board = make_board()
    board.set("a", 1)
    board.set("b", 2, meta={"x": 1})
    assert board.clock == 2
    board.set_meta("a", {"y": 2})
    board.set("a", 1, meta={"y": 3})
    board.remove("b")
    board.pop_best()
    assert board.clock == 2
    board.incr("c", 1)
    board.incr_many({"c": 1, "d": 1})
    assert board.clock == 5


# ----------------------------------------------------------------------
# Composite scores, big ints, infinities
# ----------------------------------------------------------------------
def composite(make_board: Any) -> Any:
    # most points first, then fewest seconds
    board = make_board(order=("desc", "asc"))
    board.set_many({"ann": (10, 30), "bob": (10, 20), "cid": (12, 50), "dee": (9, 1)})
    board._check()
    return board


def test_composite_order_and_reads(make_board: Any) -> None:
    board = composite(make_board)
    assert list(board) == ["cid", "bob", "ann", "dee"]
    assert board["bob"] == (10, 20)
    assert board.rank("ann") == 3
    assert board.rank_for_score((10, 25)) == 3
    assert board.rank_for_score((10, 20)) == 3  # a newcomer comes after bob
    assert board.rank_for_score((10, 20), style="competition") == 2
    assert board.rank_for_score((13, 99), style="dense") == 1
    # ranges: the second column compares the other way round (as the first column's axis)
    assert members(board.by_score((10, 40), (12, 0))) == ["cid", "bob", "ann"]
    assert members(board.by_score((10, 40), (12, 60))) == ["bob", "ann"]
    assert members(board.by_score((10, 30), None, min_inclusive=False)) == ["cid", "bob"]
    assert board.count((10, 40), (12, 0)) == 3
    assert board.percentile("bob", method="below") == 50.0
    # composite percentiles are not interpolated: the lower neighbour is returned
    assert board.score_at_percentile(50) == (10, 30)
    assert board.score_at_percentile(100) == (12, 50)


def test_composite_writes(make_board: Any) -> None:
    board = composite(make_board)
    assert board.incr("dee", (3, 5)) == (12, 6)
    board._check()
    assert list(board) == ["dee", "cid", "bob", "ann"]
    assert board.set("ann", [10, 10]) is True  # a list is accepted as a tuple
    assert board["ann"] == (10, 10)
    assert board.set("ann", (10, 11), when="better") is False  # more seconds is worse
    assert board.set("ann", (10, 9), when="better") is True
    assert board.incr("new", (1, 1)) == (1, 1)
    assert board.incr_many([("new", (1, 1)), ("new", (0, -2))]) == {"new": (2, 0)}
    board._check()
    assert board.items() == [
        ("dee", (12, 6)),
        ("cid", (12, 50)),
        ("ann", (10, 9)),
        ("bob", (10, 20)),
        ("new", (2, 0)),
    ]
    # on the range axis (10, 15) <= score <= (12, 40) means: more than 10 points
    # or 10 points in at most 15 s, and less than 12 points or 12 in at least 40 s
    assert board.remove_by_score((10, 15), (12, 40)) == 2  # ann and cid
    board._check()
    assert list(board) == ["dee", "bob", "new"]


def test_composite_asc_first_column(make_board: Any) -> None:
    # fewest seconds first, then most points
    board = make_board(order=("asc", "desc"))
    board.set_many({"a": (30, 1), "b": (30, 5), "c": (20, 0)})
    board._check()
    assert list(board) == ["c", "b", "a"]
    assert members(board.by_score((25, 10), (30, 3))) == ["b"]


def test_big_integers_are_exact(make_board: Any) -> None:
    big = 2**53
    board = make_board()
    board.set_many({"a": big, "b": big + 1, "c": big + 2, "d": 10**30})
    board._check()
    assert list(board) == ["d", "c", "b", "a"]
    assert board.incr("a", 1) == big + 1
    assert exact(board.score("a")) == exact(big + 1)
    assert board.rank("a", style="competition") == board.rank("b", style="competition") == 3
    assert board.rank("a", style="dense") == 3
    assert members(board.by_score(big + 1, big + 1)) == ["b", "a"]
    assert board.count(big + 1, big + 2, max_inclusive=False) == 2
    assert board.count(big, big + 1, max_inclusive=False) == 0
    assert board.incr("d", 1) == 10**30 + 1
    assert exact(board["d"]) == exact(10**30 + 1)
    # an int and a float of the same value are the same score
    board.set("e", float(big + 2))
    assert board.rank("e", style="competition") == board.rank("c", style="competition")
    board._check()


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])  # (Redis: a double's range)
def test_set_many_into_an_empty_board_takes_ints_beyond_the_float_range(backend: str) -> None:
    # the bulk load's NaN test must not convert ints to float
    board = Leaderboard(backend=backend)  # type: ignore[arg-type]
    assert board.set_many({"a": 1.5, "b": 10**400, "c": -(10**400)}) == 3
    board._check()
    assert board.items() == [("b", 10**400), ("a", 1.5), ("c", -(10**400))]


BIG = 10**400  # an int beyond the float range (about 1.8e308)


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])  # (Redis: a double's range)
def test_ints_beyond_the_float_range_mixed_with_floats_raise_a_clear_error(backend: str) -> None:
    # BIG + 0.5 has no float value: Python raises a bare "int too large to
    # convert to float"; the board names the member and changes nothing
    board = Leaderboard(backend=backend)  # type: ignore[arg-type]
    board.set_many({"big": BIG, "half": 0.5, "next": BIG + 2})
    before = snapshot(board)
    writes = [
        lambda: board.incr("big", 0.5),
        lambda: board.incr("big", 0.5, when="better"),
        lambda: board.incr("half", BIG),
        lambda: board.incr_many([("half", 1), ("new", 2), ("big", 0.5)]),
    ]
    for write in writes:
        with pytest.raises(OverflowError, match=r"of '(big|half)'.*float range"):
            write()
        board._check()
        assert snapshot(board) == before
    small = Leaderboard()
    small.set_many({"big": 0.5, "half": 1})
    for combined in (
        lambda: Leaderboard.union([board], weights=[0.5]),
        lambda: Leaderboard.union([board, small]),
        lambda: Leaderboard.intersection([small, board], weights=[1, BIG]),
    ):
        with pytest.raises(OverflowError, match=r"of '(big|next)'.*float range"):
            combined()
    assert snapshot(board) == before
    # between BIG and BIG + 2 there is no float to interpolate; at a score
    # itself, or next to an infinite one, there is nothing to compute
    with pytest.raises(OverflowError, match=r"percentile 75: no float .*float range"):
        board.score_at_percentile(75)
    assert board.score_at_percentile(100) == BIG + 2
    board.set("top", math.inf)
    assert board.score_at_percentile(90) == math.inf
    # ints alone stay exact
    assert board.incr("big", 1) == BIG + 1
    assert Leaderboard.union([board], weights=[2]).score("next") == 2 * BIG + 4


def test_metadata_of_another_type_or_sign_replaces_the_equal_old_one(
    make_board: Any, tmp_path: Path
) -> None:
    # 1, 1.0 and True (or 0.0 and -0.0) compare equal, but they are not the same value
    for board in (make_board(), Leaderboard.open(tmp_path, fsync="never")):
        board.set("ann", 1, meta={"k": 1, "z": [0.0]})
        board.set_meta("ann", {"k": 1.0, "z": [0.0]})
        assert type(board.meta("ann")["k"]) is float
        board.set("ann", 1, meta={"k": True, "z": [-0.0]})
        got = board.meta("ann")
        assert got["k"] is True and math.copysign(1.0, got["z"][0]) == -1.0
        board._check()
        close = getattr(board, "close", None)
        if close is not None:
            close()
    with Leaderboard.open(tmp_path) as again:  # the log holds the last write
        got = again.meta("ann")
        assert got["k"] is True and math.copysign(1.0, got["z"][0]) == -1.0


def test_metadata_holding_nan_written_again_changes_nothing(make_board: Any) -> None:
    # NaN is unequal to itself: the same metadata written again was taken for
    # new metadata, so set() reported a change and the log got another record
    board = make_board()
    data: dict[str, Any] = {"x": math.nan, "l": [1.0, math.nan], "d": {"y": -math.nan}}
    assert board.set("ann", 1, meta=data) is True
    before = snapshot(board)
    assert board.set("ann", 1, meta=data) is False
    board.set_meta("ann", data)
    assert board.set("ann", 1, meta={"x": math.nan}) is True  # other metadata: a change
    assert board.set("ann", 1, meta={"x": 0.0}) is True
    board._check()
    assert snapshot(board)[2:] == before[2:]  # the clock did not move


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_metadata_holding_nan_written_again_records_nothing(backend: str) -> None:
    board = Leaderboard(backend=backend)  # type: ignore[arg-type]
    data: dict[str, Any] = {"x": math.nan, "l": [math.nan]}
    board.set("ann", 1, meta=data)
    records: list[Any] = []
    board._listener = records.append
    board.set("ann", 1, meta=data)
    board.set_meta("ann", data)
    assert records == []
    # a NaN of the other sign is another value, as -0.0 is
    board.set_meta("ann", {"x": -math.nan, "l": [math.nan]})
    assert len(records) == 1
    assert math.copysign(1.0, board.meta("ann")["x"]) == -1.0


def test_infinities(make_board: Any) -> None:
    board = make_board()
    board.set_many({"top": INF, "mid": 0, "low": -INF})
    board._check()
    assert list(board) == ["top", "mid", "low"]
    assert board.incr("top", 5) == INF
    assert board.count(-INF, INF) == 3
    assert members(board.by_score(-INF, INF, min_inclusive=False, max_inclusive=False)) == ["mid"]
    assert members(board.by_score(INF, INF)) == ["top"]
    board.set("top2", INF)
    assert board.rank("top2", style="competition") == 1
    assert board.rank("top2") == 2
    assert board.rank_for_score(INF) == 3
    assert board.remove_by_score(INF, None) == 2
    board._check()
    assert list(board) == ["mid", "low"]


# ----------------------------------------------------------------------
# Percentiles
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "case",
    [
        ("desc", "ann", 60.0, 100.0, 80.0),
        ("desc", "cid", 20.0, 60.0, 40.0),
        ("desc", "eve", 0.0, 20.0, 10.0),
        ("asc", "ann", 0.0, 40.0, 20.0),
        ("asc", "dee", 40.0, 80.0, 60.0),
        ("asc", "eve", 80.0, 100.0, 90.0),
    ],
)
def test_percentile_documented_formulas(make_board: Any, case: tuple[Any, ...]) -> None:
    order, member, below, at_or_below, midpoint = case
    board = tied(make_board, order=order)
    assert board.percentile(member, method="below") == below
    assert board.percentile(member, method="at_or_below") == at_or_below
    assert board.percentile(member, method="midpoint") == midpoint
    assert board.percentile(member) == midpoint
    assert board.percentile("nobody") is None


@pytest.mark.parametrize(
    ("order", "p", "want"),
    [
        ("desc", 0, 10),
        ("desc", 10, 14.0),
        ("desc", 25, 20),
        ("desc", 50, 30),
        ("desc", 90, 46.0),
        ("desc", 100, 50),
        ("asc", 0, 50),
        ("asc", 50, 30),
        ("asc", 90, 14.0),
        ("asc", 100, 10),
    ],
)
def test_score_at_percentile_interpolates(make_board: Any, order: str, p: float, want: Any) -> None:
    board = make_board(order=order)
    board.set_many({"a": 10, "b": 20, "c": 30, "d": 40, "e": 50})
    assert board.score_at_percentile(p) == pytest.approx(want)


@numbers.Real.register
class Percent:
    """A real number that is neither an ``int`` nor a ``float``, as a NumPy
    ``float32`` is not: it says so to ``numbers`` and converts with ``float()``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return f"Percent({self.value})"


@pytest.mark.parametrize(
    "p",
    [Percent(90), Percent(12.5), Fraction(45, 2), Fraction(100)],
    ids=repr,
)
def test_score_at_percentile_takes_any_real_number(make_or_sharded: Any, p: Any) -> None:
    # A NumPy float32 or int64 percentile was refused with "percentile must
    # be a number from 0 to 100, not np.float32(90.0)": it is one, so it is
    # read as the float it equals.
    board = make_or_sharded()
    board.set_many({"a": 10, "b": 20, "c": 30, "d": 40, "e": 50})
    assert board.score_at_percentile(p) == board.score_at_percentile(float(p))


@pytest.mark.parametrize(
    ("scores", "want"),
    [
        ([INF, INF], INF),
        ([-INF, -INF], -INF),
        ([-INF, 5], -INF),
        ([5, INF], INF),
        ([-INF, INF], -INF),  # no midpoint: the lower neighbour
        ([7], 7),
    ],
)
def test_score_at_percentile_infinite_neighbours(
    make_board: Any, scores: list[Any], want: Any
) -> None:
    board = make_board()
    board.set_many([(f"m{i}", s) for i, s in enumerate(scores)])
    assert board.score_at_percentile(50) == want


@pytest.mark.parametrize(
    ("scores", "p", "want"),
    [
        ([-1e308, 1e308], 50, 0.0),
        ([-1e308, 1e308], 75, 5e307),
        ([-sys.float_info.max, sys.float_info.max], 50, 0.0),
        # ints within the float range whose difference is not: they raised
        # OverflowError, saying an int lay beyond the float range
        ([-(10**308), 10**308], 50, 0.0),
        ([-(10**308), 10**308], 75, 5e307),
        ([-(10**308), 1e308], 25, -5e307),
    ],
    ids=["floats", "floats-75", "float-max", "ints", "ints-75", "int-and-float"],
)
def test_score_at_percentile_between_huge_opposite_neighbours(
    make_board: Any, scores: list[Any], p: float, want: Any
) -> None:
    # their difference overflows to inf; the interpolated score must still
    # lie between the two neighbours, not be inf
    board = make_board()
    board.set_many([(f"m{i}", s) for i, s in enumerate(scores)])
    assert board.score_at_percentile(p) == pytest.approx(want)


# ----------------------------------------------------------------------
# Point reads
# ----------------------------------------------------------------------
def test_rank_for_score(make_board: Any) -> None:
    board = tied(make_board)
    assert board.rank_for_score(60) == 1
    assert board.rank_for_score(50) == 3
    assert board.rank_for_score(50, style="competition") == 1
    assert board.rank_for_score(50, style="dense") == 1
    assert board.rank_for_score(40) == 3
    assert board.rank_for_score(40, style="competition") == 3
    assert board.rank_for_score(40, style="dense") == 2
    assert board.rank_for_score(30) == 5
    assert board.rank_for_score(30, style="dense") == 2
    assert board.rank_for_score(0) == 6
    assert board.rank_for_score(0, style="dense") == 4
    assert len(board) == 5  # nothing was inserted
    asc = tied(make_board, order="asc")
    assert asc.rank_for_score(30) == 4
    assert asc.rank_for_score(30, style="competition") == 2
    assert asc.rank_for_score(5) == 1


def test_at(make_board: Any) -> None:
    board = ten(make_board)
    assert row(board.at(1)) == ("p9", 9, 1, None)
    assert row(board.at(10)) == ("p0", 0, 10, None)
    assert row(board.at(-1)) == ("p0", 0, 10, None)
    assert row(board.at(-10)) == ("p9", 9, 1, None)
    for bad in (0, 11, -11):
        with pytest.raises(IndexError):
            board.at(bad)
    t = tied(make_board)
    assert row(t.at(2, style="competition")) == ("bob", 50, 1, None)
    assert row(t.at(-1, style="dense")) == ("eve", 10, 3, None)


def test_entry_and_entries(make_board: Any) -> None:
    board = tied(make_board)
    board.set_meta("cid", {"name": "Cid"})
    assert row(board.entry("cid")) == ("cid", 30, 3, None)
    assert row(board.entry("cid", with_meta=True)) == ("cid", 30, 3, {"name": "Cid"})
    assert row(board.entry("cid", style="dense")) == ("cid", 30, 2, None)
    assert board.entry("zed") is None
    got = board.entries(["eve", "zed", "ann"], style="competition")
    assert [row(e) for e in got] == [("eve", 10, 5, None), None, ("ann", 50, 1, None)]
    assert board.entries([]) == []


# ----------------------------------------------------------------------
# Range reads
# ----------------------------------------------------------------------
def test_top(make_board: Any) -> None:
    board = ten(make_board)
    assert rows(board.top(3)) == [("p9", 9, 1, None), ("p8", 8, 2, None), ("p7", 7, 3, None)]
    assert board.top(0) == []
    assert len(board.top()) == 10
    assert members(board.top(100)) == [f"p{i}" for i in range(9, -1, -1)]
    asc = ten(make_board, order="asc")
    assert members(asc.top(2)) == ["p0", "p1"]


@pytest.mark.parametrize(
    ("start", "stop", "want"),
    [
        (1, -1, list(range(9, -1, -1))),
        (2, 4, [8, 7, 6]),
        (-3, -1, [2, 1, 0]),
        (8, 99, [2, 1, 0]),
        (-99, 2, [9, 8]),
        (5, 3, []),
        (11, 12, []),
        (-1, -3, []),
        (10, 10, [0]),
        (1, 1, [9]),
        (-20, -11, []),
    ],
)
def test_by_rank_clamps_like_zrange(
    make_board: Any, start: int, stop: int, want: list[int]
) -> None:
    board = ten(make_board)
    got = board.by_rank(start, stop)
    assert members(got) == [f"p{i}" for i in want]
    assert ranks(got) == [10 - i for i in want]


def test_by_rank_defaults_to_everything(make_board: Any) -> None:
    board = ten(make_board, order="asc")
    assert members(board.by_rank()) == [f"p{i}" for i in range(10)]


@pytest.mark.parametrize(
    ("number", "size", "want_ranks"),
    [
        (1, 4, [1, 2, 3, 4]),
        (2, 4, [5, 6, 7, 8]),
        (3, 4, [9, 10]),
        (0, 4, [1, 2, 3, 4]),
        (-3, 4, [1, 2, 3, 4]),
        (99, 4, [9, 10]),
        (2, 5, [6, 7, 8, 9, 10]),
        (1, 25, list(range(1, 11))),
        (10, 1, [10]),
    ],
)
def test_page_clamps(make_board: Any, number: int, size: int, want_ranks: list[int]) -> None:
    board = ten(make_board)
    got = board.page(number, size)
    assert ranks(got) == want_ranks
    assert members(got) == [f"p{10 - r}" for r in want_ranks]


#: A count beyond the float range (about 1.8e308): it is an int like any other.
HUGE = 10**400


@pytest.mark.parametrize(
    ("read", "want_ranks"),
    [
        (lambda b: b.page(1, HUGE), list(range(1, 11))),
        (lambda b: b.page(2, HUGE), list(range(1, 11))),  # clamped to the only page
        (lambda b: b.page(HUGE, 4), [9, 10]),
        (lambda b: b.page(-HUGE, 4), [1, 2, 3, 4]),
        (lambda b: b.top(HUGE), list(range(1, 11))),
        (lambda b: b.around("p5", HUGE, 0), [1, 2, 3, 4, 5]),
        (lambda b: b.around("p5", 0, HUGE), [5, 6, 7, 8, 9, 10]),
        (lambda b: b.around("p5", 0, HUGE, fill=True), list(range(1, 11))),
        (lambda b: b.by_rank(-HUGE, HUGE), list(range(1, 11))),
        (lambda b: b.by_rank(HUGE, -HUGE), []),
        (lambda b: b.by_score(offset=1, limit=HUGE), list(range(2, 11))),
        (lambda b: b.by_score(offset=HUGE), []),
    ],
)
def test_counts_beyond_the_float_range(
    make_or_sharded: Any, read: Any, want_ranks: list[int]
) -> None:
    # a Redis board's script reads numbers as doubles: a page size beyond
    # the double range was inf there, page 1 started at (1 - 1) * inf = NaN
    # and Redis answered "value is not an integer or out of range"
    board = ten(make_or_sharded)
    got = read(board)
    assert ranks(got) == want_ranks
    assert members(got) == [f"p{10 - r}" for r in want_ranks]
    assert board.pages(HUGE) == 1


def test_pages(make_board: Any) -> None:
    board = ten(make_board)
    assert board.pages(4) == 3
    assert board.pages(5) == 2
    assert board.pages(10) == 1
    assert board.pages(11) == 1
    assert board.pages(1) == 10
    assert board.pages() == 1
    assert members(board.page(1)) == members(board.top(25))
    board.set_many({f"q{i}": i for i in range(20)})
    assert board.pages() == 2  # 30 members, 25 a page
    assert len(board.page(2)) == 5


@pytest.mark.parametrize(
    "case",
    [
        ("p8", 2, 2, False, [1, 2, 3, 4]),
        ("p8", 2, 2, True, [1, 2, 3, 4, 5]),
        ("p9", 2, 2, False, [1, 2, 3]),
        ("p9", 2, 2, True, [1, 2, 3, 4, 5]),
        ("p0", 2, 2, False, [8, 9, 10]),
        ("p0", 2, 2, True, [6, 7, 8, 9, 10]),
        ("p1", 1, 3, True, [6, 7, 8, 9, 10]),
        ("p5", 2, 2, False, [3, 4, 5, 6, 7]),
        ("p5", 2, 2, True, [3, 4, 5, 6, 7]),
        ("p5", 0, 0, False, [5]),
        ("p5", 0, 0, True, [5]),
        ("p5", 0, 3, False, [5, 6, 7, 8]),
        ("p5", 20, 20, False, list(range(1, 11))),
        ("p5", 20, 20, True, list(range(1, 11))),
        ("p9", 0, 20, True, list(range(1, 11))),
    ],
)
def test_around(make_board: Any, case: tuple[Any, ...]) -> None:
    member, above, below, fill, want_ranks = case
    board = ten(make_board)
    got = board.around(member, above, below, fill=fill)
    assert ranks(got) == want_ranks
    assert members(got) == [f"p{10 - r}" for r in want_ranks]
    assert member in members(got)


def test_around_defaults_and_absent_member(make_board: Any) -> None:
    board = make_board()
    board.set_many({f"p{i}": i for i in range(20)})  # p19 rank 1 ... p0 rank 20
    assert ranks(board.around("p10")) == list(range(5, 16))
    assert board.around("nobody") == []
    assert board.around("nobody", fill=True) == []


def test_around_uses_rank_style(make_board: Any) -> None:
    board = tied(make_board)
    assert ranks(board.around("dee", 1, 1, style="competition")) == [3, 3, 5]
    assert ranks(board.around("dee", 1, 1, style="dense")) == [2, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        ({"min": 3, "max": 6}, [6, 5, 4, 3]),
        ({"min": 3, "max": 6, "min_inclusive": False}, [6, 5, 4]),
        ({"min": 3, "max": 6, "max_inclusive": False}, [5, 4, 3]),
        ({"min": 3, "max": 6, "min_inclusive": False, "max_inclusive": False}, [5, 4]),
        ({"max": 2}, [2, 1, 0]),
        ({"min": 7}, [9, 8, 7]),
        ({}, list(range(9, -1, -1))),
        ({"min": -INF, "max": INF}, list(range(9, -1, -1))),
        ({"min": 2.5, "max": 4.5}, [4, 3]),
        ({"min": 6, "max": 3}, []),
        ({"min": 4, "max": 4, "min_inclusive": False}, []),
        ({"min": 4, "max": 4}, [4]),
        ({"min": 3, "max": 6, "offset": 1, "limit": 2}, [5, 4]),
        ({"min": 3, "max": 6, "offset": 3}, [3]),
        ({"min": 3, "max": 6, "offset": 4}, []),
        ({"min": 3, "max": 6, "offset": 99, "limit": 5}, []),
        ({"min": 3, "max": 6, "limit": 0}, []),
        ({"limit": 3}, [9, 8, 7]),
        ({"offset": 8}, [1, 0]),
    ],
)
def test_by_score_and_count(make_board: Any, kwargs: dict[str, Any], want: list[int]) -> None:
    board = ten(make_board)
    got = board.by_score(**kwargs)
    assert members(got) == [f"p{i}" for i in want]
    assert ranks(got) == [10 - i for i in want]
    bounds = {k: v for k, v in kwargs.items() if k not in ("offset", "limit")}
    if "offset" not in kwargs and "limit" not in kwargs:
        assert board.count(**bounds) == len(want)


def test_by_score_on_asc_board(make_board: Any) -> None:
    board = ten(make_board, order="asc")
    got = board.by_score(3, 6)
    assert members(got) == ["p3", "p4", "p5", "p6"]
    assert ranks(got) == [4, 5, 6, 7]
    assert members(board.by_score(3, 6, offset=1, limit=2)) == ["p4", "p5"]
    assert members(board.by_score(3, 6, min_inclusive=False)) == ["p4", "p5", "p6"]
    assert board.count(3, 6, max_inclusive=False) == 3


def test_by_score_reports_tied_ranks(make_board: Any) -> None:
    board = tied(make_board)
    assert ranks(board.by_score(30, 30, style="competition")) == [3, 3]
    assert ranks(board.by_score(30, 30, style="dense")) == [2, 2]
    assert ranks(board.by_score(10, 50, offset=1, limit=1, style="competition")) == [1]


def test_score_range_fuzz(make_board: Any) -> None:
    rng = random.Random(100)
    for order in ("desc", "asc"):
        board = make_board(order=order)
        model = Model(order=order)
        pairs = [(f"m{i}", rng.choice([-INF, INF, *range(-5, 6), 0.5, 2.5])) for i in range(200)]
        board.set_many(pairs)
        model.set_many(pairs)
        board._check()
        bounds = [None, -INF, INF, -6, -5, -1, 0, 0.5, 1, 2, 2.5, 3, 5, 7]
        all_rows = model.rows()  # the board does not change below: sort once
        for _ in range(100):
            low, high = rng.choice(bounds), rng.choice(bounds)
            incl = (rng.random() < 0.5, rng.random() < 0.5)
            flags = {"min_inclusive": incl[0], "max_inclusive": incl[1]}
            want = [r for r in all_rows if model.in_range(r[1], low, high, *incl)]
            assert board.count(low, high, **flags) == len(want)
            got = board.by_score(low, high, **flags)
            assert len(got) == len(want)
            assert rows(got) == want
            offset, limit = rng.randint(0, 30), rng.choice([None, 0, 1, 7, 50])
            end = None if limit is None else offset + limit
            got = board.by_score(low, high, offset=offset, limit=limit, **flags)
            assert rows(got) == want[offset:end]


def test_items_and_iteration(make_board: Any) -> None:
    board = tied(make_board)
    assert board.items() == [("ann", 50), ("bob", 50), ("cid", 30), ("dee", 30), ("eve", 10)]
    assert list(board) == [m for m, _ in board.items()]
    asc = tied(make_board, order="asc")
    assert asc.items() == [("eve", 10), ("cid", 30), ("dee", 30), ("ann", 50), ("bob", 50)]


# ----------------------------------------------------------------------
# Pops and pruning
# ----------------------------------------------------------------------
def test_pops(make_board: Any) -> None:
    board = ten(make_board)
    assert rows(board.pop_best(2)) == [("p9", 9, 1, None), ("p8", 8, 2, None)]
    board._check()
    assert rows(board.pop_worst(3)) == [("p0", 0, 8, None), ("p1", 1, 7, None), ("p2", 2, 6, None)]
    board._check()
    assert board.pop_best(0) == [] and board.pop_worst(0) == []
    assert list(board) == ["p7", "p6", "p5", "p4", "p3"]
    assert rows(board.pop_best()) == [("p7", 7, 1, None)]
    assert rows(board.pop_worst()) == [("p3", 3, 4, None)]
    assert members(board.pop_worst(99)) == ["p4", "p5", "p6"]
    board._check()
    assert len(board) == 0
    assert board.pop_best() == []


def test_pops_on_asc_board(make_board: Any) -> None:
    board = ten(make_board, order="asc")
    assert members(board.pop_best(2)) == ["p0", "p1"]
    assert members(board.pop_worst(2)) == ["p9", "p8"]
    board._check()
    assert list(board) == [f"p{i}" for i in range(2, 8)]


@pytest.mark.parametrize(
    ("start", "stop", "removed", "left"),
    [
        (2, -1, 9, [9]),
        (-2, -1, 2, list(range(9, 1, -1))),
        (1, 3, 3, list(range(6, -1, -1))),
        (4, 4, 1, [9, 8, 7, 5, 4, 3, 2, 1, 0]),
        (5, 2, 0, list(range(9, -1, -1))),
        (11, 20, 0, list(range(9, -1, -1))),
        (-99, 99, 10, []),
    ],
)
def test_remove_by_rank(
    make_board: Any, start: int, stop: int, removed: int, left: list[int]
) -> None:
    board = ten(make_board)
    assert board.remove_by_rank(start, stop) == removed
    board._check()
    assert list(board) == [f"p{i}" for i in left]


def test_remove_by_score(make_board: Any) -> None:
    board = ten(make_board)
    assert board.remove_by_score(3, 5) == 3
    assert board.remove_by_score(6, 9, min_inclusive=False, max_inclusive=False) == 2
    assert board.remove_by_score(100, 200) == 0
    assert board.remove_by_score(None, 0) == 1
    board._check()
    assert list(board) == ["p9", "p6", "p2", "p1"]
    assert board.remove_by_score(None, None) == 4
    assert len(board) == 0


def test_keep_top(make_board: Any) -> None:
    board = ten(make_board)
    assert board.keep_top(20) == 0
    assert board.keep_top(10) == 0
    assert board.keep_top(3) == 7
    board._check()
    assert list(board) == ["p9", "p8", "p7"]
    assert board.keep_top(0) == 3
    assert len(board) == 0
    assert board.keep_top(0) == 0
    asc = ten(make_board, order="asc")
    asc.keep_top(2)
    assert list(asc) == ["p0", "p1"]


# ----------------------------------------------------------------------
# Metadata
# ----------------------------------------------------------------------
def test_metadata_round_trip_and_copies(make_board: Any) -> None:
    board = make_board()
    data: dict[str, Any] = {"name": "Ann", "tags": ("a", "b"), "nested": {"x": [1, 2.5, None]}}
    assert board.set("ann", 5, meta=data) is True
    board._check()
    stored = board.meta("ann")
    assert stored == {"name": "Ann", "tags": ["a", "b"], "nested": {"x": [1, 2.5, None]}}
    # copies in and out: mutating either side changes nothing stored
    data["name"] = "changed"
    stored["nested"]["x"].append(99)
    assert board.meta("ann")["name"] == "Ann"
    assert board.meta("ann")["nested"]["x"] == [1, 2.5, None]
    board.entry("ann", with_meta=True).meta["name"] = "x"
    assert board.meta("ann")["name"] == "Ann"
    assert board.meta("nobody") is None


def test_metadata_only_on_request(make_board: Any) -> None:
    board = tied(make_board)
    board.set_meta("ann", {"n": 1})
    board.set_meta("dee", {"n": 4})
    for entries in (
        board.top(5),
        board.by_rank(),
        board.page(1),
        board.around("cid", 5, 5),
        board.by_score(),
        [board.at(1), board.entry("ann")],
        board.entries(["ann", "dee"]),
    ):
        assert all(e.meta is None for e in entries)
    with_meta = {
        "top": board.top(5, with_meta=True),
        "by_rank": board.by_rank(with_meta=True),
        "page": board.page(1, with_meta=True),
        "around": board.around("cid", 5, 5, with_meta=True),
        "by_score": board.by_score(with_meta=True),
    }
    for name, entries in with_meta.items():
        assert [e.meta for e in entries] == [{"n": 1}, None, None, {"n": 4}, None], name
    assert board.at(4, with_meta=True).meta == {"n": 4}
    assert [e.meta for e in board.entries(["dee", "bob"], with_meta=True)] == [{"n": 4}, None]
    popped = board.pop_best(1, with_meta=True) + board.pop_worst(2, with_meta=True)
    assert [e.meta for e in popped] == [{"n": 1}, None, {"n": 4}]


def test_set_meta(make_board: Any) -> None:
    board = make_board()
    board.set("a", 1)
    board.set_meta("a", {"k": 1})
    assert board.meta("a") == {"k": 1}
    board.set_meta("a", {"k": 2})
    assert board.meta("a") == {"k": 2}
    board.set_meta("a", None)
    assert board.meta("a") is None
    board.set_meta("a", None)
    assert board.meta("a") is None
    board._check()
    # set() replaces metadata only when it writes
    assert board.set("a", 1, meta={"k": 3}) is True  # same score, new metadata
    assert board.set("a", 1, meta={"k": 3}) is False
    assert board.set("a", 0, when="better", meta={"k": 4}) is False
    assert board.meta("a") == {"k": 3}
    assert board.set("a", 2, meta={"k": 5}) is True
    assert board.meta("a") == {"k": 5}
    assert board.set("a", 3) is True  # no meta given: kept
    assert board.meta("a") == {"k": 5}
    assert board.set("b", 1, when="present", meta={"k": 6}) is False
    assert "b" not in board and board.meta("b") is None


@pytest.mark.parametrize(
    "removal",
    [
        lambda b: b.remove("p5"),
        lambda b: b.remove_many(["p5", "p0"]),
        lambda b: b.remove_by_rank(5, 5),
        lambda b: b.remove_by_rank(2, -1),
        lambda b: b.remove_by_score(5, 5),
        lambda b: b.remove_by_score(None, 6, max_inclusive=False),
        lambda b: b.keep_top(4),
        lambda b: b.pop_worst(6),
        lambda b: b.pop_best(5),
        lambda b: b.clear(),
    ],
)
def test_metadata_leaves_with_its_member(make_board: Any, removal: Any) -> None:
    board = ten(make_board)
    board.set_meta("p5", {"who": "p5"})
    board.set_meta("p9", {"who": "p9"})
    removal(board)
    board._check()
    assert "p5" not in board
    assert board.meta("p5") is None
    # coming back does not bring the old metadata back
    board.set("p5", 5)
    assert board.meta("p5") is None
    assert board.entry("p5", with_meta=True).meta is None
    if "p9" in board:
        assert board.meta("p9") == {"who": "p9"}


# ----------------------------------------------------------------------
# Union and intersection
# ----------------------------------------------------------------------
def pair(make_board: Any, **kwargs: Any) -> tuple[Any, Any]:
    a, b = make_board(**kwargs), make_board(**kwargs)
    a.set_many({"ann": 10, "bob": 5})
    b.set_many({"bob": 7, "cid": 1})
    return a, b


@pytest.mark.parametrize(
    ("kind", "weights", "aggregate", "want"),
    [
        ("union", None, "sum", [("bob", 12), ("ann", 10), ("cid", 1)]),
        ("union", None, "min", [("ann", 10), ("bob", 5), ("cid", 1)]),
        ("union", None, "max", [("ann", 10), ("bob", 7), ("cid", 1)]),
        ("union", [2, -1], "sum", [("ann", 20), ("bob", 3), ("cid", -1)]),
        ("union", [1, 0.5], "max", [("ann", 10), ("bob", 5), ("cid", 0.5)]),
        ("intersection", None, "sum", [("bob", 12)]),
        ("intersection", [1, 2], "max", [("bob", 14)]),
        ("intersection", [1, 2], "min", [("bob", 5)]),
    ],
)
def test_union_and_intersection(
    make_board: Any, kind: str, weights: Any, aggregate: str, want: list[Any]
) -> None:
    a, b = pair(make_board)
    before = (a.items(), b.items())
    result = getattr(a, kind)([a, b], weights=weights, aggregate=aggregate)
    result._check()
    assert result.items() == want
    assert (a.items(), b.items()) == before  # inputs untouched


def test_union_of_infinities_follows_redis(make_board: Any) -> None:
    a, b = make_board(), make_board()
    a.set_many({"x": INF, "y": INF, "z": 3})
    b.set_many({"x": -INF, "y": 2, "z": -INF})
    summed = a.union([a, b])
    assert summed.score("x") == 0  # inf + -inf counts as 0
    assert summed.score("y") == INF
    assert summed.score("z") == -INF
    zeroed = a.union([a, b], weights=[0, 1])  # 0 * inf counts as 0
    assert zeroed.score("x") == -INF
    assert zeroed.score("y") == 2
    assert zeroed.score("z") == -INF
    assert a.union([a, b], weights=[0, 0]).items() == [("x", 0), ("y", 0), ("z", 0)]
    assert a.union([a, b], aggregate="max").score("x") == INF
    assert a.intersection([a, b], aggregate="min").score("y") == 2
    summed._check()


def test_union_tie_order_is_first_appearance(make_board: Any) -> None:
    a, b = make_board(), make_board()
    a.set_many({"p": 5, "q": 1})
    b.set_many({"r": 5, "q": 4})
    # all total 5: p and q appear first (a, best first), then r
    assert list(a.union([a, b])) == ["p", "q", "r"]
    assert list(b.union([b, a])) == ["r", "q", "p"]


def test_union_metadata_and_config(make_board: Any) -> None:
    a, b = pair(make_board)
    b.set_meta("bob", {"from": "b"})
    b.set_meta("cid", {"from": "b"})
    a.set_meta("ann", {"from": "a"})
    result = a.union([a, b], order="asc")
    assert result.order == "asc"
    assert result.items() == [("cid", 1), ("ann", 10), ("bob", 12)]
    assert {m: result.meta(m) for m in result} == {
        "cid": {"from": "b"},
        "ann": {"from": "a"},
        "bob": {"from": "b"},
    }
    a.set_meta("bob", {"from": "a"})
    assert a.intersection([a, b]).meta("bob") == {"from": "a"}
    assert a.intersection([b, a]).meta("bob") == {"from": "b"}
    assert a.union([a]).items() == a.items()


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("size", [1, 2, 300])
@pytest.mark.parametrize("index", ["sortedlist", "skiplist"])
def test_union_is_set_many_then_set_meta_of_each(
    index: str, tie_break: str, order: str, size: int
) -> None:
    """The documented result, written out: the combined scores set with one
    ``set_many`` in first-appearance order, then each member's metadata
    from the first board that has some.  Equal scores make the tie order
    (clocks, or members) visible in the items."""
    a, b = Leaderboard(backend=index), Leaderboard(backend=index)
    a.set_many([(i, i % 3) for i in range(size)])
    b.set_many([(i, i % 2) for i in range(size // 2, size + 5)])
    for i in range(0, size, 3):
        a.set_meta(i, {"from": "a", "i": i})
    for i in range(size // 2, size + 5, 2):
        b.set_meta(i, {"from": "b"})
    for intersect in (False, True):
        combine = Leaderboard.intersection if intersect else Leaderboard.union
        result = combine([a, b], tie_break=tie_break, order=order)
        totals: dict[Any, Any] = {}
        for board in (a, b):
            for member, score in board.items():
                totals[member] = totals.get(member, 0) + score
        if intersect:
            totals = {m: s for m, s in totals.items() if m in a and m in b}
        expected = Leaderboard(tie_break=tie_break, order=order)
        expected.set_many(list(totals.items()))
        for member in totals:
            data = a.meta(member) or b.meta(member)
            if data is not None:
                expected.set_meta(member, data)
        assert result.items() == expected.items()
        assert [result.meta(m) for m in result] == [expected.meta(m) for m in expected]
        assert result.clock == expected.clock == len(totals)
        result._check()


def test_union_into_member_ties_refuses_mixed_members_before_creating_it(
    tmp_path: Path,
) -> None:
    """A result that breaks ties by member cannot hold str and int members:
    the union says so before the result exists, so a durable result leaves
    no directory behind (it was created, empty, and the error came after)."""
    from rankengine.durable.board import DurableLeaderboard

    by_member, first = Leaderboard(tie_break="member"), Leaderboard()
    by_member.set_many({"ann": 1, "bob": 2})
    first.set_many({7: 5, "cid": 3})
    path = tmp_path / "result"
    for calls in (
        lambda: DurableLeaderboard.union([by_member, first], path=path),
        lambda: DurableLeaderboard.union([first], tie_break="member", path=path),
        lambda: Leaderboard.union([first, by_member], tie_break="member"),
    ):
        with pytest.raises(TypeError, match=r"ties by member.*would not compare"):
            calls()
        assert not path.exists()
    # members of one type in the result are fine
    assert Leaderboard.intersection([by_member, first], tie_break="member").items() == []
    with DurableLeaderboard.union([by_member], path=path) as result:
        assert result.items() == [("bob", 2), ("ann", 1)]


def test_intersection_of_three(make_board: Any) -> None:
    boards = [make_board() for _ in range(3)]
    boards[0].set_many({"a": 1, "b": 2, "c": 3})
    boards[1].set_many({"b": 20, "c": 30, "d": 40})
    boards[2].set_many({"c": 300, "b": 200})
    assert boards[0].intersection(boards).items() == [("c", 333), ("b", 222)]
    assert boards[0].intersection(boards, weights=[1, 1, 0]).items() == [("c", 33), ("b", 22)]


def test_union_intersection_match_the_model(make_board: Any) -> None:
    rng = random.Random(5)
    values = [-INF, INF, 0, 1, 2, 3, 2.5]
    for _ in range(20):
        boards, models = [], []
        for _ in range(rng.randint(1, 3)):
            board, model = make_board(), Model()
            pairs = [(f"m{rng.randint(0, 8)}", rng.choice(values)) for _ in range(6)]
            board.set_many(pairs)
            model.set_many(pairs)
            boards.append(board)
            models.append(model)
        weights = rng.choice([None, [rng.choice([0, 1, -1, 0.5, 2]) for _ in boards]])
        aggregate = rng.choice(["sum", "min", "max"])
        for intersect in (False, True):
            op = boards[0].intersection if intersect else boards[0].union
            got = op(boards, weights=weights, aggregate=aggregate)
            got._check()
            want = combine(models, weights=weights, aggregate=aggregate, intersect=intersect)
            assert got.items() == want.items()


COMBINE_SCORES = st.sampled_from([-INF, INF, 0, 1, 2, 3, -2, 2.5, -0.5, 2**70 + 1, -(2**64)])
COMBINE_WEIGHTS = st.sampled_from([0, 1, -1, 2, 0.5, -0.25, INF, -INF, 3**40])


@st.composite
def combine_cases(draw: Any) -> dict[str, Any]:
    """Boards of mixed settings, each with some scores and metadata."""
    boards = []
    for _ in range(draw(st.integers(1, 3))):
        members = draw(st.lists(st.sampled_from("abcdef"), max_size=6))
        boards.append(
            {
                "config": {
                    "order": draw(st.sampled_from(["desc", "asc"])),
                    "tie_break": draw(st.sampled_from(["first", "member"])),
                },
                "pairs": [(m, draw(COMBINE_SCORES)) for m in members],
                "metas": {m: {"from": len(boards), "m": m} for m in members if draw(st.booleans())},
            }
        )
    # a board may appear more than once (combined with itself)
    picks = draw(st.lists(st.integers(0, len(boards) - 1), min_size=1, max_size=4))
    return {
        "boards": boards,
        "picks": picks,
        "weights": draw(
            st.none() | st.lists(COMBINE_WEIGHTS, min_size=len(picks), max_size=len(picks))
        ),
        "aggregate": draw(st.sampled_from(["sum", "min", "max"])),
        "config": draw(st.sampled_from([{}, {"order": "asc"}, {"tie_break": "member"}])),
        "intersect": draw(st.booleans()),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=combine_cases())
def test_union_and_intersection_match_a_dict_model(make_board: Any, case: dict[str, Any]) -> None:
    """Every backend (Redis included) against the model: scores with their
    types and signs, the tie order, metadata, and the inputs left alone."""
    boards, models = [], []
    for spec in case["boards"]:
        board, model = make_board(**spec["config"]), Model(**spec["config"])
        for one in (board, model):
            one.set_many(spec["pairs"])
            for member, meta in spec["metas"].items():
                one.set_meta(member, meta)
        boards.append(board)
        models.append(model)
    before = [snapshot(board) for board in boards]
    chosen = [boards[i] for i in case["picks"]]
    kind = "intersection" if case["intersect"] else "union"
    got = getattr(chosen[0], kind)(
        chosen, weights=case["weights"], aggregate=case["aggregate"], **case["config"]
    )
    want = combine(
        [models[i] for i in case["picks"]],
        weights=case["weights"],
        aggregate=case["aggregate"],
        intersect=case["intersect"],
        **case["config"],
    )
    got._check()

    def rows(board: Any) -> list[tuple[Any, str, Any]]:
        return [(m, repr(s), board.meta(m)) for m, s in board.items()]

    assert rows(got) == rows(want)
    assert [snapshot(board) for board in boards] == before


# ----------------------------------------------------------------------
# Many writes against the model
# ----------------------------------------------------------------------
@pytest.mark.parametrize("order", ["desc", "asc", ("desc", "asc")])
@pytest.mark.parametrize("tie_break", ["first", "member"])
def test_sorting_stress_matches_reference_sort(make_board: Any, order: Any, tie_break: str) -> None:
    rng = random.Random(repr((order, tie_break)))
    board = make_board(order=order, tie_break=tie_break)
    model = Model(order=order, tie_break=tie_break)

    def one() -> Any:
        return rng.choice([rng.randint(0, 4), rng.random() * 4])

    def score() -> Any:
        return (one(), one()) if isinstance(order, tuple) else one()

    for step in range(400):
        member = f"m{rng.randint(0, 60)}"
        if rng.random() < 0.2:
            assert board.remove(member) == model.remove(member)
        else:
            s = score()
            assert board.set(member, s) == model.set(member, s)
        if step % 50 == 0:
            board._check()
            assert board.items() == model.items()
    board._check()
    assert board.items() == model.items()
    for style in STYLES:
        assert rows(board.top(100, style=style)) == model.top(100, style=style)


# ----------------------------------------------------------------------
# set_many into an empty board (a column-wise bulk load) equals set() calls
# ----------------------------------------------------------------------
_BULK_MEMBERS = st.sampled_from(["a", "b", "c", "d", b"e", 7, 8, True, 1.5])
_BULK_SCORES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, -0.0, 0.0, float("inf"), float("-inf"), float("nan"), 2**70, 10**400]),
    st.sampled_from([True, "x", None]),
)


def _bulk_state(board: Any) -> tuple[Any, ...]:
    return (
        board.items(),
        [board.rank(m) for m, _ in board.items()],
        board.clock,
        list(board._export()),  # tie clocks too, as a snapshot would keep them
    )


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize(
    "shape", list(itertools.product(["desc", "asc"], ["first", "member"])), ids=str
)
@settings(max_examples=80, deadline=None)
@given(
    batch=st.lists(st.tuples(_BULK_MEMBERS, _BULK_SCORES), max_size=12),
    as_mapping=st.booleans(),
    pre_clock=st.integers(0, 3),
)
def test_set_many_on_an_empty_board_equals_set_calls(
    backend: str,
    shape: tuple[str, str],
    batch: list[tuple[Any, Any]],
    as_mapping: bool,
    pre_clock: int,
) -> None:
    order, tie_break = shape
    bulk = Leaderboard(backend=backend, order=order, tie_break=tie_break)  # type: ignore[arg-type]
    loop = Leaderboard(backend=backend, order=order, tie_break=tie_break)  # type: ignore[arg-type]
    for board in (bulk, loop):  # a used, emptied board: its clock is not 0
        for i in range(pre_clock):
            board.set("tmp", i + 1)
        board.remove("tmp")
    items: Any = dict(batch) if as_mapping else batch
    pairs = list(items.items()) if as_mapping else batch
    try:
        with loop._lock:
            # validate everything first, as set_many promises
            for member, score in pairs:
                loop._check_member(member)
                loop._codec.check(score, "score")
            if tie_break == "member" and len({type(m) for m, _ in pairs}) > 1:
                raise TypeError("mixed member types")
    except (TypeError, ValueError):
        with pytest.raises((TypeError, ValueError)):
            bulk.set_many(items)
        assert len(bulk) == 0
        bulk._check()
        return
    for member, score in pairs:
        loop.set(member, score)
    changed = bulk.set_many(items if as_mapping else iter(batch))
    bulk._check()
    assert changed == len({m for m, _ in pairs})
    assert _bulk_state(bulk) == _bulk_state(loop)
    # and it goes on like the loop-built board (ties read from the index)
    for member, _ in pairs[:4]:
        assert bulk.incr(member, 1) == loop.incr(member, 1)
        bulk._check()
        assert _bulk_state(bulk) == _bulk_state(loop)


# ----------------------------------------------------------------------
# The tie map: only members deep in a run of equal scores
# ----------------------------------------------------------------------
NATIVE = ["sortedlist", "skiplist"]


def _deep(board: Leaderboard, score: Any) -> set[Any]:
    """Members of the run of ``score`` RUN_SCAN_LIMIT or more entries from its
    oldest end (the member that reached the score first)."""
    run = [m for m, s in board.items() if s == score]  # best first: oldest first
    return set(run[RUN_SCAN_LIMIT:])


@pytest.mark.parametrize("backend", NATIVE)
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_members_missing_from_the_tie_map_lie_near_the_oldest_end(backend: Any, order: str) -> None:
    # A history of ordinary writes on few scores: runs grow far deeper than
    # RUN_SCAN_LIMIT, members join and leave them by sets and increments,
    # leave the board, come back in batches small (one by one) and large
    # (a bulk rebuild).
    rng = random.Random(f"{backend}-{order}")
    board = Leaderboard(backend=backend, order=order)
    model = Model(order=order)
    names = [f"m{k}" for k in range(120)]
    for step in range(3000):
        member = rng.choice(names)
        roll = rng.random()
        if roll < 0.1:
            assert board.remove(member) == model.remove(member)
        elif roll < 0.45:
            delta = rng.choice([1, -1, 2])
            assert board.incr(member, delta) == model.incr(member, delta)
        elif roll < 0.98:
            score = rng.randint(0, 6)
            assert board.set(member, score) == model.set(member, score)
        else:
            batch = [(rng.choice(names), rng.randint(0, 6)) for _ in range(rng.choice([3, 60]))]
            assert board.set_many(batch) == model.set_many(batch)
        if step % 100 == 99:
            board._check()
            assert untied_far_members(board) == []
            assert board.items() == model.items()
    # deep runs happened: some members are kept, not all
    assert 0 < len(board._tie) < len(board)


@pytest.mark.parametrize("backend", NATIVE)
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_tie_map_stays_empty_while_every_score_is_distinct(backend: Any, order: str) -> None:
    bulk = Leaderboard(backend=backend, order=order)
    bulk.set_many({f"m{i}": 10 * i for i in range(2000)})  # the columnar bulk load
    single = Leaderboard(backend=backend, order=order)
    for i in range(2000):
        single.set(f"m{i}", 10 * i)
    for board in (bulk, single):
        assert len(board._tie) == 0
        for i in range(2000):  # one increment of every member: still distinct
            board.incr(f"m{i}", 1 + i % 9)
        assert len(board._tie) == 0
        # reads (and the shard merger's key look-up) leave it alone too
        for i in range(0, 2000, 7):
            member = f"m{i}"
            assert board.rank(member) == (2000 - i if order == "desc" else i + 1)
            board.around(member, 2)
            board.entry(member)
            board._tie_of(member)
        assert len(board._tie) == 0
        board._check()


@pytest.mark.parametrize("backend", NATIVE)
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("bulk", [False, True])
def test_tie_map_keeps_the_deep_members_of_a_huge_run(
    backend: Any, order: str, bulk: bool, tmp_path: Any
) -> None:
    members = [f"m{i}" for i in range(100)]
    board = Leaderboard(backend=backend, order=order)
    board.set("other", 1)  # a batch of 100 into a board of 1 is a bulk rebuild
    if bulk:
        board.set_many([(m, 5) for m in members])
    else:
        for m in members:
            board.set(m, 5)
    board._check()
    # m0 reached 5 first: it and the next RUN_SCAN_LIMIT - 1 are found by a scan
    assert set(board._tie) == set(members[RUN_SCAN_LIMIT:]) == _deep(board, 5)
    assert [m for m, _ in board.items()][:3] == (
        ["m0", "m1", "m2"] if order == "desc" else ["other", "m0", "m1"]
    )
    # the oldest leave by increments (and land alone on 6: not kept); a
    # newcomer joins at the newest end, deep
    for m in members[:RUN_SCAN_LIMIT]:
        board.incr(m, 1)
    board.set("late", 5)
    board._check()
    assert set(board._tie) == set(members[RUN_SCAN_LIMIT:]) | {"late"}
    ranks = [board.rank(m) for m in [*members[RUN_SCAN_LIMIT:], "late"]]
    assert ranks == sorted(ranks)  # first to reach 5 ranks first
    # recovery keeps exactly the members deep in their runs now
    with Leaderboard.open(
        tmp_path / "board", backend=backend, order=order, fsync="never"
    ) as durable:
        durable.set_many(board.items())
        for m, _ in [*board.items()][:50]:
            durable.incr(m, 0.5)  # leave the run, and come back by a new clock
            durable.incr(m, -0.5)
        expected_deep = _deep(durable, 5)
        durable.compact()
    with Leaderboard.open(tmp_path / "board") as again:
        again._check()
        assert set(again._tie) == expected_deep
        assert untied_far_members(again) == []


@pytest.mark.parametrize("backend", NATIVE)
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_untied_members_are_moved_and_ranked_in_one_search(
    backend: Any, order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A member missing from the tie map is moved (move_member) and ranked
    # (position_of) by its score and name: its tie is never read first.
    board = Leaderboard(backend=backend, order=order)
    board.set_many({f"m{i}": 3 * i for i in range(100)})
    assert len(board._tie) == 0

    def two_searches(*args: Any) -> Any:
        raise AssertionError("the tie was read before the move or the rank")

    monkeypatch.setattr(type(board._index), "tie_of", two_searches)
    for i in range(100):
        board.incr(f"m{i}", 1)  # the increment fast path
        board.set(f"m{i}", 3 * i + 2)  # _put
        assert board.rank(f"m{i}") == (100 - i if order == "desc" else i + 1)
        assert board.entry(f"m{i}") is not None
    monkeypatch.undo()
    board._check()


@pytest.mark.parametrize("backend", NATIVE)
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_row_restore_keeps_only_the_deep_ties(backend: Any, order: str) -> None:
    # The row-by-row restore (rows out of index order, as periodic boards
    # and unsorted snapshots give them) keeps the same tie map as the
    # columnar one: the members RUN_SCAN_LIMIT or more deep in their run.
    rows = [(f"m{clock}", 5, clock, None) for clock in range(1, 31)]
    rows += [(f"s{clock}", 100 + clock, clock, None) for clock in range(31, 41)]
    random.Random(order).shuffle(rows)
    board = Leaderboard(backend=backend, order=order)
    board._restore(rows, 40)
    board._check()
    assert untied_far_members(board) == []
    # m1 reached 5 first; m9 .. m30 are 8 or more places from it
    assert set(board._tie) == {f"m{clock}" for clock in range(RUN_SCAN_LIMIT + 1, 31)}
    assert set(board._tie) == _deep(board, 5)


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_clear_empties_the_index_without_a_search_per_member(backend: str) -> None:
    """``clear()`` is documented O(N): it drops the index in one step instead
    of removing (and so first searching for) each member, O(N log N)."""
    from rankengine.index.skiplist import SkipList
    from rankengine.index.sortedlist import SortedListIndex

    removed: list[Any] = []
    base: Any = SkipList if backend == "skiplist" else SortedListIndex

    class CountingIndex(base):  # type: ignore[misc,valid-type]
        def remove(self, primary: Any, tie: Any) -> Any:
            removed.append(tie)
            return super().remove(primary, tie)

    def counting_index() -> Any:
        return CountingIndex()

    board = Leaderboard(backend=counting_index)
    board.set_many({f"p{i}": i % 7 for i in range(200)})
    board.set_meta("p3", {"name": "x"})
    board.rank("p3", style="dense")  # build the dense counts too
    board.top()  # and the cached top rows
    board.clear()
    board._check()
    assert removed == []
    assert len(board) == 0 and board.items() == [] and board.meta("p3") is None
    assert board.rank("p3", style="dense") is None and board.top() == []
    # the board is usable again, clock and all
    board.set_many({"a": 1, "b": 1})
    board._check()
    assert list(board) == ["a", "b"] and board.clock == 202


def test_rank_for_score_on_a_board_that_breaks_ties_by_member(make_board: Any) -> None:
    """As documented: on a ``tie_break="member"`` board the unique rank of a
    score is one past every member already on it (a newcomer's own place
    among them depends on its name); competition and dense ranks are those
    of the score."""
    board = make_board(tie_break="member")
    board.set_many({"b": 5, "d": 5, "x": 3})
    assert board.rank_for_score(5) == 3
    assert board.rank_for_score(5, style="competition") == 1
    assert board.rank_for_score(5, style="dense") == 1
    board.set("c", 5)  # lands between d and b, not at 3
    assert board.rank("c") == 2


def test_an_order_given_as_a_list_is_the_boards_own(make_board: Any) -> None:
    # The board keeps its own tuple, not the caller's list: changing the
    # list afterwards changes neither the board's settings nor a twin built
    # from them (a copy used to rank by the changed directions).
    directions = ["desc", "asc"]
    board = make_board(order=directions)
    board.set_many({"ann": (10, 30), "bob": (10, 20)})
    directions[1] = "desc"
    assert board.order == ("desc", "asc")
    assert board.config()["order"] == ("desc", "asc")
    assert list(board) == ["bob", "ann"]
    if hasattr(board, "copy"):
        assert list(board.copy()) == ["bob", "ann"]


def test_check_catches_a_dense_count_on_the_wrong_score() -> None:
    # _check() promises that the dense counts agree with the board; it used
    # to compare only their total, so a count moved from one score to
    # another (the total unchanged) passed.
    board = Leaderboard()
    board.set_many({"ann": 1, "bob": 2, "cid": 2})
    assert board.rank("ann", style="dense") == 2  # builds the counts
    board._check()
    assert board._counts is not None
    board._counts[1], board._counts[2] = 2, 1
    with pytest.raises(AssertionError, match="dense counts out of step"):
        board._check()
