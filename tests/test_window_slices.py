"""A sliding window's refresh in bounded holds (rankengine.timed.window_refresh):
the slices and the swap give the window a refresh from scratch would give
it, other threads are served while a refresh computes or applies, and a
closed period's board and archive are freed and packed in pieces."""

from __future__ import annotations

import random
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankengine.timed.window_refresh as refresh_module
from rankengine import Leaderboard, PeriodicLeaderboard
from rankengine.board.release import adopt_state, release_in_pieces, unshared
from rankengine.durable.records import pack
from rankengine.index.skiplist import SkipList
from rankengine.index.sortedlist import SortedListIndex
from rankengine.index.teardown import empty_in_pieces
from rankengine.timed import archive as archive_module
from rankengine.timed.calendars import Hourly, Period
from rankengine.timed.window import SlidingWindowLeaderboard

HOUR = 3_600
START = 1_796_032_800  # 2026-11-30T10:00Z
HOURLY = Hourly()
#: how long a thread may take for a call that another thread's refresh must
#: not block (a generous bound for a loaded machine, not a speed claim)
SERVED_WITHIN = 20.0


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = float(t)

    def __call__(self) -> float:
        return self.t


def force(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Make every refresh apply by ``"slices"`` (of one or two members) or
    by ``"swap"``; ``"default"`` leaves the thresholds alone."""
    if mode == "slices":
        monkeypatch.setattr(refresh_module, "SWAP_FRACTION", float("inf"))
        monkeypatch.setattr(refresh_module, "FIRST_SLICE", 1)
        monkeypatch.setattr(refresh_module, "MAX_SLICE", 2)
    elif mode == "swap":
        monkeypatch.setattr(refresh_module, "SWAP_FRACTION", 0.0)


def model_sums(buckets: dict[str, dict[str, Any]], window: list[Period]) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for period in window:
        for member, value in buckets.get(period.name, {}).items():
            totals[member] = totals[member] + value if member in totals else value
    return totals


MEMBERS = [f"p{i}" for i in range(24)]
window_steps = st.lists(
    st.tuples(
        st.sampled_from(["incr", "incr", "set", "remove", "bulk", "meta", "refresh", "refresh"]),
        st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=12),
        st.integers(-3, 6),
        st.sampled_from([0, 0, 0, 900, HOUR, 2 * HOUR, 4 * HOUR]),  # clock step before
    ),
    max_size=40,
)


def _run_window(
    steps: list[tuple[str, list[str], int, int]], size: int, tie_break: str, backend: str
) -> tuple[list[tuple[Any, ...]], list[int]]:
    """Run ``steps`` on a new window; after each refresh record its rank
    order, scores and metadata, checking the window against the model of
    its buckets; return the records and the board's clocks."""
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard(
        "hourly", size, clock=clock, tie_break=tie_break, backend=backend
    )
    buckets: dict[str, dict[str, Any]] = {}
    seen: list[tuple[Any, ...]] = []
    clocks: list[int] = []
    for op, members, value, step in steps:
        clock.t += step
        bucket = buckets.setdefault(HOURLY.period_of(clock.t).name, {})
        if op == "refresh":
            window.refresh()
            window._check()
            window.board._check()
            expected = model_sums(buckets, window.window())
            assert dict(window.items()) == expected
            seen.append(tuple(window.top(100, with_meta=True)))
            clocks.append(window.board.clock)
            continue
        member = members[0]
        if op == "incr":
            window.incr(member, value)
            bucket[member] = bucket.get(member, 0) + value
        elif op == "set":
            window.set(member, value)
            bucket[member] = value
        elif op == "meta":
            window.set(member, value, meta={"v": value})
            bucket[member] = value
        elif op == "bulk":
            window.incr_many(dict.fromkeys(members, value))
            for m in dict.fromkeys(members):
                bucket[m] = bucket.get(m, 0) + value
        else:
            window.remove(member)
            bucket.pop(member, None)
        window._check()
    return seen, clocks


@settings(max_examples=40, deadline=None)
@given(
    steps=window_steps,
    size=st.integers(1, 3),
    tie_break=st.sampled_from(["first", "member"]),
    backend=st.sampled_from(["sortedlist", "skiplist"]),
)
def test_slices_and_swap_give_the_same_window_as_the_model(
    steps: list[tuple[str, list[str], int, int]], size: int, tie_break: str, backend: str
) -> None:
    """Through writes, refreshes and slide-outs, a window whose refreshes
    all apply in slices of one or two members and one whose refreshes all
    swap a new state in hold the sums of the model of their buckets after
    every refresh (``_check()`` after every step), and the same ranks,
    ties, metadata and board clock as a window left to choose."""
    runs = {}
    for mode in ("default", "slices", "swap"):
        with pytest.MonkeyPatch.context() as monkeypatch:
            force(monkeypatch, mode)
            runs[mode] = _run_window(steps, size, tie_break, backend)
    assert runs["slices"] == runs["default"]
    assert runs["swap"] == runs["default"]


class GatedDict(dict):  # type: ignore[type-arg]
    """A bucket's score map whose ``get`` waits at a gate once armed: a
    refresh reading the bucket stops there, with whatever locks it holds."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.armed = False
        self.reached = threading.Event()
        self.gate = threading.Event()

    def get(self, key: Any, default: Any = None) -> Any:
        if self.armed:
            self.armed = False
            self.reached.set()
            assert self.gate.wait(SERVED_WITHIN)
        return super().get(key, default)


def served(call: Callable[[], Any]) -> Any:
    """Run ``call`` on another thread; fail unless it returns in time."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(SERVED_WITHIN)
    assert not worker.is_alive(), "another thread's call waited for the whole refresh"
    if errors:
        raise errors[0]
    return result[0]


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("case", ["first refresh", "slide-out", "small refresh"])
def test_reads_and_writes_are_served_while_a_refresh_sums(backend: str, case: str) -> None:
    """A refresh held at a gate in the middle of its sums: another thread
    writes and reads the window meanwhile (the refresh holds no lock
    there), the window shows the last refresh's state, and the write made
    meanwhile is in the window, exactly, once the refresh ends."""
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock, backend=backend)
    window.set_many({f"p{i}": i % 7 for i in range(300)})
    if case != "first refresh":
        window.refresh()
    if case == "slide-out":
        clock.t += 3 * HOUR
    if case == "small refresh":
        window.incr_many({"p1": 5, "p2": 5})
    before = window.items()
    bucket = window.bucket()
    gated = GatedDict(bucket._primary)
    bucket._primary = gated
    gated.armed = True
    refresher = threading.Thread(target=window.refresh)
    refresher.start()
    try:
        assert gated.reached.wait(SERVED_WITHIN)
        assert served(lambda: window.incr("zed", 4)) == 4
        assert served(window.items) == before  # the last refresh's window
        served(window._check)
    finally:
        gated.gate.set()
        refresher.join()
    assert window.score("zed") == 4  # summed again under the lock: not left due
    assert "zed" not in window._dirty
    window._check()
    expected = dict(window.bucket().items())
    if case in {"first refresh", "small refresh"}:
        assert dict(window.items()) == expected
    else:
        assert dict(window.items()) == {"zed": 4}


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_between_slices_every_member_shows_its_old_or_its_new_sum(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """A refresh applied in slices of one member, stopped after its first
    slice: another thread's reads see each member at its sum before the
    refresh or after it, never another value, both checks hold, and its
    write is served."""
    force(monkeypatch, "slices")
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock, backend=backend)
    window.set_many({f"p{i}": i for i in range(50)})
    window.refresh()
    old = dict(window.items())
    window.incr_many({f"p{i}": 100 for i in range(0, 50, 5)})
    new = dict(window.bucket().items())
    reached, gate = threading.Event(), threading.Event()

    def sleep(seconds: float) -> None:
        if not reached.is_set():
            reached.set()
            assert gate.wait(SERVED_WITHIN)

    shim = types.SimpleNamespace(perf_counter=time.perf_counter, sleep=sleep)
    monkeypatch.setattr(refresh_module, "time", shim)
    refresher = threading.Thread(target=window.refresh)
    refresher.start()
    try:
        assert reached.wait(SERVED_WITHIN)
        shown = served(window.items)
        assert {m: s for m, s in shown if old[m] != s} != {}  # one slice is in
        assert all(s in (old[m], new[m]) for m, s in shown)
        assert len(shown) == len(old)
        served(window._check)
        served(window.board._check)
        assert served(lambda: window.incr("p5", 1)) == 106
    finally:
        gate.set()
        refresher.join()
    window._check()
    assert window.score("p5") == 105  # the write during the slices: due for the next refresh
    window.refresh()
    assert window.score("p5") == 106
    window._check()


def test_a_slide_out_that_empties_the_window_swaps_in_an_empty_board() -> None:
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock, backend="skiplist")
    window.set_many({f"p{i}": i for i in range(100)})
    window.refresh()
    board = window.board
    clock.t += 3 * HOUR
    assert window.refresh() == 100
    assert window.board is board  # the same board object, its state replaced
    assert len(board) == 0 and window.items() == []
    window._check()
    board._check()
    window.incr("ann", 2)
    window.refresh()
    assert window.items() == [("ann", 2)]


def test_durable_window_refreshed_in_slices_reopens_to_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    force(monkeypatch, "slices")
    clock = FakeClock(START)
    rng = random.Random(3)
    with SlidingWindowLeaderboard.open(
        tmp_path, "hourly", 3, clock=clock, fsync="never", tie_break="member"
    ) as window:
        for _ in range(5):
            window.incr_many({f"p{rng.randrange(60)}": rng.randrange(1, 9) for _ in range(30)})
            window.refresh()
            clock.t += HOUR
        clock.t -= HOUR
        window.refresh()
        window._check()
        state = window.top(100, with_meta=True)
    with SlidingWindowLeaderboard.open(
        tmp_path, "hourly", 3, clock=clock, fsync="never", tie_break="member"
    ) as window:
        assert window.top(100, with_meta=True) == state
        window._check()


# ----------------------------------------------------------------------
# Freeing and packing in pieces
# ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_a_board_released_in_pieces_is_empty_and_usable(backend: str) -> None:
    board = Leaderboard(backend=backend)
    board.set_many({f"m{i}": i % 13 for i in range(5_000)})
    board.set_meta("m1", {"a": 1})
    pauses: list[int] = []
    release_in_pieces(board, lambda: pauses.append(1), piece=500)
    assert len(board) == 0 and board.items() == [] and board.meta("m1") is None
    assert len(pauses) >= 5_000 // 500
    board._check()
    board.set_many({"ann": 1, "bob": 2})
    assert board.items() == [("bob", 2), ("ann", 1)]
    board._check()


@pytest.mark.parametrize("make", [SkipList, SortedListIndex])
def test_an_index_emptied_in_pieces_pauses_between_pieces(make: Callable[[], Any]) -> None:
    index = make()
    index.build([(i, 0, f"m{i}") for i in range(3_000)])
    pauses: list[int] = []
    empty_in_pieces(index, lambda: pauses.append(1), piece=100)
    assert len(index) == 0 and list(index.iter_range(0, 0)) == []
    assert pauses  # it did let go between pieces
    index._check()


def test_adopt_state_swaps_whole_states_and_refuses_other_settings() -> None:
    live, built = Leaderboard(), Leaderboard()
    live.set_many({"ann": 1, "bob": 2})
    built.set_many({"cy": 3})
    adopt_state(live, built)
    assert live.items() == [("cy", 3)] and built.items() == [("bob", 2), ("ann", 1)]
    live._check()
    built._check()
    with pytest.raises(ValueError, match="settings differ"):
        adopt_state(live, Leaderboard(order="asc"))
    assert live.items() == [("cy", 3)]


def test_unshared_counts_the_callers_reference() -> None:
    board = Leaderboard()
    assert unshared(board)
    other = [board]
    assert not unshared(board)
    del other
    assert unshared(board)


def test_a_dropped_period_someone_still_reads_is_not_emptied() -> None:
    """The closing thread frees a dropped period's board in pieces only when
    nobody else holds it: a reader's reference keeps it whole."""
    now = [float(START)]
    periodic = PeriodicLeaderboard("hourly", keep=0, clock=lambda: now[0])
    periodic.set_many({f"m{i}": i for i in range(100)})
    kept = periodic.board()
    now[0] += 2 * HOUR
    periodic.tick()
    assert len(kept) == 100 and kept.score("m7") == 7
    kept._check()


def test_an_archive_packed_in_pieces_is_the_archive_packed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive_module, "ARCHIVE_PIECE", 7)
    for n in (0, 1, 7, 15, 16, 100):
        board = Leaderboard()
        board.set_many({f"m{i}": i % 5 for i in range(n)})
        if n:
            board.set_meta("m0", {"x": [1, 2]})
        period = Period("2026-11-30T10", float(START), float(START + HOUR))
        path = tmp_path / f"{n}.rkarchive"
        archive_module.write_archive(path, period, board)
        body = pack(
            {
                "period": list(period),
                "settings": {"order": "desc", "tie_break": "first", "rank_style": "unique"},
                "clock": board.clock,
                "rows": [list(row) for row in board._export()],
            }
        )
        assert path.read_bytes()[16:] == body
        back_period, back = archive_module.read_archive(path)
        assert back_period == period and back.items() == board.items()
        assert back.meta("m0") == board.meta("m0")


@pytest.mark.parametrize("mode", ["default", "slices"])
def test_a_bucket_bulk_loaded_while_a_refresh_sums_is_summed_again_exactly(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The current bucket is empty when a refresh starts; while the refresh
    sums (held at a gate in the bucket before it), another thread loads
    the current bucket in bulk, which gives that board new maps: the
    refresh sums those members again from the bucket's new maps."""
    force(monkeypatch, mode)
    clock = FakeClock(START)
    window = SlidingWindowLeaderboard("hourly", 2, clock=clock)
    window.set_many({f"p{i}": 1 for i in range(200)})
    clock.t += HOUR
    before = window.bucket(HOURLY.period_of(START).name)
    gated = GatedDict(before._primary)
    before._primary = gated
    gated.armed = True
    refresher = threading.Thread(target=window.refresh)
    refresher.start()
    try:
        assert gated.reached.wait(SERVED_WITHIN)
        assert served(lambda: window.set_many({f"p{i}": 10 for i in range(0, 200, 2)})) == 100
    finally:
        gated.gate.set()
        refresher.join()
    window._check()
    expected = {f"p{i}": 1 + (10 if i % 2 == 0 else 0) for i in range(200)}
    assert dict(window.items()) == expected
