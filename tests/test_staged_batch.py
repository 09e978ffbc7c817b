"""Large batches applied beside the board and swapped in (board/staged.py):
the same result as the reference model's writes one after another, with
the writes that ran during the staging ordered before the batch; every
invariant after; and a reader never sees part of a batch."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model import Model

from rankengine import Leaderboard
from rankengine.board import staged

BACKENDS = ["sortedlist", "skiplist"]

members = st.integers(0, 40).map(lambda i: f"p{i}")
scores = st.integers(-4, 4) | st.sampled_from([0.5, -0.5, 2.5])
pairs = st.lists(st.tuples(members, scores), min_size=1, max_size=60)
# a write made while a batch is staged: (kind, member, value)
writes = st.lists(
    st.tuples(st.sampled_from(["set", "incr", "remove", "meta", "clear"]), members, scores),
    max_size=30,
)


def same(board: Leaderboard, model: Model) -> None:
    board._check()
    assert board.items() == model.items()
    assert [board.rank(m, style="dense") for m, _ in board.items()] == [
        model.rank(m, style="dense") for m, _ in model.items()
    ]


def write(target: Any, kind: str, member: str, value: Any) -> None:
    if kind == "set":
        target.set(member, value)
    elif kind == "incr":
        target.incr(member, value)
    elif kind == "remove":
        target.remove(member)
    elif kind == "meta":
        if member in target:
            target.set_meta(member, {"v": value})
    else:
        target.clear()


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage every batch, copy one row per slice, catch up in many rounds."""
    monkeypatch.setattr(staged, "STAGED_MIN_PAIRS", 1)
    monkeypatch.setattr(staged, "STAGED_SHARE", 10**9)
    monkeypatch.setattr(staged, "SLICE_SECONDS", 0.0)
    monkeypatch.setattr(staged, "SLICE_ROWS", 1)
    monkeypatch.setattr(staged, "UNIT_ROWS", 3)
    monkeypatch.setattr(staged, "FINAL_FIXES", 1)
    monkeypatch.setattr(staged, "MAX_ROUNDS", 4)


@pytest.mark.usefixtures("tiny")
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=80, deadline=None)
@given(
    order=st.sampled_from(["desc", "asc"]),
    tie_break=st.sampled_from(["first", "member"]),
    increment=st.booleans(),
    when=st.sampled_from([None, None, "better", "worse", "new", "present"]),
    start=pairs,
    batch=pairs,
    meanwhile=writes,
)
def test_a_staged_batch_matches_the_model(
    backend: str,
    *,
    order: str,
    tie_break: str,
    increment: bool,
    when: Any,
    start: Any,
    batch: Any,
    meanwhile: Any,
) -> None:
    """Writes run between the slices and the rounds of the staging (the
    pause hook); the model applies them as they run, and the batch at the
    moment the board swaps its state (or at the end, when the batch was
    applied under the lock instead)."""
    board = Leaderboard(order=order, tie_break=tie_break, backend=backend, rank_style="dense")
    model = Model(order=order, tie_break=tie_break, rank_style="dense")
    board.set_many(start)
    model.set_many(start)
    board.rank(start[0][0], style="dense")  # (dense counts kept from here on)
    pending = list(meanwhile)
    expected: list[Any] = []

    def batch_on_model() -> None:
        if increment:
            expected.append(model.incr_many(batch))
        else:
            expected.append(model.set_many(batch, when=when))

    real_adopt = staged.adopt_state

    def adopt(live: Any, shadow: Any) -> None:  # the batch's moment
        batch_on_model()
        real_adopt(live, shadow)

    def pause() -> None:
        if pending and not expected:
            kind, member, value = pending.pop(0)
            write(board, kind, member, value)
            write(model, kind, member, value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(staged, "adopt_state", adopt)
        patch.setattr(staged, "let_go", pause)
        got = board.incr_many(batch) if increment else board.set_many(batch, when=when)
    if not expected:  # declined: applied under the lock, after the writes
        batch_on_model()
    assert got == expected[0]
    same(board, model)
    assert all(m in board for m in board._meta)
    if tie_break == "member":  # its clocks order nothing: the clock stays dense
        assert board.clock == model.clock
    else:  # the batch's clocks start CLOCK_ROOM on when it was staged
        assert board.clock >= model.clock


@pytest.mark.usefixtures("tiny")
@pytest.mark.parametrize("backend", BACKENDS)
def test_staging_is_taken_and_declined(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """(So that the test above exercises both paths.)  A staged batch moves
    the clock past CLOCK_ROOM; a clear() during the staging replaces the
    board's state, and the batch is then applied under the lock."""
    board = Leaderboard(backend=backend)
    board.set_many({"a": 1, "b": 2, "c": 3})
    clock = board.clock
    assert board.set_many({"a": 5, "d": 0}) == 2
    assert board.clock == clock + staged.CLOCK_ROOM + 2
    assert board.items() == [("a", 5), ("c", 3), ("b", 2), ("d", 0)]

    cleared: list[int] = []

    def pause() -> None:
        if not cleared:
            cleared.append(1)
            board.clear()

    monkeypatch.setattr(staged, "let_go", pause)
    assert board.set_many({"a": 7, "e": 1}) == 2
    board._check()
    assert board.items() == [("a", 7), ("e", 1)]


@pytest.mark.usefixtures("tiny")
def test_too_many_writes_meanwhile_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """More writes during the staging than CLOCK_ROOM leaves: the batch's
    clocks would not rank after them, so it is applied under the lock."""
    monkeypatch.setattr(staged, "CLOCK_ROOM", 3)
    board = Leaderboard()
    board.set_many({"a": 1, "b": 1, "c": 1})
    n = [0]

    def pause() -> None:
        n[0] += 1
        board.incr("b", 1)
        board.incr("b", -1)  # back to 1, with a newer clock than a's

    monkeypatch.setattr(staged, "let_go", pause)
    board.set_many({"a": 2, "c": 2, "d": 1})
    board._check()
    assert n[0] >= 2
    # b reached 1 last among the ones at 1 (d came with the batch, after it)
    assert board.items() == [("a", 2), ("c", 2), ("b", 1), ("d", 1)]


def test_an_error_in_the_batch_changes_nothing(tiny: None) -> None:
    board = Leaderboard()
    board.set_many({"a": 1.0, "b": 2.0})
    before = board.items()
    with pytest.raises(OverflowError):
        board.incr_many([("a", 1.0), ("b", 10**400)])
    with pytest.raises(TypeError, match="index 1"):
        board.set_many([("a", 1), ("b", "x")])
    assert board.items() == before and board._listener is None
    board._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_readers_see_all_of_a_batch_or_none(backend: str) -> None:
    """Real threads, default thresholds: a batch moves 10,000 of 40,000
    members above every other score while a writer increments the others
    and a reader counts the moved ones; it finds 0 or all of them, never
    part, and the board is intact after."""
    n, k, top = 40_000, 10_000, 10**6
    board = Leaderboard(backend=backend)
    board.set_many((f"p{i}", i % 1000) for i in range(n))
    assert staged.stages(board, k)
    clock = board.clock
    stop = threading.Event()
    counts: list[int] = []
    written: list[int] = []

    def read() -> None:
        while not stop.is_set():
            counts.append(board.count(top, None))

    def write_others() -> None:
        i = 0
        while not stop.is_set():
            board.incr(f"p{k + i % (n - k)}", 1)
            i += 1
        written.append(i)

    threads = [threading.Thread(target=read), threading.Thread(target=write_others)]
    for thread in threads:
        thread.start()
    try:
        assert board.set_many((f"p{i}", top + i) for i in range(k)) == k
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    board._check()
    assert board.clock >= clock + staged.CLOCK_ROOM  # (it was staged)
    assert counts and set(counts) <= {0, k}
    assert board.count(top, None) == k
    assert all(board[f"p{i}"] == top + i for i in range(k))
    total = sum(board[f"p{i}"] - i % 1000 for i in range(k, n))
    assert total == written[0]
