"""The ledger's Redis view on a real ``redis-server`` (started by the test run).

The events are in the ledger; Redis holds the serving copy.  Redis losing
its data (a restart without persistence: ``FLUSHALL`` here) is repaired on
the next open and by ``rebuild_view``, both idempotent: the copy is made
from the view's state, never by replaying increments twice.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from redis_service import redis_server_fixture, redis_url_fixture  # noqa: F401 -- fixtures

from rankengine import Ledger, RedisLeaderboard

redis = pytest.importorskip("redis")

T = 1_798_934_400_000


def served(url: str, name: str) -> list[tuple[object, object]]:
    """What another process reading the Redis board sees."""
    return RedisLeaderboard(url, name).items()


def test_the_redis_view_serves_what_the_board_view_holds(redis_url: str, tmp_path: Path) -> None:
    name = f"ledger-{uuid.uuid4().hex[:8]}"
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("alltime")
        ledger.add_view("serving", "redis", url=redis_url, board=name)
        for i in range(60):
            ledger.record(f"p{i % 7}", i % 5 + 1, t_ms=T + i)
        ledger.record("p1", op="remove", t_ms=T + 61)
        ledger.set("p2", 100, t_ms=T + 62, meta={"nick": "two"})
        done = ledger.record("p3", 4, t_ms=T + 63)
        assert done.outcome("serving").score == ledger["alltime"]["p3"]
        assert served(redis_url, name) == ledger["alltime"].items()
        assert ledger["serving"].meta("p2") == {"nick": "two"}
        ledger._check()


def test_a_redis_that_lost_its_data_is_rebuilt_on_open_and_on_demand(
    redis_url: str, tmp_path: Path
) -> None:
    name = f"ledger-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    with Ledger.open(tmp_path) as ledger:
        ledger.add_view("alltime")
        ledger.add_view("serving", "redis", url=redis_url, board=name)
        for i in range(40):
            ledger.record(f"p{i % 9}", 3, t_ms=T + i)
        ledger.compact()
        for i in range(40, 55):
            ledger.record(f"p{i % 9}", 2, t_ms=T + i)
        expected = ledger["alltime"].items()
        for key in client.scan_iter(f"*{{{name}}}*"):  # Redis restarted, no persistence
            client.delete(key)
        assert served(redis_url, name) == []
        ledger.rebuild_view("serving")
        assert served(redis_url, name) == expected
        ledger.rebuild_view("serving")  # again: the same board, nothing added twice
        assert served(redis_url, name) == expected
        for key in client.scan_iter(f"*{{{name}}}*"):
            client.delete(key)
    with Ledger.open(tmp_path) as again:  # the open rebuilds it
        assert served(redis_url, name) == expected
        again.record("p0", 1, t_ms=T + 100)
        assert served(redis_url, name) == again["alltime"].items()
        assert int(client.get(f"rankengine:{{{name}}}:ledger_seq")) >= 55
    with Ledger.open(tmp_path) as third:  # in step: nothing to rebuild, nothing doubled
        assert served(redis_url, name) == third["alltime"].items()
        third._check()


def test_a_redis_view_refuses_by_and_needs_its_address(redis_url: str) -> None:
    ledger = Ledger()
    with pytest.raises(ValueError, match="by= is not supported"):
        ledger.add_view("serving", "redis", url=redis_url, board="x", by="region")
    with pytest.raises(TypeError, match="url="):
        ledger.add_view("serving", "redis", board="x")
