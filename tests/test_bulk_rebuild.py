"""Batches that rebuild the index (board/bulk.py, past
``BULK_REBUILD_FRACTION``): the same result as the reference model's writes
one after another, every invariant after, and never half a batch seen."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model import Model

from rankengine import Leaderboard
from rankengine.board import core as core_module

BACKENDS = ["sortedlist", "skiplist"]

members = st.integers(0, 60).map(lambda i: f"p{i}")
scores = st.integers(-5, 5) | st.sampled_from([0.5, -0.5, 2.5])
pairs = st.lists(st.tuples(members, scores), min_size=2, max_size=80)


def same(board: Leaderboard, model: Model) -> None:
    board._check()
    assert board.items() == model.items()
    assert [board.rank(m, style="dense") for m, _ in board.items()] == [
        model.rank(m, style="dense") for m, _ in model.items()
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(
    order=st.sampled_from(["desc", "asc"]),
    tie_break=st.sampled_from(["first", "member"]),
    start=pairs,
    batches=st.lists(st.tuples(st.booleans(), pairs), min_size=1, max_size=5),
)
def test_large_batches_match_the_model(
    backend: str, order: str, tie_break: str, start: Any, batches: Any
) -> None:
    board = Leaderboard(order=order, tie_break=tie_break, backend=backend, rank_style="dense")
    model = Model(order=order, tie_break=tie_break, rank_style="dense")
    board.set_many(start)
    model.set_many(start)
    board.rank(start[0][0], style="dense")  # (dense counts kept from here on)
    for increment, batch in batches:
        if increment:
            assert board.incr_many(batch) == model.incr_many(batch)
        else:
            assert board.set_many(batch) == model.set_many(batch)
        same(board, model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_rebuild_path_is_taken(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """(So that the test above exercises it: a batch of a third of the
    board is rebuilt, a small one applied write by write.)"""
    board = Leaderboard(backend=backend)
    board.set_many((f"p{i}", i) for i in range(300))
    rebuilds: list[int] = []
    real = Leaderboard._rebuild_with

    def counted(self: Leaderboard, puts: Any) -> None:
        rebuilds.append(len(puts))
        real(self, puts)

    monkeypatch.setattr(Leaderboard, "_rebuild_with", counted)
    board.set_many((f"p{i}", -i - 1) for i in range(120))
    board.set_many([("p1", 1000), ("p2", 2000)])
    assert rebuilds == [120]
    assert core_module.BULK_REBUILD_FRACTION * 300 <= 120


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reader_never_sees_part_of_a_batch(backend: str) -> None:
    """Each batch moves every member to the same new score; a reader on
    another thread must always find all members at one score."""
    board = Leaderboard(backend=backend)
    names = [f"p{i}" for i in range(2_000)]
    board.set_many((m, 0) for m in names)
    stop = threading.Event()
    seen: list[set[Any]] = []

    def read() -> None:
        while not stop.is_set():
            with board._lock:  # (one read of the whole board)
                seen.append({score for _, score in board.items()})

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for value in range(1, 15):
            board.set_many((m, value) for m in names)
    finally:
        stop.set()
        reader.join()
    board._check()
    assert seen and all(len(scores) == 1 for scores in seen)
