"""Durable boards: the same API as the in-memory board, plus the log.

Covers reopening, rejected writes, settings, policies, write errors,
compaction, snapshots, point-in-time rebuilds, corruption and repair, the
command-line tools, and a Hypothesis-generated history replayed from the
log alone, from snapshot + tail and at every point in time.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import shutil
import signal
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import untied_far_members
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from listindex import ListIndex

from rankengine import Leaderboard
from rankengine.cli.log import main as cli
from rankengine.durable import board as durable_module
from rankengine.durable import eventlog as eventlog_module
from rankengine.durable import manifest as manifest_module
from rankengine.durable import records as records_module
from rankengine.durable import repair as repair_module
from rankengine.durable import rotation as rotation_module
from rankengine.durable.board import DurableLeaderboard, iter_events, rebuild
from rankengine.durable.eventlog import MAPPED_SEGMENTS, SegmentWriter
from rankengine.durable.manifest import read_manifest, segment_name, write_manifest
from rankengine.durable.marks import AcknowledgedLossError, high_water
from rankengine.durable.records import (
    CorruptionError,
    LogError,
    RecoveryWarning,
    TornTailError,
    TornTailWarning,
)
from rankengine.durable.repair import repair
from rankengine.durable.verify import verify
from rankengine.timed.periodic import PeriodicLeaderboard

BACKENDS: list[Any] = ["sortedlist", "skiplist", ListIndex]


@pytest.fixture(params=BACKENDS, ids=["sortedlist", "skiplist", "reference"])
def backend(request: pytest.FixtureRequest) -> Any:
    return request.param


def state(board: Leaderboard) -> tuple[Any, ...]:
    """Everything a replay must reproduce: order, scores, ranks, metadata, clock."""
    items = board.items()
    ranks = [(board.rank(m, style="dense"), board.rank(m, style="competition")) for m, _ in items]
    return (items, ranks, [board.meta(m) for m, _ in items], board.clock)


def open_board(path: Path, **options: Any) -> DurableLeaderboard:
    options.setdefault("fsync", "never")
    board = Leaderboard.open(path, **options)
    assert isinstance(board, DurableLeaderboard)
    return board


def seg_files(path: Path) -> list[Path]:
    return sorted(path.glob("log-*.seg"))


# ----------------------------------------------------------------------
# Reopening gives the same board
# ----------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["always", "everysec", "never"])
def test_reopen_reproduces_the_board(tmp_path: Path, backend: Any, policy: str) -> None:
    with open_board(tmp_path, fsync=policy, backend=backend) as board:
        board.set_many({"ann": 50, "bob": 50, "cid": 30.25, "dee": 0.1 + 0.2})
        board.incr("eve", 50)
        board.set("bob", 49, meta={"name": "Bob"})
        board.set("bob", 50)
        board.set_meta("cid", {"tags": ["a", 1.5, None]})
        board.remove("dee")
        board.pop_worst()
        board.set(b"bytes", -math.inf)
        expected = state(board)
        assert board.last_seq == 8
    with open_board(tmp_path, backend=backend) as again:
        again._check()
        assert state(again) == expected
        assert again.last_seq == 8
        assert [m for m, _ in again.items()][:3] == ["ann", "eve", "bob"]


def test_rejected_writes_append_nothing(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        board.set("ann", 5)
        size = seg_files(tmp_path)[0].stat().st_size
        assert board.set("ann", 7, when="new") is False
        assert board.set("ann", 5) is False  # same score: no change
        assert board.incr("zed", 1, when="present") is None
        assert board.remove("nobody") is False
        with pytest.raises(TypeError):
            board.set("ann", "high")
        with pytest.raises(ValueError):
            board.set("ann", math.nan)
        with pytest.raises(ValueError, match="UTF-8"):
            board.set("\ud800", 1)
        assert "\ud800" not in board
        assert board.last_seq == 1
        assert seg_files(tmp_path)[0].stat().st_size == size


def test_an_increment_that_keeps_the_score_is_not_a_write(tmp_path: Path) -> None:
    # 5 + 0.0 equals 5: the board keeps the int 5 (and -0.0 its sign), returns
    # it, logs nothing, and a replay gives back the same values and types
    board = open_board(tmp_path)
    board.set_many({"a": 5, "b": -0.0})
    results = [board.incr("a", 0.0), *board.incr_many([("b", 0), ("b", 0.0)]).values()]
    assert [repr(x) for x in results] == ["5", "-0.0"]
    assert [repr(s) for _, s in board.items()] == ["5", "-0.0"]
    expected = state(board)
    board.close()
    again = open_board(tmp_path)
    assert state(again) == expected
    assert [repr(s) for _, s in again.items()] == ["5", "-0.0"]
    again._check()
    again.close()


def test_composite_scores_and_member_ties_survive(tmp_path: Path) -> None:
    with open_board(tmp_path, order=("desc", "asc"), tie_break="member") as board:
        board.set_many({"a": (10, 3.5), "b": (10, 2), "c": (9, 1), "d": (10, 2)})
        board.incr("c", (1, 0))
        expected = state(board)
    with open_board(tmp_path) as again:
        assert state(again) == expected
        assert again.order == ("desc", "asc") and again.tie_break == "member"


def test_stored_settings_win_and_conflicts_are_errors(tmp_path: Path) -> None:
    open_board(tmp_path, order="asc", rank_style="dense").close()
    with open_board(tmp_path) as board:
        assert board.order == "asc" and board.rank_style == "dense"
    with pytest.raises(ValueError, match="order='asc'"):
        open_board(tmp_path, order="desc")
    with open_board(tmp_path, backend="skiplist") as board:  # the backend may change
        assert board.config()["backend"] == "skiplist"


@pytest.mark.parametrize(
    "setting",
    [
        {"order": "up"},
        {"order": ("desc", "sideways")},
        {"tie_break": "bogus"},
        {"rank_style": "olympic"},
        {"backend": "nope"},
    ],
    ids=repr,
)
def test_a_bad_setting_creates_no_board(tmp_path: Path, setting: dict[str, Any]) -> None:
    """A bad setting is refused before anything is on disk: the directory
    was created with the bad setting in its manifest, and every later open
    of it failed on that setting."""
    path = tmp_path / "board"
    with pytest.raises(ValueError):
        open_board(path, **setting)
    assert not path.exists()
    with open_board(path) as board:  # a later open makes a good board
        assert board.config()["order"] == "desc"
    with pytest.raises(ValueError):  # an existing board is left as it was
        open_board(path, **setting)
    with open_board(path) as board:
        assert board.config()["backend"] == "sortedlist"


def test_a_backend_factory_is_not_stored(tmp_path: Path) -> None:
    # As documented: a board created with a factory reopens on "sortedlist"
    # unless the factory is given again; a named backend is stored.
    with open_board(tmp_path / "f", backend=ListIndex) as board:
        board.set("ann", 1)
    with open_board(tmp_path / "f") as board:
        assert board.config()["backend"] == "sortedlist" and board.items() == [("ann", 1)]
    with open_board(tmp_path / "f", backend=ListIndex) as board:
        assert board.config()["backend"] is ListIndex and board.items() == [("ann", 1)]
    open_board(tmp_path / "s", backend="skiplist").close()
    open_board(tmp_path / "s", backend=ListIndex).close()
    with open_board(tmp_path / "s") as board:
        assert board.config()["backend"] == "skiplist"


def test_closed_board_refuses_writes_but_reads(tmp_path: Path) -> None:
    board = open_board(tmp_path)
    board.set("ann", 1)
    board.close()
    board.close()
    assert board.closed and board["ann"] == 1
    with pytest.raises(ValueError, match="closed"):
        board.set("bob", 2)
    assert "bob" not in board


def test_one_writer_per_directory(tmp_path: Path) -> None:
    with open_board(tmp_path), pytest.raises(LogError, match="already open"):
        open_board(tmp_path)
    open_board(tmp_path).close()


def test_a_path_that_is_not_a_directory_is_named_as_such(tmp_path: Path) -> None:
    # A regular file where the directory should be used to surface as
    # os.makedirs' "[Errno 17] File exists" (FileExistsError), and a missing
    # directory with create=False was "not a directory".
    (tmp_path / "file").write_text("mine")
    for create in (True, False):
        with pytest.raises(NotADirectoryError, match=r"file is not a directory$"):
            open_board(tmp_path / "file", create=create)
    with pytest.raises(NotADirectoryError, match=r"file is not a directory$"):
        PeriodicLeaderboard.open(tmp_path / "file", "daily")
    with pytest.raises(FileNotFoundError, match=r"missing does not exist \(create=False\)$"):
        open_board(tmp_path / "missing", create=False)
    assert (tmp_path / "file").read_text() == "mine"
    assert not (tmp_path / "missing").exists()


def test_create_false_and_foreign_directories(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_board(tmp_path / "missing", create=False)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(LogError, match="refusing to create"):
        open_board(tmp_path / "x")
    # Refused before the lock is taken: no LOCK file is left in a directory
    # that holds no board (as repair does), with create=False either.
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["notes.txt"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no rankengine board"):
        open_board(tmp_path / "empty", create=False)
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"order": "up"}, ValueError, "order must be"),
        ({"order": ("desc", "up")}, ValueError, "order must be"),
        ({"order": ()}, ValueError, "at least one column"),
        ({"tie_break": "last"}, ValueError, "tie_break must be"),
        ({"rank_style": "olympic"}, ValueError, "rank style must be"),
        ({"backend": "btree"}, ValueError, "backend must be"),
        ({"on_torn_tail": "ignore"}, ValueError, "on_torn_tail must be"),
        ({"compact_min_bytes": "64MB"}, TypeError, "compact_min_bytes must be"),
        ({"compact_min_bytes": -1}, ValueError, "compact_min_bytes must be"),
        ({"compact_min_bytes": True}, TypeError, "compact_min_bytes must be"),
        ({"compact_min_bytes": math.nan}, ValueError, "compact_min_bytes must be"),
        ({"compact_ratio": "1"}, TypeError, "compact_ratio must be"),
        ({"compact_ratio": -0.5}, ValueError, "compact_ratio must be"),
        ({"compact_ratio": math.nan}, ValueError, "compact_ratio must be"),
        ({"compact_ratio": math.inf}, ValueError, "compact_ratio must be"),
        ({"retain_log": "yes"}, TypeError, "retain_log must be"),
        ({"create": "no"}, TypeError, "create must be"),
        ({"now": 1000}, TypeError, "now must be"),
    ],
)
def test_a_bad_option_is_refused_before_anything_is_on_disk(
    tmp_path: Path, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # A bad order, tie_break, rank_style or backend was refused only after
    # the new board's segment and MANIFEST were written, with the bad
    # setting stored in them: every later open of the directory failed.
    # A bad compaction threshold was taken, and the first write, logged
    # already, raised: the board did not show the write, the log held it.
    path = tmp_path / "board"
    with pytest.raises(error, match=message):
        open_board(path, **options)
    assert not path.exists()
    path.mkdir()  # an existing empty directory is left empty too
    with pytest.raises(error, match=message):
        open_board(path, **options)
    assert list(path.iterdir()) == []


def test_option_edges_are_accepted(tmp_path: Path) -> None:
    open_board(tmp_path / "float", compact_min_bytes=1e6).close()  # a number of bytes
    # the smallest thresholds: every write past the snapshot's size compacts
    path = tmp_path / "board"
    with open_board(path, compact_min_bytes=0, compact_ratio=0, retain_log=True) as board:
        for k in range(5):
            board.set(f"p{k}", k)
            deadline = time.monotonic() + 10
            while board._compactor is not None and time.monotonic() < deadline:
                time.sleep(0.01)
        expected = state(board)
    assert len(read_manifest(str(path)).snapshots) >= 2
    with open_board(path) as again:
        assert state(again) == expected
    assert rebuild(path, from_log=True).items() == expected[0]


def test_timestamps_use_the_injected_clock_and_never_go_back(tmp_path: Path) -> None:
    times = iter([1000, 900, 2000])
    with open_board(tmp_path, now=lambda: next(times)) as board:
        for m in "abc":
            board.set(m, 1)
        assert [e.time_ms for e in board.events()] == [1000, 1000, 2000]


@pytest.mark.parametrize("stamp", [1.7e12, True, "1700000000000", None])
def test_a_clock_returning_no_int_refuses_the_write(tmp_path: Path, stamp: Any) -> None:
    # now=lambda: time.time() * 1000 (a float) was logged as it was: the
    # write was acknowledged, and the record it left made every later open
    # fail with CorruptionError ("timestamp is not a non-negative int").
    with open_board(tmp_path, fsync="always") as board:
        board.set("ann", 1)
    with open_board(tmp_path, fsync="always", now=lambda: stamp) as board:
        with pytest.raises(TypeError, match="now"):
            board.set("bob", 2)
        with pytest.raises(TypeError, match="now"):
            board.set_many({"bob": 2, "cid": 3})
        assert board.items() == [("ann", 1)] and board.last_seq == 1
    with open_board(tmp_path) as again:
        assert again.items() == [("ann", 1)] and again.last_seq == 1


# ----------------------------------------------------------------------
# fsync policies
# ----------------------------------------------------------------------
def count_syncs(board: DurableLeaderboard) -> list[float]:
    calls: list[float] = []
    real = board._writer.sync_fn

    def sync(fd: int) -> None:
        calls.append(time.monotonic())
        real(fd)

    board._writer.sync_fn = sync
    return calls


def test_always_syncs_every_write_and_batches_share_one(tmp_path: Path) -> None:
    with open_board(tmp_path, fsync="always") as board:
        calls = count_syncs(board)
        board.set("a", 1)
        board.incr("a", 1)
        board.set_many({f"m{i}": i for i in range(100)})
        assert len(calls) == 3


def test_never_syncs_only_on_flush_and_close(tmp_path: Path) -> None:
    board = open_board(tmp_path, fsync="never")
    calls = count_syncs(board)
    board.set("a", 1)
    assert calls == []
    board.flush()
    assert len(calls) == 1
    board.close()
    assert len(calls) == 2


def test_everysec_syncs_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durable_module, "FLUSH_INTERVAL_S", 0.05)
    with open_board(tmp_path, fsync="everysec") as board:
        calls = count_syncs(board)
        board.set("a", 1)
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls, "the background flusher never synced"
        idle = len(calls)
        time.sleep(0.2)
        assert len(calls) == idle  # nothing new written: no fsync


def test_everysec_writes_wait_for_a_stalled_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "FLUSH_INTERVAL_S", 0.02)
    monkeypatch.setattr(durable_module, "FSYNC_STALL_S", 0.1)
    release = threading.Event()
    with open_board(tmp_path, fsync="everysec") as board:
        board._writer.sync_fn = lambda fd: release.wait(10) and None
        board.set("a", 1)
        time.sleep(0.3)  # the flusher is now stuck in fsync for longer than the limit
        threading.Timer(0.3, release.set).start()
        started = time.monotonic()
        board.set("b", 2)
        assert time.monotonic() - started >= 0.2
        assert release.is_set()


def test_failed_background_fsync_makes_the_board_refuse_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable_module, "FLUSH_INTERVAL_S", 0.02)
    board = open_board(tmp_path, fsync="everysec")

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    board._writer.sync_fn = broken
    with pytest.warns(RuntimeWarning, match="background fsync failed"):
        board.set("a", 1)
        deadline = time.monotonic() + 5
        while board._failure is None and time.monotonic() < deadline:
            time.sleep(0.01)
    with pytest.raises(LogError, match="fsync failed"):
        board.set("b", 2)
    board._writer.sync_fn = lambda fd: None
    board.close()
    with open_board(tmp_path) as again:
        assert again.items() == [("a", 1)]


# ----------------------------------------------------------------------
# Write errors: the write raises, the board does not show it, the log reads
# ----------------------------------------------------------------------
class FullDisk:
    def __init__(self, inner: Any, budget: int) -> None:
        self.inner = inner
        self.budget = budget

    def write(self, data: Any) -> int:
        if self.budget <= 0:
            raise OSError(28, "No space left on device")
        n = self.inner.write(bytes(data)[: self.budget])
        self.budget -= n
        return int(n)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("budget", [0, 5, 30])
def test_disk_full_write_raises_and_changes_nothing(
    tmp_path: Path, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the write() path (elsewhere than Linux; frames over MAP_FRAME_LIMIT):
    # every policy appends through a memory map where it can
    monkeypatch.setattr("rankengine.durable.board.ACTIVE_WRITER", SegmentWriter)
    board = open_board(tmp_path, fsync="always")
    assert type(board._writer) is SegmentWriter
    board.set_many({"a": 1, "b": 2})
    before = state(board)
    real = board._writer.file
    board._writer.file = FullDisk(real, budget)
    with pytest.raises(OSError, match="No space"):
        board.set_many({"c": 3, "a": 10})
    with pytest.raises(OSError, match="No space"):
        board.remove("a")
    assert state(board) == before and board.last_seq == 1
    board._writer.file = real  # space freed: writing works again
    board.set("d", 4)
    expected = state(board)
    board.close()
    assert verify(str(tmp_path)).healthy
    with open_board(tmp_path) as again:
        assert state(again) == expected and again.last_seq == 2


@pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")
@pytest.mark.parametrize("fsync", ["always", "everysec", "never"])
def test_mapped_log_as_a_kill_leaves_it_opens_cleanly(tmp_path: Path, fsync: str) -> None:
    board = open_board(tmp_path / "live", fsync=fsync)
    for i in range(300):
        board.incr(f"m{i % 37}", i)
    board.set_many({"a": 1, "b": 2})
    board.set_meta("a", {"x": 1})
    segment = seg_files(tmp_path / "live")[-1]
    assert segment.stat().st_size > 4096  # zeros reserved ahead of the records
    # a copy taken now is what a kill leaves: records, then reserved zeros
    shutil.copytree(tmp_path / "live", tmp_path / "copy")
    expected = state(board)
    board.close()
    assert verify(str(tmp_path / "live")).healthy
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn tail, no recovery note
        for name in ("live", "copy"):
            want = expected
            for policy in ("always", "everysec"):  # either writer picks up the other's file
                with open_board(tmp_path / name, fsync=policy) as again:
                    assert state(again) == want
                    again.incr("a", 0.5)
                    again.incr("a", -0.5)
                    want = state(again)
    report = verify(str(tmp_path / "copy"))
    assert report.healthy and not report.findings


@pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")
@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_full_disk_under_a_mapped_log_raises_and_changes_nothing(
    tmp_path: Path, fsync: str
) -> None:
    # under "always" too: the append runs on the recording thread while the
    # group commit's fsync runs, and a write() would wait behind it
    board = open_board(tmp_path, fsync=fsync)
    board.set_many({"a": 1, "b": 2})
    writer = board._writer
    real = writer.allocate_fn

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    segment = seg_files(tmp_path)[-1]
    while segment.stat().st_size - writer.end > 20:  # use up the reserved space
        board.incr("b", 1)
    writer.allocate_fn = full
    before, seq = state(board), board.last_seq
    with pytest.raises(OSError, match="No space"):
        board.set_many({"c": 3, "a": 10})
    with pytest.raises(OSError, match="No space"):
        board.incr("a", 5)
    assert state(board) == before and board.last_seq == seq
    writer.allocate_fn = real  # space freed: writing works again
    board.set("d", 4)
    expected = state(board)
    board.close()
    with open_board(tmp_path) as again:
        assert state(again) == expected and again.last_seq == seq + 1


def test_fsync_error_under_always_fails_the_write_and_the_board(tmp_path: Path) -> None:
    # Group commit (durable/acks.py): the write is applied and appended
    # under the lock, then waits for a shared fsync outside it; when that
    # fsync fails, the write is not acknowledged (LogError, from the
    # OSError) and the board refuses later writes.  The record is in the
    # file and in memory already (a read may see it), as in Redis.
    board = open_board(tmp_path, fsync="always")
    board.set("a", 1)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    board._writer.sync_fn = broken
    with pytest.raises(LogError, match="Input/output") as info:
        board.set("b", 2)
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(LogError, match="close and reopen"):
        board.set("c", 3)
    board._writer.sync_fn = lambda fd: None
    board.close()
    with open_board(tmp_path) as again:
        # "a" was acknowledged; "b" never was (it may or may not survive);
        # "c" was refused before it was logged
        assert again.score("a") == 1 and "c" not in again


# ----------------------------------------------------------------------
# Compaction and snapshots
# ----------------------------------------------------------------------
def fill(board: Leaderboard, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        board.incr(f"m{i % 23}", (i % 7) - 2.5)
        if i % 5 == 0:
            board.set_meta(f"m{i % 23}", {"i": i})
        if i % 11 == 0:
            board.remove(f"m{(i * 3) % 23}")


def test_compact_writes_a_snapshot_and_drops_old_segments(tmp_path: Path, backend: Any) -> None:
    with open_board(tmp_path, backend=backend) as board:
        fill(board, 120)
        seq = board.compact()
        assert seq == board.last_seq
        assert board.compact() == seq  # nothing new: no new snapshot
        fill(board, 30, 120)
        expected = state(board)
    manifest = read_manifest(str(tmp_path))
    assert [s for _, s in manifest.snapshots] == [seq]
    assert [s for _, s in manifest.segments] == [seq + 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["LOCK", "MANIFEST", manifest.snapshots[0][0], manifest.segments[0][0]]
    )
    with open_board(tmp_path, backend=backend) as again:
        again._check()
        assert state(again) == expected
    with pytest.raises(LogError, match="compacted away"):
        rebuild(tmp_path, from_log=True)


@pytest.mark.parametrize("backend_name", ["sortedlist", "skiplist"])
def test_restored_scores_are_one_object_each(tmp_path: Path, backend_name: str) -> None:
    """A board opened from a snapshot holds each score once: the member map
    and an index of Python objects (the skip list) share it."""
    with open_board(tmp_path, backend=backend_name) as board:
        board.set_many([(f"m{k}", 10_000 + 7 * k) for k in range(300)])  # beyond cached ints
        board.compact()
    with open_board(tmp_path, backend=backend_name) as again:
        again._check()
        index = again._index
        rows = [index.entry(k) for k in range(len(index))]
        assert len(rows) == 300
        assert all(again._primary[member] == primary for primary, _, member in rows)
        if backend_name == "skiplist":
            assert all(again._primary[member] is primary for primary, _, member in rows)


def test_automatic_compaction_runs_in_the_background(tmp_path: Path) -> None:
    seen: set[int] = set()
    with open_board(tmp_path, compact_min_bytes=2000, compact_ratio=0.5) as board:
        for k in range(30):
            fill(board, 100, 100 * k)
            deadline = time.monotonic() + 10
            while board._compactor is not None and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.update(seq for _, seq in read_manifest(str(tmp_path)).snapshots)
            if len(seen) >= 2:
                break
        expected = state(board)
    assert len(seen) >= 2, "automatic compaction did not run twice"
    assert len(read_manifest(str(tmp_path)).snapshots) == 1
    with open_board(tmp_path) as again:
        assert state(again) == expected


def test_a_failed_background_compaction_defers_only_the_next_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a background compaction failed before it switched segments, the
    # next one waited for twice the segment's bytes, as meant; but that
    # threshold was never reset, so every later segment too had to grow
    # past it before compacting.  (It fails creating the new segment: the
    # one step of a rotation before its switch.)
    threshold = 2000
    failures = iter([OSError("No space left on device")])

    def wait_for_compactor(board: DurableLeaderboard) -> None:
        deadline = time.monotonic() + 10
        while board._compactor is not None and time.monotonic() < deadline:
            time.sleep(0.01)

    with open_board(tmp_path, compact_min_bytes=threshold, compact_ratio=0) as board:
        writer_class = board._writer_class
        real_create = writer_class.create

        def create_once_failing(path: str, header: Any, **options: Any) -> Any:
            failure = next(failures, None)
            if failure is not None:
                raise failure
            return real_create(path, header, **options)

        monkeypatch.setattr(writer_class, "create", create_once_failing)
        with pytest.warns(RuntimeWarning, match="background compaction failed"):
            while board._writer.record_bytes < threshold:
                board.incr("ann", 1)
            wait_for_compactor(board)
        deferred_to = board._writer.record_bytes * 2
        assert not read_manifest(str(tmp_path)).snapshots
        compacted = board.compact()  # succeeds: a new, empty segment
        assert board._writer.record_bytes < threshold
        # the next segment compacts past the threshold again, not past deferred_to
        while board._writer.record_bytes < threshold:
            board.incr("bob", 1)
        assert board._writer.record_bytes < deferred_to
        wait_for_compactor(board)
        assert read_manifest(str(tmp_path)).snapshots[-1][1] > compacted
        expected = state(board)
    with open_board(tmp_path) as again:
        assert state(again) == expected


def test_close_waits_for_a_compaction_running_on_another_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() releases the directory only when no compaction of the board is
    still changing it: a board opened next must not see its files vanish."""
    board = open_board(tmp_path, compact_min_bytes=None)
    fill(board, 50)
    seq, expected = board.last_seq, state(board)
    writing, go = threading.Event(), threading.Event()
    write_snapshot = durable_module.write_snapshot_pieces

    def slow_snapshot(*args: Any, **kwargs: Any) -> int:
        writing.set()
        assert go.wait(10)
        return write_snapshot(*args, **kwargs)

    monkeypatch.setattr(durable_module, "write_snapshot_pieces", slow_snapshot)
    compaction = threading.Thread(target=board.compact)
    compaction.start()
    assert writing.wait(10)
    threading.Timer(0.2, go.set).start()
    board.close()
    # the compaction is over: nothing changes the directory after close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "LOCK",
        "MANIFEST",
        f"log-{seq + 1:020d}.seg",
        f"snap-{seq:020d}.snap",
    ]
    compaction.join(10)
    with open_board(tmp_path) as again:
        assert state(again) == expected
        again.set("after", 1)
        assert [e.seq for e in again.events(seq + 1)] == [seq + 1]
        assert again.compact() == seq + 1


@pytest.mark.parametrize("power_cut", [False, True], ids=["renamed", "rename-lost"])
def test_failed_directory_fsync_after_the_rotate_rename_keeps_the_new_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, power_cut: bool
) -> None:
    """The rotate manifest was renamed into place and names the new segment,
    but the directory fsync after the rename failed: the segment must stay
    (the manifest on disk needs it), and whichever manifest a power cut
    leaves, the directory opens with every acknowledged write."""
    board = open_board(tmp_path, fsync="always", compact_min_bytes=None)
    fill(board, 40)
    seq, expected = board.last_seq, state(board)
    old_manifest = (tmp_path / "MANIFEST").read_bytes()
    real_fsync_dir = manifest_module.fsync_dir
    failed: list[str] = []

    def fsync_dir_failing_once(path: str) -> None:
        if not failed:
            failed.append(path)
            raise OSError(5, "Input/output error")
        real_fsync_dir(path)

    monkeypatch.setattr(manifest_module, "fsync_dir", fsync_dir_failing_once)
    with pytest.raises(OSError, match="Input/output"):
        board.compact()
    assert failed == [str(tmp_path)]
    new_segment = segment_name(seq + 1)
    assert new_segment in [name for name, _ in read_manifest(str(tmp_path)).segments]
    assert (tmp_path / new_segment).exists()
    # whether the rename survives a power cut is unknown: the board takes no
    # write that a lost rename could orphan
    with pytest.raises(LogError, match="close and reopen"):
        board.set("late", 1)
    assert state(board) == expected
    board.close()
    if power_cut:  # the rename did not reach the disk
        (tmp_path / "MANIFEST").write_bytes(old_manifest)
    with open_board(tmp_path) as again:
        again._check()
        assert state(again) == expected and again.last_seq == seq
        again.set("after", 1)
        assert again.compact() == seq + 1
    with open_board(tmp_path) as again:
        assert again.last_seq == seq + 1


@pytest.mark.parametrize("policy", ["everysec", "never"])
def test_writes_proceed_while_compaction_fsyncs_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """Compaction writes most of the segment back before it takes the board
    lock: a write made while that fsync is in progress completes."""
    # however slow this machine, the write must not count the blocked fsync
    # as a stall (writes wait for stalled everysec fsyncs, by design)
    monkeypatch.setattr(durable_module, "FSYNC_STALL_S", 3600.0)
    board = open_board(tmp_path, fsync=policy, compact_min_bytes=None)
    fill(board, 40)
    real = board._writer.sync_fn
    syncing, release, wrote = threading.Event(), threading.Event(), threading.Event()

    def blocking_sync(fd: int) -> None:
        if not release.is_set():
            syncing.set()
            assert release.wait(30)
        real(fd)

    board._writer.sync_fn = blocking_sync
    compaction = threading.Thread(target=board.compact)
    writer = threading.Thread(target=lambda: (board.set("during", 1), wrote.set()))
    try:
        compaction.start()
        assert syncing.wait(10)
        writer.start()
        # the compaction's fsync is still blocked: the write finished without it
        assert wrote.wait(10)
        assert not release.is_set()
    finally:
        release.set()
        compaction.join(30)
        writer.join(30)
    assert not compaction.is_alive()
    seq, expected = board.last_seq, state(board)
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == seq
    board.set("after", 2)
    board.close()
    with open_board(tmp_path) as again:
        again._check()
        assert again["during"] == 1 and again["after"] == 2
        assert again.last_seq == seq + 1
        again.remove("after")
        assert state(again)[0] == expected[0]


def test_everysec_writes_wait_when_compactions_first_fsync_stalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under "everysec" the fsync compaction makes before it takes the board
    lock stands in for the flusher's, so a write waits for it once it has run
    past FSYNC_STALL_S (the loss window stays bounded on a stalling disk)."""
    monkeypatch.setattr(durable_module, "FSYNC_STALL_S", 0.0)  # any fsync in progress stalls
    monkeypatch.setattr(durable_module, "FLUSH_INTERVAL_S", 3600.0)  # the flusher stays idle
    board = open_board(tmp_path, fsync="everysec", compact_min_bytes=None)
    fill(board, 40)
    real = board._writer.sync_fn
    syncing, release, wrote = threading.Event(), threading.Event(), threading.Event()

    def blocking_sync(fd: int) -> None:
        if threading.current_thread() is compaction and not release.is_set():
            syncing.set()
            assert release.wait(30)
        real(fd)

    board._writer.sync_fn = blocking_sync
    compaction = threading.Thread(target=board.compact)
    writer = threading.Thread(target=lambda: (board.set("during", 1), wrote.set()))
    try:
        compaction.start()
        assert syncing.wait(10)
        writer.start()
        # held while the compaction's fsync is blocked (a write that does not
        # wait returns at once; this one must still be waiting)
        assert not wrote.wait(0.5)
        assert writer.is_alive()
        release.set()
        assert wrote.wait(30)  # released with the fsync
    finally:
        release.set()
        compaction.join(30)
        writer.join(30)
    assert not compaction.is_alive() and not writer.is_alive()
    board._check()
    seq, expected = board.last_seq, state(board)
    assert board["during"] == 1
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == seq
    board.close()
    with open_board(tmp_path) as again:
        again._check()
        assert state(again) == expected and again.last_seq == seq


def test_retain_log_keeps_history_for_full_replay(tmp_path: Path) -> None:
    with open_board(tmp_path, retain_log=True) as board:
        states = {}
        for k in range(4):
            fill(board, 25, 25 * k)
            states[board.last_seq] = state(board)
            board.compact()
        last = board.last_seq
    assert len(read_manifest(str(tmp_path)).snapshots) == 4
    for seq, expected in states.items():
        assert state(rebuild(tmp_path, until_seq=seq, from_log=True)) == expected
        assert state(rebuild(tmp_path, until_seq=seq)) == expected
    assert [e.seq for e in iter_events(tmp_path)] == list(range(1, last + 1))


def two_snapshots(path: Path, n: int) -> tuple[tuple[Any, ...], Path]:
    """A ``retain_log`` board of ``2 * n + 5`` writes compacted after ``n``
    and ``2 * n``: its state, and its newest snapshot's path."""
    with open_board(path, retain_log=True) as board:
        fill(board, n)
        board.compact()
        fill(board, n, n)
        board.compact()
        fill(board, 5, 2 * n)
        expected = state(board)
    return expected, path / read_manifest(str(path)).snapshots[-1][0]


def test_damaged_newest_snapshot_falls_back_to_an_older_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Open skips a damaged newest snapshot for an older one, with a
    RecoveryWarning.  verify must say what open does: the board opens, with
    a warning (exit 3, as for a torn tail), not that it refuses to (exit 1);
    repair moves the snapshot to its backup."""
    expected, newest = two_snapshots(tmp_path, 40)
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    with pytest.warns(RecoveryWarning, match="skipped a damaged snapshot") as caught:
        board = open_board(tmp_path, retain_log=True)
    with board:
        assert state(board) == expected
    # the warning names the file and what is wrong, and does not say the
    # board refuses to open (it has just opened)
    (note,) = [str(w.message) for w in caught]
    assert str(newest) in note and "refuses" not in note and "rankengine repair" in note
    report = verify(str(tmp_path))
    assert [(f.severity, f.path) for f in report.findings] == [("fallback", str(newest))]
    assert report.fallback and not report.damaged and not report.healthy
    assert report.exit_code == 3
    capsys.readouterr()
    assert cli(["verify", str(tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "refuse" not in out and "healthy" not in out
    assert "SNAPSHOT FALLBACK: the board opens" in out and "rankengine repair DIR" in out
    assert cli(["verify", "--json", str(tmp_path)]) == 3
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["fallback"] is True and verdict["damaged"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said among the findings, not warned about too
        assert cli(["inspect", str(tmp_path)]) == 0  # counts members as open does
    assert "damaged snapshot skipped on open" in capsys.readouterr().out
    result = repair(str(tmp_path))
    assert result.backup is not None
    assert (Path(result.backup) / newest.name).read_bytes() == bytes(data)
    assert result.after is not None and result.after.healthy
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left to skip
        with open_board(tmp_path, retain_log=True) as again:
            assert state(again) == expected


def test_only_snapshot_damaged_without_history_refuses(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 40)
        board.compact()
    snap = next(tmp_path.glob("snap-*.snap"))
    data = bytearray(snap.read_bytes())
    data[40] ^= 1
    snap.write_bytes(bytes(data))
    with pytest.raises(CorruptionError, match=snap.name):
        open_board(tmp_path)


def test_leftovers_of_an_interrupted_compaction_are_removed(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 30)
        expected = state(board)
    (tmp_path / "snap-00000000000000000099.snap.tmp").write_bytes(b"partial")
    (tmp_path / "snap-00000000000000000099.snap").write_bytes(b"uncommitted")
    (tmp_path / "MANIFEST.tmp").write_bytes(b"partial")
    with open_board(tmp_path) as again:
        assert state(again) == expected
        assert any("interrupted" in note for note in again.recovery_notes)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "LOCK",
        "MANIFEST",
        seg_files(tmp_path)[0].name,
    ]


def test_a_stray_segment_with_records_is_kept_as_orphan_and_verify_says_so(
    tmp_path: Path,
) -> None:
    with open_board(tmp_path) as board:
        fill(board, 30)
        expected = state(board)
    stray = tmp_path / "log-00000000000000009999.seg"
    shutil.copy(seg_files(tmp_path)[0], stray)  # records, but not in the manifest
    with pytest.warns(RecoveryWarning, match="orphan"), open_board(tmp_path) as again:
        assert state(again) == expected
    assert not stray.exists() and Path(f"{stray}.orphan").exists()
    notes = [f.message for f in verify(str(tmp_path)).findings if f.path.endswith(".orphan")]
    assert notes == ["not in the manifest (kept for inspection)"]


def test_events_from_before_seq_1_are_refused_clearly(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 5)
        for start in (0, -3, 1.5, True):
            with pytest.raises(ValueError, match="seq of 1 or more"):
                board.events(start)  # type: ignore[arg-type]
        last = board.last_seq
    with pytest.raises(ValueError, match="seq of 1 or more"):
        iter_events(tmp_path, 0)
    assert [e.seq for e in iter_events(tmp_path, 1)] == list(range(1, last + 1))


def test_events_up_to_a_bad_stop_are_refused_clearly(tmp_path: Path) -> None:
    # stop was not checked: 2.5 stopped after seq 2, True and -1 gave no
    # events, and a string raised a comparison error half-way through.
    with open_board(tmp_path) as board:
        fill(board, 5)
        for stop in (0, -1, 2.5, True, "3"):
            with pytest.raises(ValueError, match="stop must be a seq of 1 or more"):
                board.events(1, stop)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="stop must be a seq of 1 or more"):
                iter_events(tmp_path, 1, stop)  # type: ignore[arg-type]
        assert [e.seq for e in board.events(2, 4)] == [2, 3]
        assert [e.seq for e in board.events(3, 1)] == []


def test_events_iterator_survives_a_compaction(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 50)
        events = board.events(10, 20)
        board.compact()
        assert [e.seq for e in events] == list(range(10, 20))
        with pytest.raises(LogError, match="compacted away"):
            board.events(1)


# ----------------------------------------------------------------------
# Point in time
# ----------------------------------------------------------------------
def test_point_in_time_by_seq_and_by_time(tmp_path: Path) -> None:
    clock = iter(range(1000, 100_000, 10))
    history: list[tuple[int, int, Any]] = []
    with open_board(tmp_path, now=lambda: next(clock)) as board:
        for i in range(60):
            board.incr(f"m{i % 9}", 1 + (i % 4) / 8)
            history.append((board.last_seq, board._last_ms, state(board)))
            if i == 30:
                board.compact()
    for seq, ms, expected in history[31:]:
        assert state(rebuild(tmp_path, until_seq=seq)) == expected
        assert state(rebuild(tmp_path, until_ms=ms)) == expected
        assert state(rebuild(tmp_path, until_ms=ms + 5)) == expected


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"until_seq": -1}, ValueError),
        ({"until_seq": True}, TypeError),
        ({"until_seq": 5.5}, TypeError),
        ({"until_seq": "5"}, TypeError),
        ({"until_ms": "2026-11-30"}, TypeError),
        ({"until_ms": False}, TypeError),
        ({"until_ms": math.nan}, ValueError),
    ],
)
def test_rebuild_refuses_a_bad_point_in_time(
    tmp_path: Path, options: dict[str, Any], error: type[Exception]
) -> None:
    # until_seq=-1 gave an empty board, True the board after record 1,
    # 5.5 the board after record 5 with a warning that the log ends before
    # seq 5.5; a string failed inside the replay with a comparison error.
    with open_board(tmp_path) as board:
        fill(board, 20)
    with pytest.raises(error, match="until_"):
        rebuild(tmp_path, **options)
    assert len(rebuild(tmp_path, until_seq=0)) == 0  # before the first record
    assert state(rebuild(tmp_path, until_ms=1.5e15)) == state(rebuild(tmp_path))


@pytest.mark.parametrize("value", ["no", 1, None], ids=["str", "int", "none"])
def test_rebuild_and_repair_refuse_a_flag_that_is_not_a_bool(tmp_path: Path, value: object) -> None:
    """``rebuild(from_log="no")`` ignored the snapshots and ``repair(dry_run=None)``
    repaired for real (``dry_run="no"`` only pretended to): both refuse a
    flag that is not a bool, as a board refuses ``with_meta="no"``, before
    anything is read or changed."""
    with open_board(tmp_path) as board:
        fill(board, 20)
    name = type(value).__name__
    with pytest.raises(TypeError, match=rf"^from_log must be a bool, not {name}$"):
        rebuild(tmp_path, from_log=value)  # type: ignore[arg-type]
    seg = seg_files(tmp_path)[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # damage for repair to cut
    seg.write_bytes(bytes(data))

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}

    before = (sorted(p.name for p in tmp_path.iterdir()), files())
    with pytest.raises(TypeError, match=rf"^dry_run must be a bool, not {name}$"):
        repair(str(tmp_path), dry_run=value)  # type: ignore[arg-type]
    assert (sorted(p.name for p in tmp_path.iterdir()), files()) == before


# ----------------------------------------------------------------------
# Torn tails, damage and repair through the board
# ----------------------------------------------------------------------
def test_torn_tail_is_cut_with_a_warning_or_refused(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 10)
        board.set("last", 99)
    seg = seg_files(tmp_path)[0]
    with open(seg, "r+b") as f:
        f.truncate(seg.stat().st_size - 2)
    # cut from a cleanly closed board, the record is an acknowledged loss
    assert verify(str(tmp_path)).exit_code == 1
    with pytest.raises(AcknowledgedLossError, match="1 acknowledged records missing after seq"):
        open_board(tmp_path)
    # a board killed before close() has no seal: its cut last record is a torn tail
    manifest = read_manifest(str(tmp_path))
    manifest.sealed, manifest.ends, manifest.durable_seq = False, {}, 0
    write_manifest(str(tmp_path), manifest)
    assert verify(str(tmp_path)).exit_code == 3
    with pytest.raises(TornTailError, match="torn tail"):
        open_board(tmp_path, on_torn_tail="refuse")
    with pytest.warns(TornTailWarning, match="cut a torn tail"):
        board = open_board(tmp_path)
    with board:
        assert "last" not in board
        board.set("again", 1)
    assert verify(str(tmp_path)).healthy


def test_ctrl_c_during_repair_waits_for_its_file_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctrl_c: None
) -> None:
    with open_board(tmp_path) as board:
        fill(board, 10)
        board.set("last", 99)
    seg = seg_files(tmp_path)[0]
    with open(seg, "ab") as f:
        f.write(b"\x00garbage after the last record")
    assert verify(str(tmp_path)).damaged or verify(str(tmp_path)).torn
    copy = shutil.copyfileobj

    def interrupted_copy(source: Any, target: Any) -> None:
        # Ctrl-C arrives while the first step (cutting the tail) runs
        os.kill(os.getpid(), signal.SIGINT)
        copy(source, target)

    monkeypatch.setattr(shutil, "copyfileobj", interrupted_copy)
    with pytest.raises(KeyboardInterrupt):
        repair(str(tmp_path))
    monkeypatch.undo()
    # the repair finished every step before it stopped: nothing half-done
    assert verify(str(tmp_path)).healthy
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with open_board(tmp_path) as again:
        again._check()
        assert again.score("last") == 99


def test_damage_refuses_to_open_and_repair_keeps_what_was_before(tmp_path: Path) -> None:
    history = []
    with open_board(tmp_path) as board:
        for i in range(40):
            board.incr(f"m{i % 6}", i)
            history.append(state(board))
    seg = seg_files(tmp_path)[0]
    offsets = [0]
    with eventlog_module.SegmentReader(str(seg)) as reader:
        for _ in reader.events():
            offsets.append(reader.at)
    target = offsets[25]  # record 25
    data = bytearray(seg.read_bytes())
    data[target + 14] ^= 0x01
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptionError) as info:
        open_board(tmp_path)
    assert info.value.offset == target and seg.name in str(info.value)
    report = verify(str(tmp_path))
    assert report.damaged and report.exit_code == 1
    result = repair(str(tmp_path))
    assert result.after is not None and result.after.healthy
    assert result.backup is not None
    saved = list(Path(result.backup).iterdir())
    assert saved and saved[0].stat().st_size == len(data) - target
    with open_board(tmp_path) as again:
        assert again.last_seq == 24
        assert state(again) == history[23]


def test_lost_manifest_is_rebuilt_by_repair(tmp_path: Path) -> None:
    with open_board(tmp_path) as board:
        fill(board, 30)
        board.compact()
        fill(board, 10, 30)
        expected = state(board)
    (tmp_path / "MANIFEST").write_bytes(b"garbage")
    with pytest.raises(CorruptionError, match="MANIFEST"):
        open_board(tmp_path)
    result = repair(str(tmp_path))
    assert any("rebuild MANIFEST" in a for a in result.actions)
    with open_board(tmp_path) as again:
        assert state(again) == expected


def test_repair_of_a_lost_manifest_keeps_a_composite_boards_snapshot(tmp_path: Path) -> None:
    # the rebuilt manifest must list the snapshot even though reading it
    # needs the board's number of score columns
    with open_board(tmp_path, order=["desc", "asc"]) as board:
        board.set_many({f"p{i}": (i % 3, -i) for i in range(20)})
        board.compact()
        board.set("late", (9, 9))
        expected = state(board)
    (tmp_path / "MANIFEST").unlink()
    result = repair(str(tmp_path))
    assert result.after is not None and result.after.healthy
    with open_board(tmp_path) as again:
        assert state(again) == expected


def test_repair_of_a_lost_manifest_backs_up_a_damaged_snapshot(tmp_path: Path) -> None:
    expected, snap = two_snapshots(tmp_path, 10)
    data = bytearray(snap.read_bytes())
    data[40] ^= 0xFF
    snap.write_bytes(bytes(data))
    (tmp_path / "MANIFEST").write_bytes(b"garbage")
    result = repair(str(tmp_path))
    assert any(snap.name in action for action in result.actions)
    assert result.backup is not None
    assert (Path(result.backup) / snap.name).read_bytes() == bytes(data)
    assert result.after is not None and result.after.healthy
    assert repair(str(tmp_path)).notes == ["nothing to repair"]
    with open_board(tmp_path) as again:
        assert state(again) == expected


def listing(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (but the lock) and its bytes."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != "LOCK"
    }


def test_a_failed_repair_leaves_the_directory_as_it_found_it(tmp_path: Path) -> None:
    # the only snapshot is damaged and the log no longer starts at seq 1:
    # nothing consistent is left, so repair must fail without moving anything
    with open_board(tmp_path) as board:
        fill(board, 40)
        board.compact()
        fill(board, 5, 40)
    snap = next(tmp_path.glob("snap-*.snap"))
    data = bytearray(snap.read_bytes())
    data[40] ^= 0xFF
    snap.write_bytes(bytes(data))
    before = listing(tmp_path)
    with pytest.raises(LogError, match="nothing consistent is left"):
        repair(str(tmp_path))
    assert listing(tmp_path) == before
    assert not list(tmp_path.glob("repair-*"))
    assert verify(str(tmp_path)).damaged


def filled_board_with_a_flipped_byte(path: Path) -> tuple[Path, bytes]:
    """A board of 40 writes at ``path`` whose only segment has byte 200
    flipped (damage in a complete record); the segment and its bytes now."""
    with open_board(path) as board:
        fill(board, 40)
    seg = seg_files(path)[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    return seg, bytes(data)


def test_a_repair_step_that_fails_says_what_was_done_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seg, data = filled_board_with_a_flipped_byte(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(repair_module, "write_manifest", broken)
    backup = tmp_path.parent / "saved"
    with pytest.raises(LogError) as info:
        repair(str(tmp_path), backup_dir=str(backup))
    message = str(info.value)
    assert "write the new MANIFEST" in message and "No space left" in message
    match = re.search(rf"cut {seg.name} at offset (\d+)", message)
    assert match is not None and str(backup) in message
    at = int(match.group(1))
    assert (backup / f"{seg.name}.cut-at-{at}").read_bytes() == bytes(data[at:])


@pytest.mark.parametrize("where", ["default", "new", "existing"])
def test_repair_makes_its_backup_durable(
    tmp_path: Path, repair_fsyncs: list[tuple[str, list[str]]], where: str
) -> None:
    """What repair moves or cuts into its backup is the only copy left: the
    backup directory is fsynced once everything is in it, before the new
    manifest is written (else a power cut can lose the moved files), and a
    directory repair creates for it is fsynced into its parent."""
    board_dir = tmp_path / "board"
    filled_board_with_a_flipped_byte(board_dir)
    (board_dir / "MANIFEST").write_bytes(b"damaged")  # moved, and the tail copied
    given = {"default": None, "new": tmp_path / "saved" / "here", "existing": tmp_path}
    backup_dir = given[where]
    repair_fsyncs.clear()  # those of creating the board
    result = repair(str(board_dir), backup_dir=None if backup_dir is None else str(backup_dir))
    assert result.after is not None and result.after.healthy
    assert result.backup is not None
    backup = Path(result.backup)
    saved = sorted(p.name for p in backup.iterdir() if p.name.startswith(("MANIFEST", "log-")))
    assert len(saved) == 2
    paths = [path for path, _ in repair_fsyncs]
    # the last fsync of the backup holds everything saved, and comes before
    # the board directory's fsync that makes the new manifest durable
    backup_fsyncs = [i for i, path in enumerate(paths) if path == str(backup)]
    assert backup_fsyncs, "the backup directory is never fsynced"
    last = backup_fsyncs[-1]
    assert set(saved) <= set(repair_fsyncs[last][1])
    assert last < max(i for i, path in enumerate(paths) if path == str(board_dir))
    created = {"default": [backup], "new": [tmp_path / "saved", backup], "existing": []}
    for directory in created[where]:
        parent = str(directory.parent)
        assert any(p == parent and directory.name in names for p, names in repair_fsyncs)


@pytest.fixture
def other_filesystem(tmp_path: Path) -> Any:
    """A fresh directory on another filesystem than ``tmp_path`` (tmpfs in
    ``/dev/shm``), or a skip where there is none."""
    import tempfile

    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second filesystem to move files across")
    directory = Path(tempfile.mkdtemp(prefix="rankengine-test-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_repair_to_another_filesystem_makes_the_copies_durable_before_deleting(
    tmp_path: Path,
    other_filesystem: Path,
    repair_fsyncs: list[tuple[str, list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backup on another filesystem cannot take a rename: the file is
    copied.  The copy is the only one left once the original is deleted, so
    it is fsynced, and the backup directory with it, before the original
    goes (a copy that a power cut can lose would otherwise be all there is)."""
    with open_board(tmp_path) as board:
        fill(board, 40)
    (tmp_path / "MANIFEST").write_bytes(b"damaged")  # moved to the backup
    events: list[tuple[str, str]] = []
    real_fsync, real_remove, real_unlink = os.fsync, os.remove, os.unlink

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def remove(path: Any, *args: Any, **kwargs: Any) -> None:
        events.append(("remove", os.fspath(path)))
        real_remove(path, *args, **kwargs)

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        events.append(("remove", os.fspath(path)))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "remove", remove)
    monkeypatch.setattr(os, "unlink", unlink)
    backup = other_filesystem / "saved"
    repair_fsyncs.clear()
    result = repair(str(tmp_path), backup_dir=str(backup))
    monkeypatch.undo()
    assert result.after is not None and result.after.healthy
    assert (backup / "MANIFEST").read_bytes() == b"damaged"
    copy = str(backup / "MANIFEST")
    gone = events.index(("remove", str(tmp_path / "MANIFEST")))
    assert ("fsync", copy) in events[:gone], "the copy is not fsynced before the original goes"
    assert any(path == str(backup) and "MANIFEST" in names for path, names in repair_fsyncs), (
        "the backup directory is not fsynced with the copy in it"
    )


def test_damage_in_retained_history_is_reported_as_history_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Damage before the current replay chain does not stop the board from
    opening, but replaying the log through it fails: verify says so (exit 4)."""
    expected, _ = two_snapshots(tmp_path, 30)
    oldest = seg_files(tmp_path)[0]
    data = bytearray(oldest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    oldest.write_bytes(bytes(data))
    report = verify(str(tmp_path))
    assert report.history_damaged and not report.damaged and not report.healthy
    assert report.exit_code == 4
    assert [f.path for f in report.findings if f.severity == "history"] == [str(oldest)]
    with open_board(tmp_path) as board:
        board._check()
        assert state(board) == expected
    with pytest.raises(CorruptionError) as info:
        rebuild(tmp_path, from_log=True)
    # the board opens (above): the error must not say it refuses to
    assert "refuses to open" not in str(info.value)
    assert "nothing past this point can be read" in str(info.value)
    capsys.readouterr()
    assert cli(["verify", str(tmp_path)]) == 4
    out = capsys.readouterr().out
    assert "HISTORY DAMAGED" in out and "healthy" not in out
    assert cli(["verify", "--json", str(tmp_path)]) == 4
    assert '"history_damaged": true' in capsys.readouterr().out
    # repair cuts back the current board only; it leaves the history alone
    before = listing(tmp_path)
    result = repair(str(tmp_path))
    assert not result.actions and result.notes[0].startswith("nothing to repair: only the")
    assert listing(tmp_path) == before


def test_damage_to_an_older_snapshot_is_history_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Open reads the newest snapshot and falls back to an older one only
    when the newest is damaged.  With the newest intact, an older snapshot
    is retained history, like the segments before the replay chain: the
    board opens without reading it, and only a point-in-time replay from it
    notices (here it falls back to the log kept from seq 1)."""
    expected, _ = two_snapshots(tmp_path, 30)
    (name, seq), (newest_name, _) = read_manifest(str(tmp_path)).snapshots
    older = tmp_path / name
    data = bytearray(older.read_bytes())
    data[len(data) // 2] ^= 0xFF
    older.write_bytes(bytes(data))
    report = verify(str(tmp_path))
    assert [(f.severity, f.path) for f in report.findings] == [("history", str(older))]
    assert report.history_damaged and not report.damaged and report.exit_code == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # open never reads the older snapshot
        with open_board(tmp_path) as board:
            board._check()
            assert state(board) == expected
    with pytest.warns(RecoveryWarning, match="skipped a damaged snapshot"):
        rebuild(tmp_path, until_seq=seq + 1)
    capsys.readouterr()
    assert cli(["verify", str(tmp_path)]) == 4
    assert "HISTORY DAMAGED" in capsys.readouterr().out
    before = listing(tmp_path)
    result = repair(str(tmp_path))
    assert result.after is None and result.backup is None
    assert listing(tmp_path) == before
    # once the newest snapshot is damaged too, open skips both and replays
    # the log kept from seq 1: both are skipped on open, not history
    newest = tmp_path / newest_name
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    report = verify(str(tmp_path))
    assert [(f.severity, f.path) for f in report.findings] == [
        ("fallback", str(older)),
        ("fallback", str(newest)),
    ]
    assert not report.damaged and report.exit_code == 3
    with pytest.warns(RecoveryWarning, match="skipped a damaged snapshot"):
        board = open_board(tmp_path, retain_log=True)
    with board:
        assert state(board) == expected


# ----------------------------------------------------------------------
# The command-line tools
# ----------------------------------------------------------------------
def test_cli_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_board(tmp_path, now=lambda: 1_700_000_000_000) as board:
        board.set_many({"ann": 3, "bob": 5, b"raw": 1.5})
        board.set("cid", 4, meta={"c": 1})
    assert cli(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "members     4" in out and "last seq    2" in out and "healthy" in out
    assert cli(["verify", str(tmp_path)]) == 0
    assert cli(["verify", "--json", str(tmp_path)]) == 0
    capsys.readouterr()
    assert cli(["replay", str(tmp_path), "--until", "1"]) == 0
    assert capsys.readouterr().out.split("\n")[0].split() == ["1", "bob", "5"]
    assert cli(["replay", str(tmp_path), "--format", "json", "--top", "1"]) == 0
    assert '"member": "bob"' in capsys.readouterr().out
    assert cli(["replay", str(tmp_path), "--until", "2023-11-14T22:13:20Z", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("rank,member,score")
    out_file = tmp_path.parent / "export.csv"
    assert cli(["replay", str(tmp_path), "--format", "csv", "-o", str(out_file)]) == 0
    assert out_file.read_text().count("\n") == 5
    assert cli(["replay", str(tmp_path), "--until", "yesterday"]) == 2
    assert cli(["verify", str(tmp_path / "nope")]) == 2
    assert cli(["inspect", str(tmp_path.parent)]) == 2
    assert cli(["repair", str(tmp_path)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert cli([]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_verify_of_a_board_that_lost_only_its_manifest_says_repair_rebuilds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board_dir = tmp_path / "board"
    with open_board(board_dir) as board:
        fill(board, 30)
        board.compact()
        fill(board, 5, 30)
        expected = state(board)
    (board_dir / "MANIFEST").unlink()
    capsys.readouterr()
    assert cli(["verify", str(board_dir)]) == 1
    out = capsys.readouterr().out
    assert "MANIFEST is missing" in out and "`rankengine repair DIR` rebuilds it" in out
    assert cli(["verify", "--json", str(board_dir)]) == 1
    assert '"damaged": true' in capsys.readouterr().out
    # segment files whose headers do not read: still the remains of a board
    ruin = tmp_path / "ruin"
    ruin.mkdir()
    (ruin / "log-00000000000000000001.seg").write_bytes(b"garbage")
    assert cli(["verify", str(ruin)]) == 1
    assert "cannot rebuild" in capsys.readouterr().out
    # nothing of a board: not a board directory
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("hello")
    assert cli(["verify", str(other)]) == 2
    assert "not a board directory" in capsys.readouterr().err
    assert cli(["repair", str(board_dir)]) == 0
    assert cli(["verify", str(board_dir)]) == 0
    with open_board(board_dir) as again:
        assert state(again) == expected


def test_inspect_of_a_board_that_lost_only_its_manifest_describes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # as verify does: the files of a board are there, so inspect describes
    # them and says repair rebuilds the manifest, instead of "not a board"
    with open_board(tmp_path) as board:
        fill(board, 30)
        board.compact()
        fill(board, 5, 30)
        last = board.last_seq
    (tmp_path / "MANIFEST").unlink()
    capsys.readouterr()
    assert cli(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"last seq    {last}" in out and "'order': 'desc'" in out
    assert "status      damaged" in out
    assert "MANIFEST is missing" in out and "`rankengine repair DIR` rebuilds it" in out
    assert cli(["inspect", "--json", str(tmp_path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["status"] == "damaged" and info["last_seq"] == last
    assert any("MANIFEST is missing" in f for f in info["findings"])
    assert not (tmp_path / "MANIFEST").exists()  # inspect only reads
    assert cli(["repair", str(tmp_path)]) == 0
    capsys.readouterr()
    assert cli(["inspect", str(tmp_path)]) == 0
    assert "status      healthy" in capsys.readouterr().out


def dry_run(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    """The output lines of ``rankengine repair --dry-run``, which must change nothing."""
    before = listing(path)
    capsys.readouterr()
    assert cli(["repair", "--dry-run", *extra, str(path)]) == 0
    assert listing(path) == before
    return capsys.readouterr().out.splitlines()


def test_repair_dry_run_says_what_it_would_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy = tmp_path / "healthy"
    with open_board(healthy) as board:
        fill(board, 40)
    assert dry_run(healthy, capsys) == ["nothing to repair"]
    # damaged: a flipped byte in the only segment
    seg = seg_files(healthy)[0]
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF
    seg.write_bytes(bytes(data))
    report = verify(str(healthy))
    (info,) = report.segments
    good = info.good_end
    assert good is not None
    backup = tmp_path / "saved"
    assert report.manifest is not None
    mark = high_water(report.manifest)[0]
    assert dry_run(healthy, capsys, "--backup-dir", str(backup)) == [
        *(f"found: {finding}" for finding in report.findings),
        f"would cut {seg.name} at offset {good}, saving the {len(data) - good} bytes after "
        f"seq {info.last_seq} as {seg.name}.cut-at-{good}",
        f"would lower the MANIFEST's marks from seq {mark} to seq {info.last_seq}: seq "
        f"{info.last_seq + 1}..{mark} ({mark - info.last_seq} acknowledged records) are lost "
        "from the board (the old marks are kept as marks-before-repair.json); `rankengine "
        "salvage DIR` shows any that were found and set aside",
        "would write the new MANIFEST",
        f"would save what it moves or cuts in {backup}",
        "dry run: nothing was changed",
    ]
    assert not backup.exists()
    # and a lost manifest; the backup goes to DIR/repair-<time> by default
    (healthy / "MANIFEST").unlink()
    report = verify(str(healthy))
    lines = dry_run(healthy, capsys)
    assert re.fullmatch(
        rf"would save what it moves or cuts in {re.escape(str(healthy))}/repair-\d{{8}}T\d{{6}}",
        lines[-2],
    )
    assert lines[:-2] + lines[-1:] == [
        *(f"found: {finding}" for finding in report.findings),
        "would rebuild MANIFEST from the files present",
        f"would cut {seg.name} at offset {good}, saving the {len(data) - good} bytes after "
        f"seq {info.last_seq} as {seg.name}.cut-at-{good}",
        "would write the new MANIFEST",
        "dry run: nothing was changed",
    ]
    # a manifest rebuilt from intact files: nothing to save
    assert cli(["repair", str(healthy)]) == 0
    (healthy / "MANIFEST").unlink()
    report = verify(str(healthy))
    assert dry_run(healthy, capsys) == [
        *(f"found: {finding}" for finding in report.findings),
        "would rebuild MANIFEST from the files present",
        "would write the new MANIFEST",
        "dry run: nothing was changed",
    ]
    # only the retained history damaged: nothing to do, and why
    history = tmp_path / "history"
    two_snapshots(history, 30)
    oldest = seg_files(history)[0]
    data = bytearray(oldest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    oldest.write_bytes(bytes(data))
    report = verify(str(history))
    assert dry_run(history, capsys) == [
        *(f"found: {finding}" for finding in report.findings),
        "nothing to repair: only the retained history is damaged (see the HISTORY "
        "findings), and repair leaves history as it is",
    ]


def test_replay_until_a_time_includes_a_record_stamped_at_that_millisecond(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2004-07-23T13:44:15.699Z times 1000 as a float is just below its
    # whole millisecond, which must not drop the record stamped there
    stamp = 1_090_590_255_699
    with open_board(tmp_path, now=lambda: stamp) as board:
        board.set("ann", 1)
    assert cli(["replay", str(tmp_path), "--until", "2004-07-23T13:44:15.699Z"]) == 0
    assert capsys.readouterr().out.split() == ["1", "ann", "1"]


# ----------------------------------------------------------------------
# Replay determinism on a generated history
# ----------------------------------------------------------------------
members = st.sampled_from(["a", "b", "c", "d", "e", "f"])
scores = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.sampled_from([0.1, 0.2, 0.30000000000000004, 1e308, -0.0, 2**64 + 1]),
)
metas = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["k", "n"]), st.integers() | st.text(max_size=3), max_size=2),
)
ops = st.one_of(
    st.tuples(
        st.just("set"),
        members,
        scores,
        st.sampled_from([None, "new", "present", "better", "worse"]),
        metas,
    ),
    st.tuples(st.just("incr"), members, st.sampled_from([1, -1, 0.5, 1e-9, 0.1])),
    st.tuples(st.just("set_many"), st.lists(st.tuples(members, scores), max_size=5)),
    st.tuples(st.just("remove"), members),
    st.tuples(st.just("meta"), members, metas),
    st.tuples(st.just("pop"), st.integers(0, 2)),
    st.tuples(st.just("compact")),
    # many members onto one score (a run deeper than RUN_SCAN_LIMIT), one by
    # one or in one batch, and one of them stepping off it
    st.tuples(st.just("crowd"), st.integers(-3, 3), st.integers(1, 20), st.booleans()),
    st.tuples(st.just("crowd_incr"), st.integers(0, 19), st.sampled_from([1, -1, 0.5])),
)


def run_op(board: DurableLeaderboard, op: tuple[Any, ...]) -> None:
    kind = op[0]
    try:
        if kind == "set":
            board.set(op[1], op[2], when=op[3], meta=op[4])
        elif kind == "incr":
            board.incr(op[1], op[2])
        elif kind == "set_many":
            board.set_many(op[1])
        elif kind == "remove":
            board.remove(op[1])
        elif kind == "meta":
            if op[1] in board:
                board.set_meta(op[1], op[2])
        elif kind == "pop":
            board.pop_best(op[1])
        elif kind == "crowd":
            crowd = [(f"c{k}", op[1]) for k in range(op[2])]
            if op[3]:
                board.set_many(crowd)
            else:
                for member, score in crowd:
                    board.set(member, score)
        elif kind == "crowd_incr":
            board.incr(f"c{op[1]}", op[2])
        else:
            board.compact()
    except ValueError as exc:
        assert "NaN" in str(exc)  # inf + -inf is refused, and logs nothing


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(history=st.lists(ops, max_size=40), tie_break=st.sampled_from(["first", "member"]))
def test_generated_history_replays_exactly(
    tmp_path_factory: pytest.TempPathFactory, history: list[Any], tie_break: str
) -> None:
    directory = tmp_path_factory.mktemp("board")
    states: dict[int, Any] = {}
    with open_board(directory, tie_break=tie_break, retain_log=True) as board:
        states[0] = state(board)
        for op in history:
            run_op(board, op)
            states[board.last_seq] = state(board)
        final = state(board)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with open_board(directory) as again:
            again._check()
            assert state(again) == final
            assert untied_far_members(again) == []
        assert state(rebuild(directory, from_log=True)) == final
        for seq, expected in states.items():
            assert state(rebuild(directory, until_seq=seq)) == expected
            assert state(rebuild(directory, until_seq=seq, from_log=True)) == expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=st.lists(ops, max_size=25),
    after=st.lists(ops, max_size=25),
    backend=st.sampled_from(["sortedlist", "skiplist"]),
)
def test_recovered_board_goes_on_like_the_original(
    tmp_path_factory: pytest.TempPathFactory, before: list[Any], after: list[Any], backend: str
) -> None:
    """A board recovered from a snapshot (whose tie map holds only members
    deep in a run of equal scores) behaves exactly like one that never
    stopped, through more writes."""
    directory = tmp_path_factory.mktemp("board")
    twin = Leaderboard(backend=backend)
    with open_board(directory, backend=backend) as board:
        for op in before:
            run_op(board, op)
        board.compact()
    for op in before:
        if op[0] != "compact":
            run_op(twin, op)  # type: ignore[arg-type]
    with open_board(directory) as again:
        again._check()
        assert state(again) == state(twin)
        assert untied_far_members(again) == []
        for op in after:
            run_op(again, op)
            if op[0] != "compact":
                run_op(twin, op)  # type: ignore[arg-type]
            again._check()
            assert state(again) == state(twin)
            assert untied_far_members(again) == []


def test_a_new_board_directory_is_made_durable_in_its_parent(
    tmp_path: Path, dir_fsyncs: list[tuple[str, list[str]]]
) -> None:
    """open() creates a missing directory; its entry in the parent reaches
    the disk only with an fsync of the parent, or a power cut can lose the
    whole new board, acknowledged writes and all (a new period of a
    periodic board, a new window bucket)."""
    calls = dir_fsyncs
    with Leaderboard.open(tmp_path / "a" / "new", fsync="always") as board:
        board.set("ann", 1)
    assert (str(tmp_path / "a"), ["new"]) in calls
    assert (str(tmp_path), ["a"]) in calls
    calls.clear()
    with Leaderboard.open(tmp_path / "a" / "new", fsync="always") as board:  # exists: no fsync
        board.set("bob", 1)
    assert not [path for path, _ in calls if path in (str(tmp_path), str(tmp_path / "a"))]


def test_repair_of_an_interrupted_creation_has_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kill while a board was created leaves a header-only first segment
    and the lock: verify calls it healthy (open creates the board afresh),
    so repair must not fail on it either."""
    (tmp_path / "LOCK").write_text("123\n")
    SegmentWriter.create(str(tmp_path / segment_name(1)), {"first_seq": 1}).close()
    assert verify(str(tmp_path)).exit_code == 0
    before = listing(tmp_path)
    result = repair(str(tmp_path))
    assert result.actions == [] and result.backup is None
    assert "interrupted" in result.notes[0]
    assert listing(tmp_path) == before
    capsys.readouterr()
    assert cli(["repair", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "nothing to repair" in out
    with Leaderboard.open(tmp_path) as board:
        board.set("ann", 1)
    assert verify(str(tmp_path)).healthy


class ShortWrites:
    """A raw file whose writes take at most ``chunk`` bytes each, as a
    regular file may near a full disk."""

    def __init__(self, inner: Any, chunk: int) -> None:
        self.inner = inner
        self.chunk = chunk

    def write(self, data: Any) -> int:
        return int(self.inner.write(bytes(data)[: self.chunk]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def new_segment_files_wrapped(monkeypatch: pytest.MonkeyPatch, wrap: Callable[[Any], Any]) -> None:
    """Make the segment writer's ``open`` hand ``wrap(file)`` for each new
    segment it creates (mode ``x+b``) and real files otherwise."""

    def wrapping_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        file = builtins.open(path, mode, *args, **kwargs)  # noqa: SIM115 - the caller owns it
        return wrap(file) if mode == "x+b" else file

    monkeypatch.setattr(eventlog_module, "open", wrapping_open, raising=False)


@pytest.mark.parametrize("policy", ["always", "everysec"])
@pytest.mark.parametrize("step", ["segment-fsync", "dir-fsync"])
def test_a_rotation_whose_fsync_fails_after_the_switch_fails_the_board(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, step: str
) -> None:
    """The new segment's fsync, or the directory's, fails after the switch
    (made without the board's lock, while writes go into the new segment):
    as after any failed fsync of the log, the board refuses writes, and
    the next open has every acknowledged write, the new segment adopted."""
    board = open_board(tmp_path, fsync=policy, compact_min_bytes=None)
    fill(board, 40)
    seq, expected = board.last_seq, state(board)
    with monkeypatch.context() as patch:
        if step == "segment-fsync":

            def failing_sync(fd: int) -> None:
                raise OSError(5, "Input/output error")

            patch.setattr(eventlog_module, "_default_sync", failing_sync)
        else:

            def failing_fsync_dir(path: str) -> None:
                raise OSError(5, "Input/output error")

            patch.setattr(rotation_module, "fsync_dir", failing_fsync_dir)
        with pytest.raises(OSError, match=r"Input/output"):
            board.compact()
    with pytest.raises(LogError, match="close and reopen"):
        board.set("late", 1)
    assert state(board) == expected
    board.close()
    with open_board(tmp_path) as again:
        again._check()
        assert state(again) == expected and again.last_seq == seq
        assert again.recovery_notes == [
            f"adopted {segment_name(seq + 1)} (a log rotation a crash cut short)"
        ]
        again.set("after", 1)
        expected = state(again)
    with open_board(tmp_path) as again:
        assert state(again) == expected
    assert verify(str(tmp_path)).healthy


@pytest.mark.parametrize("policy", ["always", "everysec"])
@pytest.mark.parametrize("step", ["disk-full", "short-then-full"])
def test_a_compaction_whose_new_segment_fails_leaves_no_file_and_can_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, step: str
) -> None:
    """Creating the new segment fails (its header write, under the board's
    lock, the one step of a rotation before its switch): compact()
    raises, the half-made segment is removed (it used to stay, so that
    compact() at the same seq raised FileExistsError until the next write,
    and a header cut short by a full disk was not noticed at all), and the
    board, a retry and a reopen all work."""
    board = open_board(tmp_path, fsync=policy, compact_min_bytes=None)
    fill(board, 40)
    seq, expected = board.last_seq, state(board)
    with monkeypatch.context() as patch:
        if step == "disk-full":
            new_segment_files_wrapped(patch, lambda f: FullDisk(f, 0))
        else:
            new_segment_files_wrapped(patch, lambda f: FullDisk(f, 5))
        with pytest.raises(OSError, match=r"No space|Input/output"):
            board.compact()
    assert not (tmp_path / segment_name(seq + 1)).exists()
    assert read_manifest(str(tmp_path)).segments == [(segment_name(1), 1)]
    assert state(board) == expected
    assert board.compact() == seq  # the retry works
    board.set("after", 1)
    expected = state(board)
    board.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no orphan, no torn tail
        with open_board(tmp_path) as again:
            assert state(again) == expected and again.last_seq == seq + 1
            assert again.recovery_notes == []
    assert verify(str(tmp_path)).healthy


@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_a_new_segment_whose_header_is_written_short_is_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """A write() that takes only part of the new segment's header (and no
    error) is followed by writes of the rest; it used to go unnoticed, and
    the records appended after the cut-short header made a segment that
    refused to open."""
    board = open_board(tmp_path, fsync=policy, compact_min_bytes=None)
    fill(board, 40)
    with monkeypatch.context() as patch:
        new_segment_files_wrapped(patch, lambda f: ShortWrites(f, 7))
        seq = board.compact()
    fill(board, 20, start=40)
    expected, last = state(board), board.last_seq
    assert last > seq
    board.close()
    with open_board(tmp_path) as again:
        assert state(again) == expected and again.last_seq == last
    assert verify(str(tmp_path)).healthy


@pytest.mark.parametrize("policy", ["never", "always"])
def test_a_failed_fsync_in_compaction_makes_the_board_refuse_writes(
    tmp_path: Path, policy: str
) -> None:
    """The fsync compaction makes under the board lock (the last before the
    manifest names a new segment) fails the board like any other: after a
    failed fsync the kernel may have dropped the pages it could not write,
    and a later fsync that succeeds would not bring them back."""
    board = open_board(tmp_path, fsync=policy)
    fill(board, 30)
    calls: list[int] = []
    failing_call = 1 if policy == "always" else 2  # after _presync's, under "never"

    def sync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == failing_call:
            raise OSError(5, "Input/output error")

    board._writer.sync_fn = sync
    with pytest.raises(OSError, match="Input/output"):
        board.compact()
    assert len(calls) == failing_call
    with pytest.raises(LogError, match="fsync failed"):
        board.set("after", 1)
    board._writer.sync_fn = lambda fd: None
    board.close()
    with open_board(tmp_path) as again:
        assert again.last_seq == board.last_seq and "after" not in again


def test_repair_never_overwrites_what_an_earlier_repair_saved(tmp_path: Path) -> None:
    """Two repairs given the same --backup-dir, each moving a damaged
    MANIFEST aside: the second must not replace the first one's copy (the
    backup is the promise that repair destroys nothing); it refuses before
    it changes anything."""
    board_dir, backup = tmp_path / "board", tmp_path / "backup"
    with open_board(board_dir) as board:
        fill(board, 30)
    (board_dir / "MANIFEST").write_bytes(b"first damage")
    repair(str(board_dir), backup_dir=str(backup))
    assert (backup / "MANIFEST").read_bytes() == b"first damage"
    (board_dir / "MANIFEST").write_bytes(b"second damage")
    before = listing(board_dir)
    with pytest.raises(LogError, match="already holds MANIFEST"):
        repair(str(board_dir), backup_dir=str(backup))
    assert (backup / "MANIFEST").read_bytes() == b"first damage"
    assert listing(board_dir) == before


class _InterruptedJoin:
    """Stands in for the everysec flusher thread: its first join() is cut
    short by Ctrl-C, as a join waiting for a slow fsync can be."""

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread
        self.joins = 0

    def join(self) -> None:
        self.joins += 1
        if self.joins == 1:
            raise KeyboardInterrupt
        self.thread.join()


def test_close_after_an_interrupted_close_releases_the_directory(tmp_path: Path) -> None:
    """Ctrl-C inside close() leaves the board closed to writes but still
    holding its log and the directory lock; calling close() again must
    finish the job (it returned at once, so the directory stayed locked
    until the process ended)."""
    board = open_board(tmp_path, fsync="everysec")
    board.set("ann", 1)
    assert board._flusher is not None
    board._flusher = _InterruptedJoin(board._flusher)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        board.close()
    assert board.closed
    board.close()
    with open_board(tmp_path) as again:
        assert again.items() == [("ann", 1)]


@pytest.mark.parametrize("contents", [{}, {"notes.txt": b"mine"}, {"LOCK": b"123\n"}])
def test_repair_of_a_directory_that_is_no_board_leaves_it_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], contents: dict[str, bytes]
) -> None:
    """A directory with no MANIFEST and no snapshot or segment is no board:
    repair says so and leaves it exactly as it was (it used to take the
    board's directory lock first, leaving a LOCK file behind)."""
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    with pytest.raises(LogError, match=r"is not a board directory.*nothing to repair from"):
        repair(str(tmp_path))
    assert files() == contents
    capsys.readouterr()
    assert cli(["repair", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "is not a board directory" in err
    assert files() == contents


def test_union_refuses_a_path_that_already_holds_a_board(tmp_path: Path) -> None:
    """A durable union writes a new board: opening an existing one would
    merge the combination into its stale members."""
    a, b = Leaderboard(), Leaderboard()
    a.set_many({"x": 1, "y": 2})
    b.set_many({"y": 3})
    path = tmp_path / "board"
    with DurableLeaderboard(path) as old:
        old.set_many({"stale": 100, "y": 5})
    for combine in (DurableLeaderboard.union, DurableLeaderboard.intersection):
        with pytest.raises(ValueError, match=r"already holds a board"):
            combine([a, b], path=path)
    with DurableLeaderboard(path) as old:
        assert old.items() == [("stale", 100), ("y", 5)]
    with DurableLeaderboard.intersection([a, b], path=tmp_path / "new") as new:
        assert new.items() == [("y", 5)]


def test_a_union_that_fails_creates_no_directory(tmp_path: Path) -> None:
    """The scores are all computed before the result board is created."""
    half = Leaderboard()
    half.set_many({"half": 0.5})
    path = tmp_path / "board"
    with pytest.raises(OverflowError, match=r"weighted score of 'half'"):
        DurableLeaderboard.union([half], weights=[10**400], path=path)
    assert not path.exists()


@pytest.mark.parametrize("order", [("desc", "asc"), ["asc"]])
def test_a_union_into_a_composite_order_is_refused_before_creating_it(
    tmp_path: Path, order: Any
) -> None:
    """A result order that makes composite scores is refused with the other
    settings' checks: the union's result board was created, and left open,
    before its first write refused the scalar sums."""
    a = Leaderboard()
    a.set_many({"x": 1, "y": 2})
    path = tmp_path / "board"
    for combine in (DurableLeaderboard.union, DurableLeaderboard.intersection):
        with pytest.raises(TypeError, match=r"composite"):
            combine([a], path=path, order=order)
        assert not path.exists()
    with pytest.raises(TypeError, match=r"composite"):
        Leaderboard.union([a], order=order)


@pytest.mark.parametrize("policy", ["always", "everysec", "never"])
def test_close_whose_final_fsync_fails_closes_and_raises(tmp_path: Path, policy: str) -> None:
    """The final fsync of close() fails: the board is closed anyway (writes
    raise, reads work), the directory is released, and the error is raised;
    a second close() is quiet."""
    board = open_board(tmp_path, fsync=policy, compact_min_bytes=None)
    fill(board, 30)
    expected = state(board)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    board._writer.sync_fn = broken
    with pytest.raises(OSError, match="Input/output"):
        board.close()
    assert board.closed and state(board) == expected
    with pytest.raises(ValueError, match="closed"):
        board.set("late", 1)
    board.close()
    with open_board(tmp_path) as again:  # the lock was released
        assert state(again) == expected


def _inputs_with_metadata() -> tuple[Leaderboard, Leaderboard]:
    """Two boards sharing members, with metadata on some members of each
    (and a member whose metadata only the second board has)."""
    a, b = Leaderboard(), Leaderboard()
    a.set_many({"ann": 10, "bob": 5, "cid": 5})
    b.set_many({"bob": 7, "dan": 1, "cid": 2})
    a.set_meta("ann", {"from": "a"})
    a.set_meta("bob", {"from": "a"})
    b.set_meta("bob", {"from": "b"})
    b.set_meta("dan", {"from": "b", "tags": ["x"]})
    return a, b


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("intersect", [False, True])
def test_a_durable_union_is_one_record_with_its_metadata(
    tmp_path: Path, tie_break: str, intersect: bool
) -> None:
    """The result's scores and metadata are one write: one record holding
    every PUT and then every META, so a crash leaves all of it or none.
    The durable result (live and reopened) equals the in-memory one."""
    a, b = _inputs_with_metadata()
    combine = DurableLeaderboard.intersection if intersect else DurableLeaderboard.union
    in_memory = (Leaderboard.intersection if intersect else Leaderboard.union)(
        [a, b], tie_break=tie_break
    )
    path = tmp_path / "result"
    with combine([a, b], path=path, fsync="always", tie_break=tie_break) as result:
        assert result.last_seq == 1
        (event,) = list(result.events())
        kinds = [change[0] for change in event.changes]
        members = [m for m, _ in in_memory.items()]
        with_meta = [m for m in members if in_memory.meta(m) is not None]
        assert kinds == [0] * len(members) + [2] * len(with_meta)  # PUTs, then METAs
        assert state(result) == state(in_memory)
        result._check()
    with DurableLeaderboard(path) as reopened:
        assert state(reopened) == state(in_memory)
        assert reopened.meta("bob") == {"from": "a"}
        reopened._check()


#: A record limit small enough for a test: a few hundred members' removals
#: go over it, batches of a few dozen stay under it.
SMALL_RECORD_LIMIT = 4096


def test_clear_of_a_board_too_big_for_one_record_says_how_to_empty_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clear() logs one DEL per member in one record; on a board whose
    removals do not fit in one record it cannot be split by the caller, so
    the error must not say "split the batch": it names clear() and the way
    out, and the board and its log are unchanged."""
    monkeypatch.setattr(records_module, "MAX_FRAME_BYTES", SMALL_RECORD_LIMIT)
    monkeypatch.setattr(eventlog_module, "MAX_FRAME_BYTES", SMALL_RECORD_LIMIT)
    members = [f"member-{i:05d}" for i in range(600)]
    with open_board(tmp_path) as board:
        for start in range(0, len(members), 50):
            board.set_many({m: i for i, m in enumerate(members[start : start + 50])})
        before, seq = state(board), board.last_seq
        with pytest.raises(ValueError, match=r"clear\(\).*remove_by_rank") as caught:
            board.clear()
        assert "split the batch" not in str(caught.value)
        assert state(board) == before and board.last_seq == seq
        board._check()
        while len(board):  # the way out the error gives
            board.remove_by_rank(1, 100)
        assert len(board) == 0
    with open_board(tmp_path) as reopened:
        assert len(reopened) == 0 and reopened.clock == before[-1]


def test_a_durable_union_too_big_for_one_record_releases_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result's one record is refused (over the record limit): the
    error is raised, the result board is closed (its directory not left
    locked by a board nobody holds), and the union can be run into the
    empty directory once it fits."""
    a = Leaderboard()
    a.set_many({f"member-{i:05d}": i for i in range(600)})
    path = tmp_path / "result"
    monkeypatch.setattr(records_module, "MAX_FRAME_BYTES", SMALL_RECORD_LIMIT)
    monkeypatch.setattr(eventlog_module, "MAX_FRAME_BYTES", SMALL_RECORD_LIMIT)
    with pytest.raises(ValueError, match=r"log record"):
        DurableLeaderboard.union([a], path=path)
    monkeypatch.undo()
    with DurableLeaderboard.union([a], path=path) as result:
        assert result.items() == a.items() and result.last_seq == 1
