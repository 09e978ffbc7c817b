"""Local view snapshots of a follower (real PostgreSQL server).

A follower restarted from its snapshots must equal one that replayed the
whole table and the reference (a board fed every event one by one); a
damaged or missing snapshot is rebuilt from the store with a warning; a
follower killed (SIGKILL) while writing a snapshot leaves the old snapshot
or the new one, and either catches up to the same boards.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_service import postgres_url_fixture  # noqa: F401

from rankengine import Leaderboard
from rankengine.durable.records import CRASH_ENV
from rankengine.pg.events import NewEvent
from rankengine.pg.follower import BoardView, Follower, apply_event
from rankengine.pg.snapshots import SnapshotWarning, ViewSnapshots
from rankengine.pg.store import EventStore

pytestmark = pytest.mark.postgres

TESTS = Path(__file__).resolve().parent
#: Members the events are spread over: few, so there are many ties.
PLAYERS = 30


def _eu(event: Any) -> bool:
    return (event.attrs or {}).get("region") == "eu"


def make_views(follower: Follower) -> None:
    """The views of every follower here (the crash child builds the same)."""
    follower.add("all", Leaderboard())
    follower.add("eu", Leaderboard(), route=_eu)
    follower.add("low", Leaderboard(order="asc", tie_break="member"))


def _events(count: int, seed: int) -> list[NewEvent]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        member = f"p{rng.randrange(PLAYERS)}"
        attrs = {"region": rng.choice(["eu", "us"]), "n": n}
        roll = rng.random()
        if roll < 0.8:
            out.append(NewEvent("incr", member, rng.choice([1, 2, 5, -3]), n, attrs))
        elif roll < 0.9:
            out.append(NewEvent("set", member, rng.choice([7, 2.5, 40]), n, attrs))
        else:
            out.append(NewEvent("remove", member, None, n, attrs))
    return out


def _reference(store: EventStore) -> dict[str, list[tuple[Any, Any]]]:
    """Every event of the table, one by one, into fresh boards."""
    boards = {
        "all": (Leaderboard(), None),
        "eu": (Leaderboard(), _eu),
        "low": (Leaderboard(order="asc", tie_break="member"), None),
    }
    for event in store.read(0, 10**9):
        for board, route in boards.values():
            if route is None or route(event):
                with contextlib.suppress(ValueError, TypeError, KeyError, OverflowError):
                    apply_event(board, event, False)  # refused: unchanged, as in a view
    return {name: board.items() for name, (board, _) in boards.items()}


def _state(follower: Follower) -> dict[str, list[tuple[Any, Any]]]:
    out = {}
    for name, view in follower.views.items():
        assert isinstance(view, BoardView)
        view.board._check()
        out[name] = view.board.items()
    return out


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    table = f"s_{uuid.uuid4().hex[:12]}"
    store = EventStore(postgres_url, table=table)
    yield store
    store.drop()
    store.close()


def _follower(store: EventStore, directory: Path | None, **options: Any) -> Follower:
    follower = Follower(store, snapshots=directory, chunk=97, **options)
    make_views(follower)
    return follower


def test_a_restart_from_snapshots_equals_a_full_replay(store: EventStore, tmp_path: Path) -> None:
    store.append_many(_events(700, seed=1))
    first = _follower(store, tmp_path / "snaps")  # no snapshot yet: built from the store
    first.catch_up()
    written = first.snapshot()
    assert written == {"all": 700, "eu": 700, "low": 700}
    store.append_many(_events(450, seed=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every snapshot loads: no warning
        restarted = _follower(store, tmp_path / "snaps")
    assert {v.position for v in restarted.views.values()} == {700}
    assert restarted.catch_up() == 450  # only what came after the snapshots
    replayed = _follower(store, None)
    assert replayed.catch_up() == 1150
    assert _state(restarted) == _state(replayed) == _reference(store)
    # and both follow alike afterwards
    store.append_many(_events(60, seed=3))
    restarted.poll()
    replayed.poll()
    assert _state(restarted) == _state(replayed) == _reference(store)


def test_views_with_different_positions_catch_up_from_the_lowest(
    store: EventStore, tmp_path: Path
) -> None:
    store.append_many(_events(300, seed=4))
    first = _follower(store, tmp_path)
    first.catch_up()
    first.snapshot()
    store.append_many(_events(200, seed=5))
    first.catch_up()
    # only "all" is written again: it reflects 500, the others 300
    files = ViewSnapshots(tmp_path)
    files.save(first.views["all"])
    restarted = _follower(store, tmp_path)
    assert {n: v.position for n, v in restarted.views.items()} == {
        "all": 500,
        "eu": 300,
        "low": 300,
    }
    assert restarted.position == 300
    restarted.catch_up()
    assert _state(restarted) == _reference(store)


@pytest.mark.parametrize("damage", ["flip", "truncate", "remove", "foreign"])
def test_a_damaged_or_missing_snapshot_is_rebuilt_with_a_warning(
    store: EventStore, tmp_path: Path, damage: str
) -> None:
    store.append_many(_events(500, seed=6))
    first = _follower(store, tmp_path)
    first.catch_up()
    first.snapshot()
    store.append_many(_events(100, seed=7))
    path = tmp_path / "eu.snap"
    data = path.read_bytes()
    if damage == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1 :])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) - 7])
    elif damage == "remove":
        path.unlink()
    else:  # another view's file under this name
        path.write_bytes((tmp_path / "all.snap").read_bytes())
    with pytest.warns(SnapshotWarning, match="'eu'"):
        restarted = _follower(store, tmp_path)
    assert restarted.views["eu"].position == 0
    assert restarted.views["all"].position == 500
    restarted.catch_up()
    assert _state(restarted) == _reference(store)


def test_a_snapshot_ahead_of_the_store_is_not_loaded(store: EventStore, tmp_path: Path) -> None:
    store.append_many(_events(200, seed=8))
    first = _follower(store, tmp_path)
    first.catch_up()
    first.snapshot()
    other = EventStore(store.conninfo, table=f"s_{uuid.uuid4().hex[:12]}")
    try:
        other.append_many(_events(50, seed=9))  # a younger store: its head is 50
        with pytest.warns(SnapshotWarning, match="past the store"):
            restarted = _follower(other, tmp_path)
        restarted.catch_up()
        assert _state(restarted) == _reference(other)
    finally:
        other.drop()
        other.close()


def test_snapshots_every_n_events(store: EventStore, tmp_path: Path) -> None:
    follower = _follower(store, tmp_path, snapshot_every=250)
    store.append_many(_events(600, seed=10))
    follower.catch_up()
    assert sorted(os.listdir(tmp_path)) == ["all.snap", "eu.snap", "low.snap"]
    restarted = _follower(store, tmp_path)
    assert restarted.views["all"].position == 600  # written at the end of the catch-up
    store.append_many(_events(100, seed=11))
    follower.poll()  # 100 < 250 since the last: not written
    again = _follower(store, tmp_path)
    assert again.views["all"].position == 600
    store.append_many(_events(200, seed=12))
    follower.poll()  # 300 since the last: written once 250 were (reads are chunks of 97)
    latest = _follower(store, tmp_path)
    assert 600 + 250 <= latest.views["all"].position <= 900
    latest.catch_up()
    assert _state(latest) == _state(follower) == _reference(store)


def test_bad_options_and_names_are_refused(store: EventStore, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="snapshot_every"):
        Follower(store, snapshot_every=10)
    with pytest.raises(ValueError, match="snapshot_every"):
        Follower(store, snapshots=tmp_path, snapshot_every=0)
    follower = Follower(store, snapshots=tmp_path)
    with pytest.raises(ValueError, match="cannot name a snapshot file"):
        follower.add("../escape", Leaderboard())
    assert follower.views == {}
    with pytest.raises(ValueError, match="no snapshots directory"):
        Follower(store).snapshot()


@pytest.mark.parametrize("step", ["snapshot_write", "snapshot_rename", "after_snapshot_rename"])
def test_a_kill_during_a_snapshot_write_leaves_the_old_or_the_new(
    store: EventStore, tmp_path: Path, step: str
) -> None:
    store.append_many(_events(400, seed=13))
    first = _follower(store, tmp_path)
    first.catch_up()
    first.snapshot()
    store.append_many(_events(300, seed=14))
    env = dict(os.environ, **{CRASH_ENV: step})
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    child = subprocess.run(
        [sys.executable, str(TESTS / "pgsnap_child.py"), store.conninfo, store.table, tmp_path],
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr.decode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # old or new, never damaged
        restarted = _follower(store, tmp_path)
    # the child writes "all" first and dies in it (or just after its rename)
    expected = 700 if step == "after_snapshot_rename" else 400
    assert restarted.views["all"].position == expected
    assert restarted.views["eu"].position == 400
    restarted.catch_up()
    assert _state(restarted) == _reference(store)
    # the next snapshot replaces a leftover .tmp
    restarted.snapshot()
    assert sorted(os.listdir(tmp_path)) == ["all.snap", "eu.snap", "low.snap"]


@pytest.mark.filterwarnings("ignore::rankengine.pg.snapshots.SnapshotWarning")
def test_snapshots_taken_while_a_thread_follows(store: EventStore, tmp_path: Path) -> None:
    follower = _follower(store, tmp_path)
    writer = EventStore(store.conninfo, table=store.table, create=False)  # one per thread
    stop = threading.Event()
    thread = threading.Thread(target=follower.follow, args=(stop,), kwargs={"timeout": 0.05})
    thread.start()
    try:
        for seed in range(20, 26):
            writer.append_many(_events(150, seed=seed))
            written = follower.snapshot()  # between two applies, never inside one
            assert len(set(written.values())) == 1
    finally:
        stop.set()
        thread.join()
        writer.close()
    restarted = _follower(store, tmp_path)
    restarted.catch_up()
    assert _state(restarted) == _reference(store)
