"""A reopened ledger's clock is the clock it had when it was closed.

The ledger's clock (the latest event time recorded) drives its time views:
a window slides, a period closes and a decayed score is read by it.  A
reopen starts it from the snapshots' seq; it used to take it from the
first snapshot part of the last view loaded, and a view with no part (a
keyed view with no board yet) gave 0.  Now each view's entry in the
manifest keeps the clock at its snapshot.  Each test builds the same
ledger twice, closes and reopens one, and gives both the same next events:
the outcomes and every view must agree.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from rankengine import Ledger

T = 1_798_934_400_000  # 2027-01-03T00:00Z, a Sunday
HOUR = 3_600_000
HALF = HOUR // 2
MINUTE = 60_000
#: the clock once built: the last event's time
CLOCK = T + 5 * HOUR + HALF


def build(path: Path) -> Ledger:
    ledger = Ledger.open(path, fsync="never", compact_min_bytes=None, now=lambda: T)
    ledger.add_view("all", "board")
    ledger.add_view("hot", "decayed", half_life=3600.0)
    ledger.add_view("win", "window", calendar="hourly", buckets=3)
    ledger.add_view("daily", "periodic", calendar="daily", late="drop")
    ledger.add_view("region", "board", by="region")  # no board yet: no snapshot part
    for i in range(6):
        ledger.record(f"p{i % 3}", 1 + i, t_ms=T + i * HOUR + HALF)
    return ledger


def state(ledger: Ledger) -> Any:
    views = {}
    for name in ledger.views:
        view = ledger._views[name]
        parts = [
            (key, header, None if board is None else board.items())
            for key, (header, board) in view.export()
        ]
        views[name] = (view.seq, view.time_ms, repr(parts))
    return ledger.last_seq, ledger._time, views


def follow(ledger: Ledger) -> Any:
    """Events after the reopen, before the clock in its hour (a decayed
    score read at the clock), one routed to a new key."""
    done = [
        ledger.record("p0", 4, t_ms=T + 5 * HOUR + 10 * MINUTE),
        ledger.record("p1", 2, t_ms=T + 5 * HOUR + 20 * MINUTE, attrs={"region": "eu"}),
        ledger.record("p2", 1.5, op="set", t_ms=T + 5 * HOUR + 5 * MINUTE),
    ]
    reads = (
        ledger["hot"].items(),
        ledger["win"].board.items(),
        ledger["daily"].board().items(),
        sorted(ledger["region"]),
    )
    return [(d.seq, d.outcomes) for d in done], reads, state(ledger)


@pytest.mark.parametrize("compact", [True, False])
def test_a_reopen_keeps_the_clock(tmp_path: Path, compact: bool) -> None:
    live = build(tmp_path / "live")
    closed = build(tmp_path / "closed")
    if compact:  # (the views' snapshots at the last seq: nothing to replay)
        live.compact()
        closed.compact()
    assert state(closed) == state(live)
    assert live._time == CLOCK
    closed.close()
    reopened = Ledger.open(
        tmp_path / "closed", fsync="never", compact_min_bytes=None, now=lambda: T
    )
    try:
        assert reopened._time == live._time
        assert state(reopened) == state(live)
        assert follow(reopened) == follow(live)
        reopened._check()
    finally:
        reopened.close()
        live.close()


def test_a_forget_keeps_the_clock(tmp_path: Path) -> None:
    """``forget`` rebuilds the views from their snapshots and the log after
    them: the replay starts from the clock at the snapshots."""
    ledgers = [build(tmp_path / name) for name in ("plain", "forgot")]
    for ledger in ledgers:
        ledger.compact()
        ledger.record("zed", 9, t_ms=T + 5 * HOUR + MINUTE)  # before the clock
        ledger.record("p0", 1, t_ms=T + 5 * HOUR + 2 * MINUTE)
    ledgers[1].forget("zed")
    ledgers[0].close()
    plain = Ledger.open(tmp_path / "plain", fsync="never", compact_min_bytes=None, now=lambda: T)
    plain.forget("zed")  # (after a reopen too)
    try:
        assert state(ledgers[1]) == state(plain)
        assert plain._time == CLOCK
        assert follow(ledgers[1]) == follow(plain)
    finally:
        plain.close()
        ledgers[1].close()


def test_a_manifest_without_the_clock_still_opens(tmp_path: Path) -> None:
    """A directory written before the manifest kept the clock: the clock is
    the one the views' snapshot parts hold (their headers)."""
    build(tmp_path / "a").close()
    with Ledger.open(tmp_path / "a", fsync="never", compact_min_bytes=None) as ledger:
        ledger.compact()
        files = ledger._files
        assert files is not None
        for entry in files.manifest.config["snapshots"].values():
            assert entry[2] == CLOCK
            del entry[2]
        files.commit()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with Ledger.open(tmp_path / "b", fsync="never", compact_min_bytes=None) as ledger:
        assert ledger._time == CLOCK
        assert ledger["all"].items() == [("p2", 9), ("p1", 7), ("p0", 5)]
        ledger._check()
