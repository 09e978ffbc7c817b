"""The seal, the high-water marks and salvage (see rankengine.durable.marks
and rankengine.durable.salvage): what they record, how a loss is reported,
and that SIGKILL during a seal, a checkpoint or a salvage loses nothing
acknowledged."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine import Leaderboard
from rankengine.cli.main import main
from rankengine.durable.board import rebuild
from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.manifest import (
    MANIFEST_MAGIC,
    Manifest,
    read_manifest,
    segment_name,
)
from rankengine.durable.marks import AcknowledgedLossError, high_water
from rankengine.durable.records import PREFIX_BYTES, CorruptionError, frame, pack, write_prefix
from rankengine.durable.repair import MARKS_NOTE, repair
from rankengine.durable.salvage import JOURNAL_NAME, apply, find
from rankengine.durable.verify import verify
from rankengine.timed.periodic import PeriodicLeaderboard

sys.path.insert(0, str(Path(__file__).parent))
from seal_child import SealChild, expected_board

ROOT = Path(__file__).resolve().parent.parent


def segment_of(directory: Path) -> Path:
    return sorted(directory.glob("log-*.seg"))[-1]


def offsets(segment: Path) -> list[tuple[int, int, int]]:
    """``(seq, start, end)`` of every record."""
    with SegmentReader(str(segment)) as reader:
        return [(event.seq, reader.at, reader.end) for event in reader.events()]


def fingerprint(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` and a hash of its bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def state(board: Leaderboard) -> tuple[Any, ...]:
    items = board.items()
    return items, [board.meta(m) for m, _ in items]


# ----------------------------------------------------------------------
# What the marks record
# ----------------------------------------------------------------------
def test_close_seals_the_log_once(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="always") as board:
        for i in range(9):
            board.incr(f"p{i % 3}", i)
    manifest = read_manifest(str(tmp_path))
    segment = segment_of(tmp_path)
    assert manifest.sealed and manifest.durable_seq == 9
    assert manifest.ends == {segment.name: (9, segment.stat().st_size)}
    assert high_water(manifest)[0] == 9
    generation = manifest.generation
    Leaderboard.open(tmp_path).close()  # no write since the seal: nothing to write
    assert read_manifest(str(tmp_path)).generation == generation
    with Leaderboard.open(tmp_path) as board:
        board.incr("p0", 1)
    again = read_manifest(str(tmp_path))
    assert (again.durable_seq, again.ends[segment.name]) == (10, (10, segment.stat().st_size))


def test_a_new_segment_records_the_end_of_the_previous_one(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="never", retain_log=True) as board:
        for i in range(5):
            board.set(f"p{i}", i)
        first = segment_of(tmp_path)
        size = first.stat().st_size  # (the reserved zeros are given back first)
        board.compact()
        manifest = read_manifest(str(tmp_path))
        assert manifest.ends[first.name][0] == 5
        assert manifest.ends[first.name][1] == offsets(first)[-1][2] <= size
        assert manifest.durable_seq == 5 and not manifest.sealed
        board.set("p9", 9)
        board.compact()  # a snapshot in the same segment: still a mark
        assert read_manifest(str(tmp_path)).durable_seq == 6


def test_an_everysec_board_records_a_high_water_checkpoint(tmp_path: Path) -> None:
    board = Leaderboard.open(tmp_path, fsync="everysec")
    try:
        board._checkpoints.interval = 0.0  # type: ignore[attr-defined]
        for i in range(7):
            board.set(f"p{i}", i)
        deadline = time.monotonic() + 30  # the fsync thread wakes once a second
        while read_manifest(str(tmp_path)).durable_seq < 7 and time.monotonic() < deadline:
            time.sleep(0.05)
        manifest = read_manifest(str(tmp_path))
        assert manifest.durable_seq == 7 and not manifest.sealed
    finally:
        board.close()  # type: ignore[attr-defined]


def test_an_old_format_1_directory_still_opens_and_is_sealed_on_close(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="never") as board:
        board.set("ann", 3)
    config = read_manifest(str(tmp_path)).config
    old = {
        "format": 1,
        "generation": 4,
        "written_ms": 0,
        "config": config,
        "snapshots": [],
        "segments": [[segment_name(1), 1]],
    }
    (tmp_path / "MANIFEST").write_bytes(write_prefix(MANIFEST_MAGIC) + frame(pack(old)))
    manifest = read_manifest(str(tmp_path))
    assert (manifest.durable_seq, manifest.sealed, manifest.ends) == (0, False, {})
    assert verify(str(tmp_path)).healthy
    with Leaderboard.open(tmp_path) as board:
        assert board.items() == [("ann", 3)]
    assert read_manifest(str(tmp_path)).sealed


@pytest.mark.parametrize(
    ("marks", "reason"),
    [
        ([], "marks are not a map"),
        ({"durable_seq": -1, "sealed": False, "ends": []}, "no valid durable_seq"),
        ({"durable_seq": 1, "sealed": 1, "ends": []}, "no valid durable_seq"),
        ({"durable_seq": 1, "sealed": True, "ends": {}}, "ends are not a list"),
        ({"durable_seq": 1, "sealed": True, "ends": [["x", 1]]}, "ends are malformed"),
    ],
)
def test_damaged_marks_are_reported(tmp_path: Path, marks: Any, reason: str) -> None:
    value = Manifest({"order": "desc"}, [], [(segment_name(1), 1)]).to_map()
    value["marks"] = marks
    (tmp_path / "MANIFEST").write_bytes(write_prefix(MANIFEST_MAGIC) + frame(pack(value)))
    with pytest.raises(CorruptionError, match=reason) as caught:
        read_manifest(str(tmp_path))
    assert caught.value.offset == PREFIX_BYTES


# ----------------------------------------------------------------------
# A loss is damage; repair lowers the marks and keeps the old ones
# ----------------------------------------------------------------------
def test_a_cut_sealed_log_refuses_to_open_and_says_what_to_run(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="always") as board:
        for i in range(20):
            board.incr(f"p{i % 4}", 1)
    segment = segment_of(tmp_path)
    segment.write_bytes(segment.read_bytes()[: offsets(segment)[11][2]])  # seq 1..12 kept
    with pytest.raises(AcknowledgedLossError) as caught:
        Leaderboard.open(tmp_path)
    message = str(caught.value)
    assert "8 acknowledged records missing after seq 12 (seq 13..20)" in message
    assert "closed cleanly at seq 20" in message and "Nothing was changed" in message
    assert "rankengine verify DIR" in message and "rankengine salvage DIR" in message
    assert isinstance(caught.value, CorruptionError)
    assert main(["verify", str(tmp_path)]) == 1
    result = repair(str(tmp_path))
    assert any("lower the MANIFEST's marks from seq 20 to seq 12" in a for a in result.actions)
    assert result.backup is not None
    note = json.loads((Path(result.backup) / MARKS_NOTE).read_text())
    assert (note["mark_seq"], note["kept_seq"]) == (20, 12)
    assert result.after is not None and result.after.healthy
    with Leaderboard.open(tmp_path) as board:
        assert board.last_seq == 12 and sum(s for _, s in board.items()) == 12
    plan = find(str(tmp_path))
    assert (plan.kept_seq, plan.mark_seq, plan.events, plan.lost) == (12, 20, [], [(13, 20)])


def test_a_gap_between_segments_is_reported_with_its_count(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="never", retain_log=True) as board:
        for i in range(10):
            board.set(f"p{i}", i)
        board.compact()
        board.set("late", 1)
    first = sorted(tmp_path.glob("log-*.seg"))[0]
    first.write_bytes(first.read_bytes()[: offsets(first)[5][2]])  # seq 1..6 left
    with pytest.raises(AcknowledgedLossError, match=r"4 acknowledged records missing after seq 6"):
        rebuild(tmp_path, from_log=True)


# ----------------------------------------------------------------------
# Salvage
# ----------------------------------------------------------------------
def damaged_board(directory: Path, flip: int = 10) -> list[Any]:
    """A sealed board of 30 increments with record ``flip + 1`` damaged."""
    with Leaderboard.open(directory, fsync="never") as board:
        for i in range(30):
            board.incr(f"p{i % 7}", i)
            if i == 25:
                board.set("late", 1, meta={"why": "after the damage"})
        items = board.items()
    segment = segment_of(directory)
    data = bytearray(segment.read_bytes())
    data[offsets(segment)[flip][1] + 14] ^= 0xFF
    segment.write_bytes(bytes(data))
    return items


def test_salvage_shows_without_changing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged_board(tmp_path)
    before = fingerprint(tmp_path)
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "after it 20 intact-looking records (seq 12..31" in out
    assert "21 acknowledged records missing after seq 10" in out
    assert main(["salvage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "the board's log is consistent up to seq 10; its marks say seq 31" in out
    assert "found 20 records past it: seq 12..31" in out
    assert "lost: seq 11 (1 record): no copy was found" in out
    assert "nothing was changed" in out and "--apply" in out
    assert fingerprint(tmp_path) == before


def test_salvage_apply_repairs_and_replays_after_the_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = damaged_board(tmp_path)
    assert main(["salvage", str(tmp_path), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "repair: cut log-00000000000000000001.seg at offset" in out
    assert "replayed 20 records as seq 11..30" in out
    with Leaderboard.open(tmp_path) as board:
        board._check()
        # the lost record (seq 11, an increment of p3) is overwritten by
        # later records' absolute scores: every score is exact again
        assert board.items() == items and board.meta("late") == {"why": "after the damage"}
        assert board.last_seq == 30
    (report,) = tmp_path.glob("salvage-*.json")
    saved = json.loads(report.read_text())
    assert saved["lost"] == [[11, 11]] and saved["new_seqs"] == [11, 30]
    assert [seq for seq, _ in saved["replayed"]] == list(range(12, 32))
    assert not (tmp_path / JOURNAL_NAME).exists()
    assert verify(str(tmp_path)).healthy
    # a second salvage finds nothing new: the records it replayed are named in its report
    plan = find(str(tmp_path))
    assert (plan.kept_seq, plan.events, plan.lost) == (30, [], [])
    assert main(["salvage", str(tmp_path), "--apply"]) == 0
    assert "nothing to replay" in capsys.readouterr().out
    assert len(list(tmp_path.glob("salvage-*.json"))) == 1


def test_salvage_names_the_members_that_may_not_be_exact(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path, fsync="never") as board:
        board.set_many({"ann": 1, "bob": 1, "cid": 1})
        board.incr("ann", 5)  # seq 2: damaged below, lost
        board.incr("bob", 2)  # seq 3: found, bob's last change
    segment = segment_of(tmp_path)
    data = bytearray(segment.read_bytes())
    data[offsets(segment)[1][1] + 14] ^= 0xFF
    segment.write_bytes(bytes(data))
    plan = find(str(tmp_path))
    assert plan.lost == [(2, 2)] and [e.seq for e in plan.events] == [3]
    assert plan.after is not None and dict(plan.after.items()) == {"ann": 1, "bob": 3, "cid": 1}
    assert sorted(plan.inexact) == ["ann", "cid"]  # bob's score is exact as of seq 3
    assert any("2 may not hold their exact score" in line for line in plan.lines())


def test_salvage_reads_a_backup_directory_given_with_from(tmp_path: Path) -> None:
    board_dir, backup = tmp_path / "board", tmp_path / "elsewhere"
    items = damaged_board(board_dir)
    repair(str(board_dir), backup_dir=str(backup))
    assert find(str(board_dir)).events == []
    plan = find(str(board_dir), extra=[str(backup)])
    assert [e.seq for e in plan.events] == list(range(12, 32))
    apply(str(board_dir), extra=[str(backup)])
    assert rebuild(board_dir).items() == items


# ----------------------------------------------------------------------
# SIGKILL during a seal, a checkpoint, a salvage
# ----------------------------------------------------------------------
@pytest.mark.parametrize("step", ["seal_manifest_rename", "after_seal_manifest"])
def test_sigkill_during_the_seal_loses_nothing(tmp_path: Path, step: str) -> None:
    child = SealChild(tmp_path, "close", 25, crash_at=step)
    assert child.finish() == -signal.SIGKILL, child.lines[-2:]
    assert child.acked() == 25
    assert read_manifest(str(tmp_path)).sealed == (step == "after_seal_manifest")
    report = verify(str(tmp_path))
    assert report.healthy, [str(f) for f in report.findings]
    with Leaderboard.open(tmp_path) as board:
        assert state(board) == state(expected_board(25))
    assert read_manifest(str(tmp_path)).sealed


@pytest.mark.parametrize("step", ["checkpoint_manifest_rename", "after_checkpoint_manifest"])
def test_sigkill_during_a_checkpoint_loses_nothing(tmp_path: Path, step: str) -> None:
    child = SealChild(tmp_path, "checkpoint", 15, 5, crash_at=step)
    assert child.finish() == -signal.SIGKILL, child.lines[-2:]
    # the checkpoint runs on the fsync thread once a second: on a loaded
    # machine it may come before the 15th write, or the writing thread may see
    # its manifest and go on for a write or two before the kill lands
    acked = child.acked()
    assert acked <= 20, child.lines[-3:]
    durable_seq = read_manifest(str(tmp_path)).durable_seq
    if step.startswith("after"):
        assert 0 < durable_seq <= acked  # the mark never claims more than was written
    else:
        assert durable_seq == 0  # the checkpoint's manifest never replaced the old one
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn tail, no recovery warning
        board = Leaderboard.open(tmp_path)
    with board:
        assert state(board) == state(expected_board(acked))


def run_salvage(directory: Path, crash_at: str | None = None) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RANKENGINE_CRASH_AT", None)
    if crash_at:
        env["RANKENGINE_CRASH_AT"] = crash_at
    argv = [sys.executable, "-m", "rankengine", "salvage", str(directory), "--apply"]
    return subprocess.run(argv, env=env, capture_output=True, timeout=120, check=False).returncode


@pytest.mark.parametrize(
    "step", ["salvage_journal_rename", "salvage_record", "salvage_report_rename"]
)
def test_sigkill_during_a_salvage_then_a_rerun_finishes_it(tmp_path: Path, step: str) -> None:
    reference, directory = tmp_path / "reference", tmp_path / "board"
    items = damaged_board(reference, flip=20)
    shutil.copytree(reference, directory)
    assert run_salvage(reference) == 0
    assert run_salvage(directory, step) == -signal.SIGKILL
    # killed: the board opens (the repair before the replay is done) and
    # holds every record before the damage
    with Leaderboard.open(directory) as board:
        assert board.last_seq >= 20
        assert state(rebuild(directory, until_seq=20)) == state(rebuild(reference, until_seq=20))
    assert run_salvage(directory) == 0
    assert not (directory / JOURNAL_NAME).exists()
    with Leaderboard.open(directory) as board, Leaderboard.open(reference) as done:
        assert state(board) == state(done) and board.last_seq == done.last_seq
        assert board.items() == items
    assert verify(str(directory)).healthy
    assert find(str(directory)).events == []


def test_verify_mentions_records_a_repair_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged_board(tmp_path)
    repair(str(tmp_path))
    capsys.readouterr()
    assert main(["verify", str(tmp_path)]) == 0  # the board itself is healthy again
    out = capsys.readouterr().out
    assert "SALVAGEABLE: 20 records set aside by a repair are not on the board (seq 12..31" in out
    apply(str(tmp_path))
    assert main(["verify", str(tmp_path)]) == 0
    assert "SALVAGEABLE" not in capsys.readouterr().out


def test_salvage_names_a_period_directory_and_refuses_a_missing_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = {"clock": lambda: 1_780_000_000.0}
    with PeriodicLeaderboard.open(tmp_path, "daily", fsync="never", **clock) as board:
        board.incr("ann", 1)
        (period,) = board.periods()
    assert main(["salvage", str(tmp_path)]) == 2
    assert f"periods/{period.name}" in capsys.readouterr().err
    period_dir = str(tmp_path / "periods" / period.name)
    with pytest.raises(SystemExit) as exited:  # (argparse's own exit)
        main(["salvage", period_dir, "--from", str(tmp_path / "nope")])
    assert exited.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["salvage", period_dir]) == 0
    assert "nothing to replay; nothing was changed" in capsys.readouterr().out


def test_salvage_does_not_replay_records_the_board_has_written_over(tmp_path: Path) -> None:
    damaged_board(tmp_path)
    repair(str(tmp_path))  # keeps seq 1..10; the application then goes on writing
    with Leaderboard.open(tmp_path) as board:
        for i in range(25):
            board.set(f"new{i}", i)
        after = board.items()
    plan = find(str(tmp_path))
    assert plan.events == [] and sorted(set(plan.overtaken)) == list(range(12, 32))
    assert any(
        "are not replayed: the board was written to after that repair" in line
        for line in plan.lines()
    )
    apply(str(tmp_path))
    assert rebuild(tmp_path).items() == after
