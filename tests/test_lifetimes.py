"""Resource lifetimes: what a board holds (files, threads, locks, maps,
processes) is given back when it is closed, when opening it fails, and
when it is dropped without being closed.

The counts come from the process itself (``/proc/self/fd``,
``threading.enumerate()``), so these tests run where ``/proc`` exists.
"""

from __future__ import annotations

import errno
import gc
import multiprocessing
import os
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import pytest
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
)

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard, iter_events
from rankengine.durable.manifest import read_manifest, write_manifest
from rankengine.durable.marks import AcknowledgedLossError
from rankengine.durable.records import CorruptionError, LogError, TornTailError
from rankengine.redis.board import RedisLeaderboard
from rankengine.sharded.board import ShardedLeaderboard
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.trending.partitions import PartitionedTopK, _serve
from rankengine.trending.topk import TopK

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc/self/fd"
)

POLICIES = ["always", "everysec", "never"]


def open_fds() -> set[str]:
    """The descriptors this process has open."""
    return set(os.listdir("/proc/self/fd"))


def rankengine_threads() -> list[threading.Thread]:
    """The background threads of durable boards that are still running."""
    return [t for t in threading.enumerate() if t.name.startswith("rankengine-")]


@pytest.mark.parametrize("policy", POLICIES)
def test_dropped_durable_board_is_collected_and_releases_everything(
    tmp_path: Path, policy: Any
) -> None:
    """A board dropped without close() is garbage collected (no background
    thread keeps it alive), warns as an unclosed file does, and gives back
    its descriptors, its thread and its directory lock: the directory
    opens again in the same process, with every write in it."""
    before_fds, before_threads = open_fds(), rankengine_threads()
    board = Leaderboard.open(tmp_path, fsync=policy)
    board.set("ann", 1)
    board.incr("bob", 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = weakref.ref(board)
        del board
        gc.collect()
    assert ref() is None, "the dropped board is still referenced"
    assert any(
        issubclass(w.category, ResourceWarning) and "never closed" in str(w.message) for w in caught
    ), [str(w.message) for w in caught]
    for thread in rankengine_threads():
        if thread not in before_threads:
            thread.join(timeout=5)
    assert rankengine_threads() == before_threads
    assert open_fds() <= before_fds
    with Leaderboard.open(tmp_path) as again:
        assert again.items() == [("bob", 2), ("ann", 1)]


@pytest.mark.parametrize("policy", POLICIES)
def test_open_write_compact_close_gives_everything_back(tmp_path: Path, policy: Any) -> None:
    """Opening, writing to, compacting (by hand and in the background) and
    closing a board, over and over, leaves no descriptor and no thread."""
    before_fds, before_threads = open_fds(), rankengine_threads()
    for i in range(20):
        with Leaderboard.open(tmp_path, fsync=policy, compact_min_bytes=256) as board:
            for j in range(12):
                board.incr(f"p{j}", 1)
            if i % 4 == 0:
                board.compact()
    assert open_fds() <= before_fds
    assert rankengine_threads() == before_threads
    with Leaderboard.open(tmp_path) as board:
        assert board["p0"] == 20


def test_failed_opens_leave_nothing_open(tmp_path: Path) -> None:
    """An open refused half way (the directory locked by another board, a
    setting that disagrees with the stored one, a damaged manifest, a torn
    tail refused) holds nothing afterwards: no descriptor, no thread, and
    the directory opens once the cause is gone."""
    with Leaderboard.open(tmp_path, fsync="never") as board:
        board.set_many({"ann": 1, "bob": 2})
    before_fds, before_threads = open_fds(), rankengine_threads()
    holder = Leaderboard.open(tmp_path)
    for _ in range(5):
        with pytest.raises(LogError, match="already open"):
            Leaderboard.open(tmp_path, fsync="everysec")
    holder.close()
    for _ in range(5):
        with pytest.raises(ValueError, match="order"):
            Leaderboard.open(tmp_path, fsync="everysec", order="asc")
    segment = next(p for p in tmp_path.iterdir() if p.suffix == ".seg")
    data = segment.read_bytes()
    segment.write_bytes(data[:-3])
    for _ in range(5):  # the board was closed cleanly: its cut record is a loss
        with pytest.raises(AcknowledgedLossError):
            Leaderboard.open(tmp_path, fsync="everysec")
    manifest = tmp_path / "MANIFEST"
    good = manifest.read_bytes()
    unsealed = read_manifest(str(tmp_path))  # as a kill before close() leaves it
    unsealed.sealed, unsealed.ends, unsealed.durable_seq = False, {}, 0
    write_manifest(str(tmp_path), unsealed)
    for _ in range(5):
        with pytest.raises(TornTailError):
            Leaderboard.open(tmp_path, fsync="everysec", on_torn_tail="refuse")
    segment.write_bytes(data)
    manifest.write_bytes(good)
    manifest.write_bytes(good + b"xx")
    for _ in range(5):
        with pytest.raises(CorruptionError):
            Leaderboard.open(tmp_path, fsync="everysec")
    manifest.write_bytes(good)
    assert open_fds() <= before_fds
    assert rankengine_threads() == before_threads
    with Leaderboard.open(tmp_path) as board:
        assert board.items() == [("bob", 2), ("ann", 1)]


def test_closed_board_does_not_warn_when_dropped(tmp_path: Path) -> None:
    """Only a board never closed warns: closing it (or a with block) is the
    release, and a board whose open failed holds nothing to warn about."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Leaderboard.open(tmp_path, fsync="everysec") as board:
            board.set("ann", 1)
        del board
        with pytest.raises(ValueError):
            Leaderboard.open(tmp_path, order="asc")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_durable_board_class_is_collected(tmp_path: Path) -> None:
    """The subclass made for a user's Leaderboard subclass behaves alike."""

    class Mine(Leaderboard):
        pass

    board = Mine.open(tmp_path, fsync="everysec")
    assert isinstance(board, DurableLeaderboard)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        ref = weakref.ref(board)
        del board
        gc.collect()
    assert ref() is None
    with Mine.open(tmp_path):
        pass


def test_dropped_periodic_board_releases_its_root(tmp_path: Path) -> None:
    """A durable periodic board dropped without close() gives back its
    root's lock as well as its period boards': the root opens again."""
    clock = lambda: 1_764_547_200.0  # noqa: E731 - 2025-12-01T00:00:00Z
    board = PeriodicLeaderboard.open(tmp_path, "daily", clock=clock, fsync="everysec")
    board.incr("ann", 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = weakref.ref(board)
        del board
        gc.collect()
    assert ref() is None
    assert any(issubclass(w.category, ResourceWarning) for w in caught)
    with PeriodicLeaderboard.open(tmp_path, "daily", clock=clock, fsync="never") as again:
        assert again.board().items() == [("ann", 3)]


def test_a_failed_rebase_closes_the_board_it_was_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-base whose new board cannot take the rescaled scores (a full
    disk) leaves the old base serving, closes the new board (its thread,
    its file, its lock), and a later re-base works."""
    now = [0.0]
    board = DecayedLeaderboard.open(tmp_path, tau=10.0, clock=lambda: now[0], fsync="everysec")
    board.add("ann", 3)
    board.add("bob", 5)
    before_fds, before_threads = open_fds(), rankengine_threads()
    real_append = DurableLeaderboard._append

    def disk_full(self: DurableLeaderboard, changes: list[Any]) -> None:
        if ".tmp-epoch-" in self.path:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, changes)

    monkeypatch.setattr(DurableLeaderboard, "_append", disk_full)
    now[0] = 30.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(OSError, match="No space"):
            board.rebase()
        gc.collect()
    # closed by the re-base, not left to the garbage collector
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert board.t0 == 0.0 and board.board.items() == [("bob", 5), ("ann", 3)]
    for thread in rankengine_threads():
        if thread not in before_threads:
            thread.join(timeout=5)
    assert rankengine_threads() == before_threads
    assert open_fds() <= before_fds
    monkeypatch.undo()
    board.rebase()
    assert board.t0 == 30.0
    assert [m for m, _ in board.board.items()] == ["bob", "ann"]
    board.close()


def test_a_rebase_that_fails_to_install_its_base_closes_the_old_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the new base cannot be renamed into place, the old base is still
    closed (its thread, file and lock released), not left open behind a
    board that no longer references it."""
    now = [0.0]
    board = DecayedLeaderboard.open(tmp_path, tau=10.0, clock=lambda: now[0], fsync="everysec")
    board.add("ann", 3)
    before_threads = rankengine_threads()
    real_replace = os.replace

    def refuse_epoch(src: Any, dst: Any) -> None:
        if Path(dst).name.startswith("epoch-"):
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refuse_epoch)
    now[0] = 30.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(OSError, match="Input/output"):
            board.rebase()
        gc.collect()
    monkeypatch.undo()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    for thread in rankengine_threads():
        if thread not in before_threads:
            thread.join(timeout=5)
    assert len(rankengine_threads()) < len(before_threads)  # the old base's thread stopped
    board.close()
    with DecayedLeaderboard.open(tmp_path, tau=10.0, clock=lambda: now[0]) as again:
        assert again.board.items() == [("ann", 3)]


#: How often, and how long apart, to look again for a connection the
#: server has not yet noticed closing (it reads the close on a later turn
#: of its event loop than the command asking).
POLLS, POLL_S = 200, 0.01


def connections(admin: Any, name: str, want: int) -> int:
    """How many connections named ``name`` the Redis server has open, once
    that is ``want`` or after :data:`POLLS` looks (then it is the last count)."""
    for _ in range(POLLS):
        count = sum(1 for c in admin.client_list() if c.get("name") == name)
        if count == want:
            break
        time.sleep(POLL_S)
    return count


@pytest.mark.redis
def test_sharded_board_on_a_url_opens_one_connection(redis_url: str, redis_client: Any) -> None:
    """``ShardedLeaderboard.on_redis(url, ...)`` shares one client among its
    shards (one connection, one pipelined round trip per read), and
    close() gives that connection back."""
    url = f"{redis_url}?client_name=lifetimes-sharded"
    board = ShardedLeaderboard.on_redis(url, "lifetimes-sharded", 4)
    board.set_many({f"p{i}": i for i in range(20)})
    assert [e.member for e in board.top(3)] == ["p19", "p18", "p17"]
    assert board.rank("p10") == 10
    assert connections(redis_client, "lifetimes-sharded", 1) == 1
    board.close()
    assert connections(redis_client, "lifetimes-sharded", 0) == 0
    assert board.rank("p10") == 10  # reads reconnect, as a closed redis-py client does
    board.close()


@pytest.mark.redis
def test_a_sharded_board_on_a_url_closes_its_connection_in_a_with_block(
    redis_url: str, redis_client: Any
) -> None:
    """A sharded board is a context manager, as a Redis board is: the with
    block closes the client ``on_redis(url, ...)`` made."""
    url = f"{redis_url}?client_name=lifetimes-sharded-with"
    with ShardedLeaderboard.on_redis(url, "lifetimes-sharded-with", 3) as board:
        board.set_many({f"p{i}": i for i in range(9)})
        assert connections(redis_client, "lifetimes-sharded-with", 1) == 1
    assert connections(redis_client, "lifetimes-sharded-with", 0) == 0
    with ShardedLeaderboard.local(2) as local:  # nothing to release: harmless
        local.set("ann", 1)
    assert local.score("ann") == 1


@pytest.mark.redis
def test_redis_board_on_a_url_closes_its_connection(redis_url: str, redis_client: Any) -> None:
    """A board given a URL makes its own client, so close() closes it (a
    client passed in stays the caller's)."""
    url = f"{redis_url}?client_name=lifetimes-board"
    for i in range(5):
        with RedisLeaderboard(url, f"lifetimes-{i}") as board:
            board.set("ann", i)
            assert connections(redis_client, "lifetimes-board", 1) == 1
        assert connections(redis_client, "lifetimes-board", 0) == 0
    kept = board  # (still referenced: only close() may have released it)
    assert kept.score("ann") == 4
    kept.close()
    with RedisLeaderboard(redis_client, "lifetimes-own") as mine:
        mine.set("ann", 1)
    assert redis_client.ping()
    assert mine.score("ann") == 1


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_dropped_process_pipeline_lets_its_workers_exit_cleanly() -> None:
    """A process pipeline dropped without close() warns, as an unclosed file
    does, and stops its workers: they exit with status 0 (under fork a
    worker holds a copy of its pipe's other end, so before, it waited for
    a message forever)."""
    pipe = PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork")
    pipe.add("a")
    pipe.snapshot()
    workers = list(pipe._procs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del pipe
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) for w in caught)
    for worker in workers:
        worker.join(10)
    assert [worker.exitcode for worker in workers] == [0, 0]


def test_a_worker_whose_parent_end_closes_exits_cleanly() -> None:
    """A worker whose pipe ends (the parent died, or dropped it) stops with
    status 0 instead of dying of an EOFError with a traceback."""
    parent, child = multiprocessing.Pipe()
    config = TopK(3, width=32, depth=2).config()
    raised: list[BaseException] = []

    def serve() -> None:  # (in a thread: the worker's loop, as a process runs it)
        try:
            _serve(child, config)
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=serve)
    worker.start()
    parent.send(("counts", {"a": 1}))
    parent.close()
    worker.join(10)
    assert not worker.is_alive()
    assert raised == []


class FailingClose:
    """A segment file whose close() fails (an I/O error reported at close,
    as on a network file system) after closing the file."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def close(self) -> None:
        self.inner.close()
        raise OSError(errno.EIO, "Input/output error")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("policy", POLICIES)
def test_close_releases_the_directory_when_closing_the_segment_fails(
    tmp_path: Path, policy: Any
) -> None:
    """close() raises the error, but the board is closed and the directory
    released all the same, as when its final fsync fails."""
    board = Leaderboard.open(tmp_path, fsync=policy)
    board.set("ann", 1)
    board._writer.file = FailingClose(board._writer.file)
    with pytest.raises(OSError, match="Input/output"):
        board.close()
    assert board.closed
    with Leaderboard.open(tmp_path) as again:
        assert again.items() == [("ann", 1)]
    board.close()  # nothing left to do


def test_closing_an_events_iterator_closes_its_files(tmp_path: Path) -> None:
    """events() and iter_events() open their segments at the call; closing
    the iterator closes them, also before the first event was read (a
    generator's close() does nothing until it has started: the files were
    left to the garbage collector, which warned that they were unclosed)."""
    with Leaderboard.open(tmp_path, fsync="never", retain_log=True) as board:
        board.set("ann", 1)
        board.compact()
        board.set("bob", 2)
        before = open_fds()
        for make in (board.events, lambda: iter_events(tmp_path)):
            events = make()
            assert len(open_fds() - before) == 2  # (the two segments)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                events.close()
                gc.collect()
            assert open_fds() <= before
            assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
            del events
        events = board.events()
        assert next(events).seq == 1
        events.close()
        assert open_fds() <= before
        assert [e.seq for e in board.events()] == [1, 2]
        assert open_fds() <= before


def test_periodic_close_closes_every_period_when_one_fails(tmp_path: Path) -> None:
    """When the final fsync of one period's board fails, close() still
    closes the other periods' boards (their threads, files and locks) and
    the root, then raises that error."""
    now = [1_764_547_200.0]  # 2025-12-01T00:00:00Z
    before_threads = rankengine_threads()
    board = PeriodicLeaderboard.open(
        tmp_path, "daily", clock=lambda: now[0], keep=3, fsync="everysec"
    )
    for _ in range(3):
        board.incr("ann", 1)
        now[0] += 86_400
    board.incr("ann", 1)
    held = list(board._boards.values())
    assert len(held) >= 3

    def failing_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    first = held[0]
    assert isinstance(first, DurableLeaderboard)
    first._writer.sync_fn = failing_sync
    with pytest.raises(OSError, match="Input/output"):
        board.close()
    assert all(b.closed for b in held)  # type: ignore[attr-defined]
    for thread in rankengine_threads():
        if thread not in before_threads:
            thread.join(timeout=5)
    assert rankengine_threads() == before_threads
    with PeriodicLeaderboard.open(tmp_path, "daily", clock=lambda: now[0], keep=3) as again:
        assert again.board().items() == [("ann", 1)]


def test_a_compaction_thread_that_cannot_start_fails_no_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no thread can be started for a due compaction (the process is
    out of threads), the write that made it due still succeeds (its record
    is logged already), the board warns, and close() works."""
    real_start = threading.Thread.start

    def no_compactor(self: threading.Thread) -> None:
        if self.name == "rankengine-compact":
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", no_compactor)
    board = Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(20):
            board.incr("ann", 1)
    assert board["ann"] == 20
    assert any("compaction" in str(w.message) for w in caught)
    board.close()
    monkeypatch.undo()
    with Leaderboard.open(tmp_path) as again:
        assert again["ann"] == 20


def drop_in_a_forked_child(holder: list[Any]) -> None:
    """Fork; the child drops its copy of what ``holder`` holds, collects it
    (its finalizers run there) and leaves at once; wait for it to succeed."""
    pid = os.fork()
    if pid == 0:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                holder.clear()
                gc.collect()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_board_dropped_in_a_forked_child_is_left_to_the_parent(tmp_path: Path) -> None:
    """A forked child holds a copy of the parent's board; if that copy
    becomes garbage in the child, its finalizer must not touch the files
    the parent still writes (trimming the segment would cut the reserved
    space under the parent's memory map)."""
    board = Leaderboard.open(tmp_path, fsync="never")
    board.set("ann", 1)
    segment = max(p for p in tmp_path.iterdir() if p.suffix == ".seg")
    size = segment.stat().st_size
    holder = [board]
    del board
    drop_in_a_forked_child(holder)
    assert segment.stat().st_size == size
    board = holder.pop()
    board.set("bob", 2)
    board.close()
    with Leaderboard.open(tmp_path) as again:
        assert again.items() == [("bob", 2), ("ann", 1)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_pipeline_dropped_in_a_forked_child_leaves_the_parents_workers() -> None:
    """A forked child's copy of a pipeline that becomes garbage there must
    not stop the workers the parent still counts with."""
    holder = [PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork")]
    drop_in_a_forked_child(holder)
    with holder.pop() as pipe:
        pipe.add("a")
        assert [(t.key, t.count) for t in pipe.snapshot().top()] == [("a", 1)]


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_close_closes_the_pipe_of_a_worker_that_died() -> None:
    """close() closes every pipe, the one to a worker that died too (sending
    it the stop message fails), and reaps every worker."""
    pipe = PartitionedTopK(2, k=3, width=32, depth=2, processes=True, mp_context="fork")
    conns, workers = list(pipe._conns), list(pipe._procs)
    workers[0].kill()
    workers[0].join(10)
    pipe.close()
    assert [conn.closed for conn in conns] == [True, True]
    assert [worker.is_alive() for worker in workers] == [False, False]


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_a_pipeline_whose_worker_cannot_start_stops_the_ones_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If a worker cannot be started, the pipeline's constructor stops the
    workers it started already and closes their pipes (nothing is left to a
    finalizer, which would warn about a pipeline never closed)."""
    started: list[Any] = []
    real_start = multiprocessing.process.BaseProcess.start

    def start_one(self: Any) -> None:
        if started:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        real_start(self)
        started.append(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start_one)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(OSError, match="temporarily unavailable"):
            PartitionedTopK(3, k=3, width=32, depth=2, processes=True, mp_context="fork")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    started[0].join(10)
    assert started[0].exitcode == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_a_directory_opens_again_right_after_its_board_was_dropped(
    tmp_path: Path, policy: Any
) -> None:
    """A board dropped without close() is released when the garbage
    collector collects it; an open of its directory in the same process
    does not have to wait for that: finding the lock held by this very
    process, it collects the garbage and tries once more.  A board still
    in use keeps the directory."""
    gc.disable()  # (so that only the open can collect the dropped board)
    try:
        board = Leaderboard.open(tmp_path, fsync=policy)
        board.set("ann", 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            del board
            with Leaderboard.open(tmp_path, fsync=policy) as again:
                assert again.items() == [("ann", 1)]
                with pytest.raises(LogError, match="already open"):
                    Leaderboard.open(tmp_path)
    finally:
        gc.enable()
