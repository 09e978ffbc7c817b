"""The Redis serving copy fed from the PostgreSQL store: once per event, repaired after a loss.

Real servers: the session's PostgreSQL and Redis.  The Redis board must hold
exactly what an in-process board built from the table holds (ties
included), after a flush, after a process restarts its applier, and after
the same events are read twice.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from postgres_service import postgres_url_fixture  # noqa: F401
from redis_service import redis_client_fixture, redis_server_fixture, redis_url_fixture  # noqa: F401

from rankengine import Leaderboard
from rankengine.pg.events import NewEvent
from rankengine.pg.follower import Follower, apply_event
from rankengine.pg.redis_view import REDIS_CHUNK, RedisView
from rankengine.pg.store import EventStore
from rankengine.redis.board import RedisLeaderboard

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def store(postgres_url: str) -> Iterator[EventStore]:
    s = EventStore(postgres_url, table=f"r_{uuid.uuid4().hex[:12]}", retry_seconds=5)
    try:
        yield s
    finally:
        s.drop()
        s.close()


def _board(client: Any, name: str | None = None) -> RedisLeaderboard:
    return RedisLeaderboard(client, name or f"pg-{uuid.uuid4().hex[:12]}")


def _write(store: EventStore, count: int, seed: int) -> None:
    rng = random.Random(seed)
    events = []
    for _ in range(count):
        member = f"p{rng.randrange(30)}"
        roll = rng.random()
        if roll < 0.85:
            events.append(NewEvent("incr", member, rng.choice((1, 2, 3, -1))))
        elif roll < 0.95:
            events.append(NewEvent("set", member, rng.randrange(20)))
        else:
            events.append(NewEvent("remove", member))
    for start in range(0, count, 500):
        store.append_many(events[start : start + 500])


def _reference(store: EventStore) -> list[tuple[Any, Any]]:
    board = Leaderboard()
    for chunk in store.chunks(0):
        for event in chunk:
            with contextlib.suppress(ValueError, TypeError, KeyError):
                apply_event(board, event, False)
    return board.items()


def test_redis_holds_the_store_s_events_once(store: EventStore, redis_client: Any) -> None:
    _write(store, REDIS_CHUNK * 2 + 300, seed=1)
    board = _board(redis_client)
    follower = Follower(store)
    view = follower.add_view(RedisView("serving", board))
    follower.catch_up()
    assert isinstance(view, RedisView)
    board._check()
    assert board.items() == _reference(store) == view.mirror.items()
    assert board.writes == store.head() == view.position
    # the same events again (a retry, a second read): nothing counted twice
    follower.apply(store.read(0))
    assert board.items() == _reference(store) and view.rebuilds == 0


def test_an_applier_restarted_resumes_from_redis_s_counter(
    store: EventStore, redis_client: Any
) -> None:
    _write(store, 1500, seed=2)
    board = _board(redis_client)
    first = Follower(store)
    first.add_view(RedisView("serving", board))
    first.catch_up()
    _write(store, 1500, seed=3)
    # a new process: its mirror starts empty, Redis is at the first's place
    handle = RedisLeaderboard(redis_client, board.name)
    second = Follower(EventStore(store.conninfo, table=store.table, create=False))
    view = second.add_view(RedisView("serving", handle))
    assert isinstance(view, RedisView) and view.stored == board.writes > 0
    second.catch_up()
    view.check()
    assert view.rebuilds == 0  # resumed, not rebuilt
    assert handle.items() == _reference(store)
    assert handle.writes == store.head()
    second.store.close()


def test_redis_flushed_is_rebuilt_from_the_store(store: EventStore, redis_client: Any) -> None:
    _write(store, 1200, seed=4)
    board = _board(redis_client)
    follower = Follower(store)
    view = follower.add_view(RedisView("serving", board))
    assert isinstance(view, RedisView)
    follower.catch_up()
    redis_client.flushall()  # Redis lost everything (restarted without persistence)
    _write(store, 700, seed=5)
    follower.poll()
    assert view.rebuilds == 1
    board._check()
    assert board.items() == _reference(store)
    assert board.writes == store.head()
    # lost while nothing was written: found by check() after a catch-up
    redis_client.flushall()
    follower.catch_up()
    view.check()
    assert view.rebuilds == 2 and board.items() == _reference(store)


def test_apply_at_refuses_a_stale_counter(redis_client: Any) -> None:
    board = _board(redis_client)
    assert board.apply_at([(0, "ann", 5, 1)], after=0, seq=7)
    assert board.writes == 7
    assert not board.apply_at([(0, "ann", 6, 2)], after=0, seq=8)  # replayed: refused
    assert board.items() == [("ann", 5)] and board.writes == 7
    with pytest.raises(ValueError):
        board.apply_at([(0, "ann", float("nan"), 2)], after=7, seq=8)
    assert board.items() == [("ann", 5)] and board.writes == 7
