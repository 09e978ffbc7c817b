"""Typed columns, PostgreSQL's fold of a catch-up, the version 1 tables (real server).

The fold's model is the board itself, fed every event one by one: after a
catch-up folded by PostgreSQL, a board must hold the same members, scores
and *order* (ties: first to reach a score ranks first) as that one, on
random streams with few members (many ties), increments by zero, sets to
the score held, removals, and payload rows (floats, metadata) that cut
the fold.  A table of the earlier layout (version 1) opens, is followed,
and is upgraded in one transaction (an upgrade cut off midway leaves
version 1).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_service import postgres_url_fixture  # noqa: F401

from rankengine import Leaderboard
from rankengine.pg.catchup import fold_in_sql, replay_members
from rankengine.pg.columns import is_typed
from rankengine.pg.events import NewEvent, StoreEvent, encode_event
from rankengine.pg.follower import Follower, apply_event
from rankengine.pg.schema import upgrade_sql
from rankengine.pg.store import LOCK_CLASS, EventStore

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")


def _table() -> str:
    return f"c_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    s = EventStore(postgres_url, table=_table(), retry_seconds=5)
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _reference(events: list[StoreEvent], board: Leaderboard) -> list[tuple[Any, Any]]:
    """The board fed every event one by one: the model."""
    for event in events:
        with contextlib.suppress(ValueError, TypeError, KeyError, OverflowError):
            apply_event(board, event, False)
    board._check()
    return board.items()


def _caught_up(store: EventStore, board: Leaderboard, *, sql: bool) -> list[tuple[Any, Any]]:
    reader = EventStore(store.conninfo, table=store.table, create=False)
    follower = Follower(reader, fold_in_sql=sql)
    follower.add("all", board)
    follower.catch_up()
    follower.store.close()
    board._check()
    return board.items()


members = st.sampled_from(["a", "b", "c", "d", "e", "f"])
small = st.integers(-3, 3)
typed_events = st.one_of(
    st.tuples(st.just("incr"), members, small),
    st.tuples(st.just("incr"), members, small),
    st.tuples(st.just("set"), members, small),
    st.tuples(st.just("remove"), members, st.none()),
)
# rare events the columns do not hold: a float, metadata (payload rows)
payload_events = st.one_of(
    st.tuples(st.just("incr"), members, st.just(0.5)),
    st.tuples(st.just("meta"), members, st.just({"x": 1})),
)
streams = st.lists(
    st.one_of(typed_events, typed_events, typed_events, typed_events, payload_events),
    max_size=60,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    streams,
    st.sampled_from(["first", "member"]),
    st.sampled_from(["desc", "asc"]),
)
def test_a_folded_catch_up_equals_one_by_one(
    postgres_url: str, raw: list[tuple[str, Any, Any]], tie: str, order: str
) -> None:
    store = EventStore(postgres_url, table=_table())
    try:
        if raw:
            store.append_many([NewEvent(op, m, v, i) for i, (op, m, v) in enumerate(raw)])
        events = store.read(0, 1_000)

        def board() -> Leaderboard:
            return Leaderboard(tie_break=tie, order=order)  # type: ignore[arg-type]

        assert _caught_up(store, board(), sql=True) == _reference(events, board())
    finally:
        store.drop()
        store.close()


def test_the_sql_fold_covers_the_typed_rows_before_the_first_payload_row(
    store: EventStore,
) -> None:
    store.append_many([NewEvent("incr", "a", 5), NewEvent("incr", "b", 5), NewEvent("set", "a", 2)])
    store.append_many([NewEvent("incr", "c", 0.5), NewEvent("incr", "a", 3)])
    folded = fold_in_sql(store, 0)
    assert folded is not None
    assert folded.events == 3 and folded.upto == store.read(0)[2].seq
    assert folded.pairs == [("b", 5), ("a", 2)]  # a's last change came after b's
    assert fold_in_sql(store, store.head()) is None  # nothing past the head


def test_replay_members_follows_the_board_s_rule() -> None:
    # a set to the score held is no change; a remove then an incr is a new member
    rows = [(1, 0, "a", 5), (2, 0, "b", 5), (3, 1, "a", 5), (4, 2, "b", None), (5, 0, "b", 0)]
    assert replay_members(rows) == {"a": (5, 1), "b": (0, 5)}


def test_a_sum_past_64_bits_is_exact(store: EventStore) -> None:
    big = 2**62
    store.append_many([NewEvent("incr", "a", big)] * 4 + [NewEvent("incr", "b", 1)])
    board = Leaderboard()
    assert _caught_up(store, board, sql=True) == [("a", 4 * big), ("b", 1)]


def test_every_event_shape_reads_back_as_it_was_written(store: EventStore) -> None:
    shapes = [
        NewEvent("incr", "ann", 5, 1, {"region": "eu", "big": 2**70}),
        NewEvent("set", "ann", -(2**63), 2),
        NewEvent("remove", "ann", None, 3, {"r": [1, 2]}),
        NewEvent("incr", "ann", 2**63, 4),  # past bigint: payload
        NewEvent("incr", "ann", 1.5, 5),
        NewEvent("incr", b"bytes", 1, 6),
        NewEvent("incr", 42, 1, 7),
        NewEvent("incr", "nul\x00", 1, 8),
        NewEvent("incr", "\u00e9t\u00e9", 1, 10),
        NewEvent("set", "ann", 3, 11, None, "better", {"k": 1}),
        NewEvent("meta", "ann", {"k": 2}, 12),
        NewEvent("incr", "ann", (1, 2), 13),
    ]
    store.append_many(shapes)
    back = store.read(0)
    assert [tuple(e)[1:] for e in back] == [
        (e.op, e.member, tuple(e.value) if type(e.value) is tuple else e.value, *e[3:])
        for e in shapes
    ]
    typed = [is_typed(e) for e in shapes]
    assert typed == [True, True, True] + [False] * 5 + [True] + [False] * 3
    rows = store.select(f"SELECT count(*) FROM {store.table} WHERE payload IS NULL")
    assert rows[0][0] == sum(typed)


# -- the earlier layout (version 1) --------------------------------------------


def _v1_append(conninfo: str, table: str, events: list[NewEvent], key: bytes) -> None:
    """An append as the earlier release sends it (its function, payloads)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            f"SELECT * FROM {table}_append(%s, %s)", (key, [encode_event(e) for e in events])
        )


def test_a_version_1_table_is_followed_then_upgraded(postgres_url: str) -> None:
    table = _table()
    old = EventStore(postgres_url, table=table, create=False)
    old.create_legacy()
    assert old.version == 1
    try:
        first = [NewEvent("incr", f"p{i % 7}", 1 + i % 3, i) for i in range(50)]
        _v1_append(postgres_url, table, first, b"old-writer-1")
        opened = EventStore(postgres_url, table=table)  # opens as it is: version 1
        assert opened.version == 1
        opened.append_many([NewEvent("set", "p1", 9, 60), NewEvent("incr", "p2", 1.5, 61)])
        reader = EventStore(postgres_url, table=table, create=False)
        follower = Follower(reader)
        view = follower.add("all", Leaderboard())
        follower.catch_up()
        assert reader.version == 1
        assert opened.upgrade() is True and opened.version == 2
        assert opened.upgrade() is False
        opened.append_many([NewEvent("incr", "p3", 4, 70), NewEvent("remove", "p4", None, 71)])
        _v1_append(postgres_url, table, [NewEvent("incr", "p5", 2, 72)], b"old-writer-2")
        # the reader opened as version 1 meets typed rows: it reads them
        follower.poll()
        assert reader.version == 2
        events = opened.read(0)
        assert len(events) == 55
        model = _reference(events, Leaderboard())
        assert view.board.items() == model
        assert _caught_up(opened, Leaderboard(), sql=True) == model
        # the old rows that fit are rewritten as typed rows: the fold covers them
        assert fold_in_sql(opened, 0) is None  # the first row is a payload row
        assert opened.convert_rows(batch=7) == 52  # 50 + the set + the old writer's
        assert opened.convert_rows() == 0
        assert opened.read(0) == events
        folded = fold_in_sql(opened, 0)
        assert folded is not None and folded.upto == events[51].seq - 1  # the float
        assert _caught_up(opened, Leaderboard(), sql=True) == model
        opened.close()
        reader.close()
    finally:
        old.drop()
        old.close()


def test_an_upgrade_cut_off_midway_leaves_version_1(postgres_url: str) -> None:
    table = _table()
    store = EventStore(postgres_url, table=table, create=False)
    store.create_legacy()
    try:
        _v1_append(postgres_url, table, [NewEvent("incr", "a", 1)], b"k1")
        conn = psycopg.connect(postgres_url)
        for statement in upgrade_sql(table, LOCK_CLASS, store._lock_key)[:3]:
            conn.execute(statement)
        # the upgrading process dies before its commit: the server rolls back
        with psycopg.connect(postgres_url, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        conn.close()
        assert store.detect_version() == 1
        assert [e.member for e in store.read(0)] == ["a"]
        assert store.upgrade() is True
        store.append("incr", "b", 2)
        assert [(e.member, e.value) for e in store.read(0)] == [("a", 1), ("b", 2)]
    finally:
        store.drop()
        store.close()
