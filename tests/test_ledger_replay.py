"""A ledger's compaction replayed in a child process (rankengine.ledger.replayed).

* random histories over every view kind, compacted in replay mode at
  random points while records go on: the reopened ledger equals a ledger
  in memory fed the same events, and the one compacted in-process at the
  same seq; the child's files are those of the in-process compaction,
  byte for byte;
* views removed, added and re-registered while the child runs;
* a child that fails or is killed leaves the old snapshots in force, and
  the next compaction succeeds;
* a recorder killed (SIGKILL) at each step of the protocol loses no
  acknowledged event, and leaves no stray file;
* the naming: in memory under the lock, the manifest written after it
  (not when a manifest written meanwhile holds a later copy), the old
  files removed only once it is durable; an ``AsyncLedger``'s records go
  on while it is written;
* an ``AsyncLedger`` acknowledges records while a replayed compaction runs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from acked_child import AckedChild
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_child import add_views, apply, events, state

from rankengine import Ledger
from rankengine.durable.manifest import read_manifest
from rankengine.durable.replayed import CHILD_ORPHANED, child_env
from rankengine.durable.rotation import ROTATION_STEPS
from rankengine.ledger import compaction, replayed
from rankengine.ledger.aio import AsyncLedger
from rankengine.ledger.replayed import AUTO_REPLAY_ROWS, IN_PROCESS, REPLAY, ReplayCompactionError
from rankengine.ledger.routes import Route
from rankengine.ledger.storage import VIEWS_DIR, LedgerFiles
from rankengine.ledger.views import View

pytestmark = pytest.mark.skipif(not sys.executable, reason="needs a Python to start")

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).with_name("ledger_child.py")
SEED = 11
#: The trending view of ledger_child.VIEWS (a TopK: see the byte comparison).
TRENDING = "trend"


class Clock:
    """The records' time: the same in two ledgers fed the same events."""

    def __init__(self) -> None:
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        self.ms += 1
        return self.ms


def model(seed: int, ops: int) -> dict[str, Any]:
    """The views after operations ``0 .. ops - 1``, fed in memory."""
    ledger = Ledger()
    add_views(ledger)
    for i in range(ops):
        apply(ledger, events(seed, i))
    return state(ledger)


def start_replay(ledger: Ledger) -> threading.Thread:
    """The replayed compaction of ``ledger`` as a write's: the switch now,
    the child and the naming on a thread (records go on meanwhile)."""
    ledger._compact_lock.acquire()
    with ledger._lock:
        switched = compaction.switch(ledger)
    assert switched is not None

    def finish() -> None:
        try:
            compaction.finish_replay(ledger, *switched)
        finally:
            ledger._compact_lock.release()

    thread = threading.Thread(target=finish)
    thread.start()
    return thread


def listed_files(path: Path) -> dict[str, list[bytes]]:
    """The bytes of every snapshot file the manifest names, per view."""
    config = read_manifest(str(path)).config
    return {
        view: [(path / VIEWS_DIR / view / name).read_bytes() for _key, name in entry[1]]
        for view, entry in sorted(config["snapshots"].items())
    }


def check_files(path: Path) -> None:
    """Every file the manifest names exists; no other file under views/,
    no segment it does not name."""
    manifest = read_manifest(str(path))
    for name, _ in manifest.segments:
        assert (path / name).exists(), name
    named = {name for name, _ in manifest.segments}
    assert not [n for n in os.listdir(path) if n.endswith(".seg") and n not in named]
    snapshots = manifest.config["snapshots"]
    root = path / VIEWS_DIR
    for view in sorted(os.listdir(root)) if root.exists() else []:
        assert view in manifest.config["views"], view
        names = {name for _key, name in snapshots[view][1]}
        assert set(os.listdir(root / view)) == names, (view, os.listdir(root / view))


@settings(
    max_examples=int(os.environ.get("RANKENGINE_REPLAY_EXAMPLES", "10")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10**6),
    ops=st.integers(10, 160),
    cuts=st.lists(st.integers(1, 160), min_size=1, max_size=2, unique=True),
    during=st.integers(0, 30),
)
def test_replayed_compaction_equals_the_model_and_in_process_bytes(
    tmp_path_factory: pytest.TempPathFactory, seed: int, ops: int, cuts: list[int], during: int
) -> None:
    base = tmp_path_factory.mktemp("replay")
    opts: dict[str, Any] = {"fsync": "never", "compact_min_bytes": None}
    replayed = Ledger.open(base / "a", snapshot_mode="replay", now=Clock(), **opts)
    inline = Ledger.open(base / "b", snapshot_mode="in-process", now=Clock(), **opts)
    add_views(replayed)
    add_views(inline)
    i = 0
    pending = set(cuts)
    while i < ops:
        if i in pending:
            pending.discard(i)
            thread = start_replay(replayed)  # sealed at the seq of i records
            inline.compact()
            for _ in range(during):  # records while the child runs
                if i < ops:
                    apply(replayed, events(seed, i))
                    apply(inline, events(seed, i))
                    i += 1
            thread.join()
            assert replayed.last_compaction is not None
            assert replayed.last_compaction.kind == REPLAY
            # the child's files are the in-process compaction's, byte for byte;
            # but a trending view's: its heap's layout depends on the order its
            # counts came in (a restored one's differs), its top() does not
            # (compared after the reopen below)
            replayed_files, inline_files = listed_files(base / "a"), listed_files(base / "b")
            for files in (replayed_files, inline_files):
                del files[TRENDING]
            assert replayed_files == inline_files
            replayed._check()
            continue
        apply(replayed, events(seed, i))
        apply(inline, events(seed, i))
        i += 1
    replayed._check()
    live = state(replayed)
    assert live == model(seed, ops)
    replayed.close()
    inline.close()
    check_files(base / "a")
    reopened = Ledger.open(base / "a", **opts)
    again = Ledger.open(base / "b", **opts)
    try:
        reopened._check()
        after, inline_after = state(reopened), state(again)
        # equal to the ledger compacted in-process, reopened, and to the model;
        # but a trending view's ties at its k-th place, which a restored heap
        # may break otherwise (as after an in-process compaction): its counts
        for one in (after, inline_after, live):
            one[TRENDING] = [count for _member, count in one[TRENDING]]
        assert after == inline_after == live
    finally:
        reopened.close()
        again.close()


def replay_ledger(path: Path, count: int) -> Ledger:
    """A ledger in replay mode with :func:`add_views` and the first
    ``count`` events of the seeded history."""
    ledger = Ledger.open(path, snapshot_mode="replay", compact_min_bytes=None, fsync="never")
    add_views(ledger)
    for i in range(count):
        apply(ledger, events(SEED, i))
    return ledger


def test_views_removed_added_and_registered_again_during_the_child(tmp_path: Path) -> None:
    ledger = replay_ledger(tmp_path, 120)
    thread = start_replay(ledger)
    ledger.remove_view("trend")  # gone: the child's files for it are not named
    ledger.remove_view("skip")  # registered again with other options
    ledger.add_view("skip", "board", order="asc")
    ledger.add_view("late", "board", where={"region": "us"})  # not in the job
    for i in range(120, 140):
        apply(ledger, events(SEED, i))
    thread.join()
    snapshots = ledger._files.manifest.config["snapshots"]
    assert "trend" not in snapshots
    assert snapshots["alltime"][0] == 120  # the child's
    assert snapshots["alltime"][1][0][1].startswith("r")
    assert snapshots["skip"][1][0][1].startswith("s")  # its own, made by add_view
    assert snapshots["late"][1][0][1].startswith("s")
    expected = {name: ledger[name].items() for name in ("skip", "late", "alltime")}
    ledger.close()
    check_files(tmp_path)
    reopened = Ledger.open(tmp_path, compact_min_bytes=None)
    try:
        reopened._check()
        assert {name: reopened[name].items() for name in expected} == expected
        assert "trend" not in reopened.views
    finally:
        reopened.close()


def test_a_failed_or_killed_child_leaves_the_old_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = replay_ledger(tmp_path, 80)
    before = dict(ledger._files.manifest.config["snapshots"])
    monkeypatch.setenv("RANKENGINE_CRASH_AT", "ledger_replay_child")  # the child's own kill
    with pytest.raises(ReplayCompactionError, match="killed by signal"):
        ledger.compact()
    assert ledger._files.manifest.config["snapshots"] == before
    check_files(tmp_path)  # no .tmp left
    for i in range(80, 100):
        apply(ledger, events(SEED, i))
    monkeypatch.delenv("RANKENGINE_CRASH_AT")
    assert ledger.compact() == ledger.last_seq == 100
    assert all(entry[0] == 100 for entry in ledger._files.manifest.config["snapshots"].values())
    ledger.close()
    check_files(tmp_path)
    reopened = Ledger.open(tmp_path, compact_min_bytes=None)
    try:
        reopened._check()
        assert state(reopened) == model(SEED, 100)
    finally:
        reopened.close()


def test_a_write_s_replayed_compaction_runs_on_a_thread_and_warns_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger.open(tmp_path, snapshot_mode="replay", compact_min_bytes=4_000, fsync="never")
    add_views(ledger)
    monkeypatch.setenv("RANKENGINE_CRASH_AT", "ledger_replay_child")
    with pytest.warns(RuntimeWarning, match="background compaction failed"):
        i = 0
        while ledger.last_compaction is None and i < 2_000:
            apply(ledger, events(SEED, i))
            i += 1
            if ledger._compactor is not None:
                ledger._compactor.join()
                break
    monkeypatch.delenv("RANKENGINE_CRASH_AT")
    assert ledger.last_compaction is None  # it failed: nothing named
    while ledger.last_compaction is None:  # the next crossing compacts again
        apply(ledger, events(SEED, i))
        i += 1
        compactor = ledger._compactor
        if compactor is not None:
            compactor.join()
    assert ledger.last_compaction.kind == REPLAY
    ledger.close()
    check_files(tmp_path)
    reopened = Ledger.open(tmp_path, compact_min_bytes=None)
    try:
        assert state(reopened) == model(SEED, i)
    finally:
        reopened.close()


#: The steps of the protocol a recorder is killed at (see compaction.py).
PARENT_STEPS = [
    "ledger_replay_switched",
    "ledger_replay_written",
    "ledger_replay_renamed",
    "ledger_replay_copied",
    "ledger_replay_named",
]
#: The log rotation's own steps after the switch (rankengine/durable/rotation.py):
#: under "everysec" too, where the records written into the new segment
#: before the kill were acknowledged and must all be there.
ROTATION_KILL_STEPS = [*ROTATION_STEPS, "rotate_manifest_rename", "after_rotate_manifest"]
KILLS = [(step, "always") for step in PARENT_STEPS] + [
    (step, fsync) for step in ROTATION_KILL_STEPS for fsync in ("always", "everysec")
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("step", "fsync"), KILLS)
def test_a_recorder_killed_at_each_step_loses_no_acknowledged_event(
    tmp_path: Path, step: str, fsync: str, mode: str
) -> None:
    directory = tmp_path / "ledger"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        RANKENGINE_CRASH_AT=step,
    )
    argv = [sys.executable, str(CHILD), str(directory), str(SEED), "3000", fsync, "6000"]
    child = AckedChild([*argv, *(["async"] if mode == "async" else []), "replay"], env)
    code = child.finish()
    assert code == -signal.SIGKILL, (code, child.lines[-3:])
    acked = 0
    for line in child.lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ack" and line.endswith("\n"):
            acked = int(parts[2])
    assert acked > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn tail is allowed (and reported)
        reopened = Ledger.open(directory, fsync="never", compact_min_bytes=None)
    try:
        check_files(directory)  # the .tmp and unnamed files removed by the open
        reopened._check()
        seq = reopened.last_seq
        assert acked <= seq <= acked + 1, (acked, seq)
        assert state(reopened) == _model_of_records(seq)
        # a compaction after the crash succeeds
        assert reopened.compact(kind=REPLAY) == seq
    finally:
        reopened.close()
    check_files(directory)


def _model_of_records(seq: int) -> dict[str, Any]:
    """The views after the first ``seq`` records of the child's history."""
    ledger = Ledger()
    add_views(ledger)
    for i in range(seq):
        apply(ledger, events(SEED, i))
    return state(ledger)


#: How long the gated child waits for the test at most: records held back
#: would wait this out and then be counted after the compaction.
GATE_S = 10


def test_async_records_are_acknowledged_while_a_replayed_compaction_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    real = compaction.run_replay

    def gated(job: Any) -> Any:
        gate.wait(GATE_S)  # (the test opens it; a held-back record waits this out)
        return real(job)

    monkeypatch.setattr(compaction, "run_replay", gated)
    target = 200

    async def main() -> tuple[int, int]:
        aledger = await AsyncLedger.open(
            tmp_path, fsync="always", compact_min_bytes=4_000, snapshot_mode="replay"
        )
        aledger.add_view("alltime")
        aledger.add_view("weekly", "periodic", calendar="weekly")
        during = i = 0
        started = False
        while during < target and i < 50_000:
            await aledger.arecord(f"m{i % 50}", 1, t_ms=1_800_000_000_000 + i)
            i += 1
            if aledger._compaction is not None:  # acknowledged while it runs
                started = True
                during += 1
            elif started:  # (it ended: the records were held back until then)
                break
        gate.set()
        await aledger.aclose()
        return during, i

    during, recorded = asyncio.run(main())
    assert during == target, (during, recorded)
    reopened = Ledger.open(tmp_path, compact_min_bytes=None)
    try:
        assert reopened.last_seq == recorded
        assert reopened.last_compaction is None
        reopened._check()
    finally:
        reopened.close()
    snapshots = read_manifest(str(tmp_path)).config["snapshots"]
    assert any(name.startswith("r") for entry in snapshots.values() for _k, name in entry[1])


def test_snapshot_mode_is_checked_and_chooses_the_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="snapshot_mode must be one of"):
        Ledger.open(tmp_path / "bad", snapshot_mode="fork")
    assert not (tmp_path / "bad").exists()  # refused before anything was made
    small = Ledger.open(tmp_path / "small", compact_min_bytes=None)
    small.add_view("alltime")
    small.record_many([(f"m{i}", 1) for i in range(AUTO_REPLAY_ROWS - 1)])
    assert small.compaction_kind() == IN_PROCESS  # "auto", below the threshold
    small.record("one more", 1)
    assert small.compaction_kind() == REPLAY
    monkeypatch.setattr(replayed, "REPLAY_AVAILABLE", False)  # no interpreter to start
    assert small.compaction_kind() == IN_PROCESS
    small.close()


def test_a_redis_view_compacts_in_process() -> None:
    views = {"alltime": View("alltime", "board", {}, Route.of())}
    assert compaction.kind_of("replay", views) == REPLAY
    # (a Redis view's shadow is attached to the live server: never replayed;
    # made here without a server, it is not attached)
    views["served"] = View(
        "served", "redis", {"url": "redis://127.0.0.1:1", "board": "b"}, Route.of()
    )
    assert compaction.kind_of("replay", views) == IN_PROCESS
    assert compaction.kind_of("auto", views) == IN_PROCESS


def test_without_retain_log_a_replay_drops_the_segments_its_snapshots_cover(
    tmp_path: Path,
) -> None:
    ledger = Ledger.open(
        tmp_path, snapshot_mode="replay", compact_min_bytes=None, fsync="never", retain_log=False
    )
    add_views(ledger)
    for i in range(60):
        apply(ledger, events(SEED, i))
    assert ledger.compact() == 60
    for i in range(60, 90):
        apply(ledger, events(SEED, i))
    assert ledger.compact() == 90
    assert [first for _name, first in ledger._files.manifest.segments] == [91]
    with pytest.raises(ValueError, match="kind must be"):
        ledger.compact(kind="fork")
    ledger.close()
    check_files(tmp_path)
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".seg")) == [
        name for name, _ in read_manifest(str(tmp_path)).segments
    ]
    reopened = Ledger.open(tmp_path, compact_min_bytes=None, retain_log=False)
    try:
        reopened._check()
        assert state(reopened) == model(SEED, 90)
    finally:
        reopened.close()


def test_the_child_gives_up_when_its_parent_is_gone(tmp_path: Path) -> None:
    ledger = replay_ledger(tmp_path, 30)
    with ledger._compact_lock, ledger._lock:
        switched = compaction.switch(ledger)
    assert switched is not None
    job = switched[0]
    # a parent other than the child's: as if the ledger's process had died
    done = subprocess.run(
        [sys.executable, "-m", replayed.REPLAY_MODULE],
        input=job.encode(os.getpid() + 1),  # (its parent is this process)
        capture_output=True,
        env=child_env(),
        check=False,
    )
    assert done.returncode == CHILD_ORPHANED, done.stderr[-300:]
    assert not any(
        name.endswith(".tmp")
        for view in job.config["views"]
        for name in os.listdir(job.view_dir(view))
    )
    ledger.close()


def _named_files_exist(path: Path) -> None:
    """Every file the MANIFEST on disk names is there, and a copy of the
    directory as it is now (what a kill leaves) reopens."""
    manifest = read_manifest(str(path))
    for view, entry in manifest.config["snapshots"].items():
        for _key, name in entry[1]:
            assert (path / VIEWS_DIR / view / name).exists(), (view, name)
    for name, _ in manifest.segments:
        assert (path / name).exists(), name


@pytest.mark.parametrize(
    ("retain", "between"), [(True, ""), (True, "add"), (False, ""), (False, "remove")]
)
def test_a_manifest_written_between_the_naming_and_its_write_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retain: bool, between: str
) -> None:
    """A view added once the naming let the lock go writes a later copy
    (it holds the naming): the naming's own copy, older, is not written
    over it.  The files the manifest on disk names stay until the
    naming's manifest is durable."""
    directory = tmp_path / "ledger"
    ledger = Ledger.open(
        directory,
        snapshot_mode="replay",
        compact_min_bytes=None,
        fsync="never",
        retain_log=retain,
    )
    add_views(ledger)
    ledger.add_view("extra", "board", where={"region": "eu"})
    for i in range(60):
        apply(ledger, events(SEED, i))
    ledger.compact()
    for i in range(60, 90):
        apply(ledger, events(SEED, i))
    files = ledger._files
    assert files is not None
    real_write = type(files).write_copy
    written: list[bool] = []
    kills: list[dict[str, Any]] = []

    def write_copy(self: Any, copy: Any, step: str) -> bool:
        _named_files_exist(directory)  # (nothing removed before the write)
        kill = tmp_path / f"kill{len(kills)}"
        shutil.copytree(directory, kill)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            again = Ledger.open(kill, compact_min_bytes=None, fsync="never")
        try:
            kills.append(state(again))
        finally:
            again.close()
        done = real_write(self, copy, step)
        written.append(done)
        return done

    monkeypatch.setattr(type(files), "write_copy", write_copy)
    calls = []

    def switched() -> None:
        calls.append(ledger.last_seq)
        if len(calls) == 2:  # the naming let the lock go: in memory only
            assert ledger._files is not None
            named = ledger._files.manifest.config["snapshots"]["alltime"]
            assert named[0] == 90 and named[1][0][1].startswith("r")
            on_disk = read_manifest(str(directory)).config["snapshots"]["alltime"]
            assert on_disk[0] == 60
            if between == "add":
                ledger.add_view("late", "board", where={"region": "us"})
            elif between == "remove":  # (a view added needs the log from seq 1)
                ledger.remove_view("extra")

    assert ledger.compact(kind=REPLAY, switched=switched) == 90
    assert calls == [90, 90]
    assert written == [not between]  # (the add_view's copy was later)
    on_disk = read_manifest(str(directory)).config
    assert ("late" in on_disk["views"]) is (between == "add")
    assert ("extra" in on_disk["views"]) is (between != "remove")
    assert on_disk["snapshots"]["alltime"][0] == 90
    assert on_disk["snapshots"]["alltime"][1][0][1].startswith("r")
    for i in range(90, 100):
        apply(ledger, events(SEED, i))
    expected = state(ledger)
    late = ledger["late" if between == "add" else "alltime"].items()
    ledger.close()
    check_files(directory)
    assert kills == [model(SEED, 90)]
    reopened = Ledger.open(directory, compact_min_bytes=None, retain_log=retain)
    try:
        reopened._check()
        assert state(reopened) == expected == model(SEED, 100)
        assert reopened["late" if between == "add" else "alltime"].items() == late
        assert ("extra" in reopened.views) is (between != "remove")
    finally:
        reopened.close()


def test_a_failed_naming_write_undoes_the_naming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The naming's manifest write fails: the in-memory naming is undone,
    the old snapshots stay named and on disk, the child's files go."""
    ledger = replay_ledger(tmp_path, 50)
    ledger.compact()
    for i in range(50, 70):
        apply(ledger, events(SEED, i))
    files = ledger._files
    assert files is not None
    before = read_manifest(str(tmp_path)).config["snapshots"]

    def fail(_self: Any, _copy: Any, _step: str) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(files), "write_copy", fail)
    with pytest.raises(OSError, match="No space"):
        ledger.compact(kind=REPLAY)
    monkeypatch.undo()
    assert files.manifest.config["snapshots"] == before
    check_files(tmp_path)
    for i in range(70, 80):
        apply(ledger, events(SEED, i))
    assert ledger.compact(kind=REPLAY) == 80
    ledger.close()
    check_files(tmp_path)
    with Ledger.open(tmp_path, compact_min_bytes=None) as reopened:
        assert state(reopened) == model(SEED, 80)


def test_async_records_go_on_while_the_naming_writes_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``AsyncLedger`` holds records back for the naming's hold of the
    lock only: they are acknowledged while its manifest is written."""
    writing, go = threading.Event(), threading.Event()
    real_write = LedgerFiles.write_copy

    def write_copy(self: Any, copy: Any, step: str) -> bool:
        writing.set()
        go.wait(GATE_S)  # (the test opens it; a held-back record waits this out)
        writing.clear()
        return real_write(self, copy, step)

    monkeypatch.setattr(LedgerFiles, "write_copy", write_copy)
    target = 30

    async def main() -> tuple[int, int]:
        aledger = await AsyncLedger.open(
            tmp_path, fsync="always", compact_min_bytes=4_000, snapshot_mode="replay"
        )
        aledger.add_view("alltime")
        i = during = 0
        while not writing.is_set() and i < 50_000:
            await aledger.arecord(f"m{i % 50}", 1, t_ms=1_800_000_000_000 + i)
            i += 1
        while during < target:
            await aledger.arecord(f"m{i % 50}", 1, t_ms=1_800_000_000_000 + i)
            i += 1
            if writing.is_set():  # acknowledged while the manifest waits
                during += 1
            else:
                break
        go.set()
        await aledger.aclose()
        return during, i

    during, recorded = asyncio.run(main())
    assert during == target, (during, recorded)
    with Ledger.open(tmp_path, compact_min_bytes=None) as reopened:
        assert reopened.last_seq == recorded
        reopened._check()
