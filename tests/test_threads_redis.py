"""Lock order of Redis boards that copy from each other.

``rebuild(source)`` held the board's lock and then the source's, so two
boards rebuilt from each other on two threads could each hold one lock
and wait for the other.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, Final

import pytest
from redis_service import redis_board
from threaded import run_all

from rankengine.board.changes import PUT

pytestmark = pytest.mark.redis

#: How long a thread that took its first lock waits for the other thread to
#: take its own (a bound on waiting; the fixed code never gets both in).
BLOCKED_S: Final = 0.5


class _GatedLock:
    """A board lock whose first acquisition in each rebuilding thread waits
    (briefly) for the other thread's, to force the two-lock interleaving."""

    def __init__(self, inner: Any, gate: threading.Barrier, gated: set[str]) -> None:
        self.inner = inner
        self.gate = gate
        self.gated = gated
        self.local = threading.local()

    def __enter__(self) -> Any:
        self.inner.acquire()
        name = threading.current_thread().name
        depth = getattr(self.local, "depth", 0)
        self.local.depth = depth + 1
        if depth == 0 and name in self.gated:
            self.gated.discard(name)
            with contextlib.suppress(threading.BrokenBarrierError):
                self.gate.wait(BLOCKED_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self.local.depth -= 1
        self.inner.release()


def test_boards_rebuilt_from_each_other_do_not_deadlock() -> None:
    a, b = redis_board(), redis_board()
    a.set_many({"ann": 1, "bob": 2})
    b.set_many({"cat": 3})
    gate = threading.Barrier(2)
    gated = {"worker-0", "worker-1"}
    a._lock = _GatedLock(a._lock, gate, gated)
    b._lock = _GatedLock(b._lock, gate, gated)

    def rebuild(target: Any, source: Any) -> Callable[[], None]:
        return lambda: target.rebuild(source) and None

    run_all([rebuild(a, b), rebuild(b, a)], timeout=20)
    # each copied the other as it was at some point: one of the two orders
    assert (a.items(), b.items()) in (
        ([("cat", 3)], [("cat", 3)]),
        ([("bob", 2), ("ann", 1)], [("bob", 2), ("ann", 1)]),
        ([("cat", 3)], [("bob", 2), ("ann", 1)]),
    )
    a._check()
    b._check()


class _RacingClock:
    """A ``_last_clock`` whose first read in each of two threads waits for
    the other thread's first read, and whose write by the thread with the
    smaller clock waits for the other write: the interleaving that loses an
    unguarded read-compare-write ("both read 0, the larger writes first")."""

    def __init__(self) -> None:
        self.value = 0
        self.reads = threading.Barrier(2)
        self.first_read: set[str] = set()
        self.larger_written = threading.Event()

    def get(self) -> int:
        name = threading.current_thread().name
        value = self.value
        if name not in self.first_read:
            self.first_read.add(name)
            with contextlib.suppress(threading.BrokenBarrierError):
                self.reads.wait(BLOCKED_S)
        return value

    def put(self, value: int) -> None:
        if value == 9:
            self.value = value
            self.larger_written.set()
        else:
            self.larger_written.wait(BLOCKED_S)
            self.value = value


def test_the_latest_clock_seen_is_not_lowered_by_a_racing_write() -> None:
    """Two threads note the clocks of their writes (9 and 5) at once: the
    board must remember 9, the largest, whatever the interleaving (sharded
    boards plan tie clocks from it)."""
    from rankengine.redis.board import RedisLeaderboard

    board = redis_board()
    racing = _RacingClock()

    class Racing(RedisLeaderboard):
        _last_clock = property(lambda self: racing.get(), lambda self, v: racing.put(v))  # type: ignore[assignment]

    del board.__dict__["_last_clock"]
    board.__class__ = Racing
    run_all(
        [
            lambda: board._notify([(PUT, "ann", 1, 9)]),
            lambda: board._notify([(PUT, "bob", 1, 5)]),
        ]
    )
    assert racing.value == 9
