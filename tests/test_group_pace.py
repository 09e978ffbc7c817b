"""The paced group commit (``GroupCommit.pace``) and the asyncio faces on it.

* ``pace`` refuses what is not a number of seconds in range, changing
  nothing, and keeps the longest pace asked for.
* Paced, the fsyncs start no closer together than the pace (so a steady
  stream of appends gets at most one fsync per interval), and each waiter
  still returns only once an fsync that started after its append is done.
* Both asyncio faces, under random schedules of tasks (bursts, turns of
  the loop, waits, cancellations) and, in some runs, an fsync that fails:
  every await that returns does so once the fsyncs, as sampled by the
  fsync itself when it starts, cover its record; the awaits return in log
  order; a cancelled await neither loses nor repeats its record; after a
  failed fsync no await returns successfully, the others raise
  ``LogError``; every acknowledged record is in the log reopened.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import tempfile
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard, Ledger
from rankengine.aio import AsyncLeaderboard
from rankengine.durable.commit import LOOP_PACE_S, MAX_PACE_S, GroupCommit
from rankengine.durable.records import LogError
from rankengine.ledger.aio import AsyncLedger

T = 1_798_934_400_000


# ----------------------------------------------------------------------
# GroupCommit.pace
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad", [-0.001, math.nan, math.inf, MAX_PACE_S * 2, "0.001", None, True, [0.001]]
)
def test_pace_refuses_bad_input_and_changes_nothing(bad: Any) -> None:
    group = GroupCommit(lambda: None, durable=0)
    group.pace(0.002)
    with pytest.raises(ValueError, match="pace"):
        group.pace(bad)
    assert group._pace == 0.002
    group.close()


def test_the_longest_pace_wins() -> None:
    group = GroupCommit(lambda: None, durable=0)
    group.pace(0.003)
    group.pace(0)
    group.pace(0.001)
    assert group._pace == 0.003
    group.close()


def test_paced_fsyncs_start_no_closer_than_the_pace_and_cover_their_waiters() -> None:
    pace = 0.02
    starts: list[float] = []
    covered: list[int] = []
    group: GroupCommit

    def sync() -> None:
        starts.append(time.monotonic())
        covered.append(group.last)  # (appended before this fsync started)

    group = GroupCommit(sync, durable=0)
    group.pace(pace)
    returned: dict[int, int] = {}
    lock = threading.Lock()
    ticket = 0

    def writer() -> None:
        nonlocal ticket
        for _ in range(40):
            with lock:  # (appended in ticket order, as under a log's lock)
                ticket += 1
                mine = ticket
                group.appended(mine)
            group.wait(mine)
            returned[mine] = max(covered)  # what the fsyncs covered when it returned

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    group.close()
    assert sorted(returned) == list(range(1, 161))
    assert all(mine <= cover for mine, cover in returned.items())
    # (a bound that only a pace broken too short can break: never faster than it)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= pace * 0.99, gaps
    assert group.syncs < 160  # shared: four writers wait on each fsync


def test_a_ring_from_before_the_fsync_does_not_cut_the_pace_short() -> None:
    pace = 0.05
    starts: list[float] = []
    started, go = threading.Semaphore(0), threading.Semaphore(0)

    def sync() -> None:
        starts.append(time.monotonic())
        if len(starts) == 1:
            started.release()
            assert go.acquire(timeout=30)

    group = GroupCommit(sync, durable=0)
    group.pace(pace)
    group.appended(1)
    assert started.acquire(timeout=30)  # the first fsync runs
    group.appended(2)  # (the flusher is busy: no ring)
    group.add_callback(2, lambda error: None)  # rings: a ring pending before the pace
    go.release()
    group.wait(2)
    group.close()
    assert len(starts) == 2 and starts[1] - starts[0] >= pace * 0.99, starts


def test_a_close_during_the_pace_still_makes_everything_durable() -> None:
    group = GroupCommit(lambda: None, durable=0)
    group.pace(MAX_PACE_S)
    group.appended(1)
    group.wait(1)  # the first fsync: at once (nothing before it)
    group.appended(2)  # the flusher sleeps out its pace now
    group.close()  # rings: the last fsync runs, the thread ends
    assert group.durable == 2 and group.syncs == 2
    assert not group._thread.is_alive()


# ----------------------------------------------------------------------
# The asyncio faces under random schedules
# ----------------------------------------------------------------------
#: One step of a schedule: start n tasks, give the loop a turn, wait a
#: little (the flusher gets to fsync), or cancel the k-th task started.
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.integers(1, 40)),
        st.tuples(st.just("turn"), st.just(0)),
        st.tuples(st.just("wait"), st.integers(1, 3)),
        st.tuples(st.just("cancel"), st.integers(0, 200)),
    ),
    min_size=1,
    max_size=12,
)
#: None: no failure; n: the fsyncs after the n-th fail.
FAIL_AFTER = st.one_of(st.none(), st.integers(0, 6))


class Schedule:
    """Runs a schedule of tasks that each make one awaited write, and keeps
    what each saw: ``acked`` (seq, what the fsyncs covered as its await
    returned) in the order the awaits returned."""

    def __init__(self, write: Any) -> None:
        self.write = write  # async (i) -> seq
        self.tasks: list[asyncio.Task[None]] = []
        self.started: set[int] = set()
        self.acked: list[tuple[int, int]] = []
        self.covered = 0

    async def one(self, i: int) -> None:
        self.started.add(i)  # (the write is made before the first await)
        seq = await self.write(i)
        self.acked.append((seq, self.covered))

    async def run(self, steps: list[tuple[str, int]]) -> list[Any]:
        for kind, n in steps:
            if kind == "start":
                for _ in range(n):
                    self.tasks.append(asyncio.create_task(self.one(len(self.tasks))))
            elif kind == "turn":
                await asyncio.sleep(0)
            elif kind == "wait":
                await asyncio.sleep(n * LOOP_PACE_S)
            elif self.tasks:
                self.tasks[n % len(self.tasks)].cancel()
        return await asyncio.gather(*self.tasks, return_exceptions=True)

    def sampling(self, real: Any, last: Any, fail_after: int | None) -> Any:
        """An fsync that notes what it covers (the last record appended when
        it starts) once it is done, and fails after ``fail_after`` calls."""
        calls = 0

        def sync(fd: int) -> None:
            nonlocal calls
            calls += 1
            at_start = last()
            if fail_after is not None and calls > fail_after:
                raise OSError(5, "Input/output error")
            real(fd)
            self.covered = max(self.covered, at_start)

        return sync

    def check(self, outcomes: list[Any], fail_after: int | None) -> None:
        seqs = [seq for seq, _ in self.acked]
        assert all(seq <= covered for seq, covered in self.acked), self.acked  # durable first
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # log order, once each
        for outcome in outcomes:
            if isinstance(outcome, LogError):
                assert fail_after is not None
            else:
                assert outcome is None or isinstance(outcome, asyncio.CancelledError), outcome
        assert len(self.acked) == sum(outcome is None for outcome in outcomes)


@settings(max_examples=25, deadline=None)
@given(steps=STEPS, fail_after=FAIL_AFTER)
def test_ledger_awaits_return_once_covered_in_order_and_nothing_is_lost(
    steps: list[tuple[str, int]], fail_after: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:

        async def main() -> tuple[Schedule, list[Any]]:
            aledger = await AsyncLedger.open(tmp, fsync="always", compact_min_bytes=None)
            aledger.add_view("alltime")
            files, group = aledger.ledger._files, aledger._group
            assert files is not None and files.writer is not None and group is not None

            async def write(i: int) -> int:
                done = await aledger.arecord(f"p{i % 7}", i + 1, t_ms=T + i)
                return done.seq

            schedule = Schedule(write)
            real = files.writer.sync_fn
            files.writer.sync_fn = schedule.sampling(real, lambda: group.last, fail_after)
            outcomes = await schedule.run(steps)
            files.writer.sync_fn = real  # (a failed ledger closes without one)
            await aledger.aclose()
            return schedule, outcomes

        schedule, outcomes = asyncio.run(main())
        schedule.check(outcomes, fail_after)
        with Ledger.open(tmp) as again:
            again._check()
            acked = [seq for seq, _ in schedule.acked]
            assert again.last_seq >= max(acked, default=0)  # every acknowledged one kept
            if not any(isinstance(o, LogError) for o in outcomes):
                # each started task's event once: cancelled awaits included
                assert again.last_seq == len(schedule.started)
                total = sum(score for _, score in again["alltime"].items())
                assert total == sum(i + 1 for i in schedule.started)


@settings(max_examples=15, deadline=None)
@given(steps=STEPS, fail_after=FAIL_AFTER)
def test_board_awaits_return_once_covered_in_order_and_nothing_is_lost(
    steps: list[tuple[str, int]], fail_after: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:

        async def main() -> tuple[Schedule, list[Any], dict[int, int]]:
            board = await AsyncLeaderboard.open(tmp, fsync="always")
            writer, group = board.board._writer, board.board.group_commit
            assert group is not None
            tickets: dict[Any, int] = {}
            members: dict[int, int] = {}
            real_durable = board._durable

            def noting(ticket: int) -> asyncio.Future[None]:
                tickets[asyncio.current_task()] = ticket  # (the write's, by its task)
                return real_durable(ticket)

            board._durable = noting  # type: ignore[method-assign]

            async def write(i: int) -> int:
                await board.incr(f"p{i}", i + 1)
                members[tickets[asyncio.current_task()]] = i
                return tickets[asyncio.current_task()]

            schedule = Schedule(write)
            real = writer.sync_fn
            writer.sync_fn = schedule.sampling(real, lambda: group.last, fail_after)
            outcomes = await schedule.run(steps)
            writer.sync_fn = real
            await board.close()
            return schedule, outcomes, members

        schedule, outcomes, members = asyncio.run(main())
        schedule.check(outcomes, fail_after)
        with Leaderboard.open(tmp) as again:
            for seq, _ in schedule.acked:  # every acknowledged write kept
                assert again.score(f"p{members[seq]}") == members[seq] + 1
            if not any(isinstance(o, LogError) for o in outcomes):
                # each started task's write once: cancelled awaits included
                assert {int(m[1:]) for m, _ in again.items()} == schedule.started
