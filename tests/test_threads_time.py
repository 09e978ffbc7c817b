"""Time-based boards shared by threads: periodic rollovers, window refreshes,
decayed re-bases, and ``close()`` racing writes on their durable forms.

Writers own their members, so a writer's last acknowledged write to a
member (in a period) is that member's state whatever the interleaving.
Where a race needs a precise interleaving, a hook inside the board waits
on an ``Event`` (with a bounded wait: the fixed code blocks the other
thread, which is what the test checks, so the hook must give up waiting).
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

import pytest
from threaded import run_all

from rankengine import Leaderboard
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import LateEventError, Period, PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

HOUR: Final = 3600.0
START: Final = 1_796_032_800.0  # an hour boundary
WRITERS: Final = 3
#: How long a hook waits for another thread that the fixed code keeps
#: blocked.  Only ever a bound on waiting, never a measurement.
BLOCKED_S: Final = 0.3


# ----------------------------------------------------------------------
# Periodic boards
# ----------------------------------------------------------------------
def _periodic_run(
    board: PeriodicLeaderboard, now: list[float], finals: dict[str, Any]
) -> list[dict[tuple[str, str], Any]]:
    """Writers (explicit times, some late), readers and a clock across six
    rollovers; returns each writer's acknowledged (period, member) -> score."""
    acked: list[dict[tuple[str, str], Any]] = [{} for _ in range(WRITERS)]
    done = threading.Event()
    steps = 36

    def writer(i: int) -> Callable[[], None]:
        rng = random.Random(i)
        mine = [f"w{i}-{j}" for j in range(6)]

        def work() -> None:
            while not done.is_set():
                t = now[0] - rng.choice([0, 0, 0, 120, 900])  # some late
                member = rng.choice(mine)
                name = board.period_of(t).name
                try:
                    if rng.random() < 0.5:
                        score = rng.randint(0, 999)
                        board.set(member, score, t=t)
                        acked[i][name, member] = score
                    else:
                        acked[i][name, member] = board.incr(member, 1, t=t)
                except LateEventError:
                    pass

        return work

    def reader() -> None:
        while not done.is_set():
            top = board.top(20)
            assert [e.rank for e in top] == list(range(1, len(top) + 1))
            assert all(a.score >= b.score for a, b in pairwise(top))
            periods = board.periods()
            assert all(a.end <= b.start for a, b in pairwise(periods))
            assert board.current.start >= periods[-1].start  # the clock moves on

    def clock() -> None:
        try:
            for _ in range(steps):
                now[0] += HOUR / 6
                board.tick()
        finally:
            done.set()

    run_all([writer(i) for i in range(WRITERS)] + [reader, reader, clock])
    board._check()
    return acked


def _per_period(acked: list[dict[tuple[str, str], Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for writes in acked:
        for (name, member), score in writes.items():
            out.setdefault(name, {})[member] = score
    return out


def test_periodic_rollover_keeps_every_acknowledged_write() -> None:
    """Every acknowledged write is in its period's final standings (as the
    close callback saw them) or in its still-open board."""
    now = [START]
    finals: dict[str, Any] = {}

    def on_close(period: Period, board: Leaderboard) -> None:
        assert period.name not in finals, f"{period.name} closed twice"
        finals[period.name] = dict(board.items())

    board = PeriodicLeaderboard(
        "hourly", keep=1, grace=600, clock=lambda: now[0], on_close=on_close
    )
    acked = _per_period(_periodic_run(board, now, finals))
    assert len(finals) >= 5
    for name, scores in acked.items():
        seen = finals[name] if name in finals else dict(board.board(name).items())
        assert seen == scores, name


def test_durable_periodic_refuses_a_write_after_close_in_a_new_period(tmp_path: Path) -> None:
    """After close(), a write for a period that has no board yet raised
    nothing: it opened a new durable board, acknowledged the write and left
    the board open (its directory locked, so a reopen in this process
    failed).  It now raises the "closed" error and opens nothing."""
    now = [START]
    board = PeriodicLeaderboard.open(tmp_path, "hourly", clock=lambda: now[0], fsync="never")
    board.set("ann", 5)
    board.close()
    with pytest.raises(ValueError, match="is closed"):
        board.incr("bob", 1)  # this hour: its board is closed
    now[0] += HOUR
    with pytest.raises(ValueError, match="is closed"):
        board.set("bob", 1)  # the next hour: no board may be opened
    assert board.top() == []  # reads still work: the new hour is empty
    assert [p.name for p in board.periods()] == [board.period_of(START).name]
    board._check()
    with PeriodicLeaderboard.open(tmp_path, "hourly", clock=lambda: now[0]) as again:
        assert again.top(period=board.period_of(START)) == board.top(period=board.period_of(START))
        assert again.top() == []


def test_durable_periodic_close_racing_writes(tmp_path: Path) -> None:
    """close() from another thread while writers write across rollovers: each
    write is acknowledged and in the reopened board, or raises."""
    now = [START]
    board = PeriodicLeaderboard.open(
        tmp_path, "hourly", keep=3, clock=lambda: now[0], fsync="never"
    )
    acked: list[dict[tuple[str, str], Any]] = [{} for _ in range(WRITERS)]
    going = [threading.Event() for _ in range(WRITERS)]

    def writer(i: int) -> Callable[[], None]:
        rng = random.Random(i)

        def work() -> None:
            for n in range(100_000):
                if n == 30:
                    going[i].set()
                if i == 0 and n % 10 == 0:
                    now[0] += HOUR / 4  # rollovers while the others write
                t = now[0]
                member = f"w{i}-{rng.randrange(5)}"
                try:
                    score = rng.randint(0, 99)
                    board.set(member, score, t=t)
                except ValueError as exc:  # LateEventError is one
                    if "is closed" in str(exc):
                        break
                    assert isinstance(exc, LateEventError), exc
                    continue
                acked[i][board.period_of(t).name, member] = score
            going[i].set()

        return work

    def closer() -> None:
        for event in going:
            assert event.wait(60)
        board.close()

    run_all([writer(i) for i in range(WRITERS)] + [closer])
    expected = _per_period(acked)
    held = {p.name for p in board.periods()}
    with PeriodicLeaderboard.open(tmp_path, "hourly", keep=3, clock=lambda: now[0]) as again:
        for name, scores in expected.items():
            if name in held:
                assert dict(again.board(name).items()) == scores, name


# ----------------------------------------------------------------------
# Sliding windows
# ----------------------------------------------------------------------
def test_window_refresh_with_concurrent_writers_and_readers() -> None:
    now = [START]
    window = SlidingWindowLeaderboard("hourly", 3, clock=lambda: now[0])
    done = threading.Event()

    def writer(i: int) -> Callable[[], None]:
        rng = random.Random(i)

        def work() -> None:
            while not done.is_set():
                window.incr(f"w{i}-{rng.randrange(8)}", rng.randint(1, 5))

        return work

    def reader() -> None:
        while not done.is_set():
            top = window.top(10)
            assert all(a.score >= b.score for a, b in pairwise(top))
            window.bucket()  # rolls the buckets over as the clock moves
            window.staleness()

    def refresher() -> None:
        try:
            for _ in range(60):
                now[0] += HOUR / 5
                window.refresh()
        finally:
            done.set()

    run_all([writer(i) for i in range(WRITERS)] + [reader, reader, refresher])
    window.refresh()
    window._check()


class _PausingDict(dict[Any, Any]):
    """A member map whose ``get`` can pause once (armed by the test)."""

    pause: Callable[[], None] | None = None

    def get(self, *args: Any) -> Any:
        pause, type(self).pause = type(self).pause, None
        if pause is not None:
            pause()
        return super().get(*args)


def test_window_bucket_read_during_refresh_does_not_break_it() -> None:
    """``bucket()`` advances the buckets; when that drops a bucket, the drop
    marks its members for the next refresh.  It ran without the window's
    lock, so a refresh in another thread, iterating the members it marks,
    failed with "Set changed size during iteration"."""
    now = [START]

    def factory(_period: Period) -> Leaderboard:
        board = Leaderboard()
        board._primary = _PausingDict()
        return board

    window = SlidingWindowLeaderboard("hourly", 1, clock=lambda: now[0], board_factory=factory)
    now[0] += HOUR
    window.set("ann", 1)
    window.refresh()  # ann is clean now
    window.set("bob", 2)  # bob is due for the next refresh
    in_refresh = threading.Event()
    read = threading.Event()

    def pause() -> None:
        in_refresh.set()
        read.wait(BLOCKED_S)  # the fixed bucket() waits for this refresh

    def refresher() -> None:
        _PausingDict.pause = pause
        window.refresh()

    def reader() -> None:
        assert in_refresh.wait(60)
        now[0] += HOUR  # the bucket holding ann and bob slides out
        window.bucket()
        read.set()

    try:
        run_all([refresher, reader])
    finally:
        _PausingDict.pause = None
    window.refresh()
    window._check()
    assert window.items() == []


# ----------------------------------------------------------------------
# Decayed boards
# ----------------------------------------------------------------------
TAU: Final = 100.0


def _decay_run(
    board: DecayedLeaderboard, now: list[float]
) -> list[dict[str, list[tuple[float, float]]]]:
    """Writers adding points to their own members while the clock moves past
    several re-base points; returns each writer's acknowledged events."""
    events: list[dict[str, list[tuple[float, float]]]] = [{} for _ in range(WRITERS)]
    done = threading.Event()
    lock = threading.Lock()

    def writer(i: int) -> Callable[[], None]:
        rng = random.Random(i)

        def work() -> None:
            while not done.is_set():
                member = f"w{i}-{rng.randrange(6)}"
                points = float(rng.randint(1, 9))
                with lock:  # the time this write is stamped with
                    t = now[0]
                board.add(member, points, t=t)
                events[i].setdefault(member, []).append((t, points))

        return work

    def reader() -> None:
        while not done.is_set():
            top = board.top(10)
            assert all(a.score >= b.score for a, b in pairwise(top))
            assert [e.rank for e in top] == list(range(1, len(top) + 1))

    def clock() -> None:
        try:
            for step in range(40):
                with lock:
                    now[0] += TAU / 2
                if step % 10 == 5:
                    board.rebase(now[0])  # an explicit re-base too
        finally:
            done.set()

    run_all([writer(i) for i in range(WRITERS)] + [reader, clock])
    board._check()
    return events


def _check_decayed(
    board: DecayedLeaderboard, events: list[dict[str, list[tuple[float, float]]]], at: float
) -> None:
    merged: dict[str, list[tuple[float, float]]] = {}
    for writes in events:
        merged.update(writes)
    direct = {m: sum(p * math.exp(-(at - t) / TAU) for t, p in evs) for m, evs in merged.items()}
    got = dict(board.items(at=at))
    assert got.keys() == direct.keys()
    for member, value in direct.items():
        assert math.isclose(got[member], value, rel_tol=1e-9), (member, got[member], value)


def test_decayed_rebase_with_concurrent_writers_in_memory() -> None:
    now = [START]
    board = DecayedLeaderboard(tau=TAU, t0=START, clock=lambda: now[0], rebase_after=4.0)
    events = _decay_run(board, now)
    assert board.rebases >= 3
    _check_decayed(board, events, now[0])


def test_decayed_rebase_with_concurrent_writers_durable(tmp_path: Path) -> None:
    now = [START]
    board = DecayedLeaderboard.open(
        tmp_path, tau=TAU, clock=lambda: now[0], rebase_after=4.0, fsync="never"
    )
    events = _decay_run(board, now)
    assert board.rebases >= 3
    _check_decayed(board, events, now[0])
    board.close()
    with DecayedLeaderboard.open(tmp_path, tau=TAU, clock=lambda: now[0]) as again:
        _check_decayed(again, events, now[0])


def test_decayed_write_after_close_that_needs_a_rebase_raises(tmp_path: Path) -> None:
    """A write after close() far enough ahead to re-base opened a new
    durable board, deleted the closed one's directory, acknowledged the
    write and left the new board open (so a reopen in this process failed).
    It now raises the "closed" error and changes nothing."""
    now = [START]
    board = DecayedLeaderboard.open(tmp_path, tau=TAU, clock=lambda: now[0], fsync="always")
    board.add("ann", 5)
    board.close()
    now[0] += 100 * TAU
    with pytest.raises(ValueError, match="is closed"):
        board.add("bob", 1)
    with pytest.raises(ValueError, match="is closed"):
        board.rebase()
    assert board.rebases == 0
    with DecayedLeaderboard.open(tmp_path, tau=TAU, clock=lambda: now[0]) as again:
        assert [m for m, _ in again.items()] == ["ann"]


def test_decayed_close_racing_a_rebase_closes_the_new_board(tmp_path: Path) -> None:
    """close() did not take the board's lock: run during a re-base, it closed
    the old board while the re-base went on to install an open new one, so
    the board stayed open (and writable) after close() returned."""
    now = [START]
    pausing = [0]  # clock reads by the re-basing thread until the pause
    in_rebase = threading.Event()
    closed = threading.Event()

    def clock() -> float:
        if pausing[0] and threading.current_thread().name == "worker-0":
            pausing[0] -= 1
            if pausing[0]:
                return now[0]
            in_rebase.set()
            closed.wait(BLOCKED_S)  # the fixed close() waits for the re-base
        return now[0]

    board = DecayedLeaderboard.open(tmp_path, tau=TAU, clock=clock, fsync="always")
    board.add("ann", 5)
    now[0] += 100 * TAU
    outcome: list[Any] = []

    def rebaser() -> None:
        # the first clock read is add()'s "now"; the second stamps the new
        # board's first record, in the middle of the re-base
        pausing[0] = 2
        try:
            outcome.append(board.add("bob", 1))
        except ValueError as exc:
            assert "is closed" in str(exc), exc
            outcome.append(None)

    def closer() -> None:
        assert in_rebase.wait(60)
        board.close()
        closed.set()

    run_all([rebaser, closer])
    assert getattr(board.board, "closed", None) is True
    with pytest.raises(ValueError, match="is closed"):
        board.add("cat", 1)
    with DecayedLeaderboard.open(tmp_path, tau=TAU, clock=lambda: now[0]) as again:
        want = ["ann", "bob"] if outcome[0] is not None else ["ann"]
        assert sorted(m for m, _ in again.items()) == want


class _PausingBoard(Leaderboard):
    """A period board whose ``score`` can pause once (armed by the test)."""

    pause: Callable[[], None] | None = None

    def score(self, member: Any, default: Any = None) -> Any:
        pause, type(self).pause = type(self).pause, None
        if pause is not None:
            pause()
        return super().score(member, default)


def test_periodic_read_is_not_split_by_a_rollover() -> None:
    """``score()`` (and ``top``, ``rank``, ``entry``, ``around``) found the
    current period's board under the lock but read it after releasing it.
    A rollover plus a late write in between made the read return a score
    the board never showed as current: the late write's, in a period that
    was no longer current."""
    now = [START + HOUR - 1]
    board = PeriodicLeaderboard(
        "hourly", grace=600, clock=lambda: now[0], board_factory=lambda _p: _PausingBoard()
    )
    board.set("ann", 1)
    reading = threading.Event()
    written = threading.Event()
    seen: list[Any] = []

    def pause() -> None:
        reading.set()
        written.wait(BLOCKED_S)  # the fixed write waits for this read

    def reader() -> None:
        _PausingBoard.pause = pause
        seen.append(board.score("ann"))

    def writer() -> None:
        assert reading.wait(60)
        now[0] = START + HOUR + 1  # the next hour; the last one is open for 600 s more
        board.set("ann", 5, t=START + 100)  # late, but within grace
        written.set()

    try:
        run_all([reader, writer])
    finally:
        _PausingBoard.pause = None
    # before the write: 1 in the hour that was current; after it: absent
    # from the new current hour.  Never 5.
    assert seen[0] in (1, None)
    assert board.score("ann", period=board.period_of(START)) == 5
    board._check()
