"""What is particular to boards on Redis: key layout, encodings, packed scores
and their 2**53 guard, sharing between clients, round trips, atomicity under
concurrency, and the event log that rebuilds a Redis that lost data.

The shared behaviour suite (tests/test_leaderboard.py) already runs against
``backend="redis"``; these tests cover what it cannot see.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcomes import exact
from redis_service import (  # noqa: F401 - fixtures
    redis_board,
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    standalone_server,
    unique_name,
)

import rankengine.redis.combine as redis_combine_module
from rankengine import Leaderboard
from rankengine.board.packed import PackedScore
from rankengine.board.scoring import ScoreCodec
from rankengine.durable.board import rebuild as rebuild_from_directory
from rankengine.redis.board import (
    RedisLeaderboard,
    ScoreFormat,
    decode_member,
    encode_member,
)
from rankengine.redis.codec import MAX_INT_SCORE, MAXCLOCK
from rankengine.redis.scripts import ScriptRunner
from rankengine.sharded.board import ShardedLeaderboard

pytestmark = pytest.mark.redis

WEEK = 7 * 86400


def board(client: Any, **kwargs: Any) -> RedisLeaderboard:
    return RedisLeaderboard(client, unique_name(), **kwargs)


def raw(client: Any, b: RedisLeaderboard) -> list[tuple[bytes, float]]:
    """The ranking as Redis itself returns it, best first."""
    return [(el, score) for el, score in client.zrevrange(b.keys[0], 0, -1, withscores=True)]


def doubles(client: Any, b: RedisLeaderboard) -> dict[Any, float]:
    """member -> the double Redis holds for it."""
    return {decode_member(b._split_element(el)[2]): score for el, score in raw(client, b)}


# ----------------------------------------------------------------------
# Keys and encodings
# ----------------------------------------------------------------------
def resending(client: Any) -> Any:
    """A client on ``client``'s server that sends a call again after a
    dropped connection, as ``redis.Redis(host, port)`` does by default
    (``redis.Redis.from_url``, the fixture's client, never does)."""
    import redis

    kwargs = client.connection_pool.connection_kwargs
    return redis.Redis(host=kwargs["host"], port=kwargs["port"], db=kwargs.get("db", 0))


def test_keys_share_one_hash_tag(redis_client: Any) -> None:
    from redis.crc import key_slot

    # (the reply key is kept for a client that may send a write again)
    b = RedisLeaderboard(resending(redis_client), "weekly", prefix="game:")
    assert b.keys == [f"game:{{weekly}}:{suffix}" for suffix in "zhmdcs"]
    assert len({key_slot(key.encode()) for key in b.keys}) == 1
    b.set("ann", 1)
    b.set_meta("ann", {"x": 1})
    b.rank("ann", style="dense")  # the distinct scores are built on the first dense read
    reply = b._reply_key()  # the last write's reply, for a call sent again
    assert sorted(k.decode() for k in redis_client.keys("game:{weekly}:*")) == sorted(
        [*(f"game:{{weekly}}:{suffix}" for suffix in "zhmdcs"), reply]
    )
    assert reply.startswith("game:{weekly}:r:") and key_slot(reply.encode()) == key_slot(b"weekly")
    assert 0 < redis_client.ttl(reply) <= 300
    with pytest.raises(ValueError, match="braces"):
        RedisLeaderboard(redis_client, "a{b}")
    for prefix in ("{app}:", "app{}:", "app}:"):  # the name must stay the hash tag
        with pytest.raises(ValueError, match="braces"):
            RedisLeaderboard(redis_client, "weekly", prefix=prefix)
    assert redis_client.keys("*app*") == []


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_elements_are_tie_clock_then_member(redis_client: Any, order: str) -> None:
    b = board(redis_client, order=order)
    b.set_many([("ann", 5), ("bob", 5), ("cid", 5)])
    elements = [el for el, _ in raw(redis_client, b)]
    # 16 digits of the clock (inverted on a descending board), the score's
    # kind ("i": an int), then the member
    clocks = [int(el[:16]) for el in elements]
    if order == "desc":
        assert clocks == [MAXCLOCK - 1, MAXCLOCK - 2, MAXCLOCK - 3]
        assert [el[16:] for el in elements] == [b"isann", b"isbob", b"iscid"]
    else:
        assert clocks == [3, 2, 1]  # read from the top: the last to reach 5 first
    assert list(b) == ["ann", "bob", "cid"]
    # ZREVRANGE on a descending board *is* the board's order
    by_member = board(redis_client, tie_break="member")
    by_member.set_many({"ann": 5, "bob": 5, "cid": 6})
    assert [el for el, _ in raw(redis_client, by_member)] == [b"scid", b"sbob", b"sann"]


members = st.one_of(st.text(max_size=6), st.binary(max_size=6), st.integers(-(2**80), 2**80))


@given(st.lists(members, min_size=2, max_size=12))
@settings(max_examples=200)
def test_member_encoding_sorts_like_python(values: list[Any]) -> None:
    for kind in (str, bytes, int):
        same = [v for v in values if type(v) is kind]
        assert sorted(same, key=encode_member) == sorted(same)
        assert [decode_member(encode_member(v)) for v in same] == same


def test_int_members_up_to_the_stated_limit() -> None:
    # 126 bytes after the length byte: magnitudes below 2**1008
    edge = [-(2**1008) + 1, -(2**1000), -1, 0, 2**1000, 2**1008 - 1]
    assert sorted(edge, key=encode_member) == edge
    assert [decode_member(encode_member(m)) for m in edge] == edge
    for too_big in (2**1008, -(2**1008)):
        with pytest.raises(ValueError, match=r"1009 bits; at most 1008"):
            encode_member(too_big)


@given(
    st.one_of(
        st.integers(-(2**200), 2**200),
        st.floats(allow_nan=False),
        st.sampled_from([2**53 + 1, -(2**53) - 1, 2**63, 10**30, -(10**30) + 7]),
    ),
    st.one_of(st.integers(-(2**200), 2**200), st.floats(allow_nan=False)),
)
@settings(max_examples=300)
def test_score_format_is_exact_and_order_preserving(a: Any, b: Any) -> None:
    fmt = ScoreFormat(ScoreCodec("desc"))
    for value in (a, b):
        text, ok, kind = fmt.encode(value)
        back = fmt.decode(text, ok, kind)
        assert back == value and type(back) is type(value)
    (ta, oa, _), (tb, ob, _) = fmt.encode(a), fmt.encode(b)
    assert ((float(ta), oa) < (float(tb), ob)) == (a < b)
    assert ((float(ta), oa) == (float(tb), ob)) == (a == b)


COMPOSITE_ORDERS = [("desc", "asc"), ("asc", "desc"), ("desc", "desc", "asc")]
columns = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.sampled_from([-0.0, 0.0, 2**53 + 1, -(2**53) - 1, MAX_INT_SCORE, -MAX_INT_SCORE, math.inf]),
)
bound_columns = st.one_of(columns, st.sampled_from([MAX_INT_SCORE + 1, -(10**400), 2**1024]))


@given(order=st.sampled_from(COMPOSITE_ORDERS), data=st.data())
@settings(max_examples=300, deadline=None)
def test_composite_score_format_is_exact_and_order_preserving(
    order: tuple[str, ...], data: st.DataObject
) -> None:
    # Redis compares (double, element bytes), the element starting with the
    # ordkey; the model is the engine's own primary tuple.
    codec = ScoreCodec(order)  # type: ignore[arg-type]
    fmt = ScoreFormat(codec)
    a = data.draw(st.tuples(*[columns] * len(order)))
    b = data.draw(st.tuples(*[bound_columns] * len(order)))
    text, ok, kind = fmt.encode(a)
    back = fmt.decode(text, ok, kind)
    assert back == a
    assert [(type(c), math.copysign(1.0, c)) for c in back] == [
        (type(c), math.copysign(1.0, c)) for c in a
    ]
    element = ok + b"%016d" % 7 + kind.encode() + encode_member("m")
    assert fmt.ok_end(element) == len(ok)
    bound_text, bound_ok = fmt.bound(b)  # a bound may be beyond what a score holds
    key_a, key_b = (float(text), ok), (float(bound_text), bound_ok)
    assert (key_a < key_b) == (codec.primary(a) < codec.primary(b))
    assert (key_a == key_b) == (codec.primary(a) == codec.primary(b))


tied_members = st.one_of(
    st.lists(
        st.one_of(
            st.integers(-300, 300),
            st.sampled_from([-65536, -256, -255, -129, -128, 128, 255, 256, 2**64, -(2**64)]),
        ),
        unique=True,
        max_size=8,
    ),
    st.lists(
        st.text(
            st.sampled_from(["a", "é", "\x00", "\ud800", "\udfff", "\ue000", "\U0001f600"]),
            max_size=3,
        ),
        unique=True,
        max_size=8,
    ),
    st.lists(st.binary(max_size=3), unique=True, max_size=8),
)


@pytest.mark.parametrize("order", ["desc", "asc", ("desc", "asc")], ids=str)
def test_tied_members_order_as_in_memory(order: Any) -> None:
    # tie_break="member": mixed lengths, negative ints, non-ASCII and lone
    # surrogates rank as the in-memory board ranks them
    ties = [1, 1.0, 2**60 + 1] if isinstance(order, str) else [(1, 2), (1.0, 2), (1, -0.0)]

    @given(members=tied_members, data=st.data())
    @settings(max_examples=25, deadline=None)
    def run(members: list[Any], data: st.DataObject) -> None:
        rows = {m: data.draw(st.sampled_from(ties)) for m in members}
        memory = Leaderboard(order=order, tie_break="member")
        redis_side = redis_board(order=order, tie_break="member")
        memory.set_many(rows)
        redis_side.set_many(rows)
        assert redis_side.items() == memory.items()
        for style in ("unique", "competition", "dense"):
            assert redis_side.top(10, style=style) == memory.top(10, style=style)
        for member in members:
            assert redis_side.around(member, 1, 1) == memory.around(member, 1, 1)
        redis_side._check()

    run()


def test_big_ints_are_exact_on_doubles(redis_client: Any) -> None:
    big = 2**53
    b = board(redis_client)
    b.set_many({"a": big, "b": big + 1, "c": float(big + 2), "d": 10**30})
    # Redis holds the largest double at or below each score; the rest is in the element
    assert doubles(redis_client, b)["b"] == float(big)
    assert list(b) == ["d", "c", "b", "a"]
    assert b["b"] == big + 1 and type(b["b"]) is int
    assert b.incr("b", 2) == big + 3
    assert b.rank("c", style="competition") == 3 and b.rank("b", style="competition") == 2
    assert b.count(big + 1, big + 3) == 2
    b._check()


def test_scores_beyond_the_double_range(redis_client: Any) -> None:
    b = board(redis_client)
    b.set("a", 10**300)
    with pytest.raises(ValueError, match="outside the range"):
        b.set("b", 10**400)
    assert b.items() == [("a", 10**300)]
    assert b.count(None, 10**400) == 1  # as a bound it is fine
    assert b.rank_for_score(-(10**400)) == 2
    b._check()


def test_a_float_and_an_int_beyond_the_double_range_raise_a_clear_error(
    redis_client: Any,
) -> None:
    # 0.5 + 10**400 has no float value: the error names the member, as in
    # process, and nothing is written (in Redis or in a union's new board)
    b = board(redis_client)
    b.set_many({"half": 0.5, "one": 1})
    before = (b.items(), b.clock, b.writes)
    for write in (
        lambda: b.incr("half", 10**400),
        lambda: b.incr_many([("one", 1), ("half", 10**400)]),
    ):
        with pytest.raises(OverflowError, match=r"increment of 'half'.*float range"):
            write()
    with pytest.raises(OverflowError, match=r"weighted score of 'half'.*float range"):
        RedisLeaderboard.union([b], weights=[10**400])
    assert (b.items(), b.clock, b.writes) == before
    b._check()


def test_negative_zero_keeps_its_sign(redis_client: Any) -> None:
    b = board(redis_client)
    b.set("z", -0.0)
    assert math.copysign(1.0, b["z"]) == -1.0
    assert b.incr("z", 0.0) == 0.0
    b._check()


def test_increments_of_negative_zero_add_as_in_process(redis_client: Any) -> None:
    """-0.0 + -0.0 is -0.0: the increment returns it with its sign, as the
    in-process board does (the stored double of -0.0 is 0)."""
    b, single = board(redis_client), Leaderboard()
    results = []
    for target in (b, single):
        target.set_many({"z": -0.0, "p": 0.0})
        results.append(
            [
                target.incr("z", -0.0),
                target.incr("p", -0.0),
                target.incr("new", -0.0),
                *target.incr_many([("z", -0.0), ("p", -0.0)]).values(),
                target["z"],
            ]
        )
    got, want = ([math.copysign(1.0, x) for x in row] for row in results)
    assert got == want == [-1.0, 1.0, 1.0, -1.0, 1.0, -1.0]
    b._check()


def test_metadata_equality_ignores_key_order(redis_client: Any) -> None:
    """Equal dicts are equal metadata, whatever order their keys come in:
    re-setting them changes nothing, as on an in-process board."""
    meta = {"name": "Ann", "team": {"id": 7, "tag": "red"}, "tags": [{"b": 1, "a": 2}]}
    same = {"tags": [{"a": 2, "b": 1}], "team": {"tag": "red", "id": 7}, "name": "Ann"}
    b, local = board(redis_client), Leaderboard()
    for target in (b, local):
        target.set("ann", 5, meta=meta)
    writes = b.writes
    for target in (b, local):
        assert target.set("ann", 5, meta=same) is False
        target.set_meta("ann", same)
        assert target.meta("ann") == meta
    assert b.writes == writes  # neither write counted as a change
    b.set_meta("ann", {**same, "name": "Bea"})  # a real change still counts
    assert b.writes == writes + 1 and b.meta("ann") == {**meta, "name": "Bea"}
    b._check()


# ----------------------------------------------------------------------
# Packed scores and the 2**53 guard
# ----------------------------------------------------------------------
def test_packed_board_stores_one_packed_double(redis_client: Any) -> None:
    packing = PackedScore(0, WEEK)
    b = board(redis_client, order=("desc", "asc"), packing=packing)
    b.set_many({"ann": (100, 7200), "bob": (100, 3600), "cid": (90, 10)})
    assert list(b) == ["bob", "ann", "cid"]  # same points: the earlier time first
    assert b["bob"] == (100, 3600)
    assert doubles(redis_client, b)["bob"] == packing.pack(100, 3600)
    assert b.incr("cid", (20, 0)) == (110, 10)
    assert b.rank_for_score((100, 5000)) == 3
    b._check()


def test_packed_guard_raises_before_precision_is_lost(redis_client: Any) -> None:
    packing = PackedScore(0, WEEK)
    b = board(redis_client, order=("desc", "asc"), packing=packing)
    b.set("top", (packing.max_score, 0))
    before = (b.items(), b.clock, b.writes)
    with pytest.raises(ValueError, match="cannot be packed exactly"):
        b.set("over", (packing.max_score + 1, 0))
    with pytest.raises(ValueError, match="cannot be packed exactly"):
        b.incr("top", (1, 0))
    with pytest.raises(ValueError, match="cannot be packed exactly"):
        b.set_many({"ok": (1, 0), "over": (packing.max_score + 1, 0)})
    with pytest.raises(ValueError, match="whole number"):
        b.set("half", (1, 0.5))  # between two one-second ticks: would be rounded
    with pytest.raises(ValueError, match="outside the window"):
        b.set("late", (1, WEEK * 2))
    for far in (10**400, 1e308):  # beyond the float range once made ticks
        with pytest.raises(ValueError, match="outside the window"):
            b.set("far", (1, far))
        with pytest.raises(ValueError, match="outside the window"):
            b.set_many({"ok": (1, 0), "far": (1, far)})
        with pytest.raises(ValueError, match="outside the window"):
            b.incr("top", (-1, far))
    assert (b.items(), b.clock, b.writes) == before
    assert float(packing.pack(packing.max_score, 0)) <= 2**53
    b._check()


def test_packed_board_keeps_the_sign_of_a_zero_in_either_column(redis_client: Any) -> None:
    # -0.0 packs as 0 (the double cannot tell them apart): its kind brings it
    # back, as on the exact encoding and in memory.
    def signs(score: Any) -> list[float]:
        return [math.copysign(1.0, column) for column in score]

    b = board(redis_client, order=("desc", "asc"), packing=PackedScore(0, WEEK))
    b.set_many({"score": (-0.0, 10), "time": (3, -0.0), "both": (-0.0, -0.0)})
    b.set("plain", (0.0, 0.0))
    assert signs(b["score"]) == [-1.0, 1.0] and signs(b["time"]) == [1.0, -1.0]
    assert signs(b["both"]) == [-1.0, -1.0] and signs(b["plain"]) == [1.0, 1.0]
    assert b.set("score", (0.0, 10)) is False  # an equal score: nothing changes
    assert b.incr("score", (-0.0, 0)) == (-0.0, 10)
    assert signs(b["score"]) == [-1.0, 1.0]
    b._check()


def test_packed_board_stores_fine_ticks_of_an_epoch_window(redis_client: Any) -> None:
    # At 0.1 ms ticks from an epoch-scale start, start + k * resolution is a
    # fraction of a tick off k: each such time is still tick k, not refused.
    start = 1_764_460_800.0
    packing = PackedScore(start, 3600, resolution=1e-4)
    b = board(redis_client, order=("desc", "asc"), packing=packing)
    rows = {f"m{k}": (k % 3, start + k * 1e-4) for k in range(1, 40)}
    b.set_many(rows)
    memory = Leaderboard(order=("desc", "asc"))
    memory.set_many(rows)
    assert b.items() == memory.items()
    b._check()


def test_packed_board_needs_a_matching_direction(redis_client: Any) -> None:
    with pytest.raises(ValueError, match="descending=False"):
        board(redis_client, order=("desc", "desc"), packing=PackedScore(0, WEEK))
    with pytest.raises(ValueError, match="two-column"):
        board(redis_client, packing=PackedScore(0, WEEK))
    b = board(redis_client, order=("desc", "desc"), packing=PackedScore(0, WEEK, descending=False))
    b.set_many({"a": (1, 10), "b": (1, 20)})
    assert list(b) == ["b", "a"]  # later time first, as asked


def test_packing_direction_is_a_bool(redis_client: Any) -> None:
    """``descending=1`` passed for True but was stored as 1: the same board
    opened with ``descending=True`` was then refused as another setting."""
    for flag in (1, 0, "yes", None):
        with pytest.raises(TypeError, match="descending must be True or False"):
            PackedScore(0, WEEK, descending=flag)  # type: ignore[arg-type]


# A packed window small enough for random bounds to hit its edges: ticks of
# half a second from t = 1000, 64 ticks (6 bits), so time bounds land on
# ticks, between them, and outside the window.
SMALL_WINDOW = PackedScore(1000.0, 32.0, resolution=0.5)
PACKED_ORDERS = [("desc", "asc"), ("asc", "desc"), ("desc", "desc"), ("asc", "asc")]
packed_ticks = st.integers(0, SMALL_WINDOW.max_tick)
packed_rows = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(12)]),
    st.tuples(st.integers(-3, 3), packed_ticks),
    max_size=12,
)
bound_scores = st.one_of(
    st.integers(-4, 4),
    st.sampled_from([-0.0, 0.5, -1.5, 2.25, math.inf, -math.inf]),
    st.sampled_from([SMALL_WINDOW.max_score, SMALL_WINDOW.min_score, 2**80, -(2**80)]),
    st.floats(-5, 5, allow_nan=False),
)
bound_times = st.one_of(
    packed_ticks.map(lambda tick: 1000.0 + tick * 0.5),
    packed_ticks.map(lambda tick: 1000.0 + tick * 0.5 + 0.25),  # between two ticks
    st.sampled_from([999.0, 999.75, 1032.0, 1100.0, -0.0, math.inf, -math.inf]),
    st.floats(990, 1040, allow_nan=False),
)
bounds = st.one_of(st.none(), st.tuples(bound_scores, bound_times))


@pytest.mark.parametrize("order", PACKED_ORDERS, ids="-".join)
def test_packed_board_reads_any_bound_as_in_memory(order: tuple[str, str]) -> None:
    # Writes refuse a score that packing cannot hold; reads take any bound,
    # rounded to the packed values that keep the range's meaning, and answer
    # exactly as an in-memory board does.
    descending = order[0] != order[1]
    packing = PackedScore(1000.0, 32.0, resolution=0.5, descending=descending)

    @given(
        rows=packed_rows,
        low=bounds,
        high=bounds,
        low_inclusive=st.booleans(),
        high_inclusive=st.booleans(),
        probe=st.tuples(bound_scores, bound_times),
    )
    @settings(max_examples=80, deadline=None)
    def run(
        *,
        rows: dict[str, tuple[int, int]],
        low: Any,
        high: Any,
        low_inclusive: bool,
        high_inclusive: bool,
        probe: Any,
    ) -> None:
        scores = {member: (points, 1000.0 + tick * 0.5) for member, (points, tick) in rows.items()}
        memory = Leaderboard(order=order)
        memory.set_many(scores)
        redis_side = redis_board(order=order, packing=packing)
        redis_side.set_many(scores)
        # the sharded board merges the counts of packed shards
        shards = [redis_board(order=order, packing=packing) for _ in range(3)]
        sharded = ShardedLeaderboard(shards)
        sharded.set_many(scores)
        flags = {"min_inclusive": low_inclusive, "max_inclusive": high_inclusive}
        for packed in (redis_side, sharded):
            assert packed.count(low, high, **flags) == memory.count(low, high, **flags)
            for style in ("unique", "competition", "dense"):
                assert packed.by_score(low, high, style=style, **flags) == memory.by_score(
                    low, high, style=style, **flags
                ), style
                assert packed.rank_for_score(probe, style=style) == memory.rank_for_score(
                    probe, style=style
                ), (style, probe)
            assert packed.by_score(low, high, offset=1, limit=2, **flags) == memory.by_score(
                low, high, offset=1, limit=2, **flags
            )
        removed = memory.remove_by_score(low, high, **flags)
        for packed in (redis_side, sharded):
            assert packed.remove_by_score(low, high, **flags) == removed
            assert packed.items() == memory.items()
        redis_side._check()
        for shard in shards:
            shard._check()

    run()


# ----------------------------------------------------------------------
# The tie clock's limit
# ----------------------------------------------------------------------
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_batch_that_would_pass_the_clock_limit_is_refused_whole(
    redis_client: Any, order: str
) -> None:
    # The tie clock is a Lua number (a double): past 2**53 - 1 clocks collide.
    # A batch whose writes would take it past the limit is refused before
    # its first write, whichever script runs it.
    b = board(redis_client, order=order)
    b.set_many({"ann": 5, "bob": 3})
    redis_client.hset(b.keys[5], "clock", MAXCLOCK - 2)  # room for two more changes
    before = (b.items(), b.clock, b.writes)
    batches = {
        "set_many": lambda: b.set_many({"cid": 1, "dan": 2, "eve": 3}),
        "incr_many": lambda: b.incr_many({"cid": 1, "ann": 1, "eve": 1}),
        "exact incr_many": lambda: b.incr_many({"cid": 2**60, "ann": 1, "eve": 1}),
    }
    for name, batch in batches.items():
        with pytest.raises(ValueError, match=r"tie clock would pass 2\*\*53 - 1"):
            batch()
        assert (b.items(), b.clock, b.writes) == before, name
        b._check()
    assert b.set_many({"cid": 1, "dan": 2}) == 2  # two changes still fit
    assert b.clock == MAXCLOCK
    for name, write in {
        "set": lambda: b.set("eve", 9),
        "incr": lambda: b.incr("ann", 1),
        "exact incr": lambda: b.incr("ann", 2**60),
        "set_many": lambda: b.set_many({"eve": 9}),
    }.items():
        with pytest.raises(ValueError, match=r"tie clock would pass 2\*\*53 - 1"):
            write()
        assert b.clock == MAXCLOCK and "eve" not in b and b["ann"] == 5, name
    assert b.set("ann", 5) is False  # an unchanged score needs no clock
    b._check()
    # nor does a rebuild copy a board whose clock is past the limit
    source = Leaderboard(order=order)
    source._restore([("zed", 1, MAXCLOCK + 1, None)], MAXCLOCK + 1)
    state = (b.items(), b.clock, b.writes)
    with pytest.raises(ValueError, match=r"past 2\*\*53 - 1"):
        b.rebuild(source)
    assert (b.items(), b.clock, b.writes) == state


# ----------------------------------------------------------------------
# Sharing, round trips, atomicity
# ----------------------------------------------------------------------
def test_two_clients_share_one_board(redis_url: str) -> None:
    import redis

    name = unique_name()
    one = RedisLeaderboard(redis.Redis.from_url(redis_url), name, order="asc")
    two = RedisLeaderboard(redis_url, name, order="asc")  # a URL works too
    one.set("ann", 5)
    two.set("bob", 5)
    assert one.items() == two.items() == [("ann", 5), ("bob", 5)]
    assert one.clock == two.clock == 2
    with pytest.raises(ValueError, match="cannot be opened"):
        RedisLeaderboard(redis_url, name, order="desc")


# ----------------------------------------------------------------------
# Settings: checked before anything is stored in Redis
# ----------------------------------------------------------------------
def _stored(client: Any, name: str) -> list[bytes]:
    """Every key of board ``name`` under the default prefix."""
    return sorted(client.keys(f"rankengine:{{{name}}}:*"))


def _closed_log(path: Any) -> Leaderboard:
    log = Leaderboard.open(path)
    log.close()
    return log


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"fsync": "sometimes"}, ValueError, "fsync must be one of"),
        ({"fsync": "sometimes", "log": "LOG"}, ValueError, "fsync must be one of"),
        ({"log": 42}, TypeError, "log must be"),
        ({"log": "PLAIN"}, TypeError, "log must be"),
        ({"log": "CLOSED"}, ValueError, "closed"),
        ({"log": "DESC"}, ValueError, "another order"),
        ({"log": "LOG-DESC"}, ValueError, "order='desc'"),
        ({"packing": "week"}, TypeError, "packing must be a PackedScore"),
    ],
)
def test_a_refused_open_stores_nothing_in_redis(
    redis_client: Any, tmp_path: Any, options: dict[str, Any], error: type, match: str
) -> None:
    """Every option is checked before the board's settings go to Redis: a
    refused open leaves no board behind, so a correct open of the same name
    afterwards (here with order="asc") is not held to the refused settings."""
    given = {"order": "desc", **options}
    if given.get("packing") == "week":
        given["order"] = ("desc", "asc")
    log = given.get("log")
    if log == "LOG":
        given["log"] = tmp_path / "log"
    elif log == "PLAIN":
        given["log"] = Leaderboard()  # no event log: it would fail at the first write
    elif log == "CLOSED":
        given["log"] = _closed_log(tmp_path / "closed")
    elif log == "DESC":
        given["log"] = Leaderboard.open(tmp_path / "desc", order="asc")
    elif log == "LOG-DESC":
        Leaderboard.open(tmp_path / "asc", order="asc").close()
        given["log"] = tmp_path / "asc"
    name = unique_name()
    with pytest.raises(error, match=match):
        RedisLeaderboard(redis_client, name, **given)
    assert _stored(redis_client, name) == []
    again = RedisLeaderboard(redis_client, name, order="asc")
    again.set("ann", 1)
    assert again.items() == [("ann", 1)]
    if hasattr(given.get("log"), "close"):
        given["log"].close()


def test_a_client_that_decodes_replies_is_refused(redis_url: str, redis_client: Any) -> None:
    """The board stores bytes (members, metadata, ordkeys): a client that
    decodes replies to str wrote, then failed on its first read."""
    import redis

    name = unique_name()
    for client in (
        redis.Redis.from_url(redis_url, decode_responses=True),
        f"{redis_url}?decode_responses=true",
    ):
        with pytest.raises(ValueError, match="decode_responses"):
            RedisLeaderboard(client, name)
    assert _stored(redis_client, name) == []
    with pytest.raises(TypeError, match="redis must be a redis-py client or a URL"):
        RedisLeaderboard(None, name)


def test_a_log_directory_is_not_created_for_a_board_redis_refuses(
    redis_client: Any, tmp_path: Any
) -> None:
    name = unique_name()
    RedisLeaderboard(redis_client, name, order="asc")
    with pytest.raises(ValueError, match="was created with"):
        RedisLeaderboard(redis_client, name, order="desc", log=tmp_path / "log")
    assert not (tmp_path / "log").exists()
    with RedisLeaderboard(redis_client, name, order="asc", log=tmp_path / "log") as logged:
        logged.set("ann", 1)  # the right settings open it, log and all
        assert logged.log["ann"] == 1


def test_rank_style_is_each_handles_own_with_a_log_too(redis_client: Any, tmp_path: Any) -> None:
    """``rank_style`` is each client's default, not a setting of the board:
    a logged board reopened with another one opens (the log's directory
    held the first handle's style, and refused any other)."""
    name = unique_name()
    with RedisLeaderboard(redis_client, name, log=tmp_path) as first:
        first.set_many({"ann": 5, "bob": 5, "cid": 1})
    with RedisLeaderboard(redis_client, name, log=tmp_path, rank_style="dense") as again:
        assert (again.rank_style, again.rank("cid")) == ("dense", 2)
        again.set("dee", 0)
        assert again.verify() == [] and again.repairs == 0


def test_the_stored_order_is_the_boards_own(redis_client: Any) -> None:
    """``order`` is stored as the board keeps it (a tuple of directions), not
    as given: any iterable the in-process board takes is one board."""
    name = unique_name()
    b = RedisLeaderboard(redis_client, name, order=iter(["desc", "asc"]))
    assert b.order == Leaderboard(order=iter(["desc", "asc"])).order == ("desc", "asc")
    b.set("ann", (1, 2))
    for order in (("desc", "asc"), ["desc", "asc"]):
        assert RedisLeaderboard(redis_client, name, order=order).items() == [("ann", (1, 2))]
    one = unique_name()
    RedisLeaderboard(redis_client, one, order={"desc": 1})  # a one-column composite
    assert RedisLeaderboard(redis_client, one, order=("desc",)).order == ("desc",)


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        (b"garbage{", "damaged"),
        (b"\xff\xfe", "damaged"),
        (b"[1, 2]", "damaged"),
        (b'{"order": "desc"}', "damaged"),
        (
            b'{"order": "desc", "packing": null, "tie_break": "first", "version": 3}',
            "format version 3",
        ),
        # format 2 is a shard's: the settings and its place [index, count]
        (b'{"order": "desc", "packing": null, "tie_break": "first", "version": 2}', "damaged"),
        (
            b'{"order": "desc", "packing": null, "shard": [0, 3], "tie_break": "first", '
            b'"version": 1}',
            "damaged",
        ),
        (
            b'{"order": "desc", "packing": null, "shard": [3, 3], "tie_break": "first", '
            b'"version": 2}',
            "damaged",
        ),
        (
            b'{"order": "desc", "packing": null, "shard": [0, true], "tie_break": "first", '
            b'"version": 2}',
            "damaged",
        ),
        (
            b'{"order": "desc", "packing": null, "tie_break": "first", "version": true}',
            "damaged",
        ),
    ],
)
def test_damaged_or_newer_stored_settings_are_clear_errors(
    redis_client: Any, stored: bytes, match: str
) -> None:
    name = unique_name()
    key = f"rankengine:{{{name}}}:s"
    redis_client.hset(key, "config", stored)
    with pytest.raises(ValueError, match=match):
        RedisLeaderboard(redis_client, name)
    assert redis_client.hgetall(key) == {b"config": stored}


@pytest.mark.parametrize("suffix", list("zhmdcs"))
def test_a_key_of_another_type_is_refused_on_open(redis_client: Any, suffix: str) -> None:
    """Another application's value at one of the board's keys: opening the
    board says so and writes nothing (a write would fail half-way through
    its script, which Redis does not roll back)."""
    name = unique_name()
    key = f"rankengine:{{{name}}}:{suffix}"
    redis_client.set(key, "someone else's")
    with pytest.raises(ValueError, match=rf"{re.escape(key)}.* holds a string"):
        RedisLeaderboard(redis_client, name)
    assert _stored(redis_client, name) == [key.encode()]
    assert redis_client.get(key) == b"someone else's"


#: Client methods that send one command (a script, a function or a plain read).
COUNTED = frozenset(
    (
        *("evalsha", "execute_command", "zcard", "hget", "hexists", "script_load"),
        *("zrange", "zrevrange", "zrank", "zrevrank"),
    )
)


class _Counting:
    """Counts the commands a client sends (a pipeline or script is one)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if name in COUNTED:

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                return attr(*args, **kwargs)

            return counted
        return attr


def test_each_read_and_write_is_one_round_trip(redis_client: Any) -> None:
    counting = _Counting(redis_client)
    b = RedisLeaderboard(counting, unique_name())
    b.set_many({f"p{i}": i % 7 for i in range(100)})
    b.set_meta("p5", {"n": 5})
    calls = {
        "set": lambda: b.set("p1", 50, meta={"a": 1}),
        "incr": lambda: b.incr("p2", 3),
        "set_many": lambda: b.set_many({"x": 1, "y": 2}),
        "page": lambda: b.page(3, 10, style="dense", with_meta=True),
        "top": lambda: b.top(10, style="competition"),
        "around": lambda: b.around("p5", 5, 5, fill=True),
        "entries": lambda: b.entries([f"p{i}" for i in range(20)], style="dense"),
        "by_score": lambda: b.by_score(2, 5, offset=3, limit=10),
        "percentile": lambda: b.percentile("p5"),
        "pop_best": lambda: b.pop_best(3),
    }
    for name, call in calls.items():
        counting.calls = 0
        call()
        assert counting.calls == 1, name  # the scripts were loaded by set_many above
    b._check()


def test_concurrent_increments_are_atomic(redis_url: str) -> None:
    import redis

    name = unique_name()
    shared = RedisLeaderboard(redis_url, name)
    shared.set("big", 2**60)  # past 2**53: increments take the exact (CAS) path

    def work() -> None:
        mine = RedisLeaderboard(redis.Redis.from_url(redis_url), name)
        for _ in range(25):
            mine.incr("small", 1)
            mine.incr("big", 3)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared["small"] == 150
    assert shared["big"] == 2**60 + 450
    assert shared.clock == 1 + 300
    shared._check()


def test_a_flushed_script_cache_is_reloaded(redis_client: Any) -> None:
    b = board(redis_client)
    b.set("ann", 1)
    redis_client.script_flush()  # as after a restart or a failover
    assert b.incr("ann", 1) == 2
    assert b.top(1)[0].score == 2


def test_member_type_rules_come_back_as_type_errors(redis_client: Any) -> None:
    b = board(redis_client, tie_break="member")
    b.set("ann", 1)
    with pytest.raises(TypeError, match="holds str members; int members"):
        b.set(5, 1)
    with pytest.raises(TypeError):
        b.set_many([("x", 1), (b"y", 2)])
    b.remove("ann")
    b.set(5, 1)  # an emptied board takes a new type
    assert list(b) == [5]


def test_union_writes_a_new_redis_board(redis_client: Any) -> None:
    a, b = board(redis_client), Leaderboard()
    a.set_many({"ann": 10, "bob": 5})
    b.set_many({"bob": 7, "cid": 1})
    both = RedisLeaderboard.union([a, b], name=unique_name())
    assert both.items() == [("bob", 12), ("ann", 10), ("cid", 1)]
    assert both.redis is redis_client
    common = RedisLeaderboard.intersection([b, a], redis=redis_client, aggregate="max")
    assert common.items() == [("bob", 7)]


def test_a_union_of_redis_boards_lives_under_their_prefix(redis_client: Any) -> None:
    """The result takes the first board's client, settings and key prefix (a
    prefix is a namespace: one application's boards, say), unless told
    otherwise."""
    a = RedisLeaderboard(redis_client, unique_name(), prefix="game1:")
    a.set_many({"ann": 10, "bob": 5})
    both = RedisLeaderboard.union([a, Leaderboard()])
    assert all(key.startswith("game1:") for key in both.keys)
    assert redis_client.exists(*both.keys) > 0
    again = RedisLeaderboard(redis_client, both.name, prefix="game1:")
    assert again.items() == [("ann", 10), ("bob", 5)]
    elsewhere = RedisLeaderboard.union([a], prefix="other:")
    assert all(key.startswith("other:") for key in elsewhere.keys)


def test_a_union_that_fails_leaves_no_board_behind(redis_client: Any) -> None:
    # An in-process board may hold an int beyond a double's range, which a
    # Redis board refuses: the new board's keys must not stay behind.
    big = Leaderboard()
    big.set_many({"big": 10**400, "one": 1})
    big.set_meta("one", {"k": 1})
    name = unique_name()
    with pytest.raises(ValueError, match=r"outside the range of a Redis board"):
        RedisLeaderboard.union([big], redis=redis_client, name=name)
    assert redis_client.keys(f"*{{{name}}}*") == []
    assert RedisLeaderboard.union([big], weights=[0], name=name, redis=redis_client).items() == [
        ("big", 0),
        ("one", 0),
    ]


def test_union_refuses_a_name_that_already_holds_a_board(redis_client: Any) -> None:
    # ZINTERSTORE replaces its destination; a union that wrote into an
    # existing board would keep its stale members (here "x", which is not in
    # b) and overwrite an input.  The result is a new board: a taken name is
    # refused, and nothing is written.
    a, b = board(redis_client), board(redis_client)
    a.set_many({"x": 1, "y": 2})
    a.set_meta("x", {"keep": True})
    b.set_many({"y": 3})
    before = (a.items(), a.meta("x"), a.clock, a.writes)
    for combine in (RedisLeaderboard.union, RedisLeaderboard.intersection):
        with pytest.raises(ValueError, match=r"already holds a board"):
            combine([a, b], name=a.name)
    assert (a.items(), a.meta("x"), a.clock, a.writes) == before
    emptied = board(redis_client)
    emptied.set("gone", 1)
    emptied.remove("gone")
    with pytest.raises(ValueError, match=r"already holds a board"):
        RedisLeaderboard.union([b], name=emptied.name)
    assert len(emptied) == 0
    fresh = unique_name()
    assert RedisLeaderboard.intersection([a, b], name=fresh).items() == [("y", 5)]


class WireClient:
    """A redis-py client as seen on the wire: it counts round trips (a
    pipeline's ``execute`` is one, and notes how many commands it carried),
    and can send every round trip twice (its first reply lost: redis-py
    sends the call again, the whole MULTI/EXEC for a transaction) or die
    after ``dies_after`` of them (a killed process: nothing more reaches
    Redis, not even the cleanup of a failed union)."""

    def __init__(self, inner: Any, *, dies_after: int | None = None, resend: bool = False) -> None:
        self.inner = inner
        self.dies_after = dies_after
        self.resend = resend
        self.round_trips = 0
        #: (transaction?, commands) of every pipeline executed
        self.pipelines: list[tuple[bool, int]] = []

    def trip(self, send: Callable[[], Any]) -> Any:
        import redis

        if self.dies_after is not None and self.round_trips >= self.dies_after:
            raise redis.ConnectionError("the client process died")
        self.round_trips += 1
        if self.resend:
            send()  # this reply is lost
        return send()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name == "pipeline":
            return lambda *args, **kwargs: WirePipeline(self, attr, args, kwargs)
        if not callable(attr) or name in LOCAL_CALLS:
            return attr
        return lambda *args, **kwargs: self.trip(lambda: attr(*args, **kwargs))


#: Client methods that answer without going to the server.
LOCAL_CALLS = frozenset({"get_encoder"})


class WirePipeline:
    """A pipeline of a :class:`WireClient`: calls are queued, ``execute``
    sends them (as a new pipeline of the real client) in one round trip."""

    def __init__(self, client: WireClient, make: Any, args: Any, kwargs: Any) -> None:
        self.client = client
        self.make = lambda: make(*args, **kwargs)
        self.transaction = bool(kwargs.get("transaction", args[0] if args else True))
        self.queued: list[tuple[str, Any, Any]] = []

    def __getattr__(self, name: str) -> Any:
        def queue(*args: Any, **kwargs: Any) -> WirePipeline:
            self.queued.append((name, args, kwargs))
            return self

        return queue

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        queued, self.queued = self.queued, []
        self.client.pipelines.append((self.transaction, len(queued)))

        def send() -> Any:
            pipe = self.make()
            for name, call_args, call_kwargs in queued:
                getattr(pipe, name)(*call_args, **call_kwargs)
            return pipe.execute(*args, **kwargs)

        return self.client.trip(send)


def union_inputs(size: int) -> list[Leaderboard]:
    """Two in-process boards over ``size`` members (a third of them in both),
    every member with metadata, ties among the scores."""
    a, b = Leaderboard(), Leaderboard()
    a.set_many({f"p{i}": i % 7 for i in range(2 * size // 3)})
    b.set_many({f"p{i}": (i % 4) / 2 for i in range(size // 3, size)})
    for i in range(size):
        (a if f"p{i}" in a else b).set_meta(f"p{i}", {"i": i, "name": f"player {i}"})
    return [a, b]


def union_state(b: Any) -> Any:
    """Everything a union decides: rows in order (ties included), exact
    scores, metadata and the clock."""
    return exact(b.items()), [b.meta(m) for m in b], b.clock


def test_a_union_with_metadata_is_one_round_trip_whatever_its_size(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result's members and metadata go in one write: the union's round
    trips (open the new board, see that it is empty, fill it) do not grow
    with its members, nor with its chunks (one MULTI/EXEC carries them)."""
    ScriptRunner(redis_client).load()  # (a server that has none loads them first)
    trips = []
    for size in (3, 300):
        inputs = union_inputs(size)
        wire = WireClient(redis_client)
        result = RedisLeaderboard.union(inputs, redis=wire)
        trips.append(wire.round_trips)
        assert union_state(result) == union_state(Leaderboard.union(inputs))
    # settings (INIT), len and clock of the new board (it must be new), the write
    assert trips == [4, 4]
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", 40)
    wire = WireClient(redis_client)
    result = RedisLeaderboard.union(inputs, redis=wire)
    assert wire.round_trips == 4
    assert wire.pipelines == [(True, 8)]  # 300 members: 8 scripts in one transaction
    assert union_state(result) == union_state(Leaderboard.union(inputs))
    result._check()
    # Chunks are cut by size too: a member's row here is over 25 bytes (its
    # metadata alone over 20), so 300 rows are over 7,500 bytes, 4 chunks or more.
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", 5000)
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK_BYTES", 2000)
    wire = WireClient(redis_client)
    result = RedisLeaderboard.union(inputs, redis=wire)
    assert wire.round_trips == 4
    ((transaction, scripts),) = wire.pipelines
    assert transaction and scripts >= 4
    assert union_state(result) == union_state(Leaderboard.union(inputs))


def test_a_client_that_dies_during_a_union_leaves_all_of_it_or_nothing(
    redis_client: Any,
) -> None:
    """Kill the client after each of the union's round trips in turn: the
    name then holds the whole union with every metadata, or no member (and
    the union can be run into it again), never scores without metadata."""
    ScriptRunner(redis_client).load()
    inputs = union_inputs(20)
    expected = union_state(Leaderboard.union(inputs))
    name = unique_name()
    for alive in itertools.count():
        wire = WireClient(redis_client, dies_after=alive)
        try:
            RedisLeaderboard.union(inputs, redis=wire, name=name)
        except Exception as exc:
            assert "the client process died" in str(exc)
        else:
            break
        # the write is the union's last round trip: a client that died
        # before it has sent none of the result
        assert len(RedisLeaderboard(redis_client, name)) == 0, alive
    assert alive == 4  # and the union then runs into the same name
    assert union_state(RedisLeaderboard(redis_client, name)) == expected


@pytest.mark.parametrize("aggregate", ["sum", "min", "max"])
@pytest.mark.parametrize("intersect", [False, True])
@pytest.mark.parametrize(
    "result", [{"order": "desc", "tie_break": "first"}, {"order": "asc", "tie_break": "member"}]
)
def test_a_union_in_chunks_equals_the_in_process_union(
    redis_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    aggregate: str,
    intersect: bool,
    result: dict[str, str],
) -> None:
    """Inputs with metadata (one on Redis, one in process), weights, every
    aggregate, union and intersection, both tie rules: sent in chunks of 7
    members, the Redis result is the in-process one, tie order and clock
    included."""
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", 7)
    a, b = union_inputs(45)
    there_a = board(redis_client)
    there_a.set_many(a.items())
    for member in a:
        there_a.set_meta(member, a.meta(member))
    kind = "intersection" if intersect else "union"
    options = {"weights": [2, -0.5], "aggregate": aggregate, **result}
    here = getattr(Leaderboard, kind)([a, b], **options)
    there = getattr(RedisLeaderboard, kind)([there_a, b], **options)
    assert len(here) > 3 * 7 if not intersect else len(here) > 7  # more than one chunk
    assert union_state(there) == union_state(here)
    assert there.config() == {k: v for k, v in here.config().items() if k != "backend"}
    there._check()


@pytest.mark.parametrize("chunk", [None, 4])
def test_a_logged_union_is_one_write_and_one_record(
    redis_client: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    """On a result with an event log, the union is one write for Redis's
    write counter and one record (every PUT, then every META), in one
    script or in chunks; Redis and the log agree."""
    if chunk is not None:
        monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", chunk)
    inputs = union_inputs(30)
    expected = Leaderboard.union(inputs)
    log = tmp_path / "union"
    with RedisLeaderboard.union(inputs, redis=redis_client, log=log, fsync="always") as result:
        assert result.writes == result.log.last_seq == 1
        (event,) = list(result.log.events())
        assert [change[0] for change in event.changes] == [0] * 30 + [2] * 30
        assert result.verify() == []
        assert union_state(result) == union_state(expected)
    assert union_state(rebuild_from_directory(log)) == union_state(expected)


@pytest.mark.parametrize("chunk", [None, 4])
def test_a_union_whose_reply_was_lost_is_applied_once(
    redis_client: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    """redis-py sends a call again (a whole MULTI/EXEC for a transaction)
    when its reply is lost: the union's write, sent twice, still counts
    once and leaves the result as the in-process union."""
    if chunk is not None:
        monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", chunk)
    inputs = union_inputs(30)
    wire = WireClient(redis_client, resend=True)
    with RedisLeaderboard.union(inputs, redis=wire, log=tmp_path, fsync="always") as result:
        assert result.writes == result.log.last_seq == 1
        assert result.verify() == []
        assert union_state(result) == union_state(Leaderboard.union(inputs))


def test_a_chunk_refused_part_way_leaves_no_board(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis does not roll a transaction back: a chunk it refuses (here the
    second, told a wrong count of the members before it, standing in for
    Redis out of memory) leaves the first chunk's members in Redis, and the
    union removes the new board before it raises."""
    monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", 4)
    send = ScriptRunner.transaction
    left: list[int] = []

    def spoiled(runner: ScriptRunner, name: str, keys: list[str], calls: list[list[Any]]) -> Any:
        calls[1][1] = 99  # [mode, members before, last?, rows...]
        try:
            return send(runner, name, keys, calls)
        finally:
            left.append(runner.client.zcard(keys[0]))

    monkeypatch.setattr(ScriptRunner, "transaction", spoiled)
    name = unique_name()
    with pytest.raises(ValueError, match="new board"):
        RedisLeaderboard.union(union_inputs(12), redis=redis_client, name=name)
    assert left == [4]  # the first chunk ran
    assert redis_client.keys(f"*{{{name}}}*") == []


@pytest.mark.parametrize("chunk", [None, 1])
def test_the_bulk_load_of_a_union_fills_only_an_empty_board(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    """Checked by the script too: a name written to after the union saw it
    empty is refused, and keeps what it holds.  In chunks of one member,
    the second chunk finds the board as a first chunk would have left it
    (one member, clock 1), but not that chunk's mark: refused too."""
    if chunk is not None:
        monkeypatch.setattr(redis_combine_module, "LOAD_CHUNK", chunk)
    b = board(redis_client)
    b.set("other", 1)
    with pytest.raises(ValueError, match="new board"):
        b._load_new([("x", 1), ("y", 2)], {"x": {"k": 1}})
    assert union_state(b) == (exact([("other", 1)]), [None], 1)
    assert b.writes == 1
    b._check()


# ----------------------------------------------------------------------
# The event log: durability, and rebuilding a Redis that lost data
# ----------------------------------------------------------------------
def test_writes_are_logged_and_verified(redis_client: Any, tmp_path: Any) -> None:
    with board(redis_client, log=tmp_path / "log", fsync="always") as b:
        b.set_many({"ann": 10, "bob": 7})
        b.incr("bob", 2**60)  # the exact path is logged too
        b.set_meta("ann", {"name": "Ann"})
        b.pop_worst(1)
        assert b.log.last_seq == b.writes == 4
        assert b.verify() == []
        twin = rebuild_from_directory(tmp_path / "log")
        assert twin.items() == b.items() and twin.clock == b.clock


def test_a_write_after_redis_lost_the_board_rebuilds_it_first(
    redis_client: Any, tmp_path: Any
) -> None:
    with board(redis_client, log=tmp_path) as b:
        b.set_many({"ann": 10, "bob": 7, "cid": 7})
        b.set_meta("cid", {"x": [1]})
        redis_client.delete(*b.keys)  # Redis forgets everything
        assert len(b) == 0
        b.incr("ann", 1)  # the guard sees Redis behind the log and rebuilds first
        assert b.repairs == 1
        assert b.items() == [("ann", 11), ("bob", 7), ("cid", 7)]
        assert b.meta("cid") == {"x": [1]}
        assert b.verify() == []
        b._check()


def test_an_unlogged_write_is_undone(redis_client: Any, tmp_path: Any) -> None:
    with board(redis_client, log=tmp_path) as b:
        b.set("ann", 10)
        # a write that reached Redis but whose call failed before logging
        other = RedisLeaderboard(redis_client, b.name)
        other.set("ghost", 99)
        assert "ghost" in b
        b.set("bob", 5)
        assert b.items() == [("ann", 10), ("bob", 5)]
        assert b.verify() == []


def test_a_restarted_empty_redis_is_rebuilt_from_the_log(tmp_path: Any) -> None:
    import redis

    with standalone_server() as server:
        client = redis.Redis.from_url(server.url)
        with RedisLeaderboard(client, "season", log=tmp_path, fsync="always") as b:
            b.set_many({f"p{i}": i * 1.5 for i in range(50)})
            b.incr("p3", 100)
            expected = b.items()
        server.kill()  # no persistence: everything in Redis is gone
        server.start()
        client = redis.Redis.from_url(server.url)
        assert client.dbsize() == 0
        with RedisLeaderboard(client, "season", log=tmp_path) as again:
            assert again.recovered
            assert again.items() == expected
            assert again.verify() == []
            again._check()
        client.close()
    assert server.process is not None and server.process.poll() is not None  # stopped


def test_a_rebuild_cut_short_is_redone_not_taken_for_in_step(tmp_path: Any) -> None:
    import redis

    with standalone_server() as server:
        client = redis.Redis.from_url(server.url)
        log = Leaderboard.open(tmp_path)
        try:
            b = RedisLeaderboard(client, "season", log=log)
            # one logged write: 2000 small members (the first restore chunk),
            # then 500 bulky ones that will not fit
            rows: dict[str, int] = {f"p{i}": i for i in range(2000)}
            rows.update({f"big{i}-" + "x" * 20_000: 5000 + i for i in range(500)})
            b.set_many(rows)
            expected = b.items()
            client.flushall()
            used = int(client.info("memory")["used_memory"])
            client.config_set("maxmemory", used + 3_000_000)
            with pytest.raises(redis.exceptions.OutOfMemoryError):
                RedisLeaderboard(client, "season", log=log)  # the rebuild stops after one chunk
            client.config_set("maxmemory", 0)
            again = RedisLeaderboard(client, "season", log=log)
            assert again.recovered  # the write counter did not pass for the log's
            assert again.items() == expected
            assert again.verify() == []
        finally:
            log.close()
            client.close()


def test_a_failed_open_leaves_the_log_free_to_open_again(redis_client: Any, tmp_path: Any) -> None:
    name = unique_name()
    RedisLeaderboard(redis_client, name).set("ghost", 1)  # a write no log holds
    with pytest.raises(ValueError, match="1 writes but its log only 0"):
        RedisLeaderboard(redis_client, name, log=tmp_path)
    redis_client.delete(*RedisLeaderboard(redis_client, name).keys)
    with RedisLeaderboard(redis_client, name, log=tmp_path) as b:
        b.set("ann", 1)
        assert b.verify() == []


def test_rebuild_from_any_board(redis_client: Any, tmp_path: Any) -> None:
    source = Leaderboard(order="asc", tie_break="member")
    source.set_many({"b": 2, "a": 2, "c": 1})
    source.set_meta("a", {"k": "v"})
    b = board(redis_client, order="asc", tie_break="member")
    assert b.rebuild(source) == 3
    assert b.items() == source.items() and b.meta("a") == {"k": "v"}
    assert b.verify(source) == []
    b.set("a", 3)
    assert b.verify(source) == [
        "'a': Redis has ('a', 3, 0, {'k': 'v'}), log ('a', 2, 0, {'k': 'v'})",
        "clock: Redis 4, log 3",
    ]


def test_rebuild_of_a_logged_board_from_another_board_is_logged(
    redis_client: Any, tmp_path: Any
) -> None:
    # The log is the logged board's truth: a rebuild from any other board
    # (one without a log, here) is logged as one write, so Redis, its write
    # counter and the log stay in step, the next write finds nothing to
    # repair, and the board reopens (and recovers) with the new contents.
    name = unique_name()
    with RedisLeaderboard(redis_client, name, log=tmp_path, fsync="always") as b:
        b.set_many({"ann": 10, "bob": 7, "cid": 3})
        b.set_meta("bob", {"n": 1})
        b.set_meta("cid", {"n": 2})
        source = Leaderboard()
        source.set_many({"bob": 8, "dan": 5, "cid": 3})
        source.set_meta("dan", {"k": "v"})
        source.set_meta("cid", {"n": 2})
        seq = b.log.last_seq
        assert b.rebuild(source) == 3
        assert b.log.last_seq == seq + 1  # one logged write
        assert b.writes == b.log.last_seq
        assert b.items() == source.items() == b.log.items()
        assert [b.meta(m) for m in ("bob", "cid", "dan")] == [None, {"n": 2}, {"k": "v"}]
        assert b.verify() == []
        b._check()
        b.set("eve", 1)  # the write guard finds Redis in step with the log
        assert b.repairs == 0
        assert b.items() == [("bob", 8), ("dan", 5), ("cid", 3), ("eve", 1)]
        expected = b.items()
    with RedisLeaderboard(redis_client, name, log=tmp_path) as again:
        assert not again.recovered
        assert again.items() == expected and again.meta("dan") == {"k": "v"}
        assert again.verify() == []
        keys = again.keys
    redis_client.delete(*keys)  # Redis forgets: the log brings the rebuilt board back
    with RedisLeaderboard(redis_client, name, log=tmp_path) as again:
        assert again.recovered
        assert again.items() == expected and again.meta("dan") == {"k": "v"}
        assert again.verify() == []
        again._check()


def test_a_logged_board_rolls_back_to_a_point_in_its_own_log(
    redis_client: Any, tmp_path: Any
) -> None:
    name = unique_name()
    with RedisLeaderboard(redis_client, name, log=tmp_path, fsync="always") as b:
        b.set_many({"ann": 1, "bob": 2})
        b.set("bad", 99)  # the write to undo
        b.rebuild(rebuild_from_directory(tmp_path, until_seq=1))
        assert b.items() == [("bob", 2), ("ann", 1)]
        assert b.writes == b.log.last_seq == 3 and b.verify() == []
    with RedisLeaderboard(redis_client, name, log=tmp_path) as again:
        assert not again.recovered and again.items() == [("bob", 2), ("ann", 1)]
        again._check()


def test_a_rebuild_from_a_bad_source_changes_nothing(redis_client: Any, tmp_path: Any) -> None:
    # every row is checked before Redis or the log is touched
    packing = PackedScore(0, WEEK)
    with board(redis_client, order=("desc", "asc"), packing=packing, log=tmp_path / "a") as b:
        b.set_many({"ann": (5, 60), "bob": (3, 0)})
        before = (b.items(), b.writes, b.log.last_seq)
        source = Leaderboard(order=("desc", "asc"))
        source.set_many({"ann": (1, 0), "half": (2, 0.5)})  # between two ticks
        with pytest.raises(ValueError, match="whole number"):
            b.rebuild(source)
        assert (b.items(), b.writes, b.log.last_seq) == before
        assert b.verify() == []
    plain = board(redis_client, tie_break="member")
    plain.set_many({"a": 1, "b": 2})
    mixed = Leaderboard(tie_break="member")  # a board of mixed members (only by restoring)
    mixed._restore([("a", 3, 0, None), (7, 4, 0, None)], 0)
    with pytest.raises(TypeError, match="breaks ties by member"):
        plain.rebuild(mixed)
    assert plain.items() == [("b", 2), ("a", 1)]
    plain._check()


@pytest.mark.parametrize("logged", [False, True], ids=["unlogged", "logged"])
def test_a_rebuild_from_a_board_that_ranks_otherwise_is_refused(
    redis_client: Any, tmp_path: Any, logged: bool
) -> None:
    # rebuild(source) copies rows (member, score, tie clock, metadata); a
    # source sorted the other way, or breaking ties otherwise (every clock 0
    # under tie_break="member"), would not rank as the board does
    log = tmp_path / "log" if logged else None
    with board(redis_client, order=("desc", "asc"), log=log) as b:
        b.set_many({"ann": (5, 1), "bob": (3, 2), "cid": (3, 1)})
        b.set_meta("bob", {"n": 1})
        twin = Leaderboard(order=("desc", "asc"))
        twin._restore(list(b._export()), b.clock)

        def state() -> Any:
            seq = b.log.last_seq if logged else None
            return b.items(), b.clock, b.writes, b.meta("bob"), seq

        before = state()
        for setting, other in {
            "order": {"order": ("asc", "asc")},
            "tie_break": {"order": ("desc", "asc"), "tie_break": "member"},
        }.items():
            source = Leaderboard(**other)
            source.set_many({"dan": (4, 0), "eve": (4, 0)})
            with pytest.raises(
                ValueError, match=rf"rebuild\(\) needs a source with this board's {setting}"
            ):
                b.rebuild(source)
            assert state() == before, setting
            assert b.verify(twin) == []
            if logged:
                assert b.verify() == []
        b._check()


def clocks(b: Any) -> dict[Any, int]:
    """member -> tie clock."""
    return {row[0]: row[2] for row in b._export()}


@pytest.mark.parametrize("logged", [False, True], ids=["unlogged", "logged"])
def test_a_rebuild_leaves_the_clock_at_least_the_sources(
    redis_client: Any, tmp_path: Any, logged: bool
) -> None:
    # A source whose clock is past every member's (it saw writes since
    # removed) hands that clock on, so later writes order after everything
    # the source had seen, and verify(source) finds the two in step; a log
    # records it, so it survives a reopen and a Redis that lost everything.
    # An unlogged board takes the source's clock (it is a copy); a logged
    # board's clock is the log's, which never goes back.
    name = unique_name()
    log = tmp_path if logged else None
    source = Leaderboard()
    source.set_many({"ann": 5, "bob": 3})
    source.set_meta("ann", {"k": 1})
    source.set_meta("bob", {"k": 2})
    source.set("gone", 9)
    source.remove("gone")
    assert source.clock == 3 and max(clocks(source).values()) == 2
    with RedisLeaderboard(redis_client, name, log=log, fsync="always") as b:
        b.set_many({"ann": 1, "cid": 2})
        assert b.rebuild(source) == 2
        assert b.clock == source.clock == 3
        assert b.verify(source) == []
        assert [b.meta(m) for m in ("ann", "bob")] == [{"k": 1}, {"k": 2}]
        if logged:
            assert b.verify() == [] and b.writes == b.log.last_seq
            assert rebuild_from_directory(tmp_path).clock == 3
        b._check()
    if logged:
        redis_client.delete(*b.keys)  # Redis forgets: the log brings the clock back
    with RedisLeaderboard(redis_client, name, log=log) as again:
        assert again.recovered == logged
        assert again.verify(source) == []
        again.set("dan", 1)
        assert clocks(again)["dan"] == 4
        again._check()
        # a source behind the board
        assert again.rebuild(source) == 2
        assert again.clock == (4 if logged else 3) and again.items() == source.items()
        if logged:
            assert again.verify() == []
        else:
            assert again.verify(source) == []
        # an empty source: the clock still reaches the source's
        empty = Leaderboard()
        empty.set("x", 1)
        empty._restore([], 10)
        assert again.rebuild(empty) == 0
        assert len(again) == 0 and again.clock == 10 and again.verify(empty) == []
        again._check()
    if logged:
        assert rebuild_from_directory(tmp_path).clock == 10
        with RedisLeaderboard(redis_client, name, log=log) as again:
            assert again.verify() == [] and again.clock == 10


def test_an_unlogged_rebuild_counts_as_one_write_of_the_board(
    redis_client: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    # The write counter of an unlogged board counts its own writes; a
    # rebuild is one of them, whatever the source.  Copying a durable
    # source's last_seq instead would let a later attach of that source's
    # log take Redis for in step after both went on by as many writes: the
    # attach would keep a write the log never had and miss one it has.
    durable = Leaderboard.open(tmp_path / "d", fsync="always")
    durable.set_many({"ann": 5, "bob": 3})
    durable.set("gone", 9)
    durable.remove("gone")
    monkeypatch.setattr("rankengine.redis.log.RESTORE_CHUNK", 1)  # one script per member
    copies = [board(redis_client) for _ in range(2)]
    for copy in copies:
        copy.set_many({"old": 1, "older": 2, "oldest": 3})
        assert copy.rebuild(durable) == 2
        assert copy.verify(durable) == []
        assert copy.writes == 2, "the earlier write and the rebuild"
    copies[0].set("ghost", 7)  # Redis goes on alone, by one write ...
    durable.set("cid", 1)  # ... and so does the log
    durable.close()
    with RedisLeaderboard(redis_client, copies[0].name, log=tmp_path / "d") as b:
        assert b.recovered  # 3 writes in Redis, 4 in the log: Redis is rebuilt
        assert b.items() == [("ann", 5), ("bob", 3), ("cid", 1)] and b.verify() == []
        b._check()
    copies[1].set_many({"x": 1})
    copies[1].set_many({"y": 1})
    copies[1].set_many({"z": 1})
    with pytest.raises(ValueError, match="5 writes but its log only 4"):
        RedisLeaderboard(redis_client, copies[1].name, log=tmp_path / "d")


def test_a_board_whose_log_is_closed_refuses_writes(redis_client: Any, tmp_path: Any) -> None:
    with board(redis_client, log=tmp_path) as b:
        b.set("ann", 1)
    with pytest.raises(ValueError, match="closed"):
        b.set("bob", 2)
    assert b.items() == [("ann", 1)]  # reads still work; nothing unlogged reached Redis


def test_leaderboard_connect_gives_a_redis_board(redis_url: str) -> None:
    from rankengine import Leaderboard, RedisLeaderboard

    board = Leaderboard.connect(redis_url, "connect-factory", order="asc")
    try:
        assert isinstance(board, RedisLeaderboard)
        board.clear()
        board.set_many({"a": 3, "b": 1})
        assert [e.member for e in board.top(2)] == ["b", "a"]
    finally:
        board.clear()
        board.close()


# ----------------------------------------------------------------------
# A reply lost after Redis ran the write (redis-py sends the call again)
# ----------------------------------------------------------------------
def losing_client(url: str) -> tuple[Any, Callable[[str], None]]:
    """A client whose connection drops the reply of the next call of a script
    (after Redis ran it), as a connection reset or a socket timeout does;
    redis-py's default retry then sends the same call again on a new
    connection.  Returns the client and ``arm(script name)``."""
    import redis
    from redis.connection import Connection, parse_url

    armed: list[str] = []

    class Losing(Connection):
        def send_packed_command(self, command: Any, *args: Any, **kwargs: Any) -> None:
            # (every command passes here: redis-py's own, and those the
            # board packs itself; one call's parts: *N, $len, name, $len, sha)
            packed = b"".join(command) if isinstance(command, list) else command
            parts = packed.split(b"\r\n", 5)
            called = parts[2] in (b"EVALSHA", b"FCALL") and len(parts) > 4
            self.losing = bool(armed) and called and parts[4] == armed[0].encode()
            if self.losing:
                armed.clear()
            super().send_packed_command(command, *args, **kwargs)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            reply = super().read_response(*args, **kwargs)
            if getattr(self, "losing", False):
                self.losing = False
                raise redis.ConnectionError("connection lost before the reply")
            return reply

    client = redis.Redis(**parse_url(url))  # as redis.Redis(host, port): retries on
    client.connection_pool.connection_class = Losing

    def arm(sha: str) -> None:
        armed[:] = [sha]

    return client, arm


@pytest.mark.parametrize(
    ("script", "write", "want"),
    [
        ("INCR", lambda b: b.incr("ann", 5), {"ann": 15, "bob": 20}),
        ("INCR_MANY", lambda b: b.incr_many({"ann": 1, "bob": 2}), {"ann": 11, "bob": 22}),
        ("SET_MANY", lambda b: b.set_many({"cid": 1, "ann": 2}), {"ann": 2, "bob": 20, "cid": 1}),
        ("REMOVE_RANGE", lambda b: b.pop_best(1), {"ann": 10}),
        ("COMMIT", lambda b: b.incr("bob", 2**60), {"ann": 10, "bob": 2**60 + 20}),
    ],
)
def test_a_write_whose_reply_was_lost_is_applied_once(
    redis_url: str, script: str, write: Callable[[Any], Any], want: dict[Any, Any]
) -> None:
    client, arm = losing_client(redis_url)
    b = RedisLeaderboard(client, unique_name())
    b.set_many({"ann": 10, "bob": 20})
    clock, writes = b.clock, b.writes
    arm(b._scripts.sha[script])
    answer = write(b)
    assert dict(b.items()) == want
    assert b.writes == writes + 1  # one write, not two
    twin = Leaderboard()  # the same writes, once each, in process
    twin.set_many({"ann": 10, "bob": 20})
    assert write(twin) == answer  # the caller gets the reply of the write that ran
    assert b.clock - clock == twin.clock - 2
    b._check()


def test_a_lost_reply_on_a_logged_board_is_logged_once(redis_url: str, tmp_path: Any) -> None:
    client, arm = losing_client(redis_url)
    b = RedisLeaderboard(client, unique_name(), log=tmp_path / "log")
    b.set("ann", 10)
    arm(b._scripts.sha["INCR"])
    assert b.incr("ann", 5) == 15
    assert b.repairs == 0  # the call sent again was answered, not taken for a lost write
    assert b.verify() == [] and b.log["ann"] == 15 and b.log.last_seq == b.writes == 2
    b.close()


def test_a_board_written_after_redis_lost_it_keeps_its_settings(redis_client: Any) -> None:
    name = unique_name()
    b = RedisLeaderboard(redis_client, name, order="asc")
    b.set("ann", 1)
    redis_client.delete(*b.keys)  # a restart without persistence, or a FLUSHALL
    b.set("bob", 2)  # writing again stores the settings again
    assert json.loads(redis_client.hget(b.keys[5], "config"))["order"] == "asc"
    with pytest.raises(ValueError, match="was created with"):
        RedisLeaderboard(redis_client, name, order="desc")
    assert b.items() == [("bob", 2)]
    b._check()


def _contents(client: Any, keys: list[str]) -> list[Any]:
    """Everything a board's six keys hold, to compare before and after."""
    z, h, m, d, c, s = keys
    return [
        client.zrange(z, 0, -1, withscores=True),
        client.hgetall(h),
        client.hgetall(m),
        client.zrange(d, 0, -1, withscores=True),
        client.hgetall(c),
        client.hgetall(s),
    ]


#: (settings of the handle that had the board, scores it writes; settings of
#: the process that creates it again, scores it writes)
OTHER_SETTINGS = {
    "order": ({"order": "desc"}, (1, 2), {"order": "asc"}, (5, 6)),
    "tie_break": ({}, (1, 2), {"tie_break": "member"}, (5, 6)),
    "composite": (
        {"order": ("desc", "asc")},
        ((1, 2), (3, 4)),
        {"order": ("desc", "desc")},
        ((5, 6), (7, 8)),
    ),
    "packing": (
        {"order": ("desc", "asc")},
        ((1, 2), (3, 4)),
        {"order": ("desc", "asc"), "packing": PackedScore(window_start=0, window_length=WEEK)},
        ((5, 6), (7, 8)),
    ),
}


@pytest.mark.parametrize("setting", sorted(OTHER_SETTINGS))
def test_a_write_refuses_a_lost_board_created_again_with_other_settings(
    redis_client: Any, setting: str
) -> None:
    """Redis loses the board while a handle has it open, and another process
    creates it again with other settings: the handle's writes, which would
    write its own encoding (order, ties, columns) into the new board, raise
    and change nothing; the new board's own handle goes on as before."""
    name = unique_name()
    mine, (s1, s2), theirs, (t1, t2) = OTHER_SETTINGS[setting]
    p1 = RedisLeaderboard(redis_client, name, **mine)
    p1.set("ann", s1)
    redis_client.delete(*p1.keys)  # a restart without persistence, or a FLUSHALL
    p2 = RedisLeaderboard(redis_client, name, **theirs)
    p2.set("bob", t1)
    before = _contents(redis_client, p2.keys)
    writes: list[Callable[[], object]] = [
        lambda: p1.set("cid", s2),
        lambda: p1.set("bob", s2),
        lambda: p1.set_many({"cid": s2, "dan": s1}),
        lambda: p1.remove("bob"),
        lambda: p1.remove_many(["bob"]),
        lambda: p1.set_meta("bob", {"x": 1}),
        p1.pop_best,
        lambda: p1.remove_by_rank(1, 1),
        p1.clear,
    ]
    if setting in ("order", "tie_break"):  # scalar boards
        writes += [lambda: p1.incr("bob", 1), lambda: p1.incr_many({"bob": 1, "cid": 2})]
    for write in writes:
        with pytest.raises(ValueError, match="created again with other settings"):
            write()
        assert _contents(redis_client, p2.keys) == before
    assert p2.items() == [("bob", t1)]
    p2.set("cid", t2)  # the board's own handle is not held up
    assert p2.score("cid") == t2
    p2._check()


def test_a_write_goes_on_into_a_lost_board_created_again_with_its_settings(
    redis_client: Any,
) -> None:
    """The same settings stored again by another process (or by this one):
    the handle's writes go on as before."""
    name = unique_name()
    p1 = RedisLeaderboard(redis_client, name, order="asc")
    p1.set("ann", 1)
    redis_client.delete(*p1.keys)
    p2 = RedisLeaderboard(redis_client, name, order="asc")
    p2.set("bob", 2)
    p1.set("cid", 3)
    assert p2.items() == [("bob", 2), ("cid", 3)]
    p2._check()


def test_a_logged_write_refuses_a_lost_board_created_again_with_other_settings(
    redis_client: Any, tmp_path: Any
) -> None:
    """On a logged board the refusal comes before the write guard: the
    handle does not rebuild its log's board into the other process's."""
    name = unique_name()
    p1 = RedisLeaderboard(redis_client, name, log=tmp_path / "log")
    p1.set("ann", 1)
    redis_client.delete(*p1.keys)
    p2 = RedisLeaderboard(redis_client, name, order="asc")
    p2.set("bob", 5)
    before = _contents(redis_client, p2.keys)
    with pytest.raises(ValueError, match="created again with other settings"):
        p1.set("cid", 2)
    assert _contents(redis_client, p2.keys) == before
    assert p1.repairs == 0 and p1.log.items() == [("ann", 1)]
    p1.close()


def test_settings_stored_in_other_bytes_are_the_same_settings(redis_client: Any) -> None:
    """A write compares the settings as stored, byte for byte, so a board
    whose settings another version stored in other bytes (here: other
    spacing and key order) is written as before; and when Redis loses it
    and it is created again with the same settings in this version's bytes,
    the handle reads them again (one round trip) and goes on."""
    name = unique_name()
    keys = RedisLeaderboard._unopened(redis_client, name).keys
    config = {"version": 1, "tie_break": "first", "packing": None, "order": "asc"}
    redis_client.hset(keys[5], "config", json.dumps(config, separators=(",", ":")))
    p1 = RedisLeaderboard(redis_client, name, order="asc")
    p1.set("ann", 1)
    assert p1.items() == [("ann", 1)]
    redis_client.delete(*keys)
    p2 = RedisLeaderboard(redis_client, name, order="asc")
    p2.set("bob", 2)
    p1.set("cid", 3)
    assert p2.items() == [("bob", 2), ("cid", 3)]
    p2._check()


# Union and intersection: the in-process and the Redis implementations against
# each other and against the server's own ZUNIONSTORE / ZINTERSTORE.
INF = math.inf
UNION_SCORES = st.sampled_from([0, 1, -2, 3, 2.5, -0.5, -0.0, INF, -INF, 2**53 + 1, 10**20])
UNION_WEIGHTS = st.sampled_from([0, 1, -1, 2, 0.5, -0.0, INF, -INF])
#: beyond this, a double (what ZUNIONSTORE computes in) is no longer exact
EXACT_IN_A_DOUBLE = 2**50
INF = math.inf


@st.composite
def union_cases(draw: Any) -> dict[str, Any]:
    """Boards of mixed settings over a few members (overlapping or not)."""
    boards = []
    for _ in range(draw(st.integers(1, 3))):
        members = draw(st.lists(st.sampled_from("abcdef"), max_size=5, unique=True))
        boards.append(
            {
                "config": {
                    "order": draw(st.sampled_from(["desc", "asc"])),
                    "tie_break": draw(st.sampled_from(["first", "member"])),
                },
                "scores": {m: draw(UNION_SCORES) for m in members},
                "metas": {m: {"from": len(boards)} for m in members if draw(st.booleans())},
            }
        )
    weights = draw(st.none() | st.lists(UNION_WEIGHTS, min_size=len(boards), max_size=len(boards)))
    return {
        "boards": boards,
        "weights": weights,
        "aggregate": draw(st.sampled_from(["sum", "min", "max"])),
        "intersect": draw(st.booleans()),
    }


def _redis_rule(aggregate: str, scores: list[float]) -> float:
    """ZUNIONSTORE's arithmetic over weighted scores, in the order given."""
    total = scores[0]
    for value in scores[1:]:
        if aggregate == "min":
            total = min(total, value)
        elif aggregate == "max":
            total = max(total, value)
        else:
            total = total + value
            total = 0.0 if total != total else total
    return total


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=union_cases())
def test_union_matches_in_process_and_the_servers_own_zunionstore(
    redis_client: Any, case: dict[str, Any]
) -> None:
    """The in-process and the Redis union agree exactly (scores with their
    types, tie order, clock, metadata), and, for every member whose result
    does not depend on the order of the sum (ZUNIONSTORE adds the smallest
    set first) or on more than a double's precision, the server's own
    ZUNIONSTORE / ZINTERSTORE agrees with both."""
    boards = []
    for spec in case["boards"]:
        one = Leaderboard(**spec["config"])
        one.set_many(spec["scores"])
        for member, meta in spec["metas"].items():
            one.set_meta(member, meta)
        boards.append(one)
    before = [(b.items(), b.clock, {m: b.meta(m) for m in b}) for b in boards]
    kind = "intersection" if case["intersect"] else "union"
    options = {"weights": case["weights"], "aggregate": case["aggregate"]}
    here = getattr(Leaderboard, kind)(boards, **options)
    there = getattr(RedisLeaderboard, kind)(boards, redis=redis_client, **options)
    here._check()
    assert [(b.items(), b.clock, {m: b.meta(m) for m in b}) for b in boards] == before
    assert exact(there.items()) == exact(here.items())
    assert there.config() == {k: v for k, v in here.config().items() if k != "backend"}
    assert here.config() == boards[0].config()
    assert there.clock == here.clock == len(here)
    assert {m: there.meta(m) for m in there} == {m: here.meta(m) for m in here}
    # the server's own command, on plain sorted sets of the same scores
    keys = []
    for one in boards:
        keys.append(unique_name("zset"))
        if len(one):
            redis_client.zadd(keys[-1], {m: float(s) for m, s in one.items()})
    weights = [1] * len(boards) if case["weights"] is None else case["weights"]
    destination = unique_name("zdst")
    store = redis_client.zinterstore if case["intersect"] else redis_client.zunionstore
    store(destination, dict(zip(keys, map(float, weights), strict=True)), case["aggregate"].upper())
    served = {m.decode(): s for m, s in redis_client.zrange(destination, 0, -1, withscores=True)}
    redis_client.delete(destination, *keys)
    assert set(served) == set(here)
    for member, score in here.items():
        products = [
            float(w) * float(one[member])
            for one, w in zip(boards, weights, strict=True)
            if member in one
        ]
        weighted = [0.0 if math.isnan(x) else x for x in products]  # 0 * inf counts as 0
        exactly = all(abs(x) < EXACT_IN_A_DOUBLE or math.isinf(x) for x in weighted)
        if case["intersect"] and weighted != products:
            # ZINTERSTORE counts a NaN product as 0 only in the smallest set;
            # in any other it turns the sum so far into 0 (min and max skip it)
            continue
        orders = {_redis_rule(case["aggregate"], list(p)) for p in itertools.permutations(weighted)}
        if exactly and len(orders) == 1:
            assert served[member] == float(score), (member, weighted)


def test_a_sharded_board_reads_its_shards_clocks_in_one_round_trip(redis_client: Any) -> None:
    """The global clock is the largest shard clock: read from every shard at
    once (one pipelined round trip per client), not one round trip each, as
    the other whole-board reads are."""
    ScriptRunner(redis_client).load()
    wire = WireClient(redis_client)
    board = ShardedLeaderboard.on_redis(wire, unique_name("clocks"), 4)
    board.set_many({f"p{i}": i for i in range(12)})
    want = max(shard.clock for shard in board.shards)  # each read alone
    assert want == 12
    before = wire.round_trips
    assert board.clock == want
    assert wire.round_trips - before == 1
