"""The awaits of an event loop on a group commit (rankengine.durable.loopacks),
shared by both asyncio faces.

* A group larger than ACK_BATCH is released over several turns of the loop,
  ACK_BATCH a turn, in ticket order, with other tasks running between.
* A failed fsync fails every write still waiting with the face's LogError;
  those released before it keep their results, and only they are delivered.
* A cancelled waiter is skipped (its item still delivered: it is durable)
  and the others are released.
* A ticket durable already is released without another fsync.
* The board's face releases in batches too (a real durable board).
* Against a model (Hypothesis): any run of waits, cancellations, fsyncs
  made elsewhere (``GroupCommit.synced``) and loop turns delivers the
  durable tickets in order, at most a batch a turn, and every one of them
  once the loop has turned enough.

Each runs on a real GroupCommit whose fsync is a real ``os.fsync`` of a
file, held back by an event where a test needs one large group.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.aio import AsyncLeaderboard
from rankengine.durable import loopacks
from rankengine.durable.commit import GroupCommit
from rankengine.durable.loopacks import ACK_BATCH, LoopAcks
from rankengine.durable.records import LogError

#: Long enough for any machine, short enough that a lost wake-up fails the
#: test instead of hanging it.
PATIENCE_S = 30.0


class Disk:
    """A real file fsynced by the group; ``hold`` stops the fsyncs until
    set, ``fail_from`` makes the fsyncs from that one on raise."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path / "log", os.O_CREAT | os.O_WRONLY)
        self.hold = threading.Event()
        self.hold.set()
        self.syncs = 0
        self.fail_from: int | None = None

    def sync(self) -> None:
        self.hold.wait(PATIENCE_S)
        self.syncs += 1
        if self.fail_from is not None and self.syncs >= self.fail_from:
            raise OSError(5, "Input/output error")
        os.write(self.fd, b".")
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


def failed(error: BaseException) -> str:
    return f"the test's fsync failed ({error})"


def runs_between_ticks(order: list[Any]) -> list[int]:
    """How many released items each stretch between two ticks holds."""
    runs, run = [], 0
    for item in order:
        if item == "tick":
            runs.append(run)
            run = 0
        else:
            run += 1
    runs.append(run)
    return runs


async def with_ticker(order: list[Any], work: Callable[[], Any]) -> Any:
    """Run ``work()`` with another task noting each turn of the loop."""
    running = True

    async def ticker() -> None:
        while running:
            order.append("tick")
            await asyncio.sleep(0)

    tick = asyncio.create_task(ticker())
    try:
        return await asyncio.wait_for(work(), PATIENCE_S)
    finally:
        running = False
        await tick


def test_a_group_larger_than_the_batch_is_released_over_several_turns_in_order(
    tmp_path: Path,
) -> None:
    count = 3 * ACK_BATCH + 17
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)

    async def main() -> list[Any]:
        order: list[Any] = []
        acks: LoopAcks[int] = LoopAcks(group, failed, order.append)
        disk.hold.clear()  # (the first fsync waits: the rest pile up behind it)
        futures = []
        for ticket in range(1, count + 1):
            group.appended(ticket)
            futures.append(acks.wait(ticket, ticket))

        async def work() -> None:
            disk.hold.set()
            await asyncio.gather(*futures)

        await with_ticker(order, work)
        acks._check()
        return order

    try:
        order = asyncio.run(main())
    finally:
        group.close()
        disk.close()
    assert [item for item in order if item != "tick"] == list(range(1, count + 1))
    runs = runs_between_ticks(order)
    # (at least one fsync covered more than a batch: it was cut at ACK_BATCH)
    assert max(runs) == ACK_BATCH
    assert sum(1 for run in runs if run) >= 4  # over several turns
    assert group.durable == count


def test_a_failed_fsync_fails_the_rest_with_the_faces_log_error(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)

    async def main() -> tuple[list[int], list[Any]]:
        delivered: list[int] = []
        acks: LoopAcks[int] = LoopAcks(group, failed, delivered.append)
        for ticket in (1, 2, 3):
            group.appended(ticket)
        await asyncio.wait_for(
            asyncio.gather(*(acks.wait(ticket, ticket) for ticket in (1, 2, 3))), PATIENCE_S
        )
        disk.fail_from = disk.syncs + 1  # (the next fsync fails)
        futures = []
        for ticket in (4, 5, 6):
            group.appended(ticket)
            futures.append(acks.wait(ticket, ticket))
        outcomes = await asyncio.wait_for(
            asyncio.gather(*futures, return_exceptions=True), PATIENCE_S
        )
        acks._check()
        return delivered, outcomes

    try:
        delivered, outcomes = asyncio.run(main())
    finally:
        group.close()
        disk.close()
    assert delivered == [1, 2, 3]  # (what the failed fsync should have covered: not)
    assert len(outcomes) == 3
    for outcome in outcomes:
        assert isinstance(outcome, LogError), outcome
        assert str(outcome) == "the test's fsync failed ([Errno 5] Input/output error)"
    assert group.durable == 3


def test_a_cancelled_waiter_is_skipped_and_the_others_are_released(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)

    async def main() -> tuple[list[int], list[Any]]:
        delivered: list[int] = []
        acks: LoopAcks[int] = LoopAcks(group, failed, delivered.append)
        disk.hold.clear()

        async def write(ticket: int) -> int:
            group.appended(ticket)
            await acks.wait(ticket, ticket)
            return ticket

        tasks = [asyncio.create_task(write(ticket)) for ticket in range(1, 6)]
        await asyncio.sleep(0)  # every task appended and awaiting
        tasks[2].cancel()
        await asyncio.sleep(0)  # (its future cancelled with it)
        disk.hold.set()
        outcomes = await asyncio.wait_for(
            asyncio.gather(*tasks, return_exceptions=True), PATIENCE_S
        )
        return delivered, outcomes

    try:
        delivered, outcomes = asyncio.run(main())
    finally:
        group.close()
        disk.close()
    assert outcomes[:2] == [1, 2] and outcomes[3:] == [4, 5]
    assert isinstance(outcomes[2], asyncio.CancelledError)
    assert delivered == [1, 2, 3, 4, 5]  # (the cancelled one's write is durable all the same)


def test_a_ticket_durable_already_is_released_without_another_fsync(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)

    async def main() -> tuple[int, int]:
        acks: LoopAcks[None] = LoopAcks(group, failed)
        acks.listen()
        group.appended(1)
        group.wait(1)  # (as another thread's write would: fsynced before the wait)
        syncs = group.syncs
        await asyncio.wait_for(acks.wait(1, None), PATIENCE_S)
        return syncs, group.syncs

    try:
        before, after = asyncio.run(main())
    finally:
        group.close()
        disk.close()
    assert before == after >= 1


def test_listen_subscribes_and_paces_once(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)
    try:
        acks: LoopAcks[None] = LoopAcks(group, failed)
        acks.listen()
        acks.listen()
        assert group._listeners == [acks._wake]
        assert group._pace > 0
    finally:
        group.close()
        disk.close()


def test_the_boards_face_releases_a_large_group_in_batches_in_order(tmp_path: Path) -> None:
    count = 2 * ACK_BATCH + 44

    async def main() -> list[Any]:
        board = await AsyncLeaderboard.open(tmp_path, fsync="always")
        writer = board.board._writer
        real = writer.sync_fn
        hold = threading.Event()

        def held_sync(fd: int) -> None:
            hold.wait(PATIENCE_S)
            real(fd)

        writer.sync_fn = held_sync
        order: list[Any] = []

        async def one(i: int) -> None:
            await board.incr(f"p{i}", i)
            order.append(i)

        async def work() -> None:
            writes = asyncio.gather(*(one(i) for i in range(count)))
            await asyncio.sleep(0.01)  # (every write appended, the first fsync held)
            hold.set()
            await writes

        await with_ticker(order, work)
        await board.close()
        return order

    order = asyncio.run(main())
    assert [item for item in order if item != "tick"] == list(range(count))
    runs = runs_between_ticks(order)
    assert max(runs) <= ACK_BATCH  # no more than a batch resumed between two ticks


def test_a_bad_wait_changes_nothing(tmp_path: Path) -> None:
    disk = Disk(tmp_path)
    group = GroupCommit(disk.sync, durable=0)
    try:
        acks: LoopAcks[None] = LoopAcks(group, failed)
        with pytest.raises(RuntimeError, match="no running event loop"):
            acks.wait(1, None)  # (off the loop)
        assert not acks._waiting and acks._loop is None and not group._listeners
    finally:
        group.close()
        disk.close()


#: The batch of the model test: small, so that a few waits span turns.
SMALL_BATCH = 3

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("wait"), st.integers(1, 8)),  # that many new tickets waited on
        st.tuples(st.just("sync"), st.integers(-4, 4)),  # durable up to the last ticket + n
        st.tuples(st.just("cancel"), st.integers(0, 40)),  # a pending waiter's task
        st.tuples(st.just("turn"), st.just(0)),  # one turn of the loop
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS)
def test_releases_follow_a_model_of_durability_order_batches_and_cancels(
    steps: list[tuple[str, int]],
) -> None:
    # (no appends: the group's flusher stays idle, and every fsync is one
    # "made elsewhere", group.synced, on the loop's thread: deterministic)
    group = GroupCommit(lambda: None, durable=0)

    async def main() -> None:
        delivered: list[int] = []
        acks: LoopAcks[int] = LoopAcks(group, failed, delivered.append)
        tasks: dict[int, asyncio.Task[None]] = {}
        last = durable = 0

        def check() -> None:
            acks._check()
            assert delivered == list(range(1, len(delivered) + 1))  # in ticket order
            assert len(delivered) <= durable  # only what is durable

        for op, n in steps:
            if op == "wait":
                for _ in range(n):
                    last += 1
                    tasks[last] = asyncio.create_task(_waiter(acks, last))
                await asyncio.sleep(0)  # (each task waiting)
            elif op == "sync" and last + n > durable:
                durable = last + n
                group.synced(durable)
            elif op == "cancel":
                pending = [task for task in tasks.values() if not task.done()]
                if pending:
                    pending[n % len(pending)].cancel()
            elif op == "turn":
                before = len(delivered)
                await asyncio.sleep(0)
                assert len(delivered) - before <= SMALL_BATCH  # a batch a turn at most
            check()
        for _ in range(last // SMALL_BATCH + 3):  # (enough turns for every batch)
            await asyncio.sleep(0)
        check()
        assert delivered == list(range(1, min(durable, last) + 1))  # every durable one
        for ticket, task in tasks.items():
            if ticket <= durable:
                assert task.done() and (task.cancelled() or task.result() is None)
            else:
                assert task.cancelled() or not task.done()  # (still waiting)
        for task in tasks.values():
            task.cancel()

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(loopacks, "ACK_BATCH", SMALL_BATCH)
            asyncio.run(main())
    finally:
        group.close()


async def _waiter(acks: LoopAcks[int], ticket: int) -> None:
    await acks.wait(ticket, ticket)
