"""A ledger's log rotation in two halves (LedgerFiles.switch, then
finish_rotation: the durable board's design, rankengine/durable/rotation.py).

A rotation is held at each of its steps by a hook; records go into the new
segment meanwhile, and the directory is copied as it is then: what a
process kill at that step leaves (the files as the page cache holds them).
The copy reopens with every record, the new segment adopted.  Real kills
at each step: tests/test_ledger_replay.py.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Ledger
from rankengine.durable import rotation
from rankengine.durable.manifest import read_manifest, segment_name, write_manifest
from rankengine.durable.records import LogError, RecoveryWarning
from rankengine.durable.verify import verify
from rankengine.ledger import compaction
from rankengine.ledger.aio import AsyncLedger
from rankengine.ledger.replayed import REPLAY

GATE_S = 30.0  # (a bound for a stuck test, never a measured time)
T0_MS = 1_800_000_000_000
#: the steps a rotation can be held at: its hooks' (before the manifest)
STEPS = list(rotation.ROTATION_STEPS)


def open_ledger(path: Path, **options: Any) -> Ledger:
    options.setdefault("compact_min_bytes", None)
    options.setdefault("snapshot_mode", REPLAY)
    return Ledger(path, **options)


def record(ledger: Ledger, i: int) -> None:
    ledger.record(f"m{i % 13}", i % 5 + 1, t_ms=T0_MS + i)


def model(n: int) -> list[tuple[Any, Any]]:
    """The alltime view after records 0 .. n - 1, in memory."""
    ledger = Ledger()
    ledger.add_view("alltime")
    for i in range(n):
        record(ledger, i)
    items: list[tuple[Any, Any]] = ledger.view("alltime").items()
    return items


class Held:
    """A hook holding the rotation at ``step`` until :meth:`release`, and
    calling ``at_step(running rotation)`` there first if given."""

    def __init__(self, step: str, at_step: Callable[[rotation.Rotation], None] | None = None):
        self.step, self.at_step = step, at_step
        self.reached, self.released = threading.Event(), threading.Event()
        self.rotation: rotation.Rotation | None = None

    def __call__(self, step: str, running: rotation.Rotation) -> None:
        if step != self.step:
            return
        self.rotation = running
        if self.at_step is not None:
            self.at_step(running)
        self.reached.set()
        assert self.released.wait(GATE_S)

    def release(self) -> None:
        self.released.set()


def compact_in_thread(ledger: Ledger, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            ledger.compact(kind=REPLAY)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def kill_copy(source: Path, target: Path) -> Path:
    """The directory as a process kill would leave it now."""
    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize("fsync", ["always", "everysec", "never"])
@pytest.mark.parametrize("step", STEPS)
def test_records_written_during_the_rotation_survive_a_kill_at_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, fsync: str
) -> None:
    directory = tmp_path / "ledger"
    ledger = open_ledger(directory, fsync=fsync)
    ledger.add_view("alltime")
    before, during = 40, 12
    for i in range(before):
        record(ledger, i)
    seq = ledger.last_seq
    held = Held(step)
    monkeypatch.setattr(rotation, "hooks", [held])
    errors: list[BaseException] = []
    compactor = compact_in_thread(ledger, errors)
    assert held.reached.wait(GATE_S), "the rotation never reached its step"
    # the lock is free: records go on, into the new segment, from threads
    # (under "always" each waits for the rotation before it is acknowledged)
    writers = [
        threading.Thread(target=record, args=(ledger, i)) for i in range(before, before + during)
    ]
    for writer in writers:
        writer.start()
        if fsync != "always":
            writer.join()
    deadline = threading.Event()
    while ledger.last_seq < seq + during and not deadline.wait(0.01):
        pass
    assert ledger.last_seq == seq + during
    group = ledger._files.group if ledger._files is not None else None
    if group is not None:
        assert group.durable <= seq  # nothing after s acknowledged yet
        if step != "after_segment_create":
            assert group.durable == seq  # records up to s once the old segment is synced
        assert all(writer.is_alive() for writer in writers)
    copy = kill_copy(directory, tmp_path / "killed")
    held.release()
    compactor.join()
    for writer in writers:
        writer.join()
    assert errors == []
    on_disk = read_manifest(str(directory)).segments
    assert on_disk[-1] == (segment_name(seq + 1), seq + 1)
    ledger.close()
    named = {name for name, _ in read_manifest(str(copy)).segments}
    assert segment_name(seq + 1) not in named  # the copy's manifest does not name it yet
    assert any("not in the manifest" in str(f) for f in verify(str(copy)).findings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # adopted, not set aside
        again = open_ledger(copy)
    try:
        assert again.last_seq == seq + during
        assert again.view("alltime").items() == model(before + during)
        assert f"adopted {segment_name(seq + 1)}" in again.recovery_notes[-1]
        again._check()
        record(again, before + during)
    finally:
        again.close()
    assert read_manifest(str(copy)).segments[-1] == (segment_name(seq + 1), seq + 1)
    assert verify(str(copy)).healthy
    with open_ledger(copy) as third:
        assert third.recovery_notes == []
        assert third.view("alltime").items() == model(before + during + 1)


@settings(
    max_examples=int(os.environ.get("RANKENGINE_ROTATION_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    before=st.integers(1, 60),
    during=st.integers(0, 20),
    step=st.sampled_from(STEPS),
    rotations=st.integers(1, 3),
)
def test_a_kill_during_any_rotation_keeps_every_record(
    tmp_path_factory: pytest.TempPathFactory, before: int, during: int, step: str, rotations: int
) -> None:
    """Against the in-memory model: several rotations, a kill (the copy)
    while the last one is held at ``step`` after ``during`` records went
    into its new segment."""
    root = tmp_path_factory.mktemp("rot")
    directory = root / "ledger"
    ledger = open_ledger(directory, fsync="never")
    ledger.add_view("alltime")
    n = 0
    for _ in range(rotations - 1):
        for _ in range(before):
            record(ledger, n)
            n += 1
        ledger.compact(kind=REPLAY)
    for _ in range(before):
        record(ledger, n)
        n += 1
    held = Held(step)
    rotation.hooks.append(held)
    try:
        errors: list[BaseException] = []
        compactor = compact_in_thread(ledger, errors)
        assert held.reached.wait(GATE_S)
        for _ in range(during):
            record(ledger, n)
            n += 1
        copy = kill_copy(directory, root / "killed")
        held.release()
        compactor.join()
    finally:
        rotation.hooks.remove(held)
    assert errors == []
    ledger.close()
    with open_ledger(copy) as again:
        assert again.last_seq == n
        assert again.view("alltime").items() == model(n)
        again._check()


@pytest.mark.parametrize("step", STEPS)
def test_a_failed_fsync_in_the_rotation_fails_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    directory = tmp_path / "ledger"
    ledger = open_ledger(directory, fsync="always")
    ledger.add_view("alltime")
    for i in range(30):
        record(ledger, i)
    seq = ledger.last_seq
    waiter_errors: list[BaseException] = []

    def write_then_fail(running: rotation.Rotation) -> None:
        # a record in the new segment, waiting for the rotation ...
        def waiter() -> None:
            try:
                record(ledger, 30)
            except BaseException as exc:
                waiter_errors.append(exc)

        thread = threading.Thread(target=waiter)
        thread.start()
        while ledger.last_seq == seq and thread.is_alive():
            thread.join(0.01)
        waiters.append(thread)
        raise OSError(5, "Input/output error")  # ... and the rotation's fsync fails

    waiters: list[threading.Thread] = []
    held = Held(step, write_then_fail)
    monkeypatch.setattr(rotation, "hooks", [held])
    with pytest.raises(OSError, match="Input/output"):
        ledger.compact(kind=REPLAY)
    waiters[0].join(GATE_S)
    assert len(waiter_errors) == 1 and isinstance(waiter_errors[0], LogError)
    with pytest.raises(LogError):
        ledger.flush()
    with pytest.raises(LogError, match="close and reopen"):
        record(ledger, 31)
    ledger.close()
    monkeypatch.setattr(rotation, "hooks", [])
    with open_ledger(directory) as again:  # the record appended is kept (adopted), none after
        assert again.last_seq == seq + 1
        assert again.view("alltime").items() == model(31)


def test_a_replayed_compaction_makes_no_fsync_under_the_ledger_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fsync of a replayed compaction is made without the ledger's
    lock (the old roll made five under it, the naming's manifest two), and
    the child starts only once the rotation is durable."""
    ledger = open_ledger(tmp_path / "ledger", fsync="always")
    ledger.add_view("alltime")
    for i in range(30):
        record(ledger, i)
    under_lock: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def watched(fd: int, real: Any = real, name: str = name) -> None:
            if ledger._lock._is_owned():  # type: ignore[attr-defined]
                under_lock.append(name)
            real(fd)

        monkeypatch.setattr(os, name, watched)
    real_run = compaction.run_replay
    seen: list[Any] = []

    def run(job: Any) -> Any:
        assert ledger._files is not None
        seen.append(ledger._files.rotation)
        return real_run(job)

    monkeypatch.setattr(compaction, "run_replay", run)
    ledger.compact(kind=REPLAY)
    monkeypatch.undo()
    assert under_lock == []
    assert seen == [None]  # the rotation was over before the child read the log
    ledger.close()


def test_a_manifest_written_during_the_rotation_names_the_segment_once_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "ledger"
    ledger = open_ledger(directory, fsync="everysec")
    ledger.add_view("alltime")
    for i in range(20):
        record(ledger, i)
    new = segment_name(ledger.last_seq + 1)
    named: dict[str, bool] = {}

    def add(view: str) -> Callable[[rotation.Rotation], None]:
        def at_step(_running: rotation.Rotation) -> None:
            ledger.add_view(view)  # (writes the manifest, under the ledger's lock)
            manifest = read_manifest(str(directory))
            named[view] = any(name == new for name, _ in manifest.segments)
            assert view in manifest.config["views"]

        return at_step

    early, late = (
        Held("after_segment_create", add("early")),
        Held("after_new_segment_sync", add("late")),
    )
    early.release()
    late.release()
    monkeypatch.setattr(rotation, "hooks", [early, late])
    ledger.compact(kind=REPLAY)
    assert named == {"early": False, "late": True}
    manifest = read_manifest(str(directory))
    assert manifest.segments[-1][0] == new and {"early", "late"} <= set(manifest.config["views"])
    ledger.close()
    with open_ledger(directory) as again:
        assert again.recovery_notes == []
        assert again.view("alltime").items() == model(20)


def _unnamed_segment(directory: Path, blank: bool) -> tuple[str, int]:
    """A ledger closed cleanly, then a segment the manifest does not name
    after its last one that does not continue the log (a gap)."""
    ledger = open_ledger(directory, fsync="never")
    ledger.add_view("alltime")
    for i in range(10):
        record(ledger, i)
    seq = ledger.last_seq
    files = ledger._files
    assert files is not None
    with ledger._lock:
        files.switch(seq + 2)  # (one seq skipped: it cannot follow the log)
    files.finish_rotation()
    if not blank:
        record(ledger, 10)
    ledger.close()
    manifest = directory / "MANIFEST"
    stale = read_manifest(str(directory))
    stale.segments = stale.segments[:-1]
    write_manifest(str(directory), stale)
    assert manifest.exists()
    return segment_name(seq + 2), seq


@pytest.mark.parametrize("blank", [True, False])
def test_an_unnamed_segment_that_does_not_follow_the_log_is_not_adopted(
    tmp_path: Path, blank: bool
) -> None:
    directory = tmp_path / "ledger"
    name, seq = _unnamed_segment(directory, blank)
    if blank:
        again = open_ledger(directory)
        assert again.recovery_notes[-1] == f"removed {name} (a new segment never used)"
    else:
        with pytest.warns(RecoveryWarning, match="orphan"):
            again = open_ledger(directory)
        assert (directory / (name + ".orphan")).exists()
    with again:
        assert again.last_seq == seq
        assert not (directory / name).exists()
        assert again.view("alltime").items() == model(10)


def test_a_rotation_after_a_forget_writes_the_forget_s_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rotation writes the manifest as on disk plus its segment: after
    a forget's commit that is the forget's (here the child then fails, so
    no later naming writes the manifest again)."""
    directory = tmp_path / "ledger"
    ledger = open_ledger(directory, fsync="never")
    ledger.add_view("alltime")
    for i in range(20):
        record(ledger, i)
    ledger.compact(kind=REPLAY)  # (a snapshot holding m0, which the forget rewrites)
    for i in range(20, 30):
        record(ledger, i)
    ledger.forget("m0")
    for i in range(30, 35):
        record(ledger, i)  # (m5, m6 ...: the views' snapshots now lag the log)

    def fail(_job: Any) -> Any:
        raise OSError(5, "the child failed")

    monkeypatch.setattr(compaction, "run_replay", fail)
    with pytest.raises(OSError, match="the child failed"):
        ledger.compact(kind=REPLAY)
    expected = ledger.view("alltime").items()
    assert "m0" not in dict(expected)
    ledger.close()
    with open_ledger(directory) as again:
        assert again.view("alltime").items() == expected
        assert again.recovery_notes == []


def test_a_failed_rotation_fails_the_awaits_of_an_async_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``arecord`` whose record went into the new segment raises once
    the rotation fails, and so does every later one."""
    go = threading.Event()

    def fail(step: str, _running: rotation.Rotation) -> None:
        if step == "after_old_segment_sync":
            assert go.wait(GATE_S)
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(rotation, "hooks", [fail])

    async def main() -> list[BaseException | None]:
        aledger = await AsyncLedger.open(
            tmp_path, fsync="always", compact_min_bytes=None, snapshot_mode=REPLAY
        )
        aledger.add_view("alltime")
        for i in range(20):
            await aledger.arecord(f"m{i % 7}", 1, t_ms=T0_MS + i)
        seq = aledger.ledger.last_seq
        compacting = asyncio.ensure_future(asyncio.to_thread(aledger.ledger.compact, kind=REPLAY))
        while aledger.ledger._files is None or aledger.ledger._files.rotation is None:
            await asyncio.sleep(0.001)
        during = asyncio.ensure_future(aledger.arecord("late", 1, t_ms=T0_MS + 99))
        while aledger.ledger.last_seq == seq:
            await asyncio.sleep(0.001)
        go.set()
        outcomes: list[BaseException | None] = []
        for future in (compacting, during):
            try:
                await future
                outcomes.append(None)
            except BaseException as exc:
                outcomes.append(exc)
        try:
            await aledger.arecord("later", 1, t_ms=T0_MS + 100)
            outcomes.append(None)
        except BaseException as exc:
            outcomes.append(exc)
        await aledger.aclose()
        return outcomes

    compacted, during, later = asyncio.run(main())
    assert isinstance(compacted, OSError)
    assert isinstance(during, LogError), during
    assert isinstance(later, LogError), later
    monkeypatch.setattr(rotation, "hooks", [])
    with open_ledger(tmp_path) as again:
        assert again.last_seq == 21  # (the record was appended: the open adopts it)
