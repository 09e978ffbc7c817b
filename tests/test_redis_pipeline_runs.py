"""A pipeline's runs of plain increments sent as one INCR_MANY call
(rankengine.redis.pipeline): each increment answers as it would alone (its
new score, its tie clock, one write counted per change), a resend applies
none twice, and a run that fails maps to its calls as documented; against a
real redis-server, a board making the same calls one by one and an
in-process twin."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import exact, outcome
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_cluster_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)
from test_redis_direct import resending
from test_redis_pipeline import call, lose_last_reply

from rankengine import Leaderboard
from rankengine.redis import pipeline as pipelines
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.codec import MAXCLOCK
from rankengine.redis.pipeline import RUN_MIN
from rankengine.redis.scripts import LIBRARY_NAME

pytestmark = pytest.mark.redis

MEMBERS = ("ann", "bob", "cid", "dee", "eve", "fay")
STYLES = ("unique", "competition", "dense")
#: Steps: small ints and floats, the zeros (an equal sum keeps the stored
#: score), 2**52 (two of them pass 2**53: the exact path), infinity (sent
#: alone; inf + -inf is refused as NaN).
STEPS = (1, 1, 2, -1, 0, 0.5, -0.0, 0.0, 2**52, math.inf, -math.inf)

#: Scores set besides small ints: the zeros (-0.0 is kept with its sign),
#: a float, and 2**53 - 1 (one more is past 2**53: the exact path).
SCORES = (-0.0, 0.0, 2.5, 2**53 - 1)

#: (method, arguments) of the calls a pipeline takes: mostly increments,
#: so that runs of them are common, members repeated.
CALLS = st.one_of(
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.sampled_from(STEPS)),
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.sampled_from(STEPS)),
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.sampled_from(STEPS)),
    st.tuples(st.just("incr"), st.sampled_from(MEMBERS), st.sampled_from(STEPS)),
    st.tuples(st.just("incr"), st.sampled_from([b"bytes", b"more"]), st.just(1)),
    st.tuples(st.just("set"), st.sampled_from(MEMBERS), st.integers(-3, 3)),
    st.tuples(st.just("set"), st.sampled_from(MEMBERS), st.sampled_from(SCORES)),
    st.tuples(st.just("rank"), st.sampled_from(MEMBERS), st.sampled_from(STYLES)),
    st.tuples(st.just("score"), st.sampled_from(MEMBERS), st.none()),
    st.tuples(st.just("top"), st.integers(0, 4), st.sampled_from(STYLES)),
)


def answer(value: Any) -> Any:
    """A pipeline's answer as :func:`outcomes.outcome` gives a call's."""
    if isinstance(value, Exception):
        return ("raises", type(value).__name__, str(value))
    return exact(value)


def alone(board: Any, op: tuple[Any, ...]) -> Any:
    """One call made alone, as :func:`answer` reads a pipeline's."""
    try:
        return exact(call(board, op))
    except (TypeError, ValueError) as exc:
        return ("raises", type(exc).__name__, str(exc))


def like_the_twin(board: RedisLeaderboard, twin: Leaderboard, ops: list[tuple[Any, ...]]) -> None:
    """Send ``ops`` as a pipeline: the answers are those of the same calls
    on ``twin``, an in-process board, exactly, and so are the stored items,
    the clock and the invariants."""
    with board.pipeline() as p:
        for op in ops:
            call(p, op)
    assert exact(p.results) == exact([call(twin, op) for op in ops])
    assert board.items() == twin.items() and board.clock == twin.clock
    board._check()


def twice_like_the_twin(board: RedisLeaderboard, ops: list[tuple[Any, ...]]) -> None:
    """:func:`like_the_twin` twice (the second time onto the first's state),
    against a fresh in-process board."""
    twin = Leaderboard()
    for _ in range(2):
        like_the_twin(board, twin, ops)


def stored(client: Any, board: RedisLeaderboard) -> Any:
    """What Redis holds of a board's members: their elements (the tie clock
    in them) with their doubles, and their rows."""
    ranking = client.zrange(board.keys[0], 0, -1, withscores=True)
    return ranking, sorted(client.hgetall(board.keys[1]).items())


def piped(board: RedisLeaderboard, batch: list[tuple[Any, ...]], *, runs: bool = True) -> Any:
    """The answers of ``batch`` sent in one pipeline (as :func:`answer`
    reads them), with runs of increments, or each increment its own call."""
    p = board.pipeline()
    for op in batch:
        call(p, op)
    least = pipelines.RUN_MIN
    pipelines.RUN_MIN = least if runs else 10**9  # type: ignore[misc]
    try:
        with contextlib.suppress(TypeError, ValueError):  # (each error is in p.results)
            p.execute()
    finally:
        pipelines.RUN_MIN = least  # type: ignore[misc]
    return [answer(r) for r in p.results]


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.dictionaries(st.sampled_from(MEMBERS), st.integers(-5, 5), max_size=4),
    batches=st.lists(st.lists(CALLS, max_size=16), min_size=1, max_size=3),
)
def test_runs_answer_as_the_calls_one_by_one(
    redis_client: Any,
    tie_break: str,
    order: str,
    start: dict[str, int],
    batches: list[list[tuple[Any, ...]]],
) -> None:
    """Random pipelines, most of their calls increments (runs of them, with
    members met twice, steps past 2**53, infinities and bytes members on a
    board of str members), answer as the same pipeline sending each
    increment as its own call: results (errors included), scores, elements
    and rows in Redis (the tie clocks), the clock, the count of writes and
    the elements the handle notes for its ranks (each by its tie clock).
    Where no increment takes the exact path (which runs after the writes
    behind it in its round trip: see rankengine.redis.pipeline), they answer
    as each call made alone, and as an in-process board."""
    config: Any = {"tie_break": tie_break, "order": order}
    board = RedisLeaderboard(redis_client, unique_name(), **config)
    calls = RedisLeaderboard(redis_client, unique_name(), **config)
    single = RedisLeaderboard(redis_client, unique_name(), **config)
    twin = Leaderboard(**config)
    try:
        for b in (board, calls, single, twin):
            b.set_many(start)
        exact_path = False
        for batch in batches:
            got = piped(board, batch)
            assert got == piped(calls, batch, runs=False), batch
            # (before the reads below, which note the elements they read)
            assert board._elements == calls._elements  # (each write's element, by its clock)
            assert exact(board.items()) == exact(calls.items())
            assert board.clock == calls.clock and board.writes == calls.writes
            assert stored(redis_client, board) == stored(redis_client, calls)
            exact_path = exact_path or any(op[2] in (2**52, 2**53 - 1) for op in batch)
            if exact_path:
                continue
            want = [alone(single, op) for op in batch]
            assert got == want, batch
            assert [outcome(lambda op=op: call(twin, op)) for op in batch] == [
                w[:2] if isinstance(w, tuple) and w[0] == "raises" else w for w in want
            ]
            assert exact(board.items()) == exact(single.items()) == exact(twin.items())
            assert board.clock == single.clock == twin.clock
            assert board.writes == single.writes
            assert stored(redis_client, board) == stored(redis_client, single)
        board._check()
    finally:
        for b in (board, calls, single):
            b.clear()


def fcalls(monkeypatch: pytest.MonkeyPatch, client: Any) -> list[bytes]:
    """The functions called on ``client``'s connections from now on, in order."""
    names: list[bytes] = []
    connection = client.connection_pool.connection_class
    real = connection.send_packed_command

    def counting(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        packed = b"".join(command) if isinstance(command, list) else command
        parts = packed.split(b"\r\n")
        names.extend(parts[i + 2] for i, part in enumerate(parts) if part == b"FCALL")
        return real(self, command, *args, **kwargs)

    monkeypatch.setattr(connection, "send_packed_command", counting)
    return names


def test_a_run_is_one_call_and_ends_where_the_documentation_says(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = RedisLeaderboard(redis_client, unique_name())
    board.set_many({m: i for i, m in enumerate(MEMBERS)})
    twin = Leaderboard()
    twin.set_many({m: i for i, m in enumerate(MEMBERS)})
    names = fcalls(monkeypatch, redis_client)
    incr, many = f"{LIBRARY_NAME}_incr".encode(), f"{LIBRARY_NAME}_incr_many".encode()
    ops = [
        ("incr", "ann", 1),
        ("incr", "bob", 2),
        ("incr", "cid", 3),
        ("incr", "ann", 4),  # met again: a run of three ends, another starts
        ("incr", "dee", 5),
        ("incr", "eve", math.inf),  # not finite: alone, and the run of two is two calls
        ("incr", "fay", 1),
        ("incr", "bob", 1),
        ("rank", "fay", "unique"),  # not an increment: a run of two, two calls
    ]
    with board.pipeline() as p:
        for op in ops:
            call(p, op)
    assert p.results == [call(twin, op) for op in ops]
    assert names == [many, incr, incr, incr, incr, incr]  # (the rank: a plain command)
    assert RUN_MIN == 3
    # a board that breaks ties by member: a run ends at another type of member
    by_member = RedisLeaderboard(redis_client, unique_name(), tie_break="member")
    names.clear()
    p = by_member.pipeline()
    for member in ("a", "b", "c", b"x", b"y", b"z"):
        p.incr(member, 1)
    with pytest.raises(TypeError, match="holds str members; bytes members"):
        p.execute()
    assert names == [many, many]
    assert p.results[:3] == [1, 1, 1]
    assert all(isinstance(r, TypeError) for r in p.results[3:])
    assert by_member.items() == [("c", 1), ("b", 1), ("a", 1)]
    monkeypatch.undo()
    board._check()
    by_member._check()


def test_a_resent_pipeline_applies_its_runs_once(redis_url: str) -> None:
    """redis-py sends the whole pipeline again after the replies were lost:
    each run's INCR_MANY finds its first reply (one call number and reply
    key for the run), nothing is applied twice."""
    import redis
    from redis.connection import parse_url

    client = redis.Redis(**parse_url(redis_url))  # as redis.Redis(host, port): retries on
    board = RedisLeaderboard(client, unique_name())
    twin = Leaderboard()
    for b in (board, twin):
        b.set_many({"ann": 10, "bob": 20})
    writes = board.writes
    lose_last_reply(client)
    ops = [
        ("incr", "ann", 5),
        ("incr", "bob", 1),
        ("incr", "cid", 2),
        ("incr", "ann", 1),  # a second run
        ("incr", "cid", 1),
        ("incr", "dee", 0),
        ("set", "eve", 3),
        ("rank", "ann", "unique"),
    ]
    with board.pipeline() as p:
        for op in ops:
            call(p, op)
    assert p.results == [call(twin, op) for op in ops]
    assert board.items() == twin.items() and board.clock == twin.clock
    assert board.writes == writes + 7  # seven changes, once each
    board._check()
    client.close()


def test_a_run_resent_on_the_pooled_path_is_applied_once(redis_url: str) -> None:
    """The board's own send: a run's first sending is marked '!', its resend
    '#' with the same call number, and finds the first run's reply."""
    client, modes = resending(redis_url, drop=[f"{LIBRARY_NAME}_incr_many"])
    board = RedisLeaderboard(client, unique_name())
    board.set_many({"ann": 10, "bob": 20})
    writes = board.writes
    modes.clear()
    with board.pipeline() as p:
        p.incr("ann", 5).incr("bob", 1).incr("cid", 1).rank("ann")
    first, again = [m for m in modes if m[4:5] in ("!", "#")]  # (the run, sent twice)
    assert p.results == [15, 21, 1, 2]
    assert board.items() == [("bob", 21), ("ann", 15), ("cid", 1)]
    assert board.writes == writes + 3
    assert first[4] == "!" and again[4] == "#" and first[5:] == again[5:]
    board._check()
    client.close()


def test_a_run_past_two_to_the_53_runs_call_by_call_in_its_place(redis_client: Any) -> None:
    """The server cannot add a run exactly ({-1}): each call runs alone, in
    its place (the exact path where it needs it), and the reads queued
    behind it in that round trip are read again, after them."""
    board = RedisLeaderboard(redis_client, unique_name())
    twin = Leaderboard()
    for b in (board, twin):
        b.set_many({"ann": 2**53 - 1, "bob": 1})
    ops = [
        ("incr", "bob", 1),
        ("incr", "ann", 2),  # past 2**53
        ("incr", "cid", 1),
        ("score", "ann", None),
        ("rank", "cid", "unique"),
        ("top", 2, "unique"),
    ]
    like_the_twin(board, twin, ops)


def test_a_run_refused_for_the_tie_clock_runs_call_by_call(redis_client: Any) -> None:
    """A run whose changes would take the tie clock past 2**53 - 1 is refused
    whole: each call runs alone, the ones that fit are applied and the
    first that does not is refused, as one by one."""
    board = RedisLeaderboard(redis_client, unique_name())
    single = RedisLeaderboard(redis_client, unique_name())
    for b in (board, single):
        b.set_many({"ann": 5, "bob": 3})
        redis_client.hset(b.keys[5], "clock", MAXCLOCK - 2)  # room for two more changes
    ops = [("incr", m, 1) for m in ("ann", "bob", "cid", "dee")]
    p = board.pipeline()
    for op in ops:
        call(p, op)
    with pytest.raises(ValueError, match=r"tie clock would pass 2\*\*53 - 1"):
        p.execute()
    want = [alone(single, op) for op in ops]
    assert [answer(r) for r in p.results] == want
    assert want[:2] == [("int", 6), ("int", 4)] and [w[0] for w in want[2:]] == ["raises"] * 2
    assert board.items() == single.items() and board.clock == single.clock == MAXCLOCK
    assert board.writes == single.writes
    board._check()


def test_a_run_on_a_board_lost_by_redis_writes_its_settings_again(redis_client: Any) -> None:
    """The settings guard: a run refused for a board Redis lost runs call by
    call after the board's settings are stored again."""
    name = unique_name()
    board = RedisLeaderboard(redis_client, name, order="asc")
    board.set("ann", 1)
    redis_client.delete(*board.keys)  # a restart without persistence, or a flush
    with board.pipeline() as p:
        p.incr("bob", 2).incr("cid", 3).incr("dee", 4).rank("dee")
    assert p.results == [2, 3, 4, 3]
    with pytest.raises(ValueError, match="was created with"):
        RedisLeaderboard(redis_client, name, order="desc")
    board._check()


def test_a_run_by_scripts_where_the_server_has_no_functions(redis_client: Any) -> None:
    """The EVALSHA path (a server before Redis 7): the same run, the same answers."""
    board = RedisLeaderboard(redis_client, unique_name())
    board._scripts._scripts_only()
    ops = [("incr", m, s) for m, s in zip(MEMBERS, (1, 2.5, -1, 0, 3, 1), strict=True)]
    ops += [("incr", "ann", 1), ("top", 3, "unique")]
    twice_like_the_twin(board, ops)


@pytest.mark.cluster
def test_runs_on_the_cluster(redis_cluster: Any) -> None:
    client = redis_cluster.client()
    try:
        board = RedisLeaderboard(client, unique_name())
        ops = [("incr", m, 1) for m in MEMBERS] + [("incr", "ann", 2), ("rank", "ann", "dense")]
        twice_like_the_twin(board, ops)
    finally:
        client.close()


def test_a_run_on_a_client_the_board_cannot_send_on_itself(redis_url: str) -> None:
    """A client with one connection (redis-py's to use): the pipeline goes
    out as a redis-py pipeline, the run as one of its commands."""
    import redis

    client = redis.Redis.from_url(redis_url, single_connection_client=True)
    board = RedisLeaderboard(client, unique_name())
    assert board._direct is None
    ops = [("incr", m, 2) for m in MEMBERS] + [("incr", "bob", 1), ("rank", "bob", "unique")]
    twice_like_the_twin(board, ops)
    client.close()


def test_incr_many_still_counts_one_write_and_hands_a_batch_over_whole(
    redis_client: Any,
) -> None:
    """The batch method's side of the shared function: one write per call
    (a logged board's records count it so), and a sum past 2**53 makes the
    client add the whole batch exactly."""
    board = RedisLeaderboard(redis_client, unique_name())
    twin = Leaderboard()
    for b in (board, twin):
        b.set_many({"ann": 2**53 - 2, "bob": 1})
    writes = board.writes
    assert board.incr_many({"bob": 1, "cid": 2, "dee": 3}) == twin.incr_many(
        {"bob": 1, "cid": 2, "dee": 3}
    )
    assert board.writes == writes + 1
    assert board.incr_many([("bob", 1), ("ann", 5), ("bob", 1)]) == twin.incr_many(
        [("bob", 1), ("ann", 5), ("bob", 1)]
    )
    assert board.items() == twin.items() and board.clock == twin.clock
    board._check()
