"""Reads of a sharded board are not split by a write on another thread.

A batch write (``set_many``, ``incr_many``) is applied one shard at a time,
all under the sharded board's lock.  A read that sums or merges over the
shards without that lock could see some shards after the batch and the
others before it: an answer no serial order gives.  ``count``,
``rank_for_score``, ``len``, ``entries`` and ``percentile`` did.

The forced tests pause a batch between its first and its second shard (a
listener on each shard board, which runs under that shard's lock) and run
one read on another thread meanwhile; the read must answer as before the
batch or as after it.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from itertools import pairwise
from typing import Any, Final

import pytest
from threaded import run_all

from rankengine import ShardedLeaderboard

#: How long the main thread lets a read run into a paused batch before it
#: lets the batch go on (a read that takes the lock waits all of it).
PAUSE_S: Final = 0.2
#: A bound on waiting for the other thread (only a hang reaches it).
WAIT_S: Final = 10.0

MEMBERS = [f"m{i}" for i in range(16)]
NEW = [f"n{i}" for i in range(8)]


def _board() -> ShardedLeaderboard:
    board = ShardedLeaderboard.local(4)
    board.set_many(dict.fromkeys(MEMBERS, 0))
    return board


#: The batch the forced tests pause: every member moves to a score of its
#: own past the old ones, and new members arrive on several shards.
BATCH: dict[str, int] = {
    **{m: 10 + i for i, m in enumerate(MEMBERS)},
    **dict.fromkeys(NEW, 7),
}

READS: dict[str, Callable[[ShardedLeaderboard], Any]] = {
    "count": lambda b: b.count(5, None),
    "rank_for_score": lambda b: b.rank_for_score(5),
    "rank_for_score competition": lambda b: b.rank_for_score(5, style="competition"),
    "rank_for_score dense": lambda b: b.rank_for_score(5, style="dense"),
    "len": len,
    "pages": lambda b: b.pages(1),
    "entries": lambda b: b.entries(["m0", "m1", "m2", "m3", "n0", "n5"]),
    "percentile": lambda b: b.percentile("m0"),
}


def _pause_between_shards(board: ShardedLeaderboard) -> tuple[threading.Event, threading.Event]:
    """Make the next batch stop before its second shard's part: returns
    ``(paused, go)``."""
    paused, go = threading.Event(), threading.Event()
    commits = [0]

    def listener(changes: list[Any]) -> None:
        commits[0] += 1
        if commits[0] == 2:  # the first shard's part is in, the rest is not
            paused.set()
            assert go.wait(WAIT_S)

    for shard in board.shards:
        shard._listener = listener
    return paused, go


@pytest.mark.parametrize("name", list(READS))
def test_a_read_waits_for_a_batch_in_progress(name: str) -> None:
    read = READS[name]
    board = _board()
    twin = board.copy()
    twin.set_many(BATCH)
    serial = [read(board), read(twin)]  # before the batch, after it
    assert serial[0] != serial[1]
    paused, go = _pause_between_shards(board)
    writer = threading.Thread(target=board.set_many, args=(BATCH,), daemon=True)
    writer.start()
    assert paused.wait(WAIT_S)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(read(board)), daemon=True)
    reader.start()
    reader.join(PAUSE_S)  # returns early only if the read skipped the lock
    go.set()
    writer.join(WAIT_S)
    reader.join(WAIT_S)
    assert not writer.is_alive() and not reader.is_alive()
    assert got and got[0] in serial, f"{name} saw half a batch: {got[0]!r}, not one of {serial}"
    board._check()


def test_percentile_of_a_member_removed_meanwhile_is_none() -> None:
    # percentile() read the member's score before it took the lock: a
    # removal in between left it counting an empty board
    # (ZeroDivisionError), or a score the member no longer held.
    board = ShardedLeaderboard.local(3)
    board.set("x", 5)
    got: list[Any] = []

    def read() -> None:
        try:
            got.append(board.percentile("x"))
        except ZeroDivisionError as exc:
            got.append(exc)

    with board._lock:  # a write in progress on another thread
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(PAUSE_S)  # let it reach the lock
        board.remove("x")
    reader.join(WAIT_S)
    assert not reader.is_alive()
    assert got == [None]


def test_sharded_reads_during_batches_match_a_serial_order() -> None:
    # unforced: batches flip every member between two states while readers
    # check that each answer is one of the two
    board = _board()
    high = dict.fromkeys(MEMBERS, 10)
    low = dict.fromkeys(MEMBERS, 0)
    n = len(MEMBERS)
    seen = [0]

    def writer(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(seed)
            for _ in range(150):
                if rng.random() < 0.5:
                    board.set_many(high if rng.random() < 0.5 else low)
                else:
                    board.incr_many(dict.fromkeys(rng.sample(MEMBERS, 4), 0))

        return work

    def reader() -> None:
        for _ in range(150):
            assert board.count(5, None) in (0, n)
            assert board.rank_for_score(5) in (1, n + 1)
            assert board.rank_for_score(5, style="dense") in (1, 2)
            assert len(board) == n
            ranks = [e.rank for e in board.entries(MEMBERS, style="competition") if e]
            assert set(ranks) == {1}
            top = board.top(n)
            assert [e.rank for e in top] == list(range(1, n + 1))
            assert len({e.score for e in top}) == 1
            assert all(a.score >= b.score for a, b in pairwise(top))
            assert board.percentile(MEMBERS[0]) == 50.0
            seen[0] += 1

    run_all([writer(1), writer(2), reader, reader])
    board._check()
    assert seen[0] == 300
    assert {board.score(m) for m in MEMBERS} <= {0, 10}


def test_entries_are_not_split_by_a_write_between_two_members() -> None:
    # entries() read one member's entry at a time (the _entry_of primitive
    # of the board contract), each under the lock but not the whole list: a
    # write could land between two members' entries.  The second member's
    # read here starts a write on another thread and gives it a moment; it
    # must wait for the whole entries() call.
    board = _board()
    board.set("m1", 3)
    before = board.entries(["m0", "m1"])
    real_entry = board._entry_of
    calls = [0]
    writer: list[threading.Thread] = []

    def entry(member: Any, *args: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            t = threading.Thread(target=board.set, args=("m0", 50), daemon=True)
            t.start()
            t.join(PAUSE_S)  # finishes early only if entries() let go of the lock
            writer.append(t)
        return real_entry(member, *args)

    board._entry_of = entry  # type: ignore[method-assign]
    got = board.entries(["m0", "m1"])
    assert calls[0] == 2  # one read per member: the patch was reached
    writer[0].join(WAIT_S)
    assert not writer[0].is_alive()
    del board._entry_of
    after = board.entries(["m0", "m1"])
    assert got in (before, after), got
    board._check()
