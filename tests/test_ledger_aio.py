"""The ledger from asyncio: awaits that end once the event is durable, with
the fsyncs of tasks recording together shared (group commit)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_loopacks import runs_between_ticks

from rankengine import Ledger
from rankengine.board import release
from rankengine.durable import loopacks
from rankengine.durable.records import LogError
from rankengine.ledger import aio
from rankengine.ledger.aio import AsyncLedger

T = 1_798_934_400_000


@contextmanager
def patched(module: Any, name: str, value: Any) -> Iterator[None]:
    """``module.name`` set to ``value`` for the block (Hypothesis examples
    share one test function: no function-scoped monkeypatch)."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def hold_compactions(
    ledger: Ledger,
) -> tuple[threading.Event, threading.Event, list[int]]:
    """Make each compaction of ``ledger`` wait until ``go_on`` is set: it
    sets ``started`` first and notes its thread in ``threads``."""
    real_compact = ledger.compact
    started, go_on = threading.Event(), threading.Event()
    threads: list[int] = []

    def held_compact(**options: Any) -> int:
        threads.append(threading.get_ident())
        started.set()
        go_on.wait(10)
        return real_compact(**options)

    ledger.compact = held_compact  # type: ignore[method-assign]
    return started, go_on, threads


def test_a_thousand_tasks_share_a_few_fsyncs_and_every_event_is_kept(tmp_path: Path) -> None:
    async def main() -> tuple[int, int]:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("alltime")
        aledger.add_view("weekly", "periodic", calendar="weekly")
        done = await asyncio.gather(
            *(aledger.arecord(f"p{i % 50}", 1, t_ms=T + i) for i in range(1000))
        )
        assert sorted(d.seq for d in done) == list(range(1, 1001))
        await aledger.aclose()
        return aledger.fsyncs, sum(score for _, score in aledger["alltime"].items())

    fsyncs, total = asyncio.run(main())
    assert total == 1000
    assert 1 <= fsyncs < 1000  # shared: each fsync covers every record appended before it
    with Ledger.open(tmp_path) as again:
        again._check()
        assert sum(score for _, score in again["alltime"].items()) == 1000
        assert again["weekly"].items() == again["alltime"].items()


def test_notices_arrive_after_the_fsync_in_log_order(tmp_path: Path) -> None:
    async def main() -> list[Any]:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("alltime")
        news: list[Any] = []
        synced: list[int] = []
        files = aledger.ledger._files
        assert files is not None and files.writer is not None
        real = files.writer.sync_fn

        def counting_sync(fd: int) -> None:
            real(fd)
            synced.append(aledger.ledger.last_seq)

        files.writer.sync_fn = counting_sync
        aledger.ledger.subscribe("alltime", lambda n: news.append((n.seq, max(synced or [0]))))
        await asyncio.gather(*(aledger.arecord(f"p{i}", i + 1, t_ms=T + i) for i in range(200)))
        await aledger.aclose()
        return news

    news = asyncio.run(main())
    assert [seq for seq, _ in news] == list(range(1, 201))  # in log order
    assert all(seq <= synced for seq, synced in news)  # each after an fsync covering it


def test_under_everysec_the_await_returns_at_once(tmp_path: Path) -> None:
    async def main() -> int:
        aledger = await AsyncLedger.open(tmp_path, fsync="everysec")
        aledger.add_view("alltime")
        for i in range(100):
            await aledger.arecord("ann", 1, t_ms=T + i)
        await aledger.aclose()
        return aledger.fsyncs

    assert asyncio.run(main()) == 0


def test_a_failed_group_fsync_fails_the_awaits_and_the_ledger(tmp_path: Path) -> None:
    async def main() -> None:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("alltime")
        await aledger.arecord("ann", 1, t_ms=T)
        files = aledger.ledger._files
        assert files is not None and files.writer is not None

        def broken(fd: int) -> None:
            raise OSError(5, "Input/output error")

        files.writer.sync_fn = broken
        with pytest.raises(LogError, match="group fsync failed"):
            await aledger.arecord("bob", 1, t_ms=T + 1)
        with pytest.raises(LogError, match="fsync failed"):
            await aledger.arecord("cid", 1, t_ms=T + 2)  # the ledger takes no more
        files.writer.sync_fn = lambda fd: None
        await aledger.aclose()

    asyncio.run(main())


def test_acks_come_in_log_order_one_loop_wake_up_per_fsync_and_only_once_durable(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[list[int], list[bool], int, int]:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("alltime")
        loop = asyncio.get_running_loop()
        real_wake = loop.call_soon_threadsafe
        assert aledger._acks is not None
        ours = aledger._acks._release  # (the release it schedules)
        wake_ups = 0

        def counting_wake(callback: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal wake_ups
            wake_ups += callback == ours  # (not the worker threads' own)
            return real_wake(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting_wake  # type: ignore[method-assign]
        acked: list[int] = []
        durable_then: list[bool] = []
        group = aledger._group
        assert group is not None

        async def one(i: int) -> None:
            done = await aledger.arecord(f"p{i % 40}", 1, t_ms=T + i)
            durable_then.append(done.seq <= group.durable)  # (read as the await returns)
            acked.append(done.seq)

        await asyncio.gather(*(one(i) for i in range(500)))
        fsyncs = aledger.fsyncs
        await aledger.aclose()
        loop.call_soon_threadsafe = real_wake  # type: ignore[method-assign]
        return acked, durable_then, wake_ups, fsyncs

    acked, durable_then, wake_ups, fsyncs = asyncio.run(main())
    assert acked == list(range(1, 501))  # released in log order
    assert all(durable_then)  # nothing acknowledged before its fsync
    assert 1 <= wake_ups <= fsyncs < 500  # at most one loop wake-up per group fsync


@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_a_size_triggered_compaction_runs_off_the_loop_and_records_wait_for_it(
    tmp_path: Path, policy: str
) -> None:
    async def main() -> None:
        aledger = await AsyncLedger.open(tmp_path, fsync=policy, compact_min_bytes=2000)
        aledger.add_view("alltime")
        ledger = aledger.ledger
        started, go_on, threads = hold_compactions(ledger)
        i = 0
        while aledger._compaction is None:  # until a write crosses the threshold
            await aledger.arecord(f"p{i % 7}", 1, t_ms=T + i)
            i += 1
            assert i < 1000
        assert await asyncio.to_thread(started.wait, 10)
        seq = ledger.last_seq
        late = asyncio.create_task(aledger.arecord("late", 5, t_ms=T + i))
        for _ in range(5):  # the loop goes on; the record waits for the compaction
            await asyncio.sleep(0.002)
        assert not late.done() and ledger.last_seq == seq
        assert aledger["alltime"].score("late") is None  # reads answer meanwhile
        go_on.set()
        done = await late
        assert done.seq == seq + 1 and aledger["alltime"].score("late") == 5
        assert threads and threads[0] != threading.get_ident()  # not the loop's thread
        snapshots = ledger._files.manifest.config["snapshots"]  # type: ignore[union-attr]
        assert snapshots["alltime"][0] >= seq - 1  # a snapshot of the crossing write's time
        ledger._check()
        await aledger.aclose()

    asyncio.run(main())
    with Ledger.open(tmp_path) as again:
        again._check()
        assert again["alltime"].score("late") == 5
        assert sum(score for _, score in again["alltime"].items()) == again.last_seq - 1 + 5


def test_a_failed_background_compaction_fails_the_next_record_with_nothing_recorded(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        aledger = await AsyncLedger.open(tmp_path, fsync="always", compact_min_bytes=2000)
        aledger.add_view("alltime")
        ledger = aledger.ledger
        files = ledger._files
        assert files is not None
        real_write = files.write_parts
        calls: list[int] = []

        def failing_write(*args: Any, **kwargs: Any) -> Any:
            calls.append(threading.get_ident())
            if len(calls) == 1:
                raise OSError(28, "No space left on device")
            return real_write(*args, **kwargs)

        files.write_parts = failing_write  # type: ignore[method-assign]
        seq, i = 0, 0
        with pytest.raises(LogError, match="compaction failed"):
            while True:
                seq = ledger.last_seq
                await aledger.arecord(f"p{i % 7}", 1, t_ms=T + i)
                i += 1
                assert i < 1000
        assert ledger.last_seq == seq and len(calls) == 1  # the raising await wrote nothing
        assert calls[0] != threading.get_ident()  # (a worker thread's)
        await aledger.arecord("late", 5, t_ms=T + i)  # asks for the compaction again
        for _ in range(1000):
            if aledger._compaction is None and len(calls) == 2:
                break
            await asyncio.sleep(0.01)
        assert aledger._compact_error is None
        assert ledger._files.manifest.config["snapshots"]  # type: ignore[union-attr]
        await aledger.aclose()
        assert aledger["alltime"].score("late") == 5

    asyncio.run(main())
    with Ledger.open(tmp_path) as again:
        again._check()
        assert again["alltime"].score("late") == 5


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(0, 120),
    batch=st.integers(1, 40),
    cancelled=st.sets(st.integers(0, 119), max_size=10),
)
def test_records_a_compaction_held_back_go_on_in_turns_of_resume_batch_in_call_order(
    tmp_path_factory: pytest.TempPathFactory, count: int, batch: int, cancelled: set[int]
) -> None:
    """Against the plain model: every record called during a compaction and
    not cancelled is made once it ends, in call order, at most
    ``RESUME_BATCH`` of them between two turns of another task."""
    path = tmp_path_factory.mktemp("held")
    cancelled = {i for i in cancelled if i < count}

    async def main() -> list[Any]:
        aledger = await AsyncLedger.open(path, fsync="everysec", compact_min_bytes=2000)
        aledger.add_view("alltime")
        ledger = aledger.ledger
        started, go_on, _ = hold_compactions(ledger)
        i = 0
        while aledger._compaction is None:  # until a write crosses the threshold
            await aledger.arecord("warm", 1, t_ms=T + i)
            i += 1
            assert i < 1000
        assert await asyncio.to_thread(started.wait, 10)
        order: list[Any] = []
        running = True

        async def ticker() -> None:  # another task of the loop: one tick a turn
            while running:
                order.append("tick")
                await asyncio.sleep(0)

        async def one(k: int) -> None:
            done = await aledger.arecord(f"p{k}", 1, t_ms=T + i + k)
            order.append((k, done.seq))

        tasks = [asyncio.create_task(one(k)) for k in range(count)]
        await asyncio.sleep(0.005)  # every record waiting, the compaction held
        assert not [item for item in order if item != "tick"]
        for k in cancelled:
            tasks[k].cancel()
        tick = asyncio.create_task(ticker())
        go_on.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)  # (no hang)
        running = False
        await tick
        await aledger.aclose()
        ledger._check()
        return order

    with patched(aio, "RESUME_BATCH", batch):
        order = asyncio.run(main())
    made = [item for item in order if item != "tick"]
    assert [k for k, _ in made] == [k for k in range(count) if k not in cancelled]
    assert [seq for _, seq in made] == sorted(seq for _, seq in made)  # in call order
    assert max(runs_between_ticks(order)) <= batch


def test_a_large_group_is_released_in_turns_of_ack_batch_in_log_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loopacks, "ACK_BATCH", 10)

    async def main() -> list[Any]:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("alltime")
        files = aledger.ledger._files
        assert files is not None and files.writer is not None
        real = files.writer.sync_fn
        hold = threading.Event()

        def held_sync(fd: int) -> None:
            hold.wait(10)
            real(fd)

        files.writer.sync_fn = held_sync
        order: list[Any] = []
        running = True

        async def ticker() -> None:  # another task of the loop
            while running:
                order.append("tick")
                await asyncio.sleep(0)

        async def one(i: int) -> None:
            done = await aledger.arecord(f"p{i % 9}", 1, t_ms=T + i)
            order.append(done.seq)

        tick = asyncio.create_task(ticker())
        writes = asyncio.gather(*(one(i) for i in range(200)))
        await asyncio.sleep(0.01)  # all 200 appended, the first fsync held
        hold.set()
        await writes
        running = False
        await tick
        await aledger.aclose()
        return order

    order = asyncio.run(main())
    seqs = [item for item in order if item != "tick"]
    assert seqs == list(range(1, 201))  # in log order
    assert (
        max(runs_between_ticks(order)) <= 10
    )  # no more than ACK_BATCH awaits resumed between two ticks


def test_a_period_the_loop_drops_is_freed_on_the_release_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    freed: list[tuple[str, int]] = []
    real = release._release_now

    def watched(board: Any, *args: Any) -> None:
        size = len(board)
        real(board, *args)
        freed.append((threading.current_thread().name, size - len(board)))

    monkeypatch.setattr(release, "_release_now", watched)
    week = 7 * 86_400_000

    async def main() -> None:
        aledger = await AsyncLedger.open(tmp_path, fsync="always")
        aledger.add_view("weekly", "periodic", calendar="weekly")
        for i in range(300):
            await aledger.arecord(f"p{i}", i + 1, t_ms=T + i)
        await aledger.arecord("ann", 1, t_ms=T + week)  # week 1: week 0 kept as the last
        assert not freed
        await aledger.arecord("ann", 1, t_ms=T + 2 * week)  # week 0 dropped: 300 members
        release.wait_released()
        assert freed == [(release.RELEASER_NAME, 300)]
        assert not release.RELEASE.elsewhere  # (set only while the loop records)
        aledger.ledger.record("bob", 1, t_ms=T + 3 * week)  # a plain call frees where it runs
        assert freed[1:] == [(threading.current_thread().name, 1)]
        aledger.ledger._check()
        await aledger.aclose()

    asyncio.run(main())
