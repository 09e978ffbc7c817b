"""The ledger from asyncio: awaits that end once the event is durable, with
the fsyncs of tasks recording together shared (group commit)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rankengine import Ledger
from rankengine.durable.records import LogError
from rankengine.ledger.aio import AsyncLedger

T = 1_798_934_400_000


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
