"""A periodic view's closed periods are loaded on their first read after an open.

A ledger's open checks a closed period's snapshot file and leaves the board
unloaded (rankengine.timed.lazy); the first read of it loads it.  Here: a
reopened ledger, with its closed periods unloaded, answers every read
exactly as it did before the reopen and as an in-memory ledger fed the same
events (the model); ``_check()`` covers the unloaded state without loading;
compaction copies an unloaded period's file, forget and export load it, a
period that falls out of ``keep`` is freed unloaded, and a damaged file is
found at the open (the view is rebuilt from the log).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from rankengine import Leaderboard, Ledger
from rankengine.durable.records import RecoveryWarning
from rankengine.durable.snapshot import read_snapshot
from rankengine.timed.lazy import PeriodBoards, Unloaded, is_unloaded
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.state import periodic_parts, periodic_state, restore_periodic

DAY_MS = 86_400_000
T0_MS = 1_799_020_800_000  # 2027-01-04T00:00Z, a Monday

VIEWS: list[tuple[str, str, dict[str, Any]]] = [
    ("all", "board", {}),
    ("weekly", "periodic", {"calendar": "weekly"}),
    ("daily", "periodic", {"calendar": "daily", "keep": 2, "grace": 60, "late": "drop"}),
    ("asc", "periodic", {"calendar": "daily", "order": "asc", "tie_break": "member"}),
    ("region", "periodic", {"calendar": "daily", "by": "region"}),
    ("win", "window", {"calendar": "daily", "buckets": 2}),
]
PERIODIC = ("weekly", "daily", "asc")


def make(path: str | None) -> Ledger:
    ledger = Ledger() if path is None else Ledger.open(path, fsync="never", compact_min_bytes=None)
    if path is None or not ledger.views:
        for name, kind, options in VIEWS:
            ledger.add_view(name, kind, **options)
    return ledger


def unloaded(periodic: PeriodicLeaderboard) -> list[str]:
    """The periods of ``periodic`` not loaded yet (without loading any)."""
    boards = periodic._boards
    return sorted(boards.unloaded()) if type(boards) is PeriodBoards else []


def all_unloaded(ledger: Ledger) -> dict[str, list[str]]:
    out = {name: unloaded(ledger[name]) for name in PERIODIC}
    for key, board in ledger["region"].items():
        out[f"region/{key}"] = unloaded(board)
    return out


def held_periods(periodic: PeriodicLeaderboard) -> list[tuple[str, int]]:
    """The periods held, oldest first, each with its member count, loading
    none (an unloaded one's count is in its snapshot's header).  Empty ones
    too: a read makes no period board in a ledger's view (only its events
    do), so after reads, forgets and reopens the durable ledger holds the
    periods the model holds (``tests/test_ledger_periods_replay.py``).
    """
    held = []
    for period in periodic.periods():
        board = periodic._boards.peek(period.name) if unloaded(periodic) else None
        if is_unloaded(board):
            count = read_snapshot(board.path, defer=lambda _h: True).header["count"]  # type: ignore[union-attr]
        else:
            count = len(periodic._boards[period.name])
        held.append((period.name, count))
    return held


def loaded_since(ledger: Ledger, before: dict[str, list[str]]) -> list[str]:
    """The periods unloaded in ``before`` that are held loaded now (a
    period that fell out of ``keep`` since is freed, not loaded)."""
    now = all_unloaded(ledger)
    held = {name: {p.name for p in ledger[name].periods()} for name in PERIODIC}
    for key, board in ledger["region"].items():
        held[f"region/{key}"] = {p.name for p in board.periods()}
    return [
        f"{view}:{name}"
        for view, names in before.items()
        for name in names
        if name in held.get(view, ()) and name not in now.get(view, [])
    ]


def board_state(board: Any) -> Any:
    items = board.items()
    return repr((items, [board.meta(m) for m, _ in items], board.clock))


def periodic_reads(periodic: PeriodicLeaderboard) -> Any:
    """Every read of every held period (loading each), oldest first."""
    out = []
    for period in periodic.periods():
        board = periodic.board(period)
        members = [m for m, _ in board.items()]
        out.append(
            (
                period.name,
                periodic.is_open(period),
                board_state(board),
                periodic.top(2, period=period),
                [periodic.rank(m, period=period) for m in members],
                [periodic.score(m, period=period) for m in members],
            )
        )
    return repr(out)


def reads(ledger: Ledger) -> dict[str, Any]:
    """Every read of every view."""
    out: dict[str, Any] = {
        "all": board_state(ledger["all"]),
        "win": repr(ledger["win"].board.items()),
    }
    for name in PERIODIC:
        out[name] = periodic_reads(ledger[name])
    out["region"] = {k: periodic_reads(b) for k, b in sorted(ledger["region"].items())}
    return out


def without_clocks(state: dict[str, Any], keep: bool) -> Any:
    """``state`` with every board's logical clock cut (unless ``keep``)."""
    text = repr(state)
    return text if keep else re.sub(r"\], (\d+)\)", "], _)", text)


def record(ledger: Ledger, event: dict[str, Any]) -> Any:
    fields = dict(event)
    return ledger.record(fields.pop("member"), fields.pop("value", None), **fields)


def fill(ledger: Ledger, days: int, members: int = 6) -> list[dict[str, Any]]:
    """Events over ``days`` days, each member once a day (some in "eu")."""
    events = []
    for day in range(days):
        for i in range(members):
            event: dict[str, Any] = {
                "member": f"p{i}",
                "value": (i * 7 + day * 3) % 11 + 1,
                "t_ms": T0_MS + day * DAY_MS + 3_600_000 + i * 1000,
                "attrs": {"region": "eu" if i % 2 else "us"},
            }
            if i == 2:
                event.update(op="set", meta={"day": day})
            record(ledger, event)
            events.append(event)
    return events


def test_closed_periods_load_on_their_first_read(tmp_path: Path) -> None:
    model = make(None)
    with make(str(tmp_path)) as ledger:
        for event in fill(ledger, 3):
            record(model, event)
        ledger.compact()
        before = reads(ledger)
    assert before == reads(model)
    with make(str(tmp_path)) as again:
        lazy = all_unloaded(again)
        # yesterday and the day before (daily keeps 2), yesterday (asc, per region)
        assert lazy["daily"] == ["2027-01-04", "2027-01-05"]
        assert lazy["asc"] == ["2027-01-05"] and lazy["region/eu"] == ["2027-01-05"]
        assert lazy["weekly"] == []  # (one week: nothing closed)
        again._check()  # covers the unloaded periods without loading them
        assert all_unloaded(again) == lazy
        # the current period's reads load nothing
        assert again["daily"].items() == model["daily"].items()
        assert unloaded(again["daily"]) == ["2027-01-04", "2027-01-05"]
        # one read loads one period
        daily = again["daily"]
        assert daily.top(3, period="2027-01-05") == model["daily"].top(3, period="2027-01-05")
        assert unloaded(daily) == ["2027-01-04"]
        assert reads(again) == before
        assert all(not names for names in all_unloaded(again).values())
        again._check()


def test_compaction_copies_an_unloaded_period_and_a_reopen_reads_it(tmp_path: Path) -> None:
    model = make(None)
    with make(str(tmp_path)) as ledger:
        for event in fill(ledger, 3):
            record(model, event)
        ledger.compact()
    with make(str(tmp_path)) as again:
        daily = again["daily"]
        stale = {name: daily._boards.peek(name).path for name in unloaded(daily)}  # type: ignore[union-attr]
        event = {"member": "p9", "value": 4, "t_ms": T0_MS + 2 * DAY_MS + 99_000}
        record(again, event)
        record(model, event)
        seq = again.compact()
        assert unloaded(daily) == sorted(stale)  # copied, not loaded
        for name, old in stale.items():
            moved = daily._boards.peek(name)
            assert is_unloaded(moved) and moved.path != old  # type: ignore[union-attr]
            assert not os.path.exists(old)  # the old snapshot was removed
            snap = read_snapshot(moved.path)  # type: ignore[union-attr]
            assert snap.header["seq"] == seq and snap.header["part"]["period"] == name
        # export (what forget and tools read) loads them
        _now, held = periodic_state(daily)
        assert not unloaded(daily) and all(not is_unloaded(b) for _, _, b in held)
        assert reads(again) == reads(model)
    with make(str(tmp_path)) as third:
        assert unloaded(third["daily"]) == sorted(stale)
        assert reads(third) == reads(model)


def test_a_period_out_of_keep_is_freed_unloaded(tmp_path: Path) -> None:
    model = make(None)
    with make(str(tmp_path)) as ledger:
        for event in fill(ledger, 3):
            record(model, event)
        ledger.compact()
    with make(str(tmp_path)) as again:
        assert unloaded(again["daily"]) == ["2027-01-04", "2027-01-05"]
        event = {"member": "p1", "value": 2, "t_ms": T0_MS + 4 * DAY_MS}  # two days on
        record(again, event)
        record(model, event)
        # the two unloaded days fell out of keep=2: freed, never loaded
        assert unloaded(again["daily"]) == []
        assert [p.name for p in again["daily"].periods()] == [
            p.name for p in model["daily"].periods()
        ]
        again._check()
        assert reads(again) == reads(model)


@pytest.mark.parametrize("from_log", [False, True])
def test_forget_reaches_the_unloaded_periods(tmp_path: Path, from_log: bool) -> None:
    model = make(None)
    with make(str(tmp_path)) as ledger:
        for event in fill(ledger, 3):
            record(model, event)
        ledger.compact()
    with make(str(tmp_path)) as again:
        assert unloaded(again["daily"])
        assert again.forget("p2", from_log=from_log).present
        model.forget("p2")
        assert "p2" not in again["daily"].board("2027-01-04")
        # (forgotten from the snapshots, a board keeps its logical clock: the
        # count of its writes, theirs included; from the log, it is exact)
        assert without_clocks(reads(again), from_log) == without_clocks(reads(model), from_log)
        again._check()
    with make(str(tmp_path)) as third:
        assert without_clocks(reads(third), from_log) == without_clocks(reads(model), from_log)
        for directory, _, names in os.walk(tmp_path / "views"):
            for name in names:
                assert b"p2" not in (Path(directory) / name).read_bytes()


def test_a_damaged_closed_period_is_found_at_the_open(tmp_path: Path) -> None:
    model = make(None)
    with make(str(tmp_path)) as ledger:
        for event in fill(ledger, 3):
            record(model, event)
        ledger.compact()
        before = reads(ledger)
    with make(str(tmp_path)) as again:
        (name,) = unloaded(again["asc"])
        path = again["asc"]._boards.peek(name).path  # type: ignore[union-attr]
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a chunk the open does not decode
    Path(path).write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        third = make(str(tmp_path))
    with third:
        assert any(issubclass(w.category, RecoveryWarning) for w in caught)
        assert any("'asc'" in note for note in third.recovery_notes)
        assert unloaded(third["asc"]) == []  # rebuilt from the log
        assert reads(third) == before


def test_a_file_gone_after_the_open_fails_the_read_and_changes_nothing(tmp_path: Path) -> None:
    with make(str(tmp_path)) as ledger:
        fill(ledger, 2)
        ledger.compact()
    with make(str(tmp_path)) as again:
        asc = again["asc"]
        (name,) = unloaded(asc)
        hidden = str(tmp_path / "hidden.snap")
        path = asc._boards.peek(name).path  # type: ignore[union-attr]
        os.replace(path, hidden)
        with pytest.raises(OSError):
            asc.board(name)
        assert unloaded(asc) == [name]
        os.replace(hidden, path)
        assert asc.board(name).items()
        assert unloaded(asc) == []


def test_periodic_parts_does_not_load(tmp_path: Path) -> None:
    with make(str(tmp_path)) as ledger:
        fill(ledger, 2)
        ledger.compact()
    with make(str(tmp_path)) as again:
        asc = again["asc"]
        _, held = periodic_parts(asc)
        assert [is_unloaded(b) for _, _, b in held] == [True, False]
        assert unloaded(asc) == ["2027-01-04"]


# ----------------------------------------------------------------------
# Stateful: random events, compactions, reopens, forgets and reads
# ----------------------------------------------------------------------
MEMBERS = st.sampled_from(["a", "b", "c", "d", "e"])
STEPS = st.one_of(
    st.integers(0, 6 * 3_600_000),
    st.sampled_from([DAY_MS, 2 * DAY_MS, 8 * DAY_MS, -3_600_000, -2 * DAY_MS]),
)


class LazyLedgerMachine(RuleBasedStateMachine):
    """A durable ledger against an in-memory one (the model) fed the same
    events; reads are made one period at a time, so that after a reopen
    some closed periods stay unloaded across steps."""

    @initialize()
    def start(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="ledger-lazy-")
        self.ledger = make(self.directory)
        self.model = make(None)
        self.time_ms = T0_MS

    def teardown(self) -> None:
        self.ledger.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @rule(
        member=MEMBERS,
        value=st.integers(-3, 9),
        op=st.sampled_from(["incr", "incr", "set", "remove"]),
        step=STEPS,
        region=st.sampled_from(["eu", "us"]),
    )
    def record(self, member: str, value: int, op: str, step: int, region: str) -> None:
        event: dict[str, Any] = {
            "member": member,
            "op": op,
            "t_ms": max(T0_MS, self.time_ms + step),
            "attrs": {"region": region},
        }
        if op != "remove":
            event["value"] = value
        if op == "set" and value % 2:
            event["meta"] = {"v": value}
        try:
            record(self.model, event)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                record(self.ledger, event)
            return
        record(self.ledger, event)
        self.time_ms = max(self.time_ms, event["t_ms"])

    @rule()
    def compact(self) -> None:
        lazy = all_unloaded(self.ledger)
        self.ledger.compact()
        assert all_unloaded(self.ledger) == lazy  # copied, not loaded

    @rule()
    def reopen(self) -> None:
        before = reads(self.ledger)
        self.ledger.close()
        self.ledger = make(self.directory)
        self.ledger._check()
        for name in PERIODIC:  # only closed periods are left unloaded
            periodic = self.ledger[name]
            for period in unloaded(periodic):
                assert period in periodic._closed
        assert reads(self.ledger) == before
        self.ledger.close()
        self.ledger = make(self.directory)  # and again, left unloaded

    @rule(member=MEMBERS)
    def forget(self, member: str) -> None:
        self.ledger.forget(member, from_log=True)  # (exact: the model's is)
        self.model.forget(member)

    @rule(view=st.sampled_from(PERIODIC), back=st.integers(0, 3))
    def read_one_period(self, view: str, back: int) -> None:
        periods = self.model[view].periods()
        if back < len(periods):
            period = periods[-1 - back]
            got, want = self.ledger[view], self.model[view]
            assert board_state(got.board(period)) == board_state(want.board(period))
            assert got.top(3, period=period) == want.top(3, period=period)

    @invariant()
    def agrees_with_the_model(self) -> None:
        lazy = all_unloaded(self.ledger)
        self.ledger._check()
        assert all_unloaded(self.ledger) == lazy  # the check loads nothing
        for name in PERIODIC:
            got, want = self.ledger[name], self.model[name]
            assert held_periods(got) == held_periods(want)
            assert board_state(got.board()) == board_state(want.board())
        assert board_state(self.ledger["all"]) == board_state(self.model["all"])
        assert loaded_since(self.ledger, lazy) == []  # nor do reads of open periods


LazyLedgerMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLazyLedger = LazyLedgerMachine.TestCase


# ----------------------------------------------------------------------
# PeriodBoards and restore_periodic on their own
# ----------------------------------------------------------------------
def _loader(loads: list[str], items: dict[str, int]) -> Any:
    def load(path: str) -> Leaderboard:
        loads.append(path)
        board = Leaderboard()
        board.set_many(items)
        return board

    return load


def test_period_boards_load_once_on_every_kind_of_read(tmp_path: Path) -> None:
    for read in ("getitem", "get", "values", "items", "pop", "setdefault", "copy"):
        loads: list[str] = []
        boards = PeriodBoards()
        boards["a"] = Unloaded(str(tmp_path / "a.snap"), _loader(loads, {"ann": 3}))
        boards["b"] = Leaderboard()
        if read == "getitem":
            got = boards["a"]
        elif read == "get":
            got = boards.get("a")
        elif read == "values":
            got = boards.values()[0]
        elif read == "items":
            got = dict(boards.items())["a"]
        elif read == "pop":
            got = boards.pop("a")
            assert "a" not in boards
        elif read == "setdefault":
            got = boards.setdefault("a", Leaderboard())
        else:
            got = boards.copy()["a"]
        assert got.items() == [("ann", 3)], read
        assert len(loads) == 1, read
        if read != "pop":
            assert boards["a"] is got and len(loads) == 1  # loaded once, kept
        assert boards.unloaded() == []
    assert PeriodBoards().get("x", 7) == 7
    with pytest.raises(KeyError):
        PeriodBoards().pop("x")


def test_period_boards_check_fails_on_an_open_or_missing_period(tmp_path: Path) -> None:
    path = tmp_path / "a.snap"
    boards = PeriodBoards()
    boards["a"] = Unloaded(str(path), _loader([], {}))
    with pytest.raises(AssertionError, match="not closed"):
        boards.check(set())
    with pytest.raises(AssertionError, match="no file"):
        boards.check({"a"})
    path.write_bytes(b"")
    boards.check({"a"})


def test_restore_periodic_refuses_an_unloaded_open_period(tmp_path: Path) -> None:
    daily = PeriodicLeaderboard("daily", clock=lambda: 90_000.0)
    lazy = Unloaded(str(tmp_path / "a.snap"), _loader([], {}))
    with pytest.raises(ValueError, match="open"):
        restore_periodic(daily, 90_000.0, [("1970-01-02", False, lazy)])


def test_threads_reading_an_unloaded_period_load_it_once(tmp_path: Path) -> None:
    with make(str(tmp_path)) as ledger:
        fill(ledger, 3)
        ledger.compact()
        want = ledger["daily"].board("2027-01-04").items()
    with make(str(tmp_path)) as again:
        daily = again["daily"]
        lazy = daily._boards.peek("2027-01-04")
        assert is_unloaded(lazy)
        loads: list[str] = []
        inner = lazy.load_from  # type: ignore[union-attr]

        def counted(path: str) -> Leaderboard:
            loads.append(path)
            return inner(path)

        lazy.load_from = counted  # type: ignore[union-attr]
        start = threading.Barrier(4)
        got: list[Any] = []

        def read() -> None:
            start.wait()
            got.append(daily.board("2027-01-04").items())

        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert got == [want] * 4 and len(loads) == 1
        again._check()
