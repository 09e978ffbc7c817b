"""A durable board shared by writers, readers, a compactor and a closer.

Each writer owns its members, so whatever the interleaving its last
acknowledged write to a member is that member's state.  After the run --
which ends with ``close()`` from another thread while the writers are still
writing -- every acknowledged write must be in the closed board and in the
board reopened from the directory, and every write that was not
acknowledged must have raised the "closed" error, not anything else.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from threaded import run_all

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard

WRITERS = 3
READERS = 2
OWNED = 8
#: Writes each writer makes before the closer may close the board.
BEFORE_CLOSE = 60
#: The most writes a writer makes (it stops earlier when the board closes).
MOST_WRITES = 4000


class Acked:
    """What one writer was told: member -> score (None: removed), and meta."""

    def __init__(self) -> None:
        self.scores: dict[str, Any] = {}
        self.metas: dict[str, Any] = {}
        self.refused = 0

    def expected(self) -> dict[str, tuple[Any, Any]]:
        return {m: (s, self.metas.get(m)) for m, s in self.scores.items() if s is not None}


def _writer(
    board: DurableLeaderboard, i: int, acked: Acked, ready: threading.Event
) -> Callable[[], None]:
    rng = random.Random(i)
    mine = [f"w{i}-{j}" for j in range(OWNED)]

    def write() -> None:
        roll = rng.random()
        member = rng.choice(mine)
        present = acked.scores.get(member) is not None
        if roll < 0.3:
            score = rng.randint(-50, 50)
            board.set(member, score)
            acked.scores[member] = score
        elif roll < 0.55:
            delta = rng.choice([1, 2, -3, 0.5])
            acked.scores[member] = board.incr(member, delta)
        elif roll < 0.75:
            batch = {m: rng.randint(0, 99) for m in rng.sample(mine, 3)}
            board.set_many(batch)
            acked.scores.update(batch)
        elif roll < 0.85:
            removed = board.remove(member)
            assert removed == present
            acked.scores[member] = None
            acked.metas.pop(member, None)
        elif present:
            meta = None if rng.random() < 0.3 else {"n": rng.randrange(100)}
            board.set_meta(member, meta)
            if meta is None:
                acked.metas.pop(member, None)
            else:
                acked.metas[member] = meta

    def work() -> None:
        for n in range(MOST_WRITES):
            if n == BEFORE_CLOSE:
                ready.set()
            try:
                write()
            except ValueError as exc:
                assert "is closed" in str(exc), exc
                assert board.closed
                acked.refused += 1
                break
        ready.set()

    return work


def _reader(board: DurableLeaderboard, done: threading.Event) -> Callable[[], None]:
    def work() -> None:
        while not done.is_set():
            items = board.items()
            scores = [s for _, s in items]
            assert scores == sorted(scores, reverse=True)
            top = board.top(10)
            assert [e.rank for e in top] == list(range(1, len(top) + 1))
            assert all(a.score >= b.score for a, b in pairwise(top))
            if items:
                member = items[len(items) // 2][0]
                window = board.around(member, 1, 1)
                assert member in [e.member for e in window] or member not in board

    return work


def _compactor(board: DurableLeaderboard, done: threading.Event) -> Callable[[], None]:
    def work() -> None:
        while not done.is_set():
            try:
                board.compact()
                board.snapshot()
            except ValueError as exc:
                assert "is closed" in str(exc), exc
                return

    return work


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("fsync", ["always", "everysec", "never"])
def test_close_racing_writes_keeps_every_acknowledged_write(
    tmp_path: Path, fsync: Any, backend: str
) -> None:
    board = Leaderboard.open(tmp_path, fsync=fsync, backend=backend, compact_min_bytes=4096)
    acked = [Acked() for _ in range(WRITERS)]
    ready = [threading.Event() for _ in range(WRITERS)]
    done = threading.Event()

    def closer() -> None:
        try:
            for event in ready:
                assert event.wait(60), "a writer never got going"
            board.close()
        finally:
            done.set()

    workers = [_writer(board, i, acked[i], ready[i]) for i in range(WRITERS)]
    workers += [_reader(board, done) for _ in range(READERS)]
    workers += [_compactor(board, done), closer]
    run_all(workers)

    assert board.closed
    board._check()
    expected: dict[str, tuple[Any, Any]] = {}
    for a in acked:
        expected.update(a.expected())

    def state(b: Leaderboard) -> dict[str, tuple[Any, Any]]:
        return {m: (s, b.meta(m)) for m, s in b.items()}

    assert state(board) == expected
    with Leaderboard.open(tmp_path) as again:
        again._check()
        assert state(again) == expected
        assert again.last_seq == board.last_seq


#: How long a hook waits for another thread that the fixed code keeps
#: blocked.  Only ever a bound on waiting, never a measurement.
BLOCKED_S = 0.3


def test_a_second_close_returns_only_once_the_board_is_closed(tmp_path: Path) -> None:
    """A close() racing another close() returned at once while the first was
    still flushing, before the directory was released: reopening it right
    after the second close() returned failed with "already open"."""
    board = Leaderboard.open(tmp_path, fsync="never")
    board.set("ann", 1)
    in_close = threading.Event()
    second_done = threading.Event()
    real_sync = board._writer.sync_fn

    def sync(fd: int) -> None:  # the first close()'s final fsync
        in_close.set()
        second_done.wait(BLOCKED_S)  # the fixed second close() waits for this one
        real_sync(fd)

    board._writer.sync_fn = sync
    reopened: list[Any] = []

    def first() -> None:
        board.close()

    def second() -> None:
        assert in_close.wait(60)
        board.close()
        second_done.set()
        with Leaderboard.open(tmp_path) as again:
            reopened.append(again.items())

    run_all([first, second])
    assert reopened == [[("ann", 1)]]
