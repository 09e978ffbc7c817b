"""Local view snapshots of a PgLedger (real PostgreSQL server).

Every view kind the ledger keeps (boards, routed and keyed boards, a
periodic board with closed periods, a sliding window, a decayed board) is
snapshotted; a ledger restarted from its snapshots reads only the events
after them and equals a ledger that replayed the whole table; a damaged,
missing or foreign snapshot is rebuilt from the store with a warning; a
process killed (SIGKILL) at each step of a snapshot write leaves the old
snapshot or the new one, never a damaged one.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_service import postgres_url_fixture  # noqa: F401

from rankengine.durable.records import CRASH_ENV
from rankengine.pg.events import NewEvent
from rankengine.pg.ledger import PgLedger
from rankengine.pg.snapshots import SnapshotWarning
from rankengine.pg.store import EventStore

pytestmark = pytest.mark.postgres

TESTS = Path(__file__).resolve().parent
HOUR_MS = 3_600_000
T0 = 1_800_000_000_000


def add_views(ledger: PgLedger) -> None:
    """The views of every ledger here (the crash child adds the same)."""
    ledger.add_view("alltime", "board")
    ledger.add_view("eu", "board", where={"region": "eu"})
    ledger.add_view("by_mode", "board", by="mode")
    ledger.add_view("daily", "periodic", calendar="daily", keep=3, late="drop")
    ledger.add_view("last3h", "window", calendar="hourly", buckets=3)
    ledger.add_view("hot", "decayed", half_life=3600.0)


def _state(ledger: PgLedger) -> dict[str, Any]:
    ledger._check()
    daily = ledger["daily"]
    return {
        "alltime": ledger["alltime"].items(),
        "eu": ledger["eu"].items(),
        "by_mode": {k: ledger["by_mode"][k].items() for k in sorted(ledger["by_mode"])},
        "daily": {p.name: daily.board(p).items() for p in daily.periods()},
        "last3h": ledger["last3h"].items(),
        "hot": ledger["hot"].items(),
        "refused": ledger.refused,
    }


def _events(count: int, seed: int, start_ms: int) -> list[NewEvent]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        member = f"p{rng.randrange(12)}"
        attrs = {"region": rng.choice(["eu", "us"]), "mode": rng.choice(["solo", "duo"])}
        t = start_ms + n * HOUR_MS // 7  # a few events an hour, over days
        roll = rng.random()
        if roll < 0.85:
            out.append(NewEvent("incr", member, rng.choice([1, 2, 5]), t, attrs))
        elif roll < 0.95:
            out.append(NewEvent("set", member, rng.randrange(50), t, attrs))
        else:
            out.append(NewEvent("remove", member, None, t, attrs))
    return out


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    s = EventStore(postgres_url, table=f"ls_{uuid.uuid4().hex[:12]}")
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _ledger(store: EventStore, directory: Path | None, **options: Any) -> PgLedger:
    ledger = PgLedger(
        EventStore(store.conninfo, table=store.table, create=False), snapshots=directory, **options
    )
    add_views(ledger)
    return ledger


def _replayed(store: EventStore) -> dict[str, Any]:
    ledger = _ledger(store, None)
    ledger.sync()
    state = _state(ledger)
    ledger.close()
    return state


@pytest.mark.filterwarnings("ignore::rankengine.pg.snapshots.SnapshotWarning")
def test_a_restart_from_snapshots_equals_a_full_replay(store: EventStore, tmp_path: Path) -> None:
    store.append_many(_events(500, seed=1, start_ms=T0))
    first = _ledger(store, tmp_path)
    assert first.sync() == 500
    written = first.snapshot()
    assert set(written.values()) == {store.head()}
    first.close()
    store.append_many(_events(120, seed=2, start_ms=T0 + 500 * HOUR_MS // 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every snapshot loads
        restarted = _ledger(store, tmp_path)
    assert restarted.last_seq == written["alltime"]
    assert restarted.sync() == 120  # only what came after the snapshots
    assert _state(restarted) == _replayed(store)
    # and it goes on recording like any ledger
    restarted.record("p1", 3, attrs={"region": "eu", "mode": "solo"}, t_ms=T0 + 200 * HOUR_MS)
    assert _state(restarted) == _replayed(store)
    restarted.close()


def test_snapshots_every_n_events(store: EventStore, tmp_path: Path) -> None:
    with pytest.warns(SnapshotWarning, match="there is none"):
        ledger = _ledger(store, tmp_path, snapshot_every=100)
    store.append_many(_events(250, seed=3, start_ms=T0))
    ledger.sync()
    assert sorted(p.name for p in tmp_path.glob("*.ledger.snap")) == sorted(
        f"{v}.ledger.snap" for v in ledger.views
    )
    ledger.close()
    with pytest.raises(ValueError, match="positive"):
        PgLedger(store, snapshots=tmp_path, snapshot_every=0)
    with pytest.raises(ValueError, match="directory"):
        PgLedger(store, snapshot_every=10)
    with pytest.raises(ValueError, match="no snapshots directory"):
        PgLedger(store).snapshot()


@pytest.mark.parametrize("damage", ["truncated", "flipped", "missing part", "foreign", "ahead"])
def test_a_bad_snapshot_is_rebuilt_from_the_store_with_a_warning(
    store: EventStore, tmp_path: Path, damage: str
) -> None:
    store.append_many(_events(300, seed=4, start_ms=T0))
    with pytest.warns(SnapshotWarning):
        first = _ledger(store, tmp_path)
    first.sync()
    first.snapshot()
    first.close()
    index = tmp_path / "daily.ledger.snap"
    parts = sorted(tmp_path.glob("daily.*.part.snap"))
    assert len(parts) >= 2  # the periods
    if damage == "truncated":
        data = parts[-1].read_bytes()
        parts[-1].write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        data = bytearray(index.read_bytes())
        data[len(data) // 2] ^= 0xFF
        index.write_bytes(bytes(data))
    elif damage == "missing part":
        parts[0].unlink()
    elif damage == "foreign":
        os.replace(tmp_path / "eu.ledger.snap", index)
    else:  # the store was dropped and made again: the snapshot is ahead of it
        store.drop()
        store = EventStore(store.conninfo, table=store.table)
        store.append_many(_events(50, seed=5, start_ms=T0))
    with pytest.warns(SnapshotWarning, match="'daily'"):
        restarted = _ledger(store, tmp_path)
    restarted.sync()
    assert _state(restarted) == _replayed(store)
    restarted.close()


@pytest.mark.parametrize("step", ["snapshot_write", "snapshot_rename", "after_snapshot_rename"])
def test_a_kill_during_a_snapshot_write_leaves_the_old_or_the_new(
    store: EventStore, tmp_path: Path, step: str
) -> None:
    store.append_many(_events(300, seed=6, start_ms=T0))
    with pytest.warns(SnapshotWarning):
        first = _ledger(store, tmp_path)
    first.sync()
    first.snapshot()
    first.close()
    before = store.head()
    store.append_many(_events(200, seed=7, start_ms=T0 + 300 * HOUR_MS // 7))
    env = dict(os.environ, **{CRASH_ENV: step})
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    child = subprocess.run(
        [sys.executable, str(TESTS / "pgledger_child.py"), store.conninfo, store.table, tmp_path],
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr.decode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # old or new, never damaged
        restarted = _ledger(store, tmp_path)
    # the child dies in the first file it writes: alltime's only part (or
    # just after renaming it, which no index names yet)
    assert restarted.last_seq == before
    restarted.sync()
    assert _state(restarted) == _replayed(store)
    restarted.snapshot()  # replaces the leftovers
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if n.endswith(".tmp")]
    assert len([n for n in names if n.startswith("alltime.")]) == 2  # its index, one part
    restarted.close()
