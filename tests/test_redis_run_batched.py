"""A pipeline's run of increments with its Redis calls batched
(``incr_many.lua`` in run mode): the run's rows read by one ``HMGET``, its
fast-path writes sent by one ``ZREM`` (tie clocks only), ``ZADD`` and
``HSET``, each ``VARIADIC`` values at a time.  Against a real
redis-server, the same increments sent each as its own call, and an
in-process board: results, scores with their types, elements and rows (the
tie clocks), the clock, the count of writes, the dense counts and every
rank style, exactly; runs longer than a variadic command's chunk too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import exact
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)
from test_redis_pipeline_runs import alone, piped, stored

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.pipeline import RUN_MIN
from rankengine.redis.scripts import SCRIPTS

pytestmark = pytest.mark.redis

#: Values per variadic command, as the Lua source sets it.
VARIADIC = int(re.search(r"local VARIADIC = (\d+)", SCRIPTS["INCR_MANY"])[1])  # type: ignore[index]

MEMBERS = tuple(f"m{k}" for k in range(10))
STYLES = ("unique", "competition", "dense")
#: Steps: small ints (ties, first to reach), the zeros (an equal sum keeps
#: the stored score; -0.0 + -0.0 is -0.0), floats, and 2**52 (a sum near
#: 2**53 the server leaves to the client: the 'x' path).
STEPS = (1, 1, 2, -1, -2, 0, 0.0, -0.0, 0.5, -0.5, 2**52, -(2**52))
#: Scores set before the runs: small ints, the zeros, a float, and ints
#: near 2**53 (one step more is past it).
SCORES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([-0.0, 0.0, 1.5, 2**53 - 2, -(2**53) + 2, 2**53 - 1]),
)
#: A run: distinct members (a member met twice ends a run), RUN_MIN or more.
RUN = st.lists(
    st.tuples(st.sampled_from(MEMBERS), st.sampled_from(STEPS)),
    min_size=RUN_MIN,
    max_size=len(MEMBERS),
    unique_by=lambda pair: pair[0],
)


def dense_counts(client: Any, board: RedisLeaderboard) -> Any:
    """The board's distinct scores and their counts, as Redis holds them."""
    keys = board.keys
    return client.zrange(keys[3], 0, -1, withscores=True), sorted(client.hgetall(keys[4]).items())


def ranks(board: Any) -> Any:
    """Every member's rank in every style."""
    return [board.rank(m, style=s) for m in MEMBERS for s in STYLES]


def same_boards(client: Any, board: RedisLeaderboard, calls: RedisLeaderboard) -> None:
    """Two Redis boards hold exactly the same (their tie clocks, dense counts)."""
    assert exact(board.items()) == exact(calls.items())
    assert board.clock == calls.clock and board.writes == calls.writes
    assert stored(client, board) == stored(client, calls)
    assert dense_counts(client, board) == dense_counts(client, calls)


def boards(client: Any, config: dict[str, Any], dense: bool, start: dict[str, Any]) -> Any:
    """Two Redis boards and an in-process one, each holding ``start``, with
    dense counts kept (built by a dense read) when ``dense``."""
    made = [RedisLeaderboard(client, unique_name(), **config) for _ in range(2)]
    twin = Leaderboard(**config)
    for b in (*made, twin):
        b.set_many({"anchor": 0, **start})
        if dense:
            b.rank("anchor", style="dense")
    for b in made:
        assert (client.hget(b.keys[5], "dense") == b"1") == dense
    return made[0], made[1], twin


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize(
    "config",
    [{"tie_break": t, "order": o} for t in ("first", "member") for o in ("desc", "asc")],
    ids=lambda c: f"{c['tie_break']}-{c['order']}",
)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.dictionaries(st.sampled_from(MEMBERS), SCORES, max_size=7),
    runs=st.lists(RUN, min_size=1, max_size=3),
)
def test_a_batched_run_answers_as_its_increments_sent_alone(
    redis_client: Any,
    dense: bool,
    config: dict[str, Any],
    start: dict[str, Any],
    runs: list[list[tuple[str, Any]]],
) -> None:
    """Runs of increments over members on and off the board (ties, -0.0,
    sums near 2**53 left to the client) answer exactly as the same
    increments sent each as its own call, and leave the same in Redis: rows,
    elements (tie clocks), dense counts, clock, writes, ranks in every
    style.  Where no sum is left to the client (which adds it after the
    rest of its round trip), as an in-process board too."""
    board, calls, twin = boards(redis_client, config, dense, start)
    exact_path = any(abs(score) >= 2**52 for score in start.values())
    try:
        for run in runs:
            ops = [("incr", member, step) for member, step in run]
            got = piped(board, ops)
            assert got == piped(calls, ops, runs=False), ops
            assert board._elements == calls._elements
            same_boards(redis_client, board, calls)
            exact_path = exact_path or any(abs(step) >= 2**52 for _, step in run)
            if not exact_path:
                assert got == [alone(twin, op) for op in ops]
                assert exact(board.items()) == exact(twin.items())
                assert board.clock == twin.clock
        assert ranks(board) == ranks(calls)
        if not exact_path:
            assert ranks(board) == ranks(twin)
        board._check()
        calls._check()
    finally:
        board.clear()
        calls.clear()


@pytest.mark.parametrize(
    ("tie_break", "dense", "scripts"),
    [
        ("first", True, False),
        ("first", False, False),
        ("member", True, False),
        ("first", True, True),
    ],
)
def test_a_run_longer_than_a_variadic_command_is_chunked(
    redis_client: Any, tie_break: str, dense: bool, scripts: bool
) -> None:
    """A run of more members than one HMGET (and one ZADD, HSET, ZREM) is
    given at a time: every member's row is read, every move written, as
    the increments sent one by one and an in-process board; a third of
    the members are new (the general path), some steps zero (no change);
    by functions, and by scripts (EVALSHA: a server without functions)."""
    n = VARIADIC + VARIADIC // 2 + 7
    members = [f"p{k:05d}" for k in range(n)]
    # (a third new; the first member of each chunk on the board)
    start = {m: k % 13 for k, m in enumerate(members) if k % 3 != 2}
    config: Any = {"tie_break": tie_break}
    board, calls, twin = boards(redis_client, config, dense, start)
    if scripts:
        board._scripts._scripts_only()
    ops = [("incr", m, (k % 5) - 1 if k % 7 else 0.5) for k, m in enumerate(members)]
    try:
        got = piped(board, ops)
        assert got == piped(calls, ops, runs=False)
        assert got == [alone(twin, op) for op in ops]
        same_boards(redis_client, board, calls)
        assert exact(board.items()) == exact(twin.items()) and board.clock == twin.clock
        picked = members[:: n // 50]
        for style in STYLES:
            want = [twin.rank(m, style=style) for m in picked]
            assert [board.rank(m, style=style) for m in picked] == want
        board._check()
    finally:
        board.clear()
        calls.clear()


@pytest.mark.parametrize("tie_break", ["first", "member"])
def test_a_run_reads_and_writes_with_a_few_commands(redis_client: Any, tie_break: str) -> None:
    """A run of increments of members on the board (the fast path) makes
    one HMGET, one ZADD and one HSET of the board's members (and one ZREM
    with tie clocks), not one of each per increment."""
    board = RedisLeaderboard(redis_client, unique_name(), tie_break=tie_break)
    board.set_many({m: k for k, m in enumerate(MEMBERS)})
    redis_client.config_resetstat()
    with board.pipeline() as p:
        for m in MEMBERS:
            p.incr(m, 2)
    info = redis_client.info("commandstats")
    counts = {k[len("cmdstat_") :]: v["calls"] for k, v in info.items()}
    assert p.results == list(range(2, 2 + len(MEMBERS)))
    assert counts.get("hget", 0) == 0 and counts["hmget"] == 2  # (the run's, the state's)
    assert counts["zadd"] == 1 and counts.get("zrem", 0) == (tie_break == "first")
    assert counts["hset"] == 2  # (the run's, and the state's save)
    board._check()


@pytest.mark.parametrize(("tie_break", "dense"), [("first", True), ("member", False)])
def test_batches_longer_than_a_variadic_command(
    redis_client: Any, tie_break: str, dense: bool
) -> None:
    """``set_many`` and ``incr_many`` (whose members may repeat) read their
    rows and write their moves VARIADIC values a command too: a batch of
    more members than that leaves what an in-process board holds."""
    n = VARIADIC + 300
    members = [f"q{k:05d}" for k in range(n)]
    board, _, twin = boards(redis_client, {"tie_break": tie_break}, dense, {})
    try:
        for b in (board, twin):
            assert b.set_many({m: k % 11 for k, m in enumerate(members) if k % 3}) == len(
                [k for k in range(n) if k % 3]
            )
            b.set_many({m: (k % 7) - 3.5 for k, m in enumerate(members) if k % 2})
        pairs = [(m, (k % 5) - 2) for k, m in enumerate(members)] + [(members[0], 2.5)]
        assert board.incr_many(pairs) == twin.incr_many(pairs)
        # (the clocks are not compared: the in-process board's moves past
        # the Redis board's on such a batch, as before the batching)
        assert exact(board.items()) == exact(twin.items())
        picked = members[:: n // 40]
        for style in STYLES:
            assert [board.rank(m, style=style) for m in picked] == [
                twin.rank(m, style=style) for m in picked
            ]
        board._check()
    finally:
        board.clear()
