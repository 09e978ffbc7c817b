"""The ledger's behaviour, case by case: refusals, recovery, views, news.

The random sequences are ``test_ledger_stateful.py``'s and the kills
``test_ledger_crash.py``'s; here each guarantee of ``docs/ledger.md`` is
shown on one small example, with the error or the file it names.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine import (
    DecayedLeaderboard,
    DurableLeaderboard,
    Leaderboard,
    Ledger,
    PeriodicLeaderboard,
)
from rankengine.cli.log import main
from rankengine.durable.records import LogError, RecoveryWarning, pack
from rankengine.ledger.subscriptions import Changed, Overtaken, TopMove

T = 1_798_934_400_000  # 2027-01-03T00:00Z, a Sunday
DAY = 86_400_000


def four_views(ledger: Ledger) -> None:
    ledger.add_view("alltime")
    ledger.add_view("weekly", "periodic", calendar="weekly")
    ledger.add_view("eu", "board", where={"region": "eu"})
    ledger.add_view("trend", "topk", k=3)


def test_one_record_feeds_every_view_and_reports_each(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, fsync="always") as ledger:
        four_views(ledger)
        done = ledger.record("ann", 30, t_ms=T, attrs={"region": "eu"})
        assert done.seq == 1
        assert [(o.view, o.score, o.rank_before, o.rank_after) for o in done.outcomes] == [
            ("alltime", 30, None, 1),
            ("weekly", 30, None, 1),
            ("eu", 30, None, 1),
            ("trend", 1, None, None),
        ]
        done = ledger.record("bob", 50, t_ms=T + 1, attrs={"region": "us"})
        assert done.outcome("eu") is None  # the filter kept it out
        done = ledger.record("ann", 25, t_ms=T + 2, attrs={"region": "eu"})
        assert done.outcome("alltime") == ("alltime", None, 55, 2, 1)
        ledger._check()


def test_an_event_one_view_refuses_changes_no_view_and_writes_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, fsync="always") as ledger:
        four_views(ledger)
        ledger.add_view("hot", "decayed", half_life=3600.0)
        ledger.record("ann", 5, t_ms=T)
        segment = tmp_path / "log-00000000000000000001.seg"
        size = segment.stat().st_size
        before = (ledger["alltime"].items(), ledger["weekly"].items(), ledger["trend"].top())
        with pytest.raises(ValueError, match="decayed view takes no when"):
            ledger.record("ann", 5, t_ms=T, when="better")  # only the decayed view refuses it
        with pytest.raises(ValueError, match="NaN"):
            ledger.record("ann", float("nan"), t_ms=T)
        with pytest.raises(OverflowError):
            ledger.record("ann", 10**400, t_ms=T)  # the decayed board's float
        ledger.record("cid", 1, t_ms=T + 8 * DAY)  # next week: this week closes
        size = segment.stat().st_size
        with pytest.raises(ValueError, match=r"late|closed"):
            ledger.record("ann", 1, t_ms=T)  # a week late for the weekly view
        assert ledger.last_seq == 2 and segment.stat().st_size == size
        assert ledger["alltime"].items() == before[0] + [("cid", 1)]
        assert before[1] == [("ann", 5)]
        ledger._check()


def test_a_bad_item_of_a_batch_changes_nothing_and_is_named(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("skip", backend="skiplist", tie_break="member")
        with pytest.raises(TypeError, match="item 2"):
            ledger.record_many([("ann", 1), ("bob", 2), (7, 3)])  # 7 does not compare with str
        assert ledger.last_seq == 0 and len(ledger["skip"]) == 0
        with pytest.raises(ValueError, match="NaN"):  # the sum only the second item makes
            inf = float("inf")
            ledger.record_many([{"member": "ann", "value": inf}, {"member": "ann", "value": -inf}])
        assert ledger.last_seq == 0
        done = ledger.record_many([("ann", 1), ("ann", 2)])
        assert [d.seq for d in done] == [1, 1] and ledger["skip"].items() == [("ann", 3)]


def test_bad_event_shapes_are_refused_before_any_view_sees_them() -> None:
    ledger = Ledger()
    ledger.add_view("alltime")
    for bad, error in [
        ({"attrs": {"region": 1.5}}, TypeError),
        ({"attrs": {1: "eu"}}, TypeError),
        ({"op": "jump"}, ValueError),
        ({"t_ms": -1}, ValueError),
        ({"t_ms": 1.5}, TypeError),
        ({"when": "sometimes"}, ValueError),
        ({"op": "remove", "when": "new"}, ValueError),
    ]:
        with pytest.raises(error):
            ledger.record("ann", **bad)  # type: ignore[arg-type]
    assert ledger.last_seq == 0


def test_reopen_loads_each_view_and_replays_the_rest(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        four_views(ledger)
        ledger.add_view("by_mode", by="mode")
        for i in range(50):
            ledger.record(f"p{i % 7}", i, t_ms=T + i * DAY // 5, attrs={"mode": f"m{i % 3}"})
        ledger.compact()
        for i in range(50, 80):
            ledger.record(f"p{i % 7}", i, t_ms=T + i * DAY // 5, attrs={"mode": f"m{i % 3}"})
        expected = {name: repr(dump(ledger[name])) for name in ledger.views}
    with Ledger.open(tmp_path) as again:
        again._check()
        assert again.last_seq == 80
        assert {name: repr(dump(again[name])) for name in again.views} == expected


def dump(view: Any) -> Any:
    if isinstance(view, Leaderboard):
        return view.items()
    if isinstance(view, PeriodicLeaderboard):
        return [(p.name, view.board(p).items()) for p in view.periods()]
    if hasattr(view, "top") and not hasattr(view, "items"):
        return view.top()
    return {key: board.items() for key, board in sorted(view.items())}


def test_a_view_added_later_is_built_from_the_history(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("alltime")
        for i in range(25_000):
            ledger.record(f"p{i % 100}", 1, t_ms=T + i, attrs={"region": ["eu", "us"][i % 2]})
        ledger.compact()
        seen: list[tuple[int, int]] = []
        ledger.add_view("eu", where={"region": "eu"}, progress=lambda s, n: seen.append((s, n)))
        assert seen[-1] == (25_000, 25_000) and len(seen) >= 3
        assert sorted(ledger["eu"].items()) == sorted((f"p{i}", 250) for i in range(0, 100, 2))
        ledger._check()


def test_a_lost_or_damaged_view_snapshot_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        four_views(ledger)
        for i in range(300):
            ledger.record(f"p{i % 9}", i % 4 + 1, t_ms=T + i * 60_000, attrs={"region": "eu"})
        ledger.compact()
        expected = {name: repr(dump(ledger[name])) for name in ledger.views}
    for snap in (tmp_path / "views" / "weekly").iterdir():
        snap.write_bytes(snap.read_bytes()[:-7] + b"damaged")
    for snap in (tmp_path / "views" / "eu").iterdir():
        snap.unlink()
    with pytest.warns(RecoveryWarning, match="rebuilding it from the log"):
        again = Ledger.open(tmp_path)
    with again:
        assert len(again.recovery_notes) >= 2
        assert {name: repr(dump(again[name])) for name in again.views} == expected
        again._check()


def test_without_history_a_lost_snapshot_is_an_error_that_says_so(tmp_path: Path) -> None:
    with Ledger.open(tmp_path, retain_log=False) as ledger:
        ledger.add_view("alltime")
        for i in range(10):
            ledger.record("ann", 1, t_ms=T + i)
        ledger.compact()
        assert [p.name for p in tmp_path.glob("*.seg")] == ["log-00000000000000000011.seg"]
        with pytest.raises(LogError, match="compacted away"):
            ledger.add_view("late")
        assert "late" not in ledger
    for snap in (tmp_path / "views" / "alltime").iterdir():
        snap.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        with pytest.raises(LogError, match="compacted away"):
            Ledger.open(tmp_path)


def test_a_removed_view_frees_its_files_and_its_name(tmp_path: Path) -> None:
    with Ledger.open(tmp_path) as ledger:
        four_views(ledger)
        ledger.record("ann", 3, t_ms=T)
        ledger.compact()
        assert (tmp_path / "views" / "weekly").is_dir()
        ledger.remove_view("weekly")
        assert not (tmp_path / "views" / "weekly").exists()
        with pytest.raises(KeyError):
            ledger.view("weekly")
        ledger.add_view("weekly", "periodic", calendar="daily")  # the name is free again
        assert ledger["weekly"].items() == [("ann", 3)]
    with Ledger.open(tmp_path) as again:
        assert again.views == ["alltime", "eu", "trend", "weekly"]
        assert again["weekly"].calendar.__class__.__name__ == "Daily"


def test_opening_another_kind_names_what_is_there(tmp_path: Path) -> None:
    board_dir, ledger_dir = tmp_path / "board", tmp_path / "ledger"
    with Leaderboard.open(board_dir) as board:
        board.set("ann", 1)
    with pytest.raises(ValueError, match="holds a durable board, not a ledger"):
        Ledger.open(board_dir)
    before = sorted(os.listdir(board_dir))
    with pytest.raises(ValueError, match="holds a durable board, not a periodic"):
        PeriodicLeaderboard.open(board_dir, "weekly")
    assert sorted(os.listdir(board_dir)) == before  # no periods/ created inside it
    with Ledger.open(ledger_dir) as ledger:
        ledger.add_view("alltime")
    with Leaderboard.open(ledger_dir) as one_view:  # one board view: a LedgerBoard
        assert type(one_view).__name__ == "LedgerBoard"
    with pytest.raises(ValueError, match="holds a ledger, not a durable board"):
        DurableLeaderboard(ledger_dir)
    with Ledger.open(ledger_dir) as ledger:
        ledger.add_view("weekly", "periodic", calendar="weekly")
    with pytest.raises(ValueError, match="holds a ledger with views"):
        Leaderboard.open(ledger_dir)
    with pytest.raises(ValueError, match=r"holds a ledger with views .*one unkeyed decayed view"):
        DecayedLeaderboard.open(ledger_dir, half_life=60.0)
    with PeriodicLeaderboard.open(tmp_path / "weekly", "weekly") as weekly:
        weekly.incr("ann", 1)
    with pytest.raises(ValueError, match="holds a periodic board or sliding window, not a ledger"):
        Ledger.open(tmp_path / "weekly")


def test_a_closed_ledger_reads_but_refuses_events(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path)
    ledger.add_view("alltime")
    ledger.record("ann", 2)
    ledger.close()
    assert ledger["alltime"].items() == [("ann", 2)]
    with pytest.raises(ValueError, match="closed"):
        ledger.record("ann", 1)
    with pytest.raises(LogError, match="already open"), Ledger.open(tmp_path):
        Ledger.open(tmp_path)


def test_subscriptions_deliver_changes_top_moves_and_overtakes_in_order() -> None:
    ledger = Ledger()
    ledger.add_view("alltime")
    ledger.add_view("quiet")
    news: list[Any] = []
    ledger.subscribe("alltime", news.append)
    ledger.subscribe("alltime", news.append, on="top", k=2)
    ledger.subscribe("alltime", news.append, on="overtaken")
    for member, points in [("ann", 10), ("bob", 20), ("cid", 5)]:
        ledger.record(member, points, ranks=False)
    news.clear()
    ledger.record("cid", 30, ranks=False)  # 35: from 3rd to 1st
    assert news == [
        Changed(4, "alltime", None, "cid", "incr", 35, 3, 1),
        TopMove(4, "alltime", None, "cid", True, 1),
        TopMove(4, "alltime", None, "ann", False, 3),
        Overtaken(4, "alltime", None, "bob", "cid", 1, 2),
        Overtaken(4, "alltime", None, "ann", "cid", 2, 3),
    ]
    news.clear()
    ledger.remove("cid")
    assert TopMove(5, "alltime", None, "ann", True, 2) in news
    with pytest.raises(ValueError, match="k="):
        ledger.subscribe("alltime", news.append, on="top")


def test_a_view_without_subscribers_pays_only_a_lookup() -> None:
    ledger = Ledger()
    ledger.add_view("alltime")
    handle = ledger.subscribe("alltime", lambda notice: None)
    assert ledger._subs.watches("alltime")
    ledger.unsubscribe(handle)
    assert not ledger._subs.watches("alltime")
    assert ledger.record("ann", 1, ranks=False).outcomes[0].rank_before is None


def test_inspect_and_verify_understand_a_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Ledger.open(tmp_path) as ledger:
        four_views(ledger)
        for i in range(20):
            ledger.record(f"p{i}", i, t_ms=T + i, attrs={"region": "eu"})
        ledger.compact()
    assert main(["inspect", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "kind        ledger" in shown and "weekly       periodic" in shown
    assert "snapshot at seq 20 (0 event(s) to replay)" in shown
    assert main(["verify", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("healthy\n")
    assert main(["replay", str(tmp_path)]) == 0  # every view, rebuilt from the events
    assert "== view weekly (periodic) ==" in capsys.readouterr().out
    assert main(["add-view", str(tmp_path), "late", "board", 'where={"region": "eu"}']) == 0
    for snap in (tmp_path / "views" / "eu").iterdir():
        snap.unlink()
    assert main(["verify", str(tmp_path)]) == 3  # the open rebuilds it from the log
    assert "VIEW REBUILD: 1 view(s)" in capsys.readouterr().out
    with pytest.warns(RecoveryWarning), Ledger.open(tmp_path) as again:
        assert again["late"].items() == again["eu"].items() and len(again["late"]) == 20


def test_a_window_view_reopens_with_its_ties_in_order(tmp_path: Path) -> None:
    # equal sums rank by the refresh that reached them; a window recomputed
    # from its buckets would order them by the buckets instead
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("last3h", "window", calendar="hourly", buckets=3)
        for i, member in enumerate(["ann", "bob", "cid", "bob", "ann", "dee", "cid"]):
            ledger.record(member, 5 if i < 3 else 0 + 5, t_ms=T + i * 1_500_000)
        ledger.compact()
        ledger.record("eve", 10, t_ms=T + 7 * 1_500_000)
        expected = ledger["last3h"].board.items()
        assert [score for _, score in expected].count(10) >= 2  # ties to keep in order
    with Ledger.open(tmp_path) as again:
        again._check()
        assert again["last3h"].board.items() == expected


def test_forget_scrubs_a_member_from_the_log_every_snapshot_and_every_view(
    tmp_path: Path,
) -> None:
    secret = "ann-the-secret"
    with Ledger.open(tmp_path) as ledger:
        four_views(ledger)
        ledger.add_view("last3h", "window", calendar="hourly", buckets=3)
        ledger.add_view("hot", "decayed", half_life=3600.0)
        ledger.add_view("by_region", by="region")
        for i in range(30):
            member = secret if i % 3 == 0 else f"p{i % 4}"
            ledger.record(member, i + 1, t_ms=T + i * 60_000, attrs={"region": "eu"})
        ledger.compact()  # snapshots that hold the member
        ledger.record(secret, 5, t_ms=T + 31 * 60_000, attrs={"region": "eu"})
        assert ledger.forget(secret).rows >= 6
        for name in ("alltime", "eu"):
            assert secret not in ledger[name]
        assert secret not in ledger["last3h"] and secret not in ledger["hot"]
        assert secret not in [item.key for item in ledger["trend"].top()]
        ledger.record("p1", 1, t_ms=T + 32 * 60_000)  # the log goes on after the rewrite
        expected = {name: repr(dump(ledger[name])) for name in ("alltime", "eu", "by_region")}
    needle = pack(secret)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), path
    with Ledger.open(tmp_path) as again:
        again._check()
        assert {name: repr(dump(again[name])) for name in expected} == expected
        assert secret not in again["weekly"].board()


@pytest.mark.parametrize("how", ["record", "record_many", "set"])
def test_a_view_failing_after_its_check_closes_the_ledger_and_a_reopen_rebuilds_it(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a view that passed its check but fails to apply the event is a bug:
    # the event is logged, so the ledger closes and a reopen replays it
    with Ledger.open(tmp_path, fsync="never") as ledger:
        ledger.add_view("alltime")
        ledger.record("ann", 5)
        board = ledger["alltime"]

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("broken view")

        # (the board's write hook, which every write path calls before it
        # changes anything: the fast path's direct writes too)
        monkeypatch.setattr(board, "_listener", broken)
        with pytest.raises(LogError, match="a view failed to apply it"):
            if how == "record":
                ledger.record("bob", 7)
            elif how == "record_many":
                ledger.record_many([("bob", 7), ("cid", 1)])
            else:
                ledger.record("bob", 7, op="set")
        assert ledger.closed
        with pytest.raises(ValueError, match="closed"):
            ledger.record("ann", 1)
    with Ledger.open(tmp_path, fsync="never") as again:
        again["alltime"]._check()
        assert again["alltime"].score("bob") == 7
        assert again["alltime"].score("ann") == 5
