"""The log rotation's fsyncs run without the board's lock
(rankengine/durable/rotation.py): writes and reads go on meanwhile, and an
open adopts a new segment the manifest does not name yet only where it
continues the log exactly.  (Kills at each step, by a real process:
tests/test_crash.py.)"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rankengine import Leaderboard
from rankengine.durable import rotation
from rankengine.durable.board import DurableLeaderboard
from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.manifest import read_manifest, segment_name
from rankengine.durable.records import LogError, RecoveryWarning
from rankengine.durable.recovery import unnamed_after
from rankengine.durable.verify import verify

GATE_S = 30.0  # (a bound for a stuck test, never a measured time)


def open_board(path: Path, **options: Any) -> DurableLeaderboard:
    board = Leaderboard.open(path, compact_min_bytes=None, **options)
    assert isinstance(board, DurableLeaderboard)
    return board


def fill(board: Leaderboard, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        board.incr(f"m{i % 17}", i % 5 + 1)


class FsyncGate:
    """Holds the first fsync that ``thread`` makes once ``path`` exists
    (the rotation's first: on the old code, the new segment's own, under
    the board's lock), until :meth:`open` is called."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        self.path = path
        self.thread: threading.Thread | None = None
        self.held, self.released = threading.Event(), threading.Event()
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._gated(real))

    def _gated(self, real: Any) -> Any:
        def gated(fd: int) -> None:
            if (
                threading.current_thread() is self.thread
                and not self.held.is_set()
                and self.path.exists()
            ):
                self.held.set()
                assert self.released.wait(GATE_S)
            real(fd)

        return gated

    def open(self) -> None:
        self.released.set()


@pytest.fixture
def board_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "board"


@pytest.mark.parametrize("policy", ["everysec", "always"])
def test_writes_and_reads_go_on_while_the_rotation_fsyncs(
    board_dir: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """The rotation's first fsync is held at a gate: another thread's write
    and read complete meanwhile (on the old code the fsyncs ran under the
    board's lock and both waited for the gate).  Under "always" the write
    is appended at once and acknowledged once the rotation is durable."""
    board = open_board(board_dir, fsync=policy)
    fill(board, 50)
    seq = board.last_seq
    gate = FsyncGate(monkeypatch, board_dir / segment_name(seq + 1))
    compaction = threading.Thread(target=board.compact)
    gate.thread = compaction
    compaction.start()
    try:
        assert gate.held.wait(GATE_S), "the rotation never reached its fsync"
        done = threading.Event()
        result: list[Any] = []

        def write_and_read() -> None:
            result.append(board.write_deferred("set", "during", 99))
            result.append(board.score("during"))
            done.set()

        other = threading.Thread(target=write_and_read)
        other.start()
        served = done.wait(GATE_S / 3)
        assert served, "a write waited for the rotation's fsync"
        (_, ticket), score = result
        assert score == 99
        if policy == "always":
            assert ticket == seq + 1
            assert board.group_commit is not None
            assert board.group_commit.durable <= seq  # not acknowledged before the rotation
    finally:
        gate.open()
        compaction.join()
    other.join()
    board.wait_durable(ticket)
    assert read_manifest(str(board_dir)).segments[-1] == (segment_name(seq + 1), seq + 1)
    board._check()
    expected = board.items()
    board.close()
    with open_board(board_dir) as again:
        assert again.items() == expected and again.last_seq == seq + 1
        assert again.recovery_notes == []


def test_flush_during_a_rotation_waits_for_it_without_the_board_lock(
    board_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = open_board(board_dir, fsync="everysec")
    fill(board, 30)
    seq = board.last_seq
    gate = FsyncGate(monkeypatch, board_dir / segment_name(seq + 1))
    compaction = threading.Thread(target=board.compact)
    gate.thread = compaction
    compaction.start()
    assert gate.held.wait(GATE_S)
    board.set("during", 1)
    flushed = threading.Event()
    flusher = threading.Thread(target=lambda: (board.flush(), flushed.set()))
    flusher.start()
    assert not flushed.wait(0.2)  # it waits for the rotation to be durable ...
    assert board.score("during") == 1  # ... without the board's lock
    gate.open()
    compaction.join()
    flusher.join(GATE_S)
    assert flushed.is_set()
    board.close()


def _interrupted_rotation(board_dir: Path) -> tuple[bytes, int, list[Any]]:
    """A board whose rotation completed, with writes in the new segment,
    and the manifest from before it: what a kill between the switch and the
    manifest write leaves.  (manifest bytes, the seq of the switch, items)"""
    with open_board(board_dir, fsync="everysec", retain_log=True) as board:
        fill(board, 40)
        before = (board_dir / "MANIFEST").read_bytes()
        seq = board.compact()
        fill(board, 12, start=40)
        items = board.items()
    (board_dir / "MANIFEST").write_bytes(before)  # as if the rotation's manifest never came
    return before, seq, items


def test_an_open_adopts_a_new_segment_that_continues_the_log(board_dir: Path) -> None:
    _, seq, items = _interrupted_rotation(board_dir)
    assert unnamed_after(str(board_dir), read_manifest(str(board_dir))) == [
        (segment_name(seq + 1), seq + 1)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # adopted, not set aside
        with open_board(board_dir) as again:
            assert again.items() == items and again.last_seq == seq + 12
            assert again.recovery_notes[0].startswith(f"adopted {segment_name(seq + 1)}")
            again.set("after", 1)
    with open_board(board_dir) as again:
        assert again.score("after") == 1 and again.recovery_notes == []
    assert verify(str(board_dir)).healthy


def test_a_new_segment_that_does_not_follow_the_log_is_set_aside(board_dir: Path) -> None:
    """A power cut that lost the old segment's last records while the new
    one's reached the disk: the new segment does not follow the log, so it
    is not adopted (nothing in it was acknowledged under "always": its
    writes wait for the whole rotation), and the open sets it aside."""
    _, seq, _ = _interrupted_rotation(board_dir)
    old = board_dir / segment_name(1)
    with SegmentReader(str(old)) as reader:  # where its last record starts
        starts = [at for batch in reader.batches(None) for at, _ in batch]
    with open(old, "r+b") as f:
        f.truncate(starts[-1])  # (a clean cut or a torn tail: either way short)
    with pytest.warns(RecoveryWarning, match="orphan"):
        again = open_board(board_dir)
    with again:
        assert again.last_seq == seq - 1
        assert (board_dir / (segment_name(seq + 1) + ".orphan")).exists()


def test_a_failed_rotation_fails_the_board_and_its_waiters(
    board_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = open_board(board_dir, fsync="always")
    fill(board, 20)
    seq = board.last_seq

    def fail(step: str, running: rotation.Rotation) -> None:
        if step == "after_old_segment_sync":
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(rotation, "hooks", [fail])
    with pytest.raises(OSError, match="Input/output"):
        board.compact()
    with pytest.raises(LogError):
        board.flush()
    with pytest.raises(LogError, match="close and reopen"):
        board.set("late", 1)
    board.close()
    with open_board(board_dir) as again:
        assert again.last_seq == seq


def test_the_rotation_holds_the_lock_only_for_the_switch(
    board_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fsync of a compaction is made without the board's lock."""
    board = open_board(board_dir, fsync="everysec")
    fill(board, 30)
    under_lock: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def watched(fd: int, real: Any = real, name: str = name) -> None:
            if board._lock._is_owned():  # type: ignore[attr-defined]
                under_lock.append(name)
            real(fd)

        monkeypatch.setattr(os, name, watched)
    board.compact()
    monkeypatch.undo()
    assert under_lock == []
    board.close()
    shutil.rmtree(board_dir)
