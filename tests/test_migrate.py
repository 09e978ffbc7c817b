"""`rankengine migrate`: an old durable directory becomes a one-view ledger.

Round trips for every old kind (durable board, periodic board, sliding
window, decayed board) on both backends, compared with the old store
reopened; SIGKILL of a real migrating process at every step (the
directory then opens as the old kind or as the ledger, with the same
state, and a second migrate finishes); a second migrate is a no-op; a
wrong or empty directory is refused and left as it was.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from rankengine import (
    DecayedLeaderboard,
    Leaderboard,
    Ledger,
    PeriodicLeaderboard,
    SlidingWindowLeaderboard,
    open_board,
)
from rankengine.cli.main import main as cli_main
from rankengine.durable.kinds import BOARD, DECAYED, LEDGER, MIGRATE_JOURNAL, PERIODIC, what_is_in
from rankengine.durable.records import CRASH_ENV, LogError
from rankengine.ledger.migrate import STAGING_DIR, migrate
from rankengine.timed.state import decayed_state, periodic_state, window_state

CHILD = Path(__file__).with_name("migrate_child.py")
ROOT = Path(__file__).resolve().parent.parent
#: An hour boundary (2027-01-04T00:00Z), in seconds.
T0 = 1_799_020_800.0
BACKENDS = ["sortedlist", "skiplist"]
KINDS = ["board", "periodic", "window", "decayed"]
#: The options each kind's directory was opened with (what migrate needs).
OPTIONS: dict[str, dict[str, Any]] = {
    "board": {},
    "periodic": {"calendar": "hourly", "keep": 2},
    "window": {"kind": "window", "calendar": "hourly", "buckets": 3},
    "decayed": {"tau": 3600.0},
}


# ----------------------------------------------------------------------
# The state of each kind, read exactly
# ----------------------------------------------------------------------
def board_state(board: Leaderboard) -> tuple[Any, ...]:
    """Members in rank order (ties in their order), scores, metadata, clock."""
    board._check()
    items = board.items()
    return (items, {m: board.meta(m) for m, _ in items}, board.clock)


def periods_state(periodic: PeriodicLeaderboard) -> tuple[Any, ...]:
    now, held = periodic_state(periodic)
    return (now, sorted((n, c, board_state(b)) for n, c, b in held))


def state_of(kind: str, store: Any) -> tuple[Any, ...]:
    if kind == "board":
        return board_state(store)
    if kind == "periodic":
        store._check()
        return periods_state(store)
    if kind == "window":
        store._check()
        as_of, board = window_state(store)
        return (periods_state(store.buckets), as_of, board_state(board))
    store._check()
    t0, _rebases, stored = decayed_state(store)
    return (t0, board_state(stored))


def open_old(kind: str, path: Path, backend: str, clock: list[float]) -> Any:
    if kind == "board":
        return open_board(path, fsync="never", backend=backend)
    if kind == "periodic":
        return PeriodicLeaderboard.open(
            path, "hourly", keep=2, clock=lambda: clock[0], fsync="never", backend=backend
        )
    if kind == "window":
        return SlidingWindowLeaderboard.open(
            path, "hourly", 3, clock=lambda: clock[0], fsync="never", backend=backend
        )
    return DecayedLeaderboard.open(
        path, tau=3600.0, clock=lambda: clock[0], fsync="never", backend=backend
    )


def fill(kind: str, path: Path, backend: str, seed: int) -> tuple[Any, ...]:
    """Write a history with ties, metadata and removals (periods closing);
    return the state the old store reopens with."""
    rng = random.Random(seed)
    clock = [T0]
    members = [f"p{i}" for i in range(12)]
    with open_old(kind, path, backend, clock) as store:
        for step in range(120):
            clock[0] = T0 + step * 90.0  # 3 hours in all: periods close, buckets slide
            member = rng.choice(members)
            roll = rng.random()
            if kind == "decayed":
                if roll < 0.1:
                    store.remove(member)
                else:
                    store.add(member, rng.choice([1.0, 2.0, 5.0]))
                if roll > 0.9:
                    store.set_meta(member, {"n": step})
                continue
            if roll < 0.08:
                store.remove(member)
            elif roll < 0.2:
                store.set(member, rng.choice([3, 5, 8]), meta={"at": step})
            else:
                store.incr(member, rng.choice([1, 2, 5]))  # small values: many ties
        if kind == "window":
            store.refresh()
    # reopened with a clock in the past: the state the files hold, time not moved
    with open_old(kind, path, backend, [T0 - 86_400.0]) as again:
        if kind == "window":
            again.refresh()
        return state_of(kind, again)


def ledger_state(kind: str, path: Path, view: str | None = None) -> tuple[Any, ...]:
    with Ledger.open(path) as ledger:
        ledger._check()
        assert ledger.views == [view or kind]
        return state_of(kind, ledger[view or kind])


def snapshot_tree(path: Path) -> dict[str, bytes]:
    out = {}
    for directory, _, names in os.walk(path):
        for name in names:
            if name == "LOCK":
                continue
            full = Path(directory) / name
            out[str(full.relative_to(path))] = full.read_bytes()
    return out


# ----------------------------------------------------------------------
# Round trips
# ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", KINDS)
def test_migrate_round_trip_keeps_the_state(tmp_path: Path, kind: str, backend: str) -> None:
    expected = fill(kind, tmp_path, backend, seed=KINDS.index(kind) * 7 + len(backend))
    assert expected != fill(kind, tmp_path / "other", backend, seed=99)  # (the check can fail)
    options = dict(OPTIONS[kind])
    done = migrate(tmp_path, backend=backend, **options)
    assert done.done and done.kind == kind and done.view == kind
    assert what_is_in(str(tmp_path)) == LEDGER
    assert not (tmp_path / STAGING_DIR).exists() and not (tmp_path / MIGRATE_JOURNAL).exists()
    leftovers = {"periods", "closed", "epoch"} & {n.split("-")[0] for n in os.listdir(tmp_path)}
    assert not leftovers
    assert ledger_state(kind, tmp_path) == expected
    # the ledger takes events from there on, and they survive a reopen
    with Ledger.open(tmp_path) as ledger:
        seen = ledger.record("p0", 1, t_ms=int((T0 + 3 * 3600) * 1000))
        assert seen.outcomes[0].score is not None
        after = state_of(kind, ledger[kind])
    assert ledger_state(kind, tmp_path) == after != expected


def test_migrate_names_the_view_and_keeps_settings(tmp_path: Path) -> None:
    with open_board(tmp_path, order="asc", tie_break="member", fsync="never") as board:
        board.set_many({"ann": 3, "bob": 3, "cid": 1})
        expected = board_state(board)
    done = migrate(tmp_path, view="alltime")
    assert done == (BOARD, "board", "alltime", 3, True)
    with Ledger.open(tmp_path) as ledger:
        alltime = ledger["alltime"]
        assert board_state(alltime) == expected
        assert alltime.config()["order"] == "asc" and alltime.config()["tie_break"] == "member"


def test_a_second_migrate_is_a_no_op(tmp_path: Path) -> None:
    fill("board", tmp_path, "sortedlist", seed=3)
    migrate(tmp_path)
    before = snapshot_tree(tmp_path)
    again = migrate(tmp_path)
    assert again.done is False and again.found == LEDGER and again.view == "board"
    assert snapshot_tree(tmp_path) == before


def test_migrate_of_an_empty_or_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="holds no durable board"):
        migrate(tmp_path)
    with pytest.raises(FileNotFoundError, match="holds no durable board"):
        migrate(tmp_path / "missing")
    assert os.listdir(tmp_path) == []
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileNotFoundError):
        migrate(tmp_path)
    assert os.listdir(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize(
    ("kind", "options", "error", "match"),
    [
        ("board", {"kind": "periodic"}, ValueError, "migrates to a view of kind 'board'"),
        ("periodic", {}, TypeError, "needs its calendar="),
        ("periodic", {"kind": "decayed", "calendar": "hourly"}, ValueError, "'periodic' or"),
        ("window", {"kind": "window", "calendar": "hourly"}, TypeError, "needs its buckets="),
        ("decayed", {}, TypeError, "needs its half_life= or tau="),
    ],
)
def test_a_wrong_migrate_is_refused_and_changes_nothing(
    tmp_path: Path, kind: str, options: dict[str, Any], error: type[Exception], match: str
) -> None:
    fill(kind, tmp_path, "sortedlist", seed=5)
    before = snapshot_tree(tmp_path)
    with pytest.raises(error, match=match):
        migrate(tmp_path, **options)
    assert snapshot_tree(tmp_path) == before
    assert what_is_in(str(tmp_path)) in (BOARD, PERIODIC, DECAYED)


def test_migrate_of_a_directory_open_elsewhere_is_refused(tmp_path: Path) -> None:
    with open_board(tmp_path, fsync="never") as board:
        board.set("ann", 1)
        with pytest.raises(LogError, match="already open"):
            migrate(tmp_path)
    assert what_is_in(str(tmp_path)) == BOARD


def test_the_old_opens_of_a_migrated_directory(tmp_path: Path) -> None:
    """A migrated periodic board opens with PeriodicLeaderboard.open again
    (each write an event); a window's and a decayed board's refuse by name."""
    expected = fill("periodic", tmp_path, "sortedlist", seed=8)
    migrate(tmp_path, calendar="hourly", keep=2)
    with PeriodicLeaderboard.open(tmp_path, "hourly", keep=2, clock=lambda: T0) as again:
        assert type(again).__name__ == "LedgerPeriodic"
        assert periods_state(again.periodic) == expected
    with pytest.raises(ValueError, match="holds a periodic view over 'hourly', not 'daily'"):
        PeriodicLeaderboard.open(tmp_path, "daily")
    with pytest.raises(ValueError, match="holds a ledger"):
        SlidingWindowLeaderboard.open(tmp_path, "hourly", 3)
    with pytest.raises(ValueError, match="holds a ledger"):
        DecayedLeaderboard.open(tmp_path, tau=60.0)


# ----------------------------------------------------------------------
# SIGKILL at every step
# ----------------------------------------------------------------------
#: The steps a migration passes, in order; the journal's rename is the switch.
STEPS = [
    "migrate_read",
    "after_ledger_manifest",  # (inside the staging: the staged ledger's manifest)
    "migrate_staged",
    "migrate_journal_rename",
    "after_migrate_journal",
    "migrate_rename",
    "after_migrate",
]
SWITCHED = STEPS.index("after_migrate_journal")


def run_child(path: Path, options: dict[str, Any], step: str | None) -> int:
    env = dict(os.environ)
    env.pop(CRASH_ENV, None)
    if step is not None:
        env[CRASH_ENV] = step
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(path), json.dumps(options)],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if step is None:
        assert proc.returncode == 0, proc.stderr
    return proc.returncode


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_each_step_leaves_the_old_store_or_the_ledger(
    tmp_path: Path, kind: str, step: str
) -> None:
    expected = fill(kind, tmp_path, "sortedlist", seed=STEPS.index(step))
    options = dict(OPTIONS[kind])
    code = run_child(tmp_path, options, step)
    assert code == -signal.SIGKILL, f"the child was not killed at {step}"
    found = what_is_in(str(tmp_path))
    if STEPS.index(step) < SWITCHED:
        assert found != LEDGER
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a recovery note is fine)
            with open_old(kind, tmp_path, "sortedlist", [T0 - 86_400.0]) as old:
                if kind == "window":
                    old.refresh()
                assert state_of(kind, old) == expected
    else:
        assert found == LEDGER
        assert ledger_state(kind, tmp_path) == expected  # (the open finishes the switch)
        assert not (tmp_path / MIGRATE_JOURNAL).exists()
    # a second migrate finishes (or does) the job
    migrate(tmp_path, **options)
    assert ledger_state(kind, tmp_path) == expected
    assert not (tmp_path / STAGING_DIR).exists()


# ----------------------------------------------------------------------
# What the ledger does with a migrated view
# ----------------------------------------------------------------------
def migrated_board(path: Path) -> tuple[Any, ...]:
    with open_board(path, fsync="never") as board:
        board.set_many({"ann": 5, "bob": 7, "cid": 5})
        board.set_meta("ann", {"team": "red"})
        expected = board_state(board)
    migrate(path, view="alltime")
    return expected


def test_a_view_added_later_sees_only_the_events_after_the_migration(tmp_path: Path) -> None:
    migrated_board(tmp_path)
    with Ledger.open(tmp_path) as ledger:
        ledger.record("dan", 4)
        ledger.add_view("fresh")
        assert ledger["fresh"].items() == [("dan", 4)]
        assert [m for m, _ in ledger["alltime"].items()] == ["bob", "ann", "cid", "dan"]


def test_a_damaged_snapshot_of_a_migrated_view_is_refused_not_emptied(tmp_path: Path) -> None:
    migrated_board(tmp_path)
    with Ledger.open(tmp_path) as ledger:
        ledger.record("dan", 4)
        ledger.compact()
    (snap,) = (tmp_path / "views" / "alltime").iterdir()
    data = bytearray(snap.read_bytes())
    data[-3] ^= 0xFF
    snap.write_bytes(bytes(data))
    with pytest.raises(LogError, match="migrated from a durable board"):
        Ledger.open(tmp_path)


def test_rebuilds_from_the_log_are_refused_for_a_migrated_view(tmp_path: Path) -> None:
    expected = migrated_board(tmp_path)
    with Ledger.open(tmp_path) as ledger:
        with pytest.raises(LogError, match="not rebuilt from the log"):
            ledger.rebuild_view("alltime")
        with pytest.raises(LogError, match="forget without from_log"):
            ledger.forget("ann", from_log=True)
        assert board_state(ledger["alltime"]) == expected
        assert ledger.forget("ann").present
        assert "ann" not in ledger["alltime"]
    with Ledger.open(tmp_path) as again:
        assert [m for m, _ in again["alltime"].items()] == ["bob", "cid"]
    assert b"ann" not in b"".join(snapshot_tree(tmp_path).values())


def test_the_cli_migrates_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill("periodic", tmp_path / "p", "sortedlist", seed=4)
    assert cli_main(["migrate", str(tmp_path / "p"), "calendar=hourly", "keep=2"]) == 0
    assert "a ledger with view 'periodic'" in capsys.readouterr().out
    assert cli_main(["migrate", str(tmp_path / "p")]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert cli_main(["verify", str(tmp_path / "p")]) == 0
    assert cli_main(["migrate", str(tmp_path / "empty")]) == 1
    assert "holds no durable board" in capsys.readouterr().err


def test_a_migrated_window_opens_with_its_open(tmp_path: Path) -> None:
    expected = fill("window", tmp_path, "skiplist", seed=12)
    migrate(tmp_path, **OPTIONS["window"])
    with SlidingWindowLeaderboard.open(tmp_path, "hourly", 3, clock=lambda: T0) as again:
        assert type(again).__name__ == "LedgerWindow"
        assert state_of("window", again.window) == expected
    with pytest.raises(ValueError, match="buckets=3"):
        SlidingWindowLeaderboard.open(tmp_path, "hourly", 4)


def test_a_migrated_decayed_board_opens_with_its_open(tmp_path: Path) -> None:
    expected = fill("decayed", tmp_path, "sortedlist", seed=13)
    migrate(tmp_path, **OPTIONS["decayed"])
    with DecayedLeaderboard.open(tmp_path, tau=3600.0, clock=lambda: T0) as again:
        assert type(again).__name__ == "LedgerDecayed"
        assert state_of("decayed", again.decayed) == expected
    with pytest.raises(ValueError, match=r"tau=3600\.0"):
        DecayedLeaderboard.open(tmp_path, tau=60.0)
