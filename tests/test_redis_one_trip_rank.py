"""A unique rank in one round trip (``rank_trips=1``): a member's row and
its rank read by the board's ``RANK`` function, not by two plain round
trips.  It must answer as an in-process twin does, whatever other clients
did before (a stale element never gives a wrong rank), after the server
lost its functions, on either reply parser and through redis-py's own
command path.  And the pipelined ranks (rankengine/redis/pipeline.py),
whose second round trip counts by plain commands, against the twin too."""

from __future__ import annotations

from typing import Any

import pytest
from board_spies import functions_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_service import (  # noqa: F401 - fixtures
    Cluster,
    redis_client_fixture,
    redis_cluster_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard

pytestmark = pytest.mark.redis

MEMBERS = ["ann", "bob", "cid", "dee", "eve", b"raw", 7, -3]
#: ties, floats, -0.0 and 0, infinities, and ints past 2**53 (an ordkey)
VALUES = [0, -0.0, 1, 1.5, 2, 2, 3, float("inf"), float("-inf"), 2**53, 2**53 + 1, -(2**60) - 3]

OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "incr", "remove", "rank"]),
        st.sampled_from(MEMBERS),
        st.sampled_from(VALUES),
        st.booleans(),  # which of the two clients acts
    ),
    max_size=40,
)


@pytest.mark.parametrize("order", ["desc", "asc"])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_one_trip_ranks_answer_as_the_twin(redis_client: Any, order: str, ops: list[Any]) -> None:
    """Two handles write and rank in turns (each also remembers elements
    it saw, which the other's writes make stale); a third, cold one ranks
    every member after each step: all as the twin ranks them."""
    name = unique_name()
    a = RedisLeaderboard(redis_client, name, order=order, rank_trips=1)  # type: ignore[arg-type]
    b = RedisLeaderboard(redis_client, name, order=order, rank_trips=1)  # type: ignore[arg-type]
    twin = Leaderboard(order=order)  # type: ignore[arg-type]
    for op, member, value, first in ops:
        board = a if first else b
        if op == "set":
            board.set(member, value)
            twin.set(member, value)
        elif op == "incr":
            try:
                got = board.incr(member, value)
            except (ValueError, OverflowError) as exc:  # (inf - inf: refused alike)
                with pytest.raises(type(exc)):
                    twin.incr(member, value)
            else:
                assert got == twin.incr(member, value)
        elif op == "remove":
            assert board.remove(member) == twin.remove(member)
        else:
            assert board.rank(member) == twin.rank(member)
        cold = RedisLeaderboard(redis_client, name, order=order, rank_trips=1)  # type: ignore[arg-type]
        for probe in [*MEMBERS, "nobody"]:
            assert cold.rank(probe) == twin.rank(probe), (probe, op, member, value)
            assert a.rank(probe) == twin.rank(probe), (probe, "a")
            assert b.rank(probe) == twin.rank(probe), (probe, "b")
    a._check()
    a.clear()


def test_one_trip_is_one_call_and_learns_the_element(redis_client: Any, monkeypatch: Any) -> None:
    name = unique_name()
    writer = RedisLeaderboard(redis_client, name)
    writer.set_many({f"p{i}": i % 7 for i in range(30)})
    twin = Leaderboard()
    twin.set_many({f"p{i}": i % 7 for i in range(30)})
    reader = RedisLeaderboard(redis_client, name, rank_trips=1)
    ran = functions_run(reader, monkeypatch)
    sent: list[bytes] = []
    real_call = type(reader._direct).call  # type: ignore[union-attr]

    def call(self: Any, command: Any) -> Any:
        sent.append(command(False, True))
        return real_call(self, command)

    monkeypatch.setattr(type(reader._direct), "call", call)
    assert [reader.rank(f"p{i}") for i in range(30)] == [twin.rank(f"p{i}") for i in range(30)]
    assert reader.rank("nobody") is None
    assert ran == ["RANK"] * 31
    assert len(sent) == 31 and all(b"FCALL" in command for command in sent)
    # the elements it saw: the next ranks are one ZREVRANK each
    sent.clear()
    assert [reader.rank(f"p{i}") for i in range(30)] == [twin.rank(f"p{i}") for i in range(30)]
    assert len(sent) == 30 and all(b"ZREVRANK" in command for command in sent)
    # another client moves a member: the element seen is gone, the function answers
    writer.incr("p3", 100)
    twin.incr("p3", 100)
    sent.clear()
    assert reader.rank("p3") == twin.rank("p3") == 1
    assert [b"ZREVRANK" in c for c in sent] == [True, False]  # (then the function)
    writer._check()


def test_the_function_is_loaded_again_after_the_server_lost_it(redis_client: Any) -> None:
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    board.set_many({"ann": 3, "bob": 5, "cid": 5})
    reader = RedisLeaderboard(redis_client, name, rank_trips=1)  # (no element seen)
    redis_client.function_flush()
    assert [reader.rank("cid"), reader.rank("bob")] == [2, 1]
    assert reader._elements.keys() == {b"scid", b"sbob"}
    redis_client.function_flush()
    assert reader.rank("ann") == 3
    board._check()


def test_through_redis_pys_command_path(redis_url: str) -> None:
    """A client the board does not send on itself (a single connection)
    runs the same function through ``execute_command``."""
    import redis

    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    board = RedisLeaderboard(client, unique_name(), order="asc", rank_trips=1)
    assert board._direct is None
    board.set_many({"ann": 3, "bob": 5, "cid": 5, "dee": 2**53 + 1})
    client.function_flush()
    assert [board.rank(m) for m in ("ann", "bob", "cid", "dee", "nobody")] == [1, 2, 3, 4, None]
    board._check()
    client.close()


@pytest.mark.cluster
def test_one_trip_and_pipelined_ranks_on_a_cluster(redis_cluster: Cluster) -> None:
    """On Redis Cluster (redis-py's command path and pipeline, the scripts
    by SHA1), one-trip ranks and a pipeline's two round trips answer as the
    twin, with the member moved by another handle in between."""
    client = redis_cluster.client()
    name = unique_name()
    writer = RedisLeaderboard(client, name)
    start = {f"p{i}": i % 4 for i in range(12)}
    writer.set_many(start)
    twin = Leaderboard()
    twin.set_many(start)
    reader = RedisLeaderboard(client, name, rank_trips=1)
    assert [reader.rank(f"p{i}") for i in range(12)] == [twin.rank(f"p{i}") for i in range(12)]
    writer.incr("p5", 9)
    twin.incr("p5", 9)
    cold = RedisLeaderboard(client, name)
    for board in (reader, cold):  # (the reader's element of p5 is stale)
        assert board.rank("p5") == twin.rank("p5") == 1
        with board.pipeline() as p:
            for i in range(12):
                p.rank(f"p{i}")
        assert p.results == [twin.rank(f"p{i}") for i in range(12)]
    client.close()


@pytest.mark.parametrize("parser", ["python", "hiredis"])
def test_one_trip_on_either_parser(redis_url: str, parser: str) -> None:
    import redis
    from redis._parsers import _HiredisParser, _RESP2Parser

    if parser == "hiredis":
        pytest.importorskip("hiredis")
    parser_class = _HiredisParser if parser == "hiredis" else _RESP2Parser
    client = redis.Redis.from_url(redis_url, parser_class=parser_class)
    board = RedisLeaderboard(client, unique_name(), rank_trips=1)
    start = {"ann": 10, "bob": 20, "cid": 20, "dee": 5, b"\xff:x": 20}
    board.set_many(start)
    cold = RedisLeaderboard(client, board.name, rank_trips=1)
    assert [cold.rank(m) for m in ("ann", "bob", "cid", "dee", b"\xff:x", "x")] == [
        4,
        1,
        2,
        5,
        3,
        None,
    ]
    client.close()


@pytest.mark.parametrize("bad", [0, 3, True, "1", 1.0, None])
def test_a_bad_rank_trips_is_refused_before_redis(redis_client: Any, bad: Any) -> None:
    name = unique_name()
    with pytest.raises(ValueError, match="rank_trips must be 1 or 2"):
        RedisLeaderboard(redis_client, name, rank_trips=bad)
    assert redis_client.keys(f"*{name}*") == []


# ----------------------------------------------------------------------
# Pipelined ranks: the second round trip's counts (rankengine/redis/pipeline.py)
# ----------------------------------------------------------------------

STYLES = ("unique", "competition", "dense")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=OPS,
    probes=st.lists(
        st.tuples(st.sampled_from([*MEMBERS, "nobody"]), st.sampled_from(STYLES)), max_size=12
    ),
)
def test_pipelined_ranks_answer_as_the_twin(
    redis_client: Any, ops: list[Any], probes: list[Any]
) -> None:
    name = unique_name()
    writer = RedisLeaderboard(redis_client, name)
    twin = Leaderboard()
    reader = RedisLeaderboard(redis_client, name)
    for op, member, value, _ in ops:
        if op == "set":
            writer.set(member, value)
            twin.set(member, value)
        elif op == "remove":
            writer.remove(member)
            twin.remove(member)
        elif op == "incr" and float("inf") not in (abs(twin.score(member, 0)), abs(value)):
            assert writer.incr(member, value) == twin.incr(member, value)
        with reader.pipeline() as p:
            for probe, style in probes:
                p.rank(probe, style=style)
        assert p.results == [twin.rank(m, style=s) for m, s in probes]
    writer._check()


def test_pipelined_unique_ranks_of_members_moved_between_the_round_trips(
    redis_client: Any, monkeypatch: Any
) -> None:
    """Another client moves members after their rows were read (the first
    round trip) and before they are counted (the second): their elements
    are gone, so each is read again, and every answer is the twin's after
    the move."""
    from rankengine.redis.direct import DirectCalls

    name = unique_name()
    writer = RedisLeaderboard(redis_client, name)
    start = {f"p{i}": i % 5 for i in range(20)}
    writer.set_many(start)
    twin = Leaderboard()
    twin.set_many(start)
    reader = RedisLeaderboard(redis_client, name)
    real_batch = DirectCalls.batch
    batches: list[int] = []

    def batch(self: DirectCalls, client: Any, build: Any) -> Any:
        replies = real_batch(self, client, build)
        batches.append(len(replies))
        if len(batches) == 1:  # the rows are read: move two members
            for member, step in (("p3", 10), ("p7", -10)):
                writer.incr(member, step)
                twin.incr(member, step)
        return replies

    monkeypatch.setattr(DirectCalls, "batch", batch)
    probes = [f"p{i}" for i in range(20)]
    with reader.pipeline() as p:
        for probe in probes:
            p.rank(probe)
    assert p.results == [twin.rank(m) for m in probes]
    assert batches[:2] == [1, 20]  # one HMGET, then 20 counts
    assert reader.rank("p3") == 1 and reader.rank("p7") == 20


def test_pipelined_ranks_through_redis_pys_pipeline(redis_url: str) -> None:
    """A client the board does not send on itself queues the same reads on
    a redis-py pipeline: seen and unseen members, every style."""
    import redis

    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    board = RedisLeaderboard(client, unique_name())
    assert board._direct is None
    start = {f"p{i}": i % 4 for i in range(12)}
    board.set_many(start)
    twin = Leaderboard()
    twin.set_many(start)
    reader = RedisLeaderboard(client, board.name)
    reader.rank("p1")  # seen: one ZREVRANK in the first round trip
    board.incr("p2", 1)
    twin.incr("p2", 1)
    probes = [(f"p{i}", style) for i in range(12) for style in STYLES] + [("x", "unique")]
    for _ in range(2):  # the second time, every member is seen
        with reader.pipeline() as p:
            for probe, style in probes:
                p.rank(probe, style=style)  # type: ignore[arg-type]
        assert p.results == [twin.rank(m, style=s) for m, s in probes]  # type: ignore[arg-type]
    client.close()
