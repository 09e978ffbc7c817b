"""The PostgreSQL event store on a real server: order, gaps, retries, processes, crashes.

The session's server (``postgres_url``) serves the tests that do not stop
it, each on a table of its own; the restart test starts a private server.
Writer processes are real child processes (``pg_child.py``); every
process's views are compared with a reference built from the table, one
event at a time, without the fold.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_child import dump_views, make_views
from postgres_service import postgres_url_fixture, private_postgres  # noqa: F401

from rankengine import Leaderboard
from rankengine.pg.events import NewEvent, StoreEvent, encode_event
from rankengine.pg.follower import BoardView, Follower
from rankengine.pg.store import EventStore, StoreUnavailableError

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")
CHILD = Path(__file__).with_name("pg_child.py")


def _table() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    s = EventStore(postgres_url, table=_table(), retry_seconds=5)
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _all(store: EventStore) -> list[StoreEvent]:
    events: list[StoreEvent] = []
    for chunk in store.chunks(0, size=500):
        events.extend(chunk)
    return events


def _reference(store: EventStore) -> dict[str, Any]:
    """Every view built from the table one event at a time (no fold)."""
    follower = Follower(store)
    make_views(follower)
    for view in follower.views.values():
        assert isinstance(view, BoardView)
        view.foldable = False
    follower.apply(_all(store))
    return json.loads(json.dumps(dump_views(follower)))


def _model_scores(events: list[StoreEvent]) -> dict[str, Any]:
    """The all-time scores by the simplest model: a dict."""
    scores: dict[str, Any] = {}
    for e in events:
        if e.op == "incr":
            scores[e.member] = scores.get(e.member, 0) + e.value
        elif e.op == "set":
            scores[e.member] = e.value
        elif e.op == "remove":
            scores.pop(e.member, None)
    return scores


# -- one process ---------------------------------------------------------------


def test_append_and_read_back(store: EventStore) -> None:
    first = store.append("incr", "ann", 5, time_ms=1000, attrs={"region": "eu"})
    seqs = store.append_many([NewEvent("incr", "bob", 3, 1001), NewEvent("set", "ann", 10, 1002)])
    assert seqs == sorted(seqs) and seqs[0] > first
    events = store.read(0)
    assert [(e.op, e.member, e.value) for e in events] == [
        ("incr", "ann", 5),
        ("incr", "bob", 3),
        ("set", "ann", 10),
    ]
    assert events[0].attrs == {"region": "eu"} and events[2].time_ms == 1002
    assert store.read(seqs[0]) == events[2:]
    assert store.head() == seqs[-1]
    assert [e for chunk in store.chunks(0, size=2) for e in chunk] == events


def test_a_bad_event_is_refused_and_nothing_is_written(store: EventStore) -> None:
    store.append("incr", "ann", 1)
    for bad in (
        [NewEvent("incr", "bob", 1), NewEvent("jump", "bob", 1)],
        [NewEvent("incr", "bob", float("nan"))],
        [NewEvent("incr", ["list"], 1)],
        [NewEvent("set", "bob", "high")],
        [NewEvent("incr", "bob", 1, -5)],
    ):
        with pytest.raises((ValueError, TypeError)):
            store.append_many(bad)
    with pytest.raises(ValueError, match="key"):
        store.append_many([NewEvent("incr", "bob", 1)], key=b"")
    assert len(store.read(0)) == 1


def test_appending_again_with_the_same_key_stores_the_events_once(store: EventStore) -> None:
    events = [NewEvent("incr", "ann", 1), NewEvent("incr", "bob", 2)]
    first = store.append_many(events, key=b"key-one")
    store.append("incr", "cy", 1)
    again = store.append_many(events, key=b"key-one")  # a retry after a lost reply
    assert again == first == [first[0], first[0] + 1]
    assert len(store.read(0)) == 3
    with pytest.raises(ValueError, match="names one append"):
        store.append_many(events[:1], key=b"key-one")


def test_a_rolled_back_append_leaves_a_gap_that_readers_pass(store: EventStore) -> None:
    store.append("incr", "ann", 1)
    with psycopg.connect(store.conninfo) as conn:
        conn.execute(f"SELECT * FROM {store.table}_append(%s, %s)", (b"rolled-back", [b"\x90"]))
        conn.rollback()
    store.append("incr", "ann", 2)
    seqs = [e.seq for e in store.read(0)]
    assert len(seqs) == 2 and seqs[1] == seqs[0] + 2  # the gap stays a gap
    follower = Follower(store)
    view = follower.add("all", Leaderboard())
    assert follower.catch_up() == 2
    assert view.board.items() == [("ann", 3)]


def test_commits_are_visible_in_seq_order(store: EventStore) -> None:
    """The late-commit hazard: an append that takes a seq and commits late
    must not let a later seq become visible first (a reader would skip it)."""
    store.append("incr", "a", 1)
    slow = psycopg.connect(store.conninfo)
    try:
        # an append in progress: it holds the lock and its seq, uncommitted
        slow.execute(
            f"SELECT * FROM {store.table}_append(%s, %s)",
            (b"slow", [store_payload("incr", "slow", 1)]),
        )
        other = EventStore(store.conninfo, table=store.table, create=False)
        done: list[int] = []
        thread = threading.Thread(
            target=lambda: done.extend(other.append_many([NewEvent("incr", "fast", 1)]))
        )
        thread.start()
        time.sleep(0.5)
        assert done == []  # the second append waits for the first's commit
        assert [e.member for e in store.read(0)] == ["a"]  # nothing past a gap is visible
        slow.commit()
        thread.join(10)
        other.close()
    finally:
        slow.close()
    events = store.read(0)
    assert [e.member for e in events] == ["a", "slow", "fast"]
    assert events[1].seq < events[2].seq == done[0]


def store_payload(op: str, member: str, value: Any) -> bytes:
    return encode_event(NewEvent(op, member, value, 0))


def test_wait_wakes_when_an_append_commits(store: EventStore) -> None:
    reader = EventStore(store.conninfo, table=store.table, create=False)
    try:
        assert reader.wait(0.1)  # the first call starts listening: read first
        assert not reader.wait(0.2)
        threading.Timer(0.2, lambda: store.append("incr", "ann", 1)).start()
        start = time.monotonic()
        assert reader.wait(5)
        assert time.monotonic() - start < 5
        assert [e.member for e in reader.read(0)] == ["ann"]
    finally:
        reader.close()


def test_a_view_refuses_alike_and_skips_what_it_has(store: EventStore) -> None:
    store.append_many([NewEvent("incr", "ann", 1), NewEvent("meta", "nobody", {"x": 1})])
    follower = Follower(store)
    view = follower.add("all", Leaderboard())
    assert follower.catch_up() == 2 and view.refused == 1  # meta for an absent member
    assert follower.apply(store.read(0)) == 0  # read twice: applied once
    assert view.board.items() == [("ann", 1)]


# -- many processes -------------------------------------------------------------


def _spawn(
    conninfo: str, table: str, writer: int, tmp: Path, *, count: int, batch: int, total: int | None
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        str(CHILD),
        conninfo,
        table,
        str(writer),
        str(count),
        str(batch),
        str(tmp / f"acks-{writer}"),
        str(tmp / f"out-{writer}.json"),
    ]
    if total is not None:
        args.append(str(total))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHILD.parent), *sys.path])}
    return subprocess.Popen(args, env=env)


def _acked(tmp: Path, writer: int) -> list[tuple[int, int, int]]:
    path = tmp / f"acks-{writer}"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        for item in line.split():
            seq, w, n = item.split(":")
            out.append((int(seq), int(w), int(n)))
    return out


@pytest.mark.parametrize("writers", [2, 4])
def test_writer_processes_score_into_one_stream_and_every_view_agrees(
    store: EventStore, tmp_path: Path, writers: int
) -> None:
    count = 300
    total = writers * count
    children = [
        _spawn(
            store.conninfo,
            store.table,
            w,
            tmp_path,
            count=count,
            batch=1 if w % 2 else 25,
            total=total,
        )
        for w in range(writers)
    ]
    for child in children:
        assert child.wait(240) == 0
    events = _all(store)
    assert len(events) == total
    assert sorted((e.attrs or {})["w"] * count + (e.attrs or {})["n"] for e in events) == list(
        range(total)
    )
    reference = _reference(store)
    assert dict(reference["all"]) == _model_scores(events)
    for w in range(writers):
        assert json.loads((tmp_path / f"out-{w}.json").read_text()) == reference
    # a process joining late catches up to the same views
    late = Follower(EventStore(store.conninfo, table=store.table, create=False))
    make_views(late)
    late.catch_up()
    assert json.loads(json.dumps(dump_views(late))) == reference
    late.store.close()


def test_a_writer_killed_mid_write_loses_nothing_it_acknowledged(
    store: EventStore, tmp_path: Path
) -> None:
    child = _spawn(store.conninfo, store.table, 0, tmp_path, count=100_000, batch=5, total=None)
    deadline = time.monotonic() + 60
    while len(_acked(tmp_path, 0)) < 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    acked = _acked(tmp_path, 0)
    assert len(acked) >= 200
    events = {e.seq: e for e in _all(store)}
    for seq, _, n in acked:
        assert (events[seq].attrs or {})["n"] == n  # acknowledged: stored, as acknowledged
    # nothing half-written: batches of 5, all or none
    assert len(events) % 5 == 0 and len(events) - len(acked) in (0, 5)
    ns = [(e.attrs or {})["n"] for e in events.values()]
    assert sorted(ns) == list(range(len(ns)))  # no event twice, none skipped
    assert dict(_reference(store)["all"]) == _model_scores(list(events.values()))


def test_the_database_restarted_under_load(tmp_path: Path) -> None:
    with private_postgres() as server:
        table = _table()
        EventStore(server.url, table=table).close()
        count = 600
        child = _spawn(server.url, table, 0, tmp_path, count=count, batch=3, total=None)
        deadline = time.monotonic() + 60
        while len(_acked(tmp_path, 0)) < 60 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()  # a crash under load: SIGKILL, then crash recovery
        time.sleep(1.0)
        server.start()
        assert child.wait(240) == 0  # the writer retried through it and finished
        assert int((tmp_path / "acks-0.reconnects").read_text()) > 0  # it did fail, and retry
        store = EventStore(server.url, table=table, create=False)
        events = _all(store)
        ns = sorted((e.attrs or {})["n"] for e in events)
        assert ns == list(range(count))  # every event once: none lost, none twice
        acked = _acked(tmp_path, 0)
        by_seq = {e.seq: e for e in events}
        assert all((by_seq[s].attrs or {})["n"] == n for s, _, n in acked)
        assert dict(_reference(store)["all"]) == _model_scores(events)
        assert store.reconnects == 0
        store.close()


def test_an_unreachable_store_surfaces_a_clear_error_with_the_key() -> None:
    with private_postgres() as server:
        store = EventStore(server.url, table=_table(), retry_seconds=0.5)
        store.append("incr", "ann", 1)
        server.stop()
        with pytest.raises(StoreUnavailableError, match="unreachable") as info:
            store.append_many([NewEvent("incr", "ann", 1), NewEvent("incr", "bob", 1)])
        key = info.value.key
        assert key is not None
        server.start()
        store.append_many([NewEvent("incr", "ann", 1), NewEvent("incr", "bob", 1)], key=key)
        store.append_many([NewEvent("incr", "ann", 1), NewEvent("incr", "bob", 1)], key=key)
        assert len(store.read(0)) == 3
        store.close()
