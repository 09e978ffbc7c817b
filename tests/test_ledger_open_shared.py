"""Views whose snapshots hold the same rows share what a ledger's open
decodes (rankengine.durable.shared_chunks.SharedChunks, Snapshot.same_rows and
the ledger's _restored_board): each identical chunk is decoded once, and a
board whose every chunk matches an earlier one copies its member map.  The
boards stay independent, and the open gives what it gave without sharing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rankengine import Ledger
from rankengine.durable import snapshot
from rankengine.durable.shared_chunks import SharedChunks

T = 1_798_934_400_000  # 2027-01-03T00:00Z, a Sunday


def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots of 5 rows per chunk, so that a few members make several."""
    monkeypatch.setattr(snapshot, "SNAPSHOT_CHUNK_ROWS", 5)


def views(ledger: Ledger) -> None:
    ledger.add_view("all")
    ledger.add_view("eu", where={"region": "eu"})
    ledger.add_view("weekly", "periodic", calendar="weekly")
    ledger.add_view("asc", order="asc")


def states(ledger: Ledger) -> dict[str, Any]:
    ledger._check()
    out: dict[str, Any] = {}
    for name in ("all", "eu", "asc"):
        board = ledger[name]
        out[name] = (board.items(), [board.meta(m) for m, _ in board.items()], board.clock)
    weekly = ledger["weekly"]
    out["weekly"] = [(p.name, weekly.board(p).items()) for p in weekly.periods()]
    return out


def test_views_with_the_same_rows_share_them_and_stay_independent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_chunks(monkeypatch)
    with Ledger.open(tmp_path) as ledger:
        views(ledger)
        for i in range(23):  # only EU events: "all" and "eu" hold the same rows
            ledger.record(f"p{i % 17}", (i * 7) % 5, t_ms=T + i, attrs={"region": "eu"})
        ledger.compact()
        expected = states(ledger)
    with Ledger.open(tmp_path) as again:
        assert states(again) == expected
        alltime, eu, asc = again["all"], again["eu"], again["asc"]
        assert alltime._primary == eu._primary
        assert alltime._primary is not eu._primary
        # the member strings were decoded once, for both
        assert all(a is b for a, b in zip(alltime._primary, eu._primary, strict=True))
        # an ascending board holds them in another order: decoded on its own
        assert not any(a is b for a, b in zip(alltime._primary, asc._primary, strict=True))
        again.record("p1", 100, t_ms=T + 50, attrs={"region": "us"})
        again.record("zed", 3, t_ms=T + 51, attrs={"region": "us"})
        assert "zed" in alltime and "zed" not in eu
        assert eu.items() == expected["eu"][0]
        again._check()
        expected = states(again)
    with Ledger.open(tmp_path) as third:
        assert states(third) == expected


def test_rows_that_differ_in_one_chunk_share_the_others_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One member more, in the middle: the chunks before it are shared, the board
    is built from its own columns (no map copied), and both are right."""
    small_chunks(monkeypatch)
    with Ledger.open(tmp_path) as ledger:
        views(ledger)
        for i in range(20):
            ledger.record(f"p{i:02d}", i, t_ms=T + i, attrs={"region": "eu"})
        ledger.record("mid", 9.5, t_ms=T + 30, attrs={"region": "us"})  # "all" only
        ledger.compact()
        expected = states(ledger)
    with Ledger.open(tmp_path) as again:
        assert states(again) == expected
        alltime, eu = again["all"], again["eu"]
        assert len(alltime) == len(eu) + 1
        shared = [m for m in eu._primary if any(m is a for a in alltime._primary)]
        assert len(shared) == 10  # (two chunks of five)


def test_metadata_is_never_shared_between_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_chunks(monkeypatch)
    with Ledger.open(tmp_path) as ledger:
        views(ledger)
        for i in range(12):
            ledger.record(f"p{i}", i, op="set", t_ms=T + i, attrs={"region": "eu"}, meta={"n": i})
        ledger.compact()
        expected = states(ledger)
    with Ledger.open(tmp_path) as again:
        assert states(again) == expected
        assert again["all"]._meta["p3"] == again["eu"]._meta["p3"] == {"n": 3}
        assert again["all"]._meta["p3"] is not again["eu"]._meta["p3"]


def test_a_chunk_is_shared_only_when_its_bytes_read_back_are_the_same(tmp_path: Path) -> None:
    """SharedChunks keeps where a chunk's bytes lie, not the bytes: a new
    chunk whose length and ends match a kept one is compared with the kept
    one's bytes read back from its file, so one that differs only in the
    middle is decoded on its own (and so is one whose kept file is gone)."""
    ends = b"e" * 64
    kept = ends + b"middle-1" + ends
    path = tmp_path / "a.snap"
    path.write_bytes(b"head" + kept + b"tail")
    shared = SharedChunks()
    chunk: list[Any] = [["a"], [1], [1], []]
    shared.keep((2, None, False, kept), chunk, str(path), 4)
    assert shared.find((2, None, False, bytes(kept))) is chunk
    assert shared.find((2, None, False, ends + b"middle-2" + ends)) is None
    assert shared.find((1, None, False, kept)) is None  # read by another version
    assert shared.find((2, None, True, kept)) is None  # clocks negated
    path.write_bytes(b"head" + ends + b"middle-2" + ends + b"tail")
    assert shared.find((2, None, False, kept)) is None
    path.unlink()
    assert shared.find((2, None, False, kept)) is None
