"""Folding a run of events gives what applying them one by one gives, ties included.

No server needed: :func:`rankengine.pg.fold.fold_into` against the board's
own writes, one event at a time (the model), on random runs with few
members, many ties, removals and values that come back to where they were.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.pg.events import StoreEvent
from rankengine.pg.fold import can_fold, fold_into
from rankengine.pg.follower import FOLD_MIN, BoardView, apply_event

members = st.sampled_from(["a", "b", "c", "d", "e"])
numbers = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -0.5, 1.0, 2.0]))
increments = st.tuples(st.just("incr"), members, st.integers(-3, 3))
ops = st.one_of(
    st.tuples(st.just("incr"), members, numbers),
    st.tuples(st.just("set"), members, numbers),
    st.tuples(st.just("remove"), members, st.none()),
)


def _events(raw: list[tuple[str, Any, Any]], first: int = 1) -> list[StoreEvent]:
    return [StoreEvent(first + i, op, m, v, 0, None) for i, (op, m, v) in enumerate(raw)]


def _state(board: Leaderboard) -> list[tuple[Any, Any, type]]:
    board._check()
    return [(m, s, type(s)) for m, s in board.items()]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ops, max_size=12),
    st.one_of(st.lists(ops, max_size=40), st.lists(increments, max_size=40)),
    st.sampled_from(["first", "member"]),
    st.sampled_from(["desc", "asc"]),
)
def test_fold_equals_one_by_one(
    before: list[tuple[str, Any, Any]], run: list[tuple[str, Any, Any]], tie: str, order: str
) -> None:
    folded = Leaderboard(tie_break=tie, order=order)  # type: ignore[arg-type]
    model = Leaderboard(tie_break=tie, order=order)  # type: ignore[arg-type]
    for event in _events(before):
        for board in (folded, model):
            apply_event(board, event, False)
    events = _events(run, first=len(before) + 1)
    if fold_into(folded, events) is None:
        for event in events:  # the fold declined: the follower goes one by one
            apply_event(folded, event, False)
    for event in events:
        apply_event(model, event, False)
    assert _state(folded) == _state(model)
    # and later writes rank alike (the tie clocks keep their order)
    for board in (folded, model):
        for member in "abcde":
            board.incr(member, 0.25)
    assert _state(folded) == _state(model)


def test_a_score_that_comes_back_is_not_folded() -> None:
    board = Leaderboard()
    board.set("a", 5)
    board.set("b", 5)
    events = _events([("incr", "a", 1), ("incr", "a", -1)])
    assert fold_into(board, events) is None
    assert board.items() == [("a", 5), ("b", 5)]  # unchanged: applied one by one by the caller


def test_the_view_folds_long_runs_and_matches_one_by_one() -> None:
    raw = [("incr", f"m{i % 7}", (i % 5) - 1) for i in range(FOLD_MIN * 3)]
    raw += [("remove", "m3", None), ("set", "m4", 2)]
    folded = BoardView("f", Leaderboard())
    plain = Leaderboard()
    assert folded.foldable and can_fold(plain)
    assert folded.apply(_events(raw)) == len(raw)
    for event in _events(raw):
        apply_event(plain, event, False)
    assert _state(folded.board) == _state(plain)
    assert folded.position == len(raw)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(increments, max_size=30), max_size=5), st.lists(ops, max_size=10))
def test_a_deferred_catch_up_equals_one_by_one(
    chunks: list[list[tuple[str, Any, Any]]], after: list[tuple[str, Any, Any]]
) -> None:
    """Chunks of increments summed across chunks into an empty board, then
    written once (a joiner's catch-up), then more events as they come."""
    view = BoardView("v", Leaderboard())
    model = Leaderboard()
    seq = 1
    for raw in [*chunks, after]:
        events = _events(raw, first=seq)
        seq += len(raw)
        view.apply(events, defer=raw is not after)
        for event in events:
            apply_event(model, event, False)
    view.flush()
    assert _state(view.board) == _state(model)
    assert view.position == seq - 1
