"""Group commit (rankengine.durable.commit, rankengine.durable.acks).

* The mechanism, with an fsync the test holds: writers that append while
  an fsync runs share the next one; each waiter returns only once an fsync
  that started after its append has finished; callbacks run once, in
  ticket order; a failed fsync reaches every waiter it should have covered,
  and no later one succeeds.
* A board under ``fsync="always"``: writers on many threads share fsyncs
  (fewer fsyncs than writes while they overlap), every acknowledged write
  is in the board reopened, and a failed group fsync fails the write that
  waited for it and refuses later writes.
* SIGKILL: a child whose threads write to one board (with compactions in
  the run) is killed at random moments; every write it acknowledged is in
  the reopened board.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from acked_child import AckedChild

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.commit import GroupCommit
from rankengine.durable.records import LogError

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).with_name("group_child.py")


class HeldSync:
    """An fsync that blocks until the test lets it go, and counts."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.go = threading.Semaphore(0)
        self.calls = 0
        self.fail: BaseException | None = None

    def __call__(self) -> None:
        self.calls += 1
        self.started.release()
        assert self.go.acquire(timeout=30)
        if self.fail is not None:
            raise self.fail


def waiter(group: GroupCommit, ticket: int, out: dict[int, Any]) -> threading.Thread:
    def run() -> None:
        try:
            group.wait(ticket)
            out[ticket] = ("ok", group.durable)
        except LogError as exc:
            out[ticket] = ("error", exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_writers_in_flight_share_the_next_fsync() -> None:
    sync = HeldSync()
    group = GroupCommit(sync, durable=0)
    out: dict[int, Any] = {}
    group.appended(1)
    first = waiter(group, 1, out)
    assert sync.started.acquire(timeout=30)  # the fsync covering 1 runs
    # 2..5 are appended while it runs: it does not cover them
    threads = []
    for ticket in range(2, 6):
        group.appended(ticket)
        threads.append(waiter(group, ticket, out))
    time.sleep(0.05)
    assert out == {}  # nobody is acknowledged before its fsync ends
    sync.go.release()
    first.join(timeout=30)
    assert out == {1: ("ok", 1)}
    assert sync.started.acquire(timeout=30)  # one more fsync, for 2..5 together
    time.sleep(0.05)
    assert len(out) == 1
    sync.go.release()
    for thread in threads:
        thread.join(timeout=30)
    assert out == {1: ("ok", 1), **dict.fromkeys(range(2, 6), ("ok", 5))}
    assert sync.calls == group.syncs == 2
    group.close()


def test_callbacks_run_once_in_ticket_order() -> None:
    sync = HeldSync()
    group = GroupCommit(sync, durable=3)
    calls: list[tuple[int, Any]] = []
    group.add_callback(2, lambda error: calls.append((2, error)))  # durable already
    assert calls == [(2, None)]
    group.appended(4)
    group.add_callback(4, lambda error: calls.append((4, error)))
    assert sync.started.acquire(timeout=30)  # the fsync covering 4 runs
    group.appended(5)
    group.add_callback(5, lambda error: calls.append((5, error)))
    assert calls == [(2, None)]
    sync.go.release()
    assert sync.started.acquire(timeout=30)  # then one for 5
    sync.go.release()
    group.close()
    assert calls == [(2, None), (4, None), (5, None)]


def test_a_failed_fsync_reaches_every_waiter_it_should_have_covered() -> None:
    sync = HeldSync()
    failures: list[BaseException] = []
    group = GroupCommit(sync, durable=0, on_error=failures.append)
    out: dict[int, Any] = {}
    errors: list[Any] = []
    group.appended(1)
    threads = [waiter(group, 1, out)]
    group.add_callback(1, errors.append)
    assert sync.started.acquire(timeout=30)
    sync.fail = OSError(5, "Input/output error")
    sync.go.release()
    for thread in threads:
        thread.join(timeout=30)
    assert out[1][0] == "error" and "Input/output error" in str(out[1][1])
    assert failures == [sync.fail] and errors == [sync.fail]
    group.appended(2)
    with pytest.raises(LogError):
        group.wait(2)  # no later fsync pretends to succeed
    group.close()


def test_threads_share_fsyncs_and_every_acknowledged_write_is_kept(tmp_path: Path) -> None:
    threads, writes = 8, 150
    acked: dict[str, int] = {}
    lock = threading.Lock()
    with DurableLeaderboard(tmp_path, fsync="always", compact_min_bytes=2048) as board:
        group = board.group_commit
        assert group is not None
        start = threading.Barrier(threads)

        def writer(t: int) -> None:
            start.wait()
            for k in range(1, writes + 1):
                member = f"t{t}m{k % 7}"
                board.incr(member, 1) if k % 3 else board.set(member, k)
                with lock:
                    acked[member] = board.score(member)  # type: ignore[assignment]

        pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        board._check()
        final = dict(board.items())
        syncs = group.syncs
        assert board.last_seq == threads * writes
    # the fsyncs were shared: fewer fsyncs than writes (they overlap: 8
    # threads wait for their fsync at the same time)
    assert syncs < threads * writes
    with DurableLeaderboard(tmp_path) as again:
        assert dict(again.items()) == final
        for member, score in acked.items():
            assert member in again
            assert again.score(member) >= score  # type: ignore[operator]


def test_a_failed_group_fsync_fails_the_write_and_the_board(tmp_path: Path) -> None:
    board = DurableLeaderboard(tmp_path, fsync="always")
    board.set("ann", 1)
    writer = board._writer

    def broken() -> None:
        raise OSError(28, "No space left on device")

    writer.sync = broken  # type: ignore[method-assign]
    with pytest.raises(LogError, match="No space left"):
        board.set("bob", 2)  # not acknowledged
    with pytest.raises(LogError, match="refuses further writes"):
        board.set("cy", 3)
    board.close()  # (the failure is the board's state: close does not fsync again)
    with Leaderboard.open(tmp_path) as again:
        assert again.score("ann") == 1  # acknowledged before the failure
        assert "cy" not in again  # refused: never logged


def test_deferred_writes_return_a_ticket(tmp_path: Path) -> None:
    with DurableLeaderboard(tmp_path, fsync="always") as board:
        result, ticket = board.write_deferred("incr", "ann", 2)
        assert (result, ticket) == (2, 1)
        done = threading.Event()
        board.when_durable(ticket, lambda error: done.set() if error is None else None)
        assert done.wait(30)
        _, none = board.write_deferred("remove", "nobody")
        assert none == 0  # no record, nothing to wait for
        with pytest.raises(ValueError, match="not a write"):
            board.write_deferred("rank", "ann")
    with DurableLeaderboard(tmp_path, fsync="everysec") as board:
        assert board.write_deferred("incr", "ann", 1) == (3, 0)
        assert board.group_commit is None


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_keeps_every_write_acknowledged_by_any_thread(tmp_path: Path) -> None:
    rounds = int(os.environ.get("RANKENGINE_CRASH_ROUNDS", "4"))
    rng = random.Random(2026)
    threads = 6
    directory = tmp_path / "board"
    for _ in range(rounds):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        child = AckedChild([sys.executable, str(CHILD), str(directory), str(threads)], env)
        assert child.first_ack.wait(60)
        time.sleep(rng.uniform(0.05, 0.5))
        child.proc.send_signal(signal.SIGKILL)
        assert child.finish() == -signal.SIGKILL
        last: dict[str, int] = {}
        for line in child.lines:
            parts = line.split()
            if parts[:1] == ["ack"] and line.endswith("\n"):
                t, k = int(parts[1]), int(parts[2])
                last[f"t{t}m{k % 5}"] = k
        assert last
        with Leaderboard.open(directory, fsync="never") as again:
            again._check()
            for member, k in last.items():
                # this round's acknowledged value, or a later write of it
                # that reached the log before the kill
                assert again.score(member) is not None
                assert again.score(member) >= k, (member, again.score(member), k)
        # the next round starts from this state: its writes begin at k = 1
        # again, so clear it
        with Leaderboard.open(directory, fsync="never") as again:
            again.clear()
