"""Crash tests with real processes: SIGKILL a writer, recover, compare.

A child (tests/crash_child.py) writes a seeded history (with
``fsync="always"`` unless a test says otherwise) and prints every
acknowledged write.  The parent kills it with SIGKILL at random moments
(or lets it kill itself at a named compaction step), reopens the directory
and checks that the recovered board holds every acknowledged write, nothing
that was never written, and the same ranks, scores, tie order, metadata and
clock as a reference board fed the same writes.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine import Leaderboard
from rankengine.durable.board import DurableLeaderboard, rebuild
from rankengine.durable.eventlog import (
    MAP_FRAME_LIMIT,
    MAP_GROW_BYTES,
    MAPPED_SEGMENTS,
    RETIRED_MAPS,
    SegmentReader,
)
from rankengine.durable.verify import verify

sys.path.insert(0, str(Path(__file__).parent))
from acked_child import AckedChild
from crash_child import apply, operation
from union_child import inputs as union_inputs

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parent.parent

#: Every named step of a compaction (see docs/durability.md).
COMPACTION_STEPS = [
    "after_segment_create",
    "after_old_segment_sync",
    "after_new_segment_sync",
    "rotate_manifest_rename",
    "after_rotate_manifest",
    "snapshot_write",
    "snapshot_rename",
    "after_snapshot_rename",
    "swap_manifest_rename",
    "after_swap_manifest",
    "segment_removal",
]


class Child(AckedChild):
    """A running crash_child.py whose stdout is drained by a thread."""

    def __init__(
        self,
        directory: Path,
        seed: int,
        ops: int,
        compact_every: int = 0,
        crash_at: str | None = None,
        *,
        fsync: str = "always",
        blob: int = 0,
        batch: int = 0,
        background: bool = False,
    ) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("RANKENGINE_CRASH_AT", None)
        if crash_at:
            env["RANKENGINE_CRASH_AT"] = crash_at
        super().__init__(
            [
                sys.executable,
                str(CHILD),
                str(directory),
                str(seed),
                str(ops),
                str(compact_every),
                fsync,
                str(blob),
                str(batch),
                "1" if background else "0",
            ],
            env,
        )
        self.blob = blob
        self.batch = batch

    def acked(self) -> tuple[int, int]:
        """(index of the last acknowledged op, its seq); (-1, None) if none."""
        last = (-1, -1)
        for line in self.lines:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "ack" and line.endswith("\n"):
                last = (int(parts[1]), int(parts[2]))
        return last


def state(board: Leaderboard) -> tuple[Any, ...]:
    """Everything replay must reproduce exactly."""
    items = board.items()
    return (items, [board.meta(m) for m, _ in items], board.clock)


def check_recovery(directory: Path, before: Leaderboard, seed: int, child: Child) -> Leaderboard:
    """Reopen ``directory`` and compare it with ``before`` + the child's writes."""
    last_index, last_seq = child.acked()
    rng = random.Random(seed)
    ops = [operation(rng, i, child.blob, child.batch) for i in range(last_index + 2)]
    expected = before
    for op in ops[: last_index + 1]:
        apply(expected, op)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn tail is allowed (and reported)
        recovered = Leaderboard.open(directory, fsync="never", compact_min_bytes=None)
    try:
        recovered._check()
        seq = recovered.last_seq  # type: ignore[attr-defined]
        if last_index >= 0:
            assert seq >= last_seq, f"lost acknowledged writes: log ends at {seq}, acked {last_seq}"
            if seq > last_seq:
                # the write in flight when the child died reached the disk
                assert seq == last_seq + 1, f"log has writes never made: {seq} > {last_seq} + 1"
                apply(expected, ops[last_index + 1])
        assert state(recovered) == state(expected)
    finally:
        recovered.close()  # type: ignore[attr-defined]
    return rebuild(directory)


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_write(tmp_path: Path) -> None:
    rounds = int(os.environ.get("RANKENGINE_CRASH_ROUNDS", "30"))
    rng = random.Random(20240601)
    directory = tmp_path / "board"
    reference = Leaderboard()
    killed_after_acks = 0
    for round_number in range(rounds):
        seed = rng.randrange(1 << 30)
        child = Child(directory, seed, ops=100_000, compact_every=rng.choice([0, 37, 200]))
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        time.sleep(rng.uniform(0.0, 0.25))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        killed_after_acks += child.acked()[0] >= 0
        reference = check_recovery(directory, reference, seed, child)
    assert killed_after_acks == rounds
    assert verify(str(directory)).healthy


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["everysec", "never"])
def test_sigkill_loses_no_acknowledged_write_without_fsync(tmp_path: Path, policy: str) -> None:
    # Under everysec and never, a write returns once its record is in the OS
    # page cache (no user-space buffer), so killing the process loses nothing
    # acknowledged either; only a power cut can lose the unsynced tail.
    rng = random.Random(policy)
    directory = tmp_path / "board"
    reference = Leaderboard()
    for round_number in range(8):
        seed = rng.randrange(1 << 30)
        child = Child(
            directory, seed, ops=100_000, compact_every=rng.choice([0, 500]), fsync=policy
        )
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        time.sleep(rng.uniform(0.05, 0.3))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        assert child.acked()[0] >= 0
        reference = check_recovery(directory, reference, seed, child)
    assert verify(str(directory)).healthy


@pytest.mark.slow
@pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")
def test_sigkill_in_the_middle_of_copies_into_the_map(tmp_path: Path) -> None:
    # Records of ~60 KB (just under MAP_FRAME_LIMIT, so still copied into the
    # map): a copy takes microseconds, and some of the kills land inside one.
    # Whatever a kill leaves must open as a clean end or a torn tail, with
    # every acknowledged write.
    rng = random.Random("copies")
    directory = tmp_path / "board"
    reference = Leaderboard()
    torn = 0
    for round_number in range(12):
        seed = rng.randrange(1 << 30)
        child = Child(directory, seed, ops=100_000, fsync="everysec", blob=MAP_FRAME_LIMIT - 5000)
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        time.sleep(rng.uniform(0.0, 0.2))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        with SegmentReader(str(sorted(directory.glob("log-*.seg"))[-1])) as reader:
            list(reader.events())
            torn += reader.torn is not None
        reference = check_recovery(directory, reference, seed, child)
    assert verify(str(directory)).healthy
    print(f"{torn} of 12 kills left a torn tail")


@pytest.mark.slow
@pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")
@pytest.mark.parametrize("policy", ["never", "everysec"])
def test_sigkill_with_retired_maps_open_loses_no_acknowledged_write(
    tmp_path: Path, policy: str
) -> None:
    # The maps a writer moved past stay open until the next fsync (or until
    # RETIRED_MAPS wait); records copied into them are in the page cache
    # all the same: a kill while several are open loses nothing acknowledged.
    rng = random.Random(f"retired {policy}")
    directory = tmp_path / "board"
    reference = Leaderboard()
    for round_number in range(4):
        seed = rng.randrange(1 << 30)
        child = Child(directory, seed, ops=100_000, fsync=policy, blob=MAP_FRAME_LIMIT - 5000)
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        segment = sorted(directory.glob("log-*.seg"))[-1]
        start = segment.stat().st_size
        deadline = time.monotonic() + 60
        while segment.stat().st_size < start + (RETIRED_MAPS + 2) * MAP_GROW_BYTES:
            assert time.monotonic() < deadline and child.proc.poll() is None, child.lines[-3:]
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.05))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        reference = check_recovery(directory, reference, seed, child)
    assert verify(str(directory)).healthy


@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_sigkill_during_large_batches_shows_each_batch_whole_or_not_at_all(
    tmp_path: Path, policy: str
) -> None:
    # set_many / incr_many of 3,000 members: one record each (hundreds of
    # kilobytes, written with write() even where small records are copied
    # into a map), so a kill often lands inside one, and inside compactions
    # of a board of thousands.  After each kill the board holds every
    # acknowledged batch, and the one in flight wholly or not at all.
    rng = random.Random(f"batches-{policy}")
    directory = tmp_path / "board"
    reference = Leaderboard()
    for round_number in range(3):
        seed = rng.randrange(1 << 30)
        child = Child(
            directory, seed, ops=100_000, compact_every=rng.choice([0, 4]), fsync=policy, batch=3000
        )
        assert child.first_ack.wait(timeout=60), "child never acknowledged a write"
        time.sleep(rng.uniform(0.05, 0.4))
        child.proc.send_signal(signal.SIGKILL)
        code = child.finish()
        assert code == -signal.SIGKILL, (round_number, code, child.lines[-3:])
        reference = check_recovery(directory, reference, seed, child)
    assert len(reference) > 3000
    assert verify(str(directory)).healthy


@pytest.mark.parametrize("step", COMPACTION_STEPS)
def test_kill_during_compaction_recovers(tmp_path: Path, step: str) -> None:
    directory = tmp_path / "board"
    seed = COMPACTION_STEPS.index(step) + 7
    # 40 writes, compaction after 30 (and again after 60, never reached)
    child = Child(directory, seed, ops=40, compact_every=30, crash_at=step)
    code = child.finish()
    assert code == -signal.SIGKILL, f"the child never reached {step}: {child.lines[-2:]}"
    assert child.acked()[0] == 29
    recovered = check_recovery(directory, Leaderboard(), seed, child)
    assert len(recovered) > 0
    # the directory keeps working: leftovers are gone, another compaction and reopen are fine
    with Leaderboard.open(directory, fsync="always") as board:
        board.set("after", 1)
        board.compact()  # type: ignore[attr-defined]
    report = verify(str(directory))
    assert report.healthy and not report.findings, [str(f) for f in report.findings]
    assert rebuild(directory).score("after") == 1


ROTATION_STEPS = COMPACTION_STEPS[:5]


@pytest.mark.parametrize("policy", ["always", "everysec"])
@pytest.mark.parametrize("step", ROTATION_STEPS)
def test_kill_at_each_step_of_a_rotation_with_writes_in_the_new_segment(
    tmp_path: Path, step: str, policy: str
) -> None:
    """The log rotation makes its fsyncs after the board's lock is let go,
    while writes go on into the new segment that the manifest does not name
    yet.  Killed at each step with such writes made (acknowledged under
    everysec, whose records are in the page cache; in flight under always,
    whose acknowledgement waits for the rotation), the directory reopens
    with every acknowledged write: the new segment is adopted."""
    directory = tmp_path / "board"
    seed = ROTATION_STEPS.index(step) + 31
    child = Child(
        directory, seed, ops=80, compact_every=30, crash_at=step, fsync=policy, background=True
    )
    code = child.finish()
    assert code == -signal.SIGKILL, f"the child never reached {step}: {child.lines[-2:]}"
    last_index, last_seq = child.acked()
    assert last_index >= 29
    if policy == "everysec":  # acknowledged writes the manifest did not name at the kill
        assert last_index >= 29 + 8
    recovered = check_recovery(directory, Leaderboard(), seed, child)
    assert len(recovered) > 0
    with Leaderboard.open(directory, fsync="always") as board:
        assert board.last_seq >= last_seq
        board.set("after", 1)
        board.compact()  # type: ignore[attr-defined]
    report = verify(str(directory))
    assert report.healthy and not report.findings, [str(f) for f in report.findings]
    assert rebuild(directory).score("after") == 1


def records_end(segment: Path) -> int:
    """Offset just past the last record of ``segment`` (which must read cleanly)."""
    with SegmentReader(str(segment)) as reader:
        list(reader.events())
        assert reader.torn is None
        return reader.end


@pytest.mark.skipif(not MAPPED_SEGMENTS, reason="mapped segments are Linux only")
@pytest.mark.parametrize("step", ["after_segment_create", "after_rotate_manifest"])
def test_reserved_zeros_a_kill_leaves_read_as_the_clean_end(tmp_path: Path, step: str) -> None:
    """An everysec writer reserves its segment ahead of the records; a kill
    leaves those zeros.  Killed as compaction starts its new segment, before
    or after the manifest lists it: the zeros are no torn tail and no damage
    to any reader, the next open and close cut them from the last segment,
    and a segment that a listed new one follows never keeps them."""
    directory = tmp_path / "board"
    child = Child(directory, 11, ops=40, compact_every=30, crash_at=step, fsync="everysec")
    assert child.finish() == -signal.SIGKILL, child.lines[-2:]
    first = directory / "log-00000000000000000001.seg"
    end = records_end(first)
    if step == "after_segment_create":  # still the last segment: the zeros are there
        size = first.stat().st_size
        assert size > end
        with open(first, "rb") as f:
            f.seek(end)
            assert f.read() == bytes(size - end)
    else:  # the manifest lists a segment after it: given back before that
        assert first.stat().st_size == end
    report = verify(str(directory))
    assert report.healthy and all(f.severity == "note" for f in report.findings)
    assert not any(f.path == str(first) for f in report.findings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn tail, no recovery warning
        Leaderboard.open(directory, fsync="everysec").close()  # type: ignore[attr-defined]
    assert first.stat().st_size == end  # the open and close cut what the kill left
    check_recovery(directory, Leaderboard(), 11, child)
    with Leaderboard.open(directory, fsync="everysec", compact_min_bytes=None) as board:
        board.set("after", 1)
        last = sorted(directory.glob("log-*.seg"))[-1]
        assert last.stat().st_size > records_end(last)  # reserved again while open
    assert last.stat().st_size == records_end(last)  # close gives it back
    report = verify(str(directory))
    assert report.healthy and not report.findings, [str(f) for f in report.findings]
    assert rebuild(directory).score("after") == 1


def test_child_runs_to_completion_without_a_kill(tmp_path: Path) -> None:
    directory = tmp_path / "board"
    child = Child(directory, 3, ops=50, compact_every=20)
    assert child.finish() == 0
    assert child.lines[-1] == "done\n"
    check_recovery(directory, Leaderboard(), 3, child)


@pytest.mark.parametrize("step", ["after_create_segment", "create_manifest_rename"])
def test_verify_calls_an_interrupted_creation_no_damage(tmp_path: Path, step: str) -> None:
    """Killed while a new board is created (nothing written yet): open
    silently creates it afresh, so verify must not call the directory
    damaged and send the user to repair; it says what is there, as a note."""
    directory = tmp_path / "board"
    child = Child(directory, 5, ops=10, crash_at=step)
    assert child.finish() == -signal.SIGKILL, child.lines[-2:]
    assert child.acked()[0] == -1
    report = verify(str(directory))
    assert report.healthy and not report.damaged, [str(f) for f in report.findings]
    assert [f.severity for f in report.findings] == ["note"]
    assert "interrupted" in report.findings[0].message
    assert report.exit_code == 0
    check_recovery(directory, Leaderboard(), 5, child)
    report = verify(str(directory))
    assert report.healthy and not report.findings, [str(f) for f in report.findings]


def test_verify_still_calls_a_directory_without_a_board_damaged(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a board")
    report = verify(str(tmp_path))
    assert report.damaged


def test_verify_calls_a_kill_before_the_first_segment_header_no_damage(tmp_path: Path) -> None:
    """Killed between creating the first segment and writing its header
    (one write): an empty segment file, which open removes before creating
    the board; verify says so as a note."""
    (tmp_path / "LOCK").write_text("123\n")
    (tmp_path / "log-00000000000000000001.seg").write_bytes(b"")
    report = verify(str(tmp_path))
    assert report.healthy and [f.severity for f in report.findings] == ["note"]
    with Leaderboard.open(tmp_path, fsync="always") as board:
        board.set("ann", 1)
    report = verify(str(tmp_path))
    assert report.healthy and not report.findings, [str(f) for f in report.findings]


def test_verify_calls_a_kill_right_after_taking_the_lock_no_damage(tmp_path: Path) -> None:
    """Killed after a new board took its directory lock but before its
    first segment: only ``LOCK``, which open creates the board over."""
    (tmp_path / "LOCK").write_text("123\n")
    report = verify(str(tmp_path))
    assert report.healthy and [f.severity for f in report.findings] == ["note"]
    with Leaderboard.open(tmp_path, fsync="always") as board:
        board.set("ann", 1)
    assert verify(str(tmp_path)).healthy


UNION_CHILD = Path(__file__).with_name("union_child.py")


def _union_recovered_whole_or_empty(directory: Path, acked: bool) -> bool:
    """Reopen a killed durable union's result: it holds the whole union
    (scores, metadata, clock) or nothing; True if it holds the union."""
    expected = Leaderboard.union(union_inputs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn tail is allowed (and reported)
        recovered = Leaderboard.open(directory, fsync="never", compact_min_bytes=None)
    try:
        recovered._check()
        if not acked and len(recovered) == 0:
            assert recovered.clock == 0
            return False
        assert state(recovered) == state(expected)
        return True
    finally:
        recovered.close()  # type: ignore[attr-defined]


def test_sigkill_during_a_durable_union_leaves_it_whole_or_empty(tmp_path: Path) -> None:
    """A durable union with metadata is killed once its log has grown past
    the segment header (its first record is written), then at random
    moments: after each kill the result holds the whole union with all its
    metadata, or nothing, and a union into an empty result can be run
    again."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RANKENGINE_CRASH_AT", None)
    rng = random.Random("durable-union")
    for round_number in range(5):
        directory = tmp_path / f"union-{round_number}"
        child = AckedChild([sys.executable, str(UNION_CHILD), str(directory)], env)
        deadline = time.monotonic() + 60
        while not any(line == "ready\n" for line in child.lines):
            assert time.monotonic() < deadline and child.proc.poll() is None, child.lines
            time.sleep(0.001)
        if round_number == 0:
            # past the first record: the header frame is far smaller than this
            while child.proc.poll() is None and not any(
                f.stat().st_size > 20_000 for f in directory.glob("log-*.seg")
            ):
                assert time.monotonic() < deadline
                time.sleep(0.0005)
        else:
            time.sleep(rng.uniform(0, 0.08))  # before, inside or after the union
        child.proc.send_signal(signal.SIGKILL)
        child.finish()
        acked = "ack\n" in child.lines
        if not directory.exists():
            continue
        if not _union_recovered_whole_or_empty(directory, acked):
            # an empty result is no board yet: the union may be run again
            DurableLeaderboard.union(union_inputs(), path=directory).close()
            assert _union_recovered_whole_or_empty(directory, True)
