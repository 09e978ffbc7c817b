"""The command-line tools on a ledger: replay, verify, repair, salvage.

``replay`` rebuilds a ledger's views from its events (all, or those named
by ``--view``, up to ``--until``), read only.  ``verify``, ``repair`` and
``salvage`` meet the three kinds of damage -- a damaged record mid-log, a
torn tail, a damaged view snapshot -- and each does the right thing (the
ledger then opens with every view at the same seq, each equal to a
ledger fed the events kept) or refuses by name, changing nothing.  The
expected views come from an in-memory ledger fed the same events.
"""

from __future__ import annotations

import glob
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine import Ledger, open_board
from rankengine.cli.main import main
from rankengine.durable.records import LogError, RecoveryWarning, TornTailWarning
from rankengine.ledger.migrate import migrate

MONDAY_MS = 1_799_020_800_000
EVENTS = 400
SNAPSHOT_AT = 200


def views(ledger: Ledger) -> None:
    ledger.add_view("alltime")
    ledger.add_view("weekly", "periodic", calendar="weekly")
    ledger.add_view("region", by="region")


def event(i: int) -> dict[str, Any]:
    return {
        "member": f"p{i % 7}",
        "value": i % 5 + 1,
        "t_ms": MONDAY_MS + i * 60_000,
        "attrs": {"region": "eu" if i % 3 else "us"},
    }


def feed(ledger: Ledger, first: int, last: int) -> None:
    for i in range(first, last + 1):
        e = event(i)
        ledger.record(e["member"], e["value"], t_ms=e["t_ms"], attrs=e["attrs"])


def state(ledger: Ledger) -> Any:
    return (
        ledger["alltime"].items(),
        ledger["weekly"].items(),
        {key: board.items() for key, board in ledger["region"].items()},
    )


def expected(events: int) -> Any:
    ledger = Ledger()
    views(ledger)
    feed(ledger, 1, events)
    return state(ledger)


def build(path: Path) -> None:
    """A ledger of EVENTS events, its views snapshotted at SNAPSHOT_AT."""
    with Ledger.open(path, fsync="never", compact_min_bytes=None) as ledger:
        views(ledger)
        feed(ledger, 1, SNAPSHOT_AT)
        ledger.compact()
        feed(ledger, SNAPSHOT_AT + 1, EVENTS)


def opened_state(path: Path) -> Any:
    with Ledger.open(path) as ledger:
        ledger._check()  # every view at the ledger's seq
        return ledger.last_seq, state(ledger)


def damage(path: str, at: float) -> None:
    data = bytearray(Path(path).read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    Path(path).write_bytes(bytes(data))


def segments(path: Path) -> list[str]:
    return sorted(glob.glob(str(path / "log-*.seg")))


def tree(path: Path) -> dict[str, bytes]:
    out = {}
    for directory, _, names in os.walk(path):
        for name in names:
            if name != "LOCK":
                full = Path(directory) / name
                out[str(full.relative_to(path))] = full.read_bytes()
    return out


# ----------------------------------------------------------------------
# replay
# ----------------------------------------------------------------------
def test_replay_rebuilds_every_view_from_the_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path)
    before = tree(tmp_path)
    assert main(["replay", str(tmp_path), "--top", "2"]) == 0
    out = capsys.readouterr().out
    for header in ("view alltime (board)", "view weekly (periodic)", "view region [eu]"):
        assert f"== {header}" in out
    assert main(["replay", str(tmp_path), "--view", "alltime", "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["member"], r["score"]) for r in rows] == expected(EVENTS)[0]
    until = ["replay", str(tmp_path), "--view", "alltime", "--until", "123", "--format", "json"]
    assert main(until) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["member"], r["score"]) for r in rows] == expected(123)[0]
    assert tree(tmp_path) == before  # read only


def test_replay_refuses_what_it_cannot_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path / "l")
    assert main(["replay", str(tmp_path / "l"), "--view", "nope"]) == 1
    assert "no view 'nope'" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "l"), "--format", "csv"]) == 1
    assert "--format csv prints one" in capsys.readouterr().err
    with open_board(tmp_path / "m", fsync="never") as board:
        board.set("ann", 1)
    migrate(tmp_path / "m")
    assert main(["replay", str(tmp_path / "m")]) == 1
    assert "was migrated from a durable board" in capsys.readouterr().err


# ----------------------------------------------------------------------
# verify, repair, salvage
# ----------------------------------------------------------------------
def test_a_damaged_record_mid_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(tmp_path)
    damage(segments(tmp_path)[-1], 0.5)  # after the views' snapshots
    assert main(["verify", str(tmp_path)]) == 1
    assert "DAMAGE" in capsys.readouterr().out
    with pytest.raises(LogError):
        Ledger.open(tmp_path)
    before = tree(tmp_path)
    assert main(["salvage", str(tmp_path)]) == 1
    assert "holds a ledger: salvage replays" in capsys.readouterr().err
    assert tree(tmp_path) == before
    assert main(["repair", str(tmp_path)]) == 0
    seq, got = opened_state(tmp_path)
    assert SNAPSHOT_AT < seq < EVENTS and got == expected(seq)
    assert main(["verify", str(tmp_path)]) == 0


def test_a_damaged_record_before_the_view_snapshots(tmp_path: Path) -> None:
    build(tmp_path)
    damage(segments(tmp_path)[0], 0.5)  # the views' snapshots are of a later seq
    assert main(["repair", str(tmp_path)]) == 0
    (backup,) = tmp_path.glob("repair-*")
    set_aside = {p.parent.name for p in backup.glob("views/*/*.snap")}
    assert set_aside == {"alltime", "weekly", "region"}  # set aside, not deleted
    seq, got = opened_state(tmp_path)  # the views rebuilt from what the log kept
    assert 0 < seq < SNAPSHOT_AT and got == expected(seq)


def test_a_torn_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(tmp_path)
    last = segments(tmp_path)[-1]
    os.truncate(last, os.path.getsize(last) - 5)
    assert main(["verify", str(tmp_path)]) == 3
    assert "TORN" in capsys.readouterr().out
    assert main(["repair", str(tmp_path)]) == 0
    seq, got = opened_state(tmp_path)
    assert seq == EVENTS - 1 and got == expected(seq)


def test_a_torn_tail_is_cut_on_open_too(tmp_path: Path) -> None:
    build(tmp_path)
    last = segments(tmp_path)[-1]
    os.truncate(last, os.path.getsize(last) - 5)
    with pytest.warns(TornTailWarning):
        seq, got = opened_state(tmp_path)
    assert seq == EVENTS - 1 and got == expected(seq)


def test_a_damaged_view_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(tmp_path)
    (snap,) = (tmp_path / "views" / "alltime").glob("*.snap")
    damage(str(snap), 0.9)
    assert main(["verify", str(tmp_path)]) == 3
    assert "VIEW REBUILD: 1 view(s)" in capsys.readouterr().out
    assert main(["repair", str(tmp_path)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seq, got = opened_state(tmp_path)
    assert any(issubclass(w.category, RecoveryWarning) for w in caught)
    assert seq == EVENTS and got == expected(EVENTS)


def test_a_damaged_snapshot_of_a_migrated_view_is_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_board(tmp_path, fsync="never") as board:
        board.set_many({"ann": 1, "bob": 2})
    migrate(tmp_path)
    (snap,) = (tmp_path / "views" / "board").glob("*.snap")
    damage(str(snap), 0.9)
    assert main(["verify", str(tmp_path)]) == 1
    assert "migrated view(s) 'board'" in capsys.readouterr().out
    with pytest.raises(LogError, match="migrated from a durable board"):
        Ledger.open(tmp_path)


def test_repair_refuses_to_cut_a_log_before_a_migrated_snapshot(tmp_path: Path) -> None:
    with open_board(tmp_path, fsync="never") as board:
        board.set_many({"ann": 1, "bob": 2})
    migrate(tmp_path)
    with Ledger.open(tmp_path, fsync="never", compact_min_bytes=None) as ledger:
        for i in range(50):
            ledger.record(f"p{i}", 1)
        ledger.compact()
    damage(segments(tmp_path)[0], 0.5)
    before = tree(tmp_path)
    assert main(["repair", str(tmp_path)]) == 1
    assert tree(tmp_path) == before
