"""A ledger under ``fsync="always"`` from threads: ``record`` returns once
its event is fsynced, the threads recording together sharing fsyncs (the
group commit of ``rankengine.durable.commit``, as a durable board's)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rankengine import Ledger
from rankengine.durable.records import LogError

T = 1_798_934_400_000


def _counting(ledger: Ledger) -> list[int]:
    """Note, after each fsync of the log, the last seq it covers (a fresh
    ledger: the n-th record appended is seq n)."""
    files = ledger._files
    assert files is not None and files.writer is not None and ledger.last_seq == 0
    writer = files.writer
    real_sync, real_append = writer.sync_fn, writer.append
    appended, synced = [0], [0]

    def counting_append(data: Any) -> Any:
        result = real_append(data)
        appended[0] += 1
        return result

    def counting_sync(fd: int) -> None:
        covered = appended[0]  # (read before: every record it covers)
        real_sync(fd)
        synced.append(covered)

    writer.append = counting_append  # type: ignore[method-assign]
    writer.sync_fn = counting_sync
    return synced


def test_threads_share_fsyncs_and_each_record_returns_once_durable(tmp_path: Path) -> None:
    threads, events = 8, 100
    early: list[int] = []
    with Ledger.open(tmp_path, fsync="always", compact_min_bytes=None) as ledger:
        ledger.add_view("alltime")
        files = ledger._files
        assert files is not None and files.group is not None
        synced = _counting(ledger)
        start = threading.Barrier(threads)

        def writer(t: int) -> None:
            start.wait()
            for k in range(events):
                done = (
                    ledger.record(f"t{t}", 1, t_ms=T + k)
                    if k % 2
                    else ledger.record_many([(f"t{t}", 1)])[0]
                )
                if done.seq > max(synced):  # acknowledged before an fsync covered it
                    early.append(done.seq)

        pool = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        ledger._check()
        syncs = files.group.syncs
        assert ledger.last_seq == threads * events
    assert early == []
    assert 1 <= syncs < threads * events  # shared (8 threads wait at once)
    with Ledger.open(tmp_path) as again:
        again._check()
        assert dict(again["alltime"].items()) == {f"t{t}": events for t in range(threads)}


def test_with_a_subscriber_each_notice_follows_its_own_fsync(tmp_path: Path) -> None:
    news: list[tuple[int, int]] = []
    with Ledger.open(tmp_path, fsync="always") as ledger:
        ledger.add_view("alltime")
        synced = _counting(ledger)
        ledger.subscribe("alltime", lambda n: news.append((n.seq, max(synced))))
        pool = [
            threading.Thread(target=lambda t=t: [ledger.record(f"p{t}", 1) for _ in range(20)])
            for t in range(4)
        ]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
    assert [seq for seq, _ in news] == list(range(1, 81))  # in log order
    assert all(seq <= covered for seq, covered in news)  # each after its fsync


def test_a_failed_group_fsync_fails_the_record_and_the_ledger(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path, fsync="always")
    ledger.add_view("alltime")
    ledger.record("ann", 1, t_ms=T)
    files = ledger._files
    assert files is not None and files.writer is not None

    def broken(fd: int) -> Any:
        raise OSError(5, "Input/output error")

    files.writer.sync_fn = broken
    with pytest.raises(LogError, match="Input/output error"):
        ledger.record("bob", 1, t_ms=T + 1)  # not acknowledged
    with pytest.raises(LogError, match="fsync failed"):
        ledger.record("cid", 1, t_ms=T + 2)  # the ledger takes no more
    files.writer.sync_fn = lambda fd: None
    ledger.close()
    with Ledger.open(tmp_path) as again:
        assert dict(again["alltime"].items()).get("ann") == 1  # acknowledged before
        assert "cid" not in dict(again["alltime"].items())  # refused: never logged
