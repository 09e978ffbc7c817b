"""Snapshots built by replay in a fresh process (``snapshot_mode="replay"``,
issue 23).

The file the child writes must be the one the sliced export writes from the
live board, byte for byte (Hypothesis over random histories: ties, int and
float scores, removals, metadata, both backends, every order and tie
rule), and the board reopened from it must equal the live one.  Real
processes throughout for the failures: the child SIGKILLs itself in the
middle of the file, fails, or outlives a parent that was SIGKILLed while it
ran; each time the old snapshot stays in force and the directory reopens
to exactly the acknowledged state, and the child never writes the manifest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snapshot_history import MEMBERS, fill, snapshot_bytes

from rankengine import Leaderboard
from rankengine.durable import board as board_module
from rankengine.durable import replayed
from rankengine.durable.manifest import read_manifest
from rankengine.durable.records import CRASH_ENV
from rankengine.durable.replayed import ReplayJob, ReplaySnapshotError, replay_snapshot

HERE = Path(__file__).parent
#: A fixed creation time for the snapshots' headers (the only field that
#: would differ between two compactions of the same log).
CREATED_MS = 1_700_000_000_000


def state(board: Any) -> tuple[Any, ...]:
    """Everything a snapshot holds, as the board shows it (tie order, the
    int/float kind of each score, metadata, the tie clock, the settings)."""
    board._check()
    rows = [(m, type(s).__name__, s, board.meta(m)) for m, s in board.items()]
    return rows, board.clock, board.config()


def reopened(directory: Path) -> tuple[Any, ...]:
    with Leaderboard.open(directory, fsync="never", compact_min_bytes=None) as board:
        return state(board)


# ----------------------------------------------------------------------
# The same file as the sliced export, over random histories
# ----------------------------------------------------------------------
MEMBER = st.sampled_from(["ann", "bob", "cy", "dee", "eve", "fay"])
SCORE = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 1.0, -2.0, 2.0, 1e300]))
META = st.one_of(st.none(), st.fixed_dictionaries({"k": st.integers(0, 3)}))
PAIRS = st.lists(st.tuples(MEMBER, SCORE), max_size=4)
OP = st.one_of(
    st.tuples(st.just("set"), MEMBER, SCORE, META),
    st.tuples(st.just("incr"), MEMBER, SCORE, st.none()),
    st.tuples(st.just("remove"), MEMBER, st.none(), st.none()),
    st.tuples(st.just("meta"), MEMBER, st.none(), META),
    st.tuples(
        st.just("many"), st.lists(st.tuples(MEMBER, SCORE), max_size=4), st.none(), st.none()
    ),
    st.tuples(st.just("compact"), st.none(), st.none(), st.none()),
)


def apply(board: Any, op: tuple[Any, Any, Any, Any]) -> None:
    kind, who, score, meta = op
    if kind == "set":
        board.set(who, score, meta=meta)
    elif kind == "incr":
        board.incr(who, score)
    elif kind == "remove":
        board.remove(who)
    elif kind == "meta":
        if board.score(who) is not None:
            board.set_meta(who, meta)
    elif kind == "many":
        board.set_many(dict(who))
    else:
        board.compact()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(OP, max_size=40),
    setup=st.tuples(
        st.sampled_from(["sortedlist", "skiplist"]),
        st.sampled_from(["desc", "asc"]),
        st.sampled_from(["first", "member"]),
    ),
)
def test_the_replayed_file_is_the_sliced_one(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    ops: list[tuple[Any, Any, Any, Any]],
    setup: tuple[str, str, str],
) -> None:
    backend, order, tie_break = setup
    monkeypatch.setattr(board_module, "_now_ms", lambda: CREATED_MS)
    base = tmp_path_factory.mktemp("h")
    boards = {
        mode: Leaderboard.open(
            base / mode,
            backend=backend,
            order=order,
            tie_break=tie_break,
            fsync="never",
            compact_min_bytes=None,
            snapshot_mode=mode,
            now=lambda: 1_000,
        )
        for mode in ("slices", "replay")
    }
    try:
        for op in [*ops, ("compact", None, None, None)]:
            for board in boards.values():
                apply(board, op)
            if op[0] == "compact":  # every snapshot along the way, not only the last
                files = [snapshot_bytes(base / mode) for mode in boards]
                assert files[0] == files[1]
        live = state(boards["replay"])
        assert live == state(boards["slices"])
    finally:
        for board in boards.values():
            board.close()
    assert reopened(base / "replay") == live


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_a_large_replayed_file_is_the_sliced_one(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board_module, "_now_ms", lambda: CREATED_MS)
    files = []
    for mode in ("slices", "replay"):
        directory = tmp_path / mode
        with Leaderboard.open(
            directory,
            backend=backend,
            fsync="never",
            compact_min_bytes=None,
            snapshot_mode=mode,
            now=lambda: 1_000,
        ) as board:
            fill(board)
            board.compact()  # from the log alone
            board.incr("m1", 2)
            board.remove("m2")
            board.compact()  # from the first snapshot and the records after it
            board._check()
        files.append(snapshot_bytes(directory))
    assert len(files[0]) > MEMBERS
    assert files[0] == files[1]


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
def test_writes_made_while_the_child_runs_are_kept(tmp_path: Path, backend: str) -> None:
    board = Leaderboard.open(
        tmp_path, backend=backend, fsync="never", compact_min_bytes=None, snapshot_mode="replay"
    )
    model = fill(board)
    compactor = threading.Thread(target=board.compact)
    compactor.start()
    i = 0
    while compactor.is_alive() or i < 100:
        board.set(f"w{i}", i)
        model[f"w{i}"] = i
        if i % 3 == 0:
            board.remove(f"m{i + 1}")
            model.pop(f"m{i + 1}", None)
        i += 1
    compactor.join()
    board._check()
    seq = read_manifest(str(tmp_path)).snapshots[-1][1]
    assert 0 < seq < board.last_seq  # later writes are in the log, not the snapshot
    assert dict(board.items()) == model
    board.close()
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as again:
        again._check()
        assert dict(again.items()) == model


# ----------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------
def test_a_child_killed_mid_write_leaves_the_old_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = Leaderboard.open(
        tmp_path, fsync="never", compact_min_bytes=None, snapshot_mode="replay"
    )
    fill(board)
    first = board.compact()
    board.set("late", 1)
    monkeypatch.setenv(CRASH_ENV, "snapshot_write")  # the child SIGKILLs itself
    with pytest.raises(ReplaySnapshotError, match=f"killed by signal {int(signal.SIGKILL)}"):
        board.compact()
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == first
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    board.set("after", 2)  # the parent goes on serving
    live = state(board)
    monkeypatch.delenv(CRASH_ENV)
    second = board.compact()  # the next snapshot retries, and succeeds
    assert second > first
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == second
    board.close()
    assert reopened(tmp_path) == live


def test_background_compaction_warns_when_the_child_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CRASH_ENV, "snapshot_rename")
    board = Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=1, snapshot_mode="replay")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fill(board, 2_000)
        while board._compactor is not None:
            board._compactor.join()
    assert any("replaying child" in str(w.message) for w in caught)
    assert read_manifest(str(tmp_path)).snapshots == []
    live = state(board)
    board.close()
    assert reopened(tmp_path) == live


def test_a_log_that_does_not_reach_the_seq_is_refused(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as board:
        board.set("ann", 1)
        board.set("bob", 2)
        header = {"seq": 3, "clock": 3, "time_ms": 0, "created_ms": 0, "config": board.config()}
        segments = read_manifest(str(tmp_path)).segments
    target = str(tmp_path / "snap-00000000000000000003.snap")
    with pytest.raises(ReplaySnapshotError, match="ends at seq 2, not at seq 3"):
        replay_snapshot(ReplayJob(str(tmp_path), [], segments, header, target))
    assert sorted(os.listdir(tmp_path)) == ["LOCK", "MANIFEST", segments[0][0]]


def test_without_an_interpreter_the_option_means_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_child(*args: Any) -> int:
        raise AssertionError("a child started where none can be")

    monkeypatch.setattr(replayed, "REPLAY_AVAILABLE", False)
    monkeypatch.setattr(board_module, "replay_snapshot", no_child)
    with Leaderboard.open(tmp_path, fsync="never", snapshot_mode="replay") as board:
        fill(board, 2_000)
        seq = board.compact()
        live = state(board)
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == seq
    assert reopened(tmp_path) == live


@pytest.mark.parametrize("members", [50, 5])
def test_the_default_replays_a_large_board_and_slices_a_small_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: int
) -> None:
    replays: list[int] = []

    def counted(job: ReplayJob) -> int:
        replays.append(job.header["seq"])
        return replay_snapshot(job)

    monkeypatch.setattr(replayed, "AUTO_REPLAY_MEMBERS", 10)
    monkeypatch.setattr(board_module, "replay_snapshot", counted)
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as board:
        board.set_many({f"m{i}": i for i in range(members)})
        seq = board.compact()
        live = state(board)
    assert replays == ([seq] if members >= 10 else [])
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == seq
    assert reopened(tmp_path) == live


def test_a_child_that_cannot_start_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = Leaderboard.open(tmp_path, fsync="never", snapshot_mode="replay")
    board.set("ann", 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    with pytest.raises(ReplaySnapshotError, match="could not start the replaying child"):
        board.compact()
    assert read_manifest(str(tmp_path)).snapshots == []
    monkeypatch.undo()
    board.set("bob", 2)
    seq = board.compact()  # the next one retries
    assert read_manifest(str(tmp_path)).snapshots[-1][1] == seq
    live = state(board)
    board.close()
    assert reopened(tmp_path) == live


def _alive(pid: int) -> bool:
    """Is ``pid`` running (a zombie waiting for its new parent counts as gone)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc")
@pytest.mark.parametrize("when", ["replaying", "writing"])
def test_sigkill_of_the_parent_while_the_child_runs(tmp_path: Path, when: str) -> None:
    members = 200_000
    child = subprocess.run(
        [sys.executable, str(HERE / "replay_child.py"), str(tmp_path), str(members), when],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == -9, child.stderr
    lines = child.stdout.splitlines()
    acks = [int(line.split()[1]) for line in lines if line.startswith("ack ")]
    pids = [int(line.split()[1]) for line in lines if line.startswith("child ")]
    assert acks[0] == -1 and len(acks) > 20 and pids
    # The orphaned child gives up (it never writes the manifest)
    for _ in range(600):
        if not _alive(pids[0]):
            break
        time.sleep(0.1)
    assert not _alive(pids[0])
    manifest = read_manifest(str(tmp_path))
    assert [seq for _, seq in manifest.snapshots] == [1]  # the first compaction's only
    model: dict[str, float] = {f"m{i}": i for i in range(members)}
    model.update({f"w{i}": i for i in acks[1:]})
    with Leaderboard.open(tmp_path, fsync="never", compact_min_bytes=None) as board:
        board._check()
        got = dict(board.items())
        # the write in flight at the kill may have reached the log (never acked)
        extra = set(got) - set(model)
        assert extra <= {f"w{acks[-1] + 1}"}
        for member in extra:
            del got[member]
        assert got == model
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_parent_makes_the_child_background_work_as_soon_as_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child's interpreter start and imports come before its own call to
    # _background(): the parent lowers it first, so that none of it runs at
    # the serving process's priority.
    seen: list[tuple[int, int, int]] = []
    real = replayed._background

    def lowered(pid: int = 0) -> None:
        real(pid)
        if pid:  # (the parent's call, on the child just started)
            seen.append((pid, os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid)))

    monkeypatch.setattr(replayed, "_background", lowered)
    board = Leaderboard.open(tmp_path, fsync="never", snapshot_mode="replay")
    fill(board, 2_000)
    board.compact()
    assert len(seen) == 1
    assert seen[0][1:] == (os.SCHED_IDLE, replayed.CHILD_NICE)
    live = state(board)
    board.close()
    assert reopened(tmp_path) == live
