"""RedisLeaderboard.pipeline(): many board calls in one round trip, each with
the guarantees it has alone, against a real redis-server (and an in-process
twin making the same calls one by one)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard

pytestmark = pytest.mark.redis

MEMBERS = ("ann", "bob", "cid", "dee", "eve")
STYLES = ("unique", "competition", "dense")

#: (method, arguments drawn) of the calls a pipeline takes
CALLS = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(MEMBERS), st.integers(-3, 3)),
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.sampled_from([1, -1, 2, 0.5])),
    st.tuples(st.just("rank"), st.sampled_from(MEMBERS), st.sampled_from(STYLES)),
    st.tuples(st.just("score"), st.sampled_from(MEMBERS), st.none()),
    st.tuples(st.just("entry"), st.sampled_from(MEMBERS), st.sampled_from(STYLES)),
    st.tuples(st.just("top"), st.integers(0, 4), st.sampled_from(STYLES)),
    st.tuples(st.just("around"), st.sampled_from(MEMBERS), st.sampled_from(STYLES)),
    st.tuples(st.just("page"), st.integers(-1, 3), st.sampled_from(STYLES)),
)


def call(target: Any, op: tuple[Any, ...]) -> Any:
    """Make one drawn call on a board or a pipeline."""
    name, a, b = op
    if name == "set":
        return target.set(a, b)
    if name == "incr":
        return target.incr(a, b)
    if name == "rank":
        return target.rank(a, style=b)
    if name == "score":
        return target.score(a)
    if name == "entry":
        return target.entry(a, style=b)
    if name == "top":
        return target.top(a, style=b)
    if name == "page":
        return target.page(a, 2, style=b)
    return target.around(a, 1, 1, style=b)


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(CALLS, max_size=12), min_size=1, max_size=3))
def test_a_pipeline_answers_as_the_calls_one_by_one(
    redis_client: Any, tie_break: str, order: str, batches: list[list[tuple[Any, ...]]]
) -> None:
    board = RedisLeaderboard(redis_client, unique_name(), tie_break=tie_break, order=order)  # type: ignore[arg-type]
    twin = Leaderboard(tie_break=tie_break, order=order)  # type: ignore[arg-type]
    try:
        for batch in batches:
            with board.pipeline() as p:
                for op in batch:
                    call(p, op)
            assert p.results == [call(twin, op) for op in batch]
            assert board.items() == twin.items()
            assert board.clock == twin.clock
        board._check()
    finally:
        board.clear()


def commands_in(packed: bytes) -> int:
    """How many commands (arrays of bulk strings) ``packed`` holds."""
    count = at = 0
    while at < len(packed):
        end = packed.index(b"\r\n", at)
        assert packed[at : at + 1] == b"*", packed[at:end]
        args, at = int(packed[at + 1 : end]), end + 2
        for _ in range(args):
            end = packed.index(b"\r\n", at)
            at = end + 2 + int(packed[at + 1 : end]) + 2  # $<length>, the bytes, CRLF
        count += 1
    return count


def test_a_pipeline_is_one_round_trip(redis_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    board.set_many({m: i for i, m in enumerate(MEMBERS)})
    # Counted on the wire: the commands each send carries (a redis-py
    # pipeline, or the board's own send on a pooled connection, sends a
    # round trip's commands at once).
    sent: list[int] = []
    connection = redis_client.connection_pool.connection_class
    real = connection.send_packed_command

    def counting(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        packed = b"".join(command) if isinstance(command, list) else command
        sent.append(commands_in(packed))
        return real(self, command, *args, **kwargs)

    monkeypatch.setattr(connection, "send_packed_command", counting)
    with board.pipeline() as p:
        for i in range(30):
            p.incr(MEMBERS[i % 5], 1).rank(MEMBERS[i % 3]).top(3).around("ann")
    monkeypatch.undo()
    assert sent == [120]
    assert board["eve"] == 4 + 6
    board._check()


def test_bad_input_raises_when_queued_and_nothing_is_sent(redis_client: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    board.set("ann", 1)
    with pytest.raises(ValueError), board.pipeline() as p:
        p.incr("ann", 5)
        p.set("bob", float("nan"))
    assert len(p) == 2 - 1  # the refused call was not queued; the block sent nothing
    assert board.items() == [("ann", 1)]
    with pytest.raises(ValueError, match="style"):
        board.pipeline().rank("ann", style="olympic")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        board.pipeline().top(with_meta="yes")  # type: ignore[arg-type]


def test_the_exact_path_runs_in_its_place(redis_client: Any) -> None:
    """An increment past 2**53 is added exactly by the client: the reads
    queued after it see it applied, whether the client knows it before
    sending (a step past 2**53) or the server finds it (a score past it)."""
    board = RedisLeaderboard(redis_client, unique_name())
    with board.pipeline() as p:
        p.set("small", 1).incr("big", 2**60).score("big").rank("small")
        p.incr("big", 1).score("big").rank("big").top(1).around("small", 1, 0)
    top = board.top(1)
    assert p.results == [
        True,
        2**60,
        2**60,
        2,
        2**60 + 1,
        2**60 + 1,
        1,
        top,
        board.around("small", 1, 0),
    ]
    assert top[0].score == 2**60 + 1
    board._check()


def test_a_failed_call_does_not_stop_the_others(redis_client: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name(), tie_break="member")
    board.set("ann", 1)
    p = board.pipeline()
    p.set(5, 1).incr("ann", 2).score("ann")  # int members on a board of str members
    with pytest.raises(TypeError, match="str members"):
        p.execute()
    assert isinstance(p.results[0], TypeError)
    assert p.results[1:] == [3, 3]


def lose_last_reply(client: Any) -> None:
    """The next pipeline's connection drops after Redis answered every call
    (the replies lost): redis-py's retry sends the whole pipeline again."""
    import redis

    pool = client.connection_pool
    base = pool.connection_class
    state = {"armed": True}

    class Losing(base):  # type: ignore[misc, valid-type]
        def send_packed_command(self, command: Any, *args: Any, **kwargs: Any) -> None:
            packed = b"".join(command) if isinstance(command, list) else command
            self.left = packed.count(b"\r\nFCALL\r\n") if state["armed"] else 0
            super().send_packed_command(command, *args, **kwargs)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            if getattr(self, "left", 0):
                self.left -= 1
                if self.left == 0 and state["armed"]:
                    state["armed"] = False
                    raise redis.ConnectionError("connection lost before the replies")
            return reply

    pool.reset()
    pool.connection_class = Losing


def test_a_pipeline_sent_again_applies_each_write_once(redis_url: str) -> None:
    import redis
    from redis.connection import parse_url

    client = redis.Redis(**parse_url(redis_url))  # as redis.Redis(host, port): retries on
    board = RedisLeaderboard(client, unique_name())
    board.set_many({"ann": 10, "bob": 20})
    writes = board.writes
    lose_last_reply(client)
    with board.pipeline() as p:
        p.incr("ann", 5).incr("bob", 1).incr("ann", 1).set("cid", 3).rank("ann")
    twin = Leaderboard()
    twin.set_many({"ann": 10, "bob": 20})
    want = [twin.incr("ann", 5), twin.incr("bob", 1), twin.incr("ann", 1), twin.set("cid", 3)]
    assert p.results == [*want, twin.rank("ann")]
    assert board.items() == twin.items()
    assert board.writes == writes + 4  # four writes, once each
    board._check()


def test_a_board_lost_by_redis_is_written_again_with_its_settings(redis_client: Any) -> None:
    name = unique_name()
    board = RedisLeaderboard(redis_client, name, order="asc")
    board.set("ann", 1)
    redis_client.delete(*board.keys)  # a restart without persistence, or a flush
    with board.pipeline() as p:
        p.set("bob", 2).incr("bob", 3).rank("bob")
    assert p.results == [True, 5, 1]
    with pytest.raises(ValueError, match="was created with"):
        RedisLeaderboard(redis_client, name, order="desc")
    board._check()


def test_a_logged_board_runs_the_calls_one_by_one(redis_client: Any, tmp_path: Any) -> None:
    board = RedisLeaderboard(redis_client, unique_name(), log=tmp_path / "log")
    rng = random.Random(5)
    with board.pipeline() as p:
        for _ in range(20):
            p.incr(rng.choice(MEMBERS), rng.randint(1, 5))
        p.top(2)
    assert board.verify() == []
    assert board.log.items() == board.items()
    assert p.results[-1] == board.top(2)
    board.close()


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_the_ranks_that_end_a_pipeline_read_their_rows_in_chunks(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The members' rows of the ranks ending a round trip come from HMGETs
    of ROWS_PER_READ members each; the ranks answer as an in-process board's,
    absent members and every style included."""
    from rankengine.redis import pipeline as pipelines

    monkeypatch.setattr(pipelines, "ROWS_PER_READ", chunk)
    board = RedisLeaderboard(redis_client, unique_name())
    twin = Leaderboard()
    start = {m: i % 3 for i, m in enumerate(MEMBERS)}
    board.set_many(start)
    twin.set_many(start)
    board.rank("ann", style="dense")  # the dense counts built
    probes = [(m, STYLES[i % 3]) for i, m in enumerate([*MEMBERS, "nobody", "bob", "eve"])]
    board._elements.clear()  # (no element seen: every rank by its row)
    redis_client.config_resetstat()
    with board.pipeline() as p:
        p.incr("cid", 5)
        for member, style in probes:
            p.rank(member, style=style)  # type: ignore[arg-type]
    want = [twin.incr("cid", 5), *(twin.rank(m, style=s) for m, s in probes)]  # type: ignore[arg-type]
    assert p.results == want
    reads = int(redis_client.info("commandstats")["cmdstat_hmget"]["calls"])
    # one per chunk of rows, and the increment's function's read of the state
    assert reads == -(-len(probes) // chunk) + 1
    board._check()


def test_seen_ranks_that_end_a_pipeline_are_one_zrevrank(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unique rank ending a round trip, of a member whose element the
    handle has seen and that no write of the round trip moves, is one
    ZREVRANK in that round trip; one moved meanwhile by another client
    (its element gone) is read again; the answers are an in-process board's."""
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    other = RedisLeaderboard(redis_client, name)
    twin = Leaderboard()
    start = {m: 10 * i for i, m in enumerate(MEMBERS)}
    board.set_many(start)
    twin.set_many(start)
    for member in MEMBERS[:4]:
        board.rank(member)  # seen: "ann", "bob", "cid", "dee"
    # all seen: one round trip, no row read
    sends: list[bytes] = []
    connection = redis_client.connection_pool.connection_class
    real = connection.send_packed_command

    def counting(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        sends.append(b"".join(command) if isinstance(command, list) else command)
        return real(self, command, *args, **kwargs)

    monkeypatch.setattr(connection, "send_packed_command", counting)
    with board.pipeline() as p:
        for member in MEMBERS[:4]:
            p.rank(member)
    assert p.results == [twin.rank(m) for m in MEMBERS[:4]]
    assert len(sends) == 1 and b"HMGET" not in sends[0] and sends[0].count(b"ZREVRANK") == 4
    # a write of the round trip moves "bob": his rank reads his row; "eve"
    # was never seen; "cid" moved by another client: read again
    other.incr("cid", 100)
    twin.incr("cid", 100)
    sends.clear()
    with board.pipeline() as p:
        p.incr("bob", 25)
        for member in ("ann", "bob", "cid", "dee", "eve", "nobody"):
            p.rank(member)
    want = [twin.incr("bob", 25), *(twin.rank(m) for m in ("ann", "bob", "cid", "dee", "eve"))]
    assert p.results == [*want, None]
    first = sends[0]
    assert first.count(b"ZREVRANK") == 3  # ann, cid (stale), dee
    assert b"HMGET" in first and first.endswith(b"$4\r\nsbob\r\n$4\r\nseve\r\n$7\r\nsnobody\r\n")
    monkeypatch.undo()
    # the stale element was dropped and the new one noted: one ZREVRANK again
    with board.pipeline() as p:
        p.rank("cid")
    assert p.results == [twin.rank("cid")] and board._elements.get(b"scid") is not None
    board._check()
