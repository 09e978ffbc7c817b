"""Views whose snapshots hold the same rows share what a ledger's open
decodes (rankengine.durable.shared_chunks.SharedChunks, Snapshot.same_rows and
the ledger's _restored_board): each identical chunk is decoded once, and a
board whose every chunk matches an earlier one copies its member map.  The
boards stay independent, and the open gives what it gave without sharing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankengine import Ledger
from rankengine.board import bulk
from rankengine.board.tiemap import VACANT_SHARD
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


# ----------------------------------------------------------------------
# Boards restored from another board's load (BulkLoad._restore_loaded)
# ----------------------------------------------------------------------
#: Views in pairs of the same settings and rows ("all"/"all2",
#: "mem"/"mem2"; "skip" has the rows of "all" on the other backend), and
#: views whose rows differ ("eu", "asc").
TWIN_VIEWS: list[tuple[str, dict[str, Any]]] = [
    ("all", {}),
    ("all2", {}),
    ("skip", {"backend": "skiplist"}),
    ("mem", {"tie_break": "member"}),
    ("mem2", {"tie_break": "member"}),
    ("eu", {"where": {"region": "eu"}}),
    ("asc", {"order": "asc"}),
]

#: ``(member, delta, region)``: few scores, so long runs of ties (the deep
#: ties a board keeps in its tie map start RUN_SCAN_LIMIT = 8 entries in).
TWIN_EVENT = st.tuples(
    st.integers(0, 40).map(lambda i: f"p{i}"),
    st.integers(-1, 3),
    st.sampled_from(["eu", "eu", "eu", "us"]),
)


def twin_ledger(path: Path | None) -> Ledger:
    ledger = Ledger() if path is None else Ledger.open(path)
    if not ledger.views:
        for name, options in TWIN_VIEWS:
            ledger.add_view(name, **options)
    return ledger


def feed(ledger: Ledger, events: list[tuple[str, int, str]], t0: int) -> None:
    for i, (member, delta, region) in enumerate(events):
        ledger.record(member, delta, t_ms=T + t0 + i, attrs={"region": region})


def board_states(ledger: Ledger) -> dict[str, Any]:
    ledger._check()
    out = {}
    for name, _ in TWIN_VIEWS:
        board = ledger[name]
        board._check()
        # every tie the board keeps is its member's tie in the index
        ties = {m: t for _, t, m in board._index.iter_range(0, len(board._index))}
        assert all(ties[m] == t for m, t in board._tie.items()), name
        members, scores, clocks, metas = board._export_columns()
        out[name] = (list(members), list(scores), list(clocks), metas, board.clock)
    return out


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    before=st.lists(TWIN_EVENT, max_size=120),
    after=st.lists(TWIN_EVENT, max_size=30),
    rows=st.sampled_from([5, 7, 65_536]),
    only_eu=st.booleans(),
)
def test_boards_restored_from_another_boards_load_are_independent(
    monkeypatch: pytest.MonkeyPatch,
    before: list[tuple[str, int, str]],
    after: list[tuple[str, int, str]],
    rows: int,
    only_eu: bool,
) -> None:
    """Reopened views equal views fed every event in memory (the replay
    from the log), whichever shared a load; writes after the open that
    reach one view and not another (``only_eu``: "eu" shares the load of
    "all" until a US event) change no other view; and the next open again
    equals the model."""
    monkeypatch.setattr(snapshot, "SNAPSHOT_CHUNK_ROWS", rows)
    if only_eu:
        before = [(member, delta, "eu") for member, delta, _ in before]
    before = [(f"p{i}", 1, "eu") for i in range(30)] + before  # a run of ties
    model = twin_ledger(None)
    feed(model, before, 0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        with twin_ledger(path) as ledger:
            feed(ledger, before, 0)
            ledger.compact()
        with twin_ledger(path) as again:
            assert board_states(again) == board_states(model)
            for one, two in (("all", "all2"), ("mem", "mem2"), ("all", "skip")):
                a, b = again[one], again[two]
                assert a._primary is not b._primary
                assert a._tie is not b._tie and a._tie == b._tie
                # (no shard of the tie map shared either, but the empty one of
                # every slot that never held an entry)
                mine = {id(s) for s in a._tie.shards if s is not VACANT_SHARD}
                assert not mine & {id(s) for s in b._tie.shards}
                if two != "skip" and a._primary:
                    assert a._index._members[0] is not b._index._members[0]
            feed(again, after, 1000)
            feed(model, after, 1000)
            assert board_states(again) == board_states(model)
        with twin_ledger(path) as third:
            assert board_states(third) == board_states(model)


def test_a_second_board_of_the_same_rows_takes_the_first_ones_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The twin's open skips the tie scan (deep_ties runs once for two boards
    of the same rows and settings) and shares its member strings."""
    small_chunks(monkeypatch)
    with twin_ledger(tmp_path) as ledger:
        feed(ledger, [(f"p{i}", 1, "eu") for i in range(30)], 0)  # one run of 30 ties
        ledger.compact()
        expected = board_states(ledger)
    scans: list[int] = []
    deep_ties = bulk.deep_ties

    def counted(*args: Any, **kwargs: Any) -> dict[Any, Any]:
        scans.append(len(args[0]))
        return deep_ties(*args, **kwargs)

    monkeypatch.setattr(bulk, "deep_ties", counted)
    with twin_ledger(tmp_path) as again:
        assert board_states(again) == expected
        # all, all2 and skip share a load (first-to-reach, descending); mem
        # and mem2 (tie by member) keep no tie map; eu holds the same rows
        # as all (every event is EU), so it shares the load too; asc scans
        assert scans == [30, 30]
        assert again["all"]._tie and again["all"]._tie == again["all2"]._tie
        assert all(a is b for a, b in zip(again["all"]._primary, again["eu"]._primary, strict=True))
