"""The increment's packed call (rankengine.redis.incrcall) and the pooled
connection taken without redis-py's observability hooks
(DirectCalls.take/give): the same bytes as the general path, the pool's
books kept, the hooks' path whenever metrics are collected, a forked
child's board on its own connection; against a real redis-server."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.incrcall import IncrCall
from rankengine.redis.resp import Packer
from rankengine.redis.scripts import ScriptRunner

pytestmark = pytest.mark.redis

KEYS = [f"rankengine:{{w}}:{suffix}" for suffix in "zhmdcs"]


@settings(max_examples=200, deadline=None)
@given(
    key=st.binary(min_size=1, max_size=40),
    step=st.floats(allow_nan=False).map(repr),
    kind=st.sampled_from(["i", "f", "z"]),
    when=st.sampled_from(["", "new", "present", "better", "worse"]),
    floor=st.integers(min_value=0, max_value=2**53),
    sha=st.sampled_from(["", "0123456789abcdef0123456789abcdef01234567"]),
    number=st.none() | st.integers(min_value=1, max_value=10**12),
    mark=st.sampled_from(["!", "#"]),
    mode=st.sampled_from(["df11", "am11", "af11"]),
)
def test_the_packed_call_is_the_general_paths(
    *,
    key: bytes,
    step: str,
    kind: str,
    when: str,
    floor: int,
    sha: str,
    number: int | None,
    mark: str,
    mode: str,
) -> None:
    """IncrCall sends byte for byte what the general path (the runner's
    packing of the function's call) sends for the same increment."""
    packer, runner = Packer(), ScriptRunner(client=None)
    call = IncrCall(packer, runner, KEYS[0], mode)
    args: list[Any] = [key, step, kind, when, floor]
    reply_key = "rankengine:{w}:r:h.1.2"
    if number is None:  # a connection that never resends: no number, no reply key
        keys, full = KEYS, mode + (f"@{sha}" if sha else "")
    else:
        keys, full = [*KEYS, reply_key], f"{mode}{mark}{number}" + (f"@{sha}" if sha else "")
    expected = runner.packed(packer, "INCR", keys, [full, *args])
    assert call.pack(sha, args, number, reply_key, mark) == expected


def test_the_pool_books_balance_and_one_connection_serves(redis_client: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    twin = Leaderboard()
    pool = redis_client.connection_pool
    assert board._direct is not None and board._direct._light is not None
    for member, step in [("ann", 3), ("bob", 2), ("ann", 0.5), ("cid", -1)]:
        assert board.incr(member, step) == twin.incr(member, step)
        assert not pool._in_use_connections
    assert board.rank("ann") == twin.rank("ann")
    with board.pipeline() as p:
        p.incr("bob", 5).rank("bob")
    assert p.results == [twin.incr("bob", 5), twin.rank("bob")]
    assert not pool._in_use_connections
    assert len(pool._available_connections) == 1  # one connection, taken in turn
    assert board.items() == twin.items()
    board._check()


class _Collector:
    """A stand-in metrics collector: counts the pool's connection records."""

    def __init__(self) -> None:
        self.records = 0

    def record_connection_count(self, **kwargs: Any) -> None:
        self.records += 1

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_with_metrics_collected_the_pools_own_path_runs(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redis.observability import recorder

    board = RedisLeaderboard(redis_client, unique_name())
    board.set("ann", 1)
    collector = _Collector()
    monkeypatch.setattr(recorder, "_metrics_collector", collector)
    assert board.incr("ann", 2) == 3
    assert collector.records == 4  # idle -1, used +1, used -1, idle +1
    monkeypatch.setattr(recorder, "_metrics_collector", None)
    assert board.incr("ann", 2) == 5
    assert collector.records == 4  # not counted: no collector
    assert not redis_client.connection_pool._in_use_connections
    board._check()


def test_another_pool_kind_takes_its_own_path(redis_url: str) -> None:
    import redis
    from redis.connection import parse_url

    pool = redis.BlockingConnectionPool(max_connections=2, **parse_url(redis_url))
    client = redis.Redis(connection_pool=pool)
    board = RedisLeaderboard(client, unique_name())
    assert board._direct is not None and board._direct._light is None
    board.set_many({"ann": 1, "bob": 2})
    assert [board.incr("ann", 5), board.incr("bob", 1), board.rank("ann")] == [6, 3, 1]
    board._check()
    client.close()


def test_a_redis_py_major_not_read_takes_the_pools_own_path(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redis

    monkeypatch.setattr(redis, "__version__", "99.0.0")
    board = RedisLeaderboard(redis_client, unique_name())
    assert board._direct is not None and board._direct._light is None
    board.set_many({"ann": 1, "bob": 2})
    assert [board.incr("ann", 5), board.incr("bob", 1), board.rank("ann")] == [6, 3, 1]
    assert not redis_client.connection_pool._in_use_connections
    board._check()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_increments_on_its_own_connection(redis_client: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    board.set_many({"ann": 1, "bob": 2})
    assert board.incr("ann", 1) == 2  # the parent's connection, in the pool
    parent_connection = redis_client.connection_pool._available_connections[0]
    pid = os.fork()
    if pid == 0:  # the child: a new pool, a new connection
        code = 1
        try:
            pool = redis_client.connection_pool
            ok = board.incr("ann", 10) == 12 and board.incr("bob", 1) == 3
            code = 0 if ok and parent_connection not in pool._available_connections else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert board.incr("ann", 1) == 13  # the parent's connection still in step
    assert board["bob"] == 3 and board.writes == 5  # set_many, then four increments
    board._check()


def _fcalls(client: Any) -> int:
    return int(client.info("commandstats").get("cmdstat_fcall", {}).get("calls", 0))


def test_a_refusal_is_sent_again_by_the_general_path_and_raised(redis_client: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    board.set("ann", float("inf"))
    writes = board.writes
    redis_client.config_resetstat()
    with pytest.raises(ValueError, match="NaN"):
        board.incr("ann", float("-inf"))
    assert _fcalls(redis_client) == 2  # the packed call, then the general path's
    assert board["ann"] == float("inf") and board.writes == writes
    board._check()


def test_another_error_reply_is_raised_not_sent_again(redis_client: Any) -> None:
    import redis

    board = RedisLeaderboard(redis_client, unique_name())
    board.set("ann", 1)
    rows = board.keys[1]
    redis_client.delete(rows)
    redis_client.set(rows, "not a hash")  # another application took the key
    redis_client.config_resetstat()
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        board.incr("ann", 1)
    assert _fcalls(redis_client) == 1  # raised as it came: no second sending
    redis_client.delete(rows)
    board.clear()
