"""A period close writes its archive outside the periodic board's lock.

The close detaches the dropped period's board under the lock; the archive
is written (and the period's files deleted) after the lock is released.
Meanwhile other threads' calls run, and a read of the period answers from
the detached board until its archive is on disk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.timed.archive import write_archive
from rankengine.timed.detached import AfterLock
from rankengine.timed.periodic import PeriodicLeaderboard

DAY = 86_400
#: How long a test thread may take before the test calls it stuck (a
#: deadlock), not a speed claim: every wait here ends in milliseconds.
STUCK = 30.0


def ts(text: str) -> float:
    """POSIX seconds of an ISO UTC time."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class Gate:
    """Replaces write_archive: signals when an archive write starts, and
    holds it until the test opens the gate."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.go = threading.Event()
        self.fail: list[BaseException] = []

    def __call__(self, path: Any, period: Any, board: Any) -> None:
        self.started.set()
        assert self.go.wait(STUCK), "the test never opened the gate"
        if self.fail:
            raise self.fail.pop()
        write_archive(path, period, board)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    g = Gate()
    monkeypatch.setattr("rankengine.timed.dropping.write_archive", g)  # where the close writes it
    yield g
    g.go.set()


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``call`` on a new thread; its result (or error) lands in the list."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def answered(call: Callable[[], Any]) -> Any:
    """``call``'s result on another thread, failing the test if it never ends."""
    thread, out = in_thread(call)
    thread.join(STUCK)
    assert not thread.is_alive(), "the call waited for the archive write"
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


@pytest.mark.parametrize("durable", [False, True])
def test_reads_and_writes_go_on_while_a_closed_period_is_archived(
    tmp_path: Path, gate: Gate, durable: bool
) -> None:
    now = [ts("2026-11-30T12:00:00")]
    if durable:
        board = PeriodicLeaderboard.open(
            tmp_path, "daily", keep=0, fsync="never", clock=lambda: now[0]
        )
    else:
        board = PeriodicLeaderboard("daily", keep=0, clock=lambda: now[0], archive=tmp_path / "a")
    board.set_many({"ann": 5, "bob": 7, "cid": 5})
    board.set_meta("bob", {"team": "red"})
    final = board.by_rank(1, -1, with_meta=True)
    now[0] += DAY
    closing, out = in_thread(board.tick)  # drops 2026-11-30: its archive waits at the gate
    assert gate.started.wait(STUCK)
    # the lock is free: a read of the closing period answers from its
    # detached board, a read and a write of the current one go on
    assert answered(lambda: board.by_rank(1, -1, period="2026-11-30", with_meta=True)) == final
    assert answered(lambda: board.rank("bob", period="2026-11-30")) == 1
    assert answered(lambda: board.incr("dan", 3)) == 3
    assert answered(board.top) == [("dan", 3, 1, None)]
    assert answered(lambda: [p.name for p in board.periods()]) == ["2026-12-01"]
    assert answered(board.archived) == []  # not on disk yet
    answered(board._check)
    gate.go.set()
    closing.join(STUCK)
    assert not closing.is_alive()
    assert [p.name for p in out[0]] == ["2026-11-30"]
    # archived: read from the archive, gone from memory
    assert board.archived() == ["2026-11-30"]
    assert board.load_archived("2026-11-30").by_rank(1, -1, with_meta=True) == final
    with pytest.raises(KeyError, match="archived"):
        board.board("2026-11-30")
    board._check()
    if durable:
        assert sorted(p.name for p in (tmp_path / "periods").iterdir()) == ["2026-12-01"]
    board.close()


def test_close_waits_for_an_archive_being_written(tmp_path: Path, gate: Gate) -> None:
    now = [ts("2026-11-30T12:00:00")]
    board = PeriodicLeaderboard.open(tmp_path, "daily", keep=0, fsync="never", clock=lambda: now[0])
    board.incr("ann", 5)
    now[0] += DAY
    closing, _ = in_thread(board.tick)
    assert gate.started.wait(STUCK)
    shutting, _ = in_thread(board.close)
    shutting.join(0.2)
    assert shutting.is_alive()  # close() waits for the archive
    gate.go.set()
    for thread in (closing, shutting):
        thread.join(STUCK)
        assert not thread.is_alive()
    assert board.load_archived("2026-11-30").items() == [("ann", 5)]
    assert sorted(p.name for p in (tmp_path / "periods").iterdir()) == ["2026-12-01"]


def test_a_failed_archive_keeps_the_period_readable_and_is_tried_again(
    tmp_path: Path, gate: Gate
) -> None:
    now = [ts("2026-11-30T12:00:00")]
    board = PeriodicLeaderboard("daily", keep=0, clock=lambda: now[0], archive=tmp_path)
    board.set_many({"ann": 5, "bob": 7})
    now[0] += DAY
    gate.fail.append(OSError("disk full"))
    gate.go.set()
    with pytest.raises(OSError, match="disk full"):
        board.tick()  # the lock was released first: the archive error reaches the caller
    assert board.archived() == []  # (takes no lock)
    # still readable; this read releases the lock, so the archive is tried again
    assert board.items(period="2026-11-30") == [("bob", 7), ("ann", 5)]
    assert board.load_archived("2026-11-30").items() == [("bob", 7), ("ann", 5)]
    with pytest.raises(KeyError, match="archived"):
        board.board("2026-11-30")
    board._check()


def test_without_an_archive_a_dropped_period_is_gone_at_once() -> None:
    now = [ts("2026-11-30T12:00:00")]
    board = PeriodicLeaderboard("daily", keep=0, clock=lambda: now[0])
    board.incr("ann", 5)
    now[0] += DAY
    with pytest.raises(KeyError, match="no archive"):
        board.board("2026-11-30")
    assert board._detached == {}
    board._check()


@settings(max_examples=40, deadline=None)
@given(
    scores=st.dictionaries(
        st.text(min_size=1, max_size=4), st.integers(-5, 5), min_size=0, max_size=20
    ),
    metas=st.dictionaries(st.integers(0, 19), st.integers(0, 3), max_size=5),
)
def test_the_archive_equals_the_board(
    tmp_path_factory: pytest.TempPathFactory, scores: dict[str, int], metas: dict[int, int]
) -> None:
    now = [ts("2026-11-30T12:00:00")]
    board = PeriodicLeaderboard(
        "daily", keep=0, clock=lambda: now[0], archive=tmp_path_factory.mktemp("a")
    )
    for member, score in scores.items():  # one by one: ties broken by arrival
        board.set(member, score)
    members = list(scores)
    for i, level in metas.items():
        if i < len(members):
            board.set_meta(members[i], {"level": level})
    final = board.by_rank(1, -1, with_meta=True)
    now[0] += DAY
    board.tick()
    board._check()
    assert board.load_archived("2026-11-30").by_rank(1, -1, with_meta=True) == final


def test_after_lock_runs_its_work_after_the_outermost_release_only() -> None:
    pending = [True]
    free: list[bool] = []

    def take_and_release() -> bool:
        with lock:
            return True

    def after() -> None:
        pending[0] = False
        free.append(answered(take_and_release))  # another thread can take the lock

    lock = AfterLock(after=after, pending=lambda: pending[0])
    with lock:
        with lock:
            pass
        assert free == []  # not on an inner release
    assert free == [True]
    with lock:  # nothing pending: after() is not called again
        pass
    assert free == [True]
