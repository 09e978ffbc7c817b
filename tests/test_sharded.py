"""Sharded boards answer exactly as one board does.

The same random operations go to a single in-process board and to a
:class:`ShardedLeaderboard` over S in {1, 2, 7} shards (in-process, and on a
real Redis); every result, the contents and the clock must agree after each
operation, and every read at the end (ranks in each style, pages, around-me,
score ranges, percentiles).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from redis_service import (  # noqa: F401 - fixtures
    redis_board,
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)
from test_redis_differential import CONFIGS, apply, exact, operations, reads

from rankengine import Leaderboard
from rankengine.board.packed import PackedScore
from rankengine.redis.board import RedisLeaderboard
from rankengine.sharded.board import ShardedLeaderboard, jump_hash, shard_of

WEEK = 7 * 86400


def check_same(
    single: Any, sharded: Any, ops: list[tuple[Any, ...]], config: dict[str, Any]
) -> None:
    for i, op in enumerate(ops):
        want, got = apply(single, op), apply(sharded, op)
        assert got == want, (i, op, got, want)
        assert exact((sharded.items(), sharded.clock)) == exact((single.items(), single.clock)), (
            i,
            op,
        )
    for j, (got, want) in enumerate(
        zip(reads(sharded, config), reads(single, config), strict=True)
    ):
        assert got == want, (j, got, want)
    sharded._check()


@pytest.mark.parametrize("shards", [1, 2, 7])
@pytest.mark.parametrize("config", CONFIGS, ids=["desc-first", "asc-member", "composite"])
def test_sharded_equals_one_board(config: dict[str, Any], shards: int) -> None:
    @given(ops=operations(config))
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(ops: list[tuple[Any, ...]]) -> None:
        check_same(Leaderboard(**config), ShardedLeaderboard.local(shards, **config), ops, config)

    run()


@pytest.mark.redis
@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[2]], ids=["desc-first", "composite"])
def test_sharded_on_redis_equals_one_board(config: dict[str, Any]) -> None:
    @given(ops=operations(config))
    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(ops: list[tuple[Any, ...]]) -> None:
        # a mix: two shards on Redis, one in process
        shards = [redis_board(**config), Leaderboard(**config), redis_board(**config)]
        sharded = ShardedLeaderboard(shards)
        try:
            check_same(Leaderboard(**config), sharded, ops, config)
        finally:
            sharded.close()

    run()


def test_deep_pages_are_exact_when_shards_are_skewed() -> None:
    """All the best players on one shard: the proportional guess of where a
    deep page starts is far off; the pivot search finds it anyway."""
    sharded = ShardedLeaderboard.local(4)
    single = Leaderboard()
    names = [f"p{i}" for i in range(4000)]
    on_zero = [n for n in names if sharded.shard_of(n) == 0][:300]
    others = [n for n in names if sharded.shard_of(n) != 0][:300]
    scores = {n: 1000 + i for i, n in enumerate(on_zero)} | {n: i for i, n in enumerate(others)}
    sharded.set_many(scores)
    single.set_many(scores)
    for number in (1, 2, 7, 12, 13, 24):
        assert sharded.page(number, 25) == single.page(number, 25)
    for member in ("p0", on_zero[150], others[-1]):
        assert sharded.around(member, 4, 4) == single.around(member, 4, 4)
        assert sharded.rank(member) == single.rank(member)
    assert sharded.score_at_percentile(50) == single.score_at_percentile(50)


def test_a_window_from_a_bad_guess_is_widened_until_verified(monkeypatch: Any) -> None:
    sharded = ShardedLeaderboard.local(5)
    single = Leaderboard()
    scores = {f"m{i}": (i * 7919) % 997 for i in range(3000)}
    sharded.set_many(scores)
    single.set_many(scores)
    reads: list[Any] = []
    original = ShardedLeaderboard._map_spans
    monkeypatch.setattr(
        ShardedLeaderboard,
        "_map_spans",
        lambda self, spans, meta: reads.append(spans) or original(self, spans, meta),
    )
    wrong = [0] * 5  # "every shard's part starts at its top": false for rank 1500
    rows = sharded._window(1500, 1530, False, guess=wrong)
    assert [row[2] for row in rows] == [e.member for e in single.by_rank(1501, 1530)]
    assert len(reads) > 1  # the first merge failed its check, wider ones followed


def test_the_global_top_k_is_a_merge_of_shard_top_ks() -> None:
    sharded = ShardedLeaderboard.local(7)
    sharded.set_many({f"m{i}": (i * 7919) % 1000 for i in range(2000)})
    top = sharded.top(10)
    assert [e.rank for e in top] == list(range(1, 11))
    shard_tops = sorted((e.score for board in sharded.shards for e in board.top(10)), reverse=True)
    assert [e.score for e in top] == shard_tops[:10]


def test_a_write_touches_one_shard() -> None:
    sharded = ShardedLeaderboard.local(5)
    sharded.set("ann", 10)
    holders = [i for i, board in enumerate(sharded.shards) if "ann" in board]
    assert holders == [sharded.shard_of("ann")]
    clocks = [board.clock for board in sharded.shards]
    sharded.incr("ann", 1)
    changed = [i for i, board in enumerate(sharded.shards) if board.clock != clocks[i]]
    assert changed == holders


def test_first_to_reach_ties_follow_the_global_clock() -> None:
    sharded = ShardedLeaderboard.local(7)
    names = [f"m{i}" for i in range(30)]
    for name in names:
        sharded.set(name, 5)  # thirty ties spread over seven shards
    assert list(sharded) == names
    assert sharded.clock == 30
    assert [sharded.rank(n) for n in names] == list(range(1, 31))


def test_jump_hash_moves_only_what_the_new_shard_takes() -> None:
    keys = range(0, 20000 * 7919, 7919)
    before = [jump_hash(k, 7) for k in keys]
    after = [jump_hash(k, 8) for k in keys]
    moved = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert all(b == 7 for _, b in moved)
    assert 0.10 < len(moved) / len(before) < 0.15  # about 1/8
    counts = [before.count(i) for i in range(7)]
    assert max(counts) - min(counts) < 0.1 * len(before) / 7


def test_placement_is_the_same_in_every_process() -> None:
    members = ["ann", "bob", b"raw", 12345, -(2**70), "é"]
    code = (
        "from rankengine.sharded.board import shard_of; "
        f"print([shard_of(m, 7) for m in {members!r}])"
    )
    env = {"PYTHONHASHSEED": "12345", "PYTHONPATH": "."}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == str([shard_of(m, 7) for m in members])


def test_int_members_of_any_size_are_placed() -> None:
    """In-process boards hold ints of any size as members (a Redis board
    refuses those over 1008 bits); a sharded board of them does too."""
    big = [2**1100, -(2**1100), 2**1008 - 1]
    single, sharded = Leaderboard(), ShardedLeaderboard.local(3)
    for board in (single, sharded):
        assert board.score(big[0]) is None and big[0] not in board
        board.set_many({member: i for i, member in enumerate(big)})
    assert sharded.items() == single.items()
    assert [sharded.rank(m) for m in big] == [single.rank(m) for m in big]
    assert sharded.around(big[1], 1, 1) == single.around(big[1], 1, 1)
    assert sharded.remove(big[0]) and big[0] not in sharded
    sharded._check()


def test_shards_must_agree_on_order_and_tie_break() -> None:
    with pytest.raises(ValueError, match="same order"):
        ShardedLeaderboard([Leaderboard(), Leaderboard(order="asc")])
    for setting, other in {
        "order": {"order": "asc"},
        "tie_break": {"tie_break": "member"},
        "rank_style": {"rank_style": "dense"},
    }.items():
        with pytest.raises(ValueError, match=rf"shard 2 has {setting} .*shard 0 has"):
            ShardedLeaderboard([Leaderboard(), Leaderboard(), Leaderboard(**other)])
    with pytest.raises(ValueError, match="at least one"):
        ShardedLeaderboard([])
    with pytest.raises(TypeError):
        ShardedLeaderboard([object()])


@pytest.mark.redis
def test_shards_must_agree_on_packing() -> None:
    # A packed shard cannot hold (or be asked about) a time between its
    # ticks that an exact shard holds: merged reads would fail or be wrong.
    config: dict[str, Any] = {"order": ("desc", "asc")}
    week = PackedScore(0, WEEK)
    exact_shard = Leaderboard(**config)
    shards = [
        [redis_board(packing=week, **config), exact_shard],
        [redis_board(packing=week, **config), redis_board(**config)],
        [
            redis_board(packing=week, **config),
            redis_board(packing=PackedScore(0, 2 * WEEK), **config),
        ],
    ]
    for boards in shards:
        with pytest.raises(ValueError, match=r"shard 1 has packing .*shard 0 has packing"):
            ShardedLeaderboard(boards)
    exact_shard.set("half", (1, 0.5))  # nothing was written by a refused board
    same = ShardedLeaderboard(
        [redis_board(packing=PackedScore(0, WEEK), **config) for _ in range(2)]
    )
    same.set_many({"ann": (3, 60), "bob": (3, 0)})
    assert same.items() == [("bob", (3, 0)), ("ann", (3, 60))]
    same._check()


@pytest.mark.redis
@pytest.mark.parametrize("batch", ["set_many", "incr_many"])
def test_a_batch_past_the_clock_limit_of_a_redis_shard_writes_no_shard(
    redis_client: Any, batch: str
) -> None:
    # A Redis shard refuses a tie clock past 2**53 - 1; a batch over several
    # shards must be refused before any shard's part is written, not after
    # the first shards took theirs.
    from rankengine.redis.codec import MAXCLOCK

    sharded = ShardedLeaderboard.on_redis(redis_client, unique_name(), 2)
    try:
        sharded.set_many({f"p{i}": i for i in range(8)})
        for board in sharded.shards:  # room for two more changes
            redis_client.hset(board.keys[5], "clock", MAXCLOCK - 2)
        sharded = ShardedLeaderboard(sharded.shards)
        assert sharded.clock == MAXCLOCK - 2
        names = [f"n{i}" for i in range(20)]
        first = [m for m in names if sharded.shard_of(m) == 0][:2]
        second = [m for m in names if sharded.shard_of(m) == 1][:1]
        before = (sharded.items(), [board.writes for board in sharded.shards])
        pairs = [(m, 1) for m in first + second]  # clocks MAX - 1, MAX, MAX + 1
        with pytest.raises(ValueError, match=r"tie clock would pass 2\*\*53 - 1"):
            getattr(sharded, batch)(pairs)
        assert (sharded.items(), [board.writes for board in sharded.shards]) == before
        sharded._check()
        assert getattr(sharded, batch)(pairs[:2])  # two changes still fit
        sharded._check()
    finally:
        for board in sharded.shards:
            board.clear()


@pytest.mark.redis
def test_sharded_on_redis_writes_one_shard_and_reads_in_parallel(redis_client: Any) -> None:
    sharded = ShardedLeaderboard.on_redis(redis_client, unique_name(), 4)
    try:
        sharded.set_many({f"p{i}": i for i in range(200)})
        writes = [board.writes for board in sharded.shards]
        sharded.set("p7", 1000)
        changed = [i for i, b in enumerate(sharded.shards) if b.writes != writes[i]]
        assert changed == [sharded.shard_of("p7")]
        assert sharded.top(3)[0].member == "p7"
        assert [e.rank for e in sharded.page(5, 10)] == list(range(41, 51))
        assert all(isinstance(board, RedisLeaderboard) for board in sharded.shards)
        assert {board.name.rsplit(":", 1)[1] for board in sharded.shards} == {"0", "1", "2", "3"}
    finally:
        sharded.close()


def test_an_increment_that_keeps_the_score_returns_the_stored_score() -> None:
    # as on one board: 5 + 0.0 equals 5, so the shard keeps the int 5, and
    # both the increment and the batch return what the shard holds
    sharded = ShardedLeaderboard.local(3)
    sharded.set_many({"a": 5, "b": 0, "c": -0.0})
    results = {"a": sharded.incr("a", 0.0), "b": sharded.incr("b", -0.0)}
    results.update(sharded.incr_many([("c", 0), ("c", 0.0)]))
    held = dict(sharded.items())
    for member, result in results.items():
        assert repr(result) == repr(sharded.score(member)) == repr(held[member]), member
    assert [repr(results[m]) for m in "abc"] == ["5", "0", "-0.0"]
    assert sharded.clock == 3
    sharded._check()


def _write_after_the_plan_reads(monkeypatch: Any, shard: Any, write: Any) -> None:
    """Run ``write`` (another writer, on the shard's own board) once, just
    after the sharded board's next batch has read the shard's states for its
    plan: the plan no longer holds and the batch replays that shard's part."""
    read = shard.states

    def states(members: list[Any]) -> dict[Any, Any]:
        found = read(members)
        monkeypatch.setattr(shard, "states", read)
        write(shard.board)
        return found

    monkeypatch.setattr(shard, "states", states)


def _two_shards(kind: str) -> tuple[ShardedLeaderboard, str, str]:
    """An empty board on two shards (in memory or on Redis), a member that
    goes to the first and one that goes to the second."""
    make = redis_board if kind == "redis" else Leaderboard
    sharded = ShardedLeaderboard([make(), make()])
    names = [f"n{i}" for i in range(20)]
    x = next(m for m in names if sharded.shard_of(m) == 0)
    y = next(m for m in names if sharded.shard_of(m) == 1)
    return sharded, x, y


@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_batch_replayed_on_a_changed_shard_returns_what_the_replay_did(
    monkeypatch: Any, kind: str
) -> None:
    """incr_many returns the scores the members now hold and set_many the
    number of members it changed, also on a shard written by another writer
    between the plan and its commit (not what the plan expected)."""
    sharded, x, y = _two_shards(kind)
    try:
        sharded.set_many({x: 5, y: 5})
        shard = sharded._shards[0]

        _write_after_the_plan_reads(monkeypatch, shard, lambda b: b.set(x, 100))
        assert sharded.incr_many({x: 1, y: 1}) == {x: 101, y: 6}
        assert dict(sharded.items()) == {x: 101, y: 6}
        sharded._check()

        # the plan sees x at 101 and would change it; the other writer set it
        # to 7 first, so the replay changes nothing on x's shard
        _write_after_the_plan_reads(monkeypatch, shard, lambda b: b.set(x, 7))
        assert sharded.set_many({x: 7, y: 8}) == 1
        assert dict(sharded.items()) == {x: 7, y: 8}
        sharded._check()

        # the replay keeps the batch's condition: x was removed first, so
        # "present" skips it
        _write_after_the_plan_reads(monkeypatch, shard, lambda b: b.remove(x))
        assert sharded.set_many({x: 9, y: 9}, when="present") == 1
        assert dict(sharded.items()) == {y: 9}
        sharded._check()
    finally:
        sharded.close()


@pytest.mark.parametrize("writes", [1, 2])
@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_replayed_batch_keeps_its_members_tied_in_batch_order(
    monkeypatch: Any, kind: str, writes: int
) -> None:
    """Another writer changes x's shard between the plan and its commit: x's
    part is planned again with clocks after that writer's, and y's part on
    the other shard, not written yet, must come after x's again, not keep
    the first plan's clock (one write: the same clock as x, so both ranked
    2; two writes: a clock before x's, so y ranked ahead of x, which the
    batch set first)."""
    sharded, x, y = _two_shards(kind)
    try:

        def other_writer(board: Any) -> None:
            for score in range(writes):
                board.set(x, score)

        _write_after_the_plan_reads(monkeypatch, sharded._shards[0], other_writer)
        assert sharded.set_many([(x, 5), (y, 5)]) == 2
        assert [e.member for e in sharded.top(2)] == [x, y]
        assert sharded.entries([x, y]) == sharded.top(2)
        assert [sharded.rank(x, style=s) for s in ("unique", "dense", "competition")] == [1, 1, 1]
        assert sharded.rank(y) == 2
        assert sharded.clock == writes + 2
        sharded._check()
    finally:
        sharded.close()


def test_ints_beyond_the_float_range_mixed_with_floats_raise_a_clear_error() -> None:
    big = 10**400
    sharded = ShardedLeaderboard.local(3)
    sharded.set_many({"big": big, "half": 0.5, "next": big + 2})
    before = (sharded.items(), sharded.clock)
    for write in (
        lambda: sharded.incr("big", 0.5),
        lambda: sharded.incr_many([("half", 1), ("new", 2), ("big", 0.5)]),
    ):
        with pytest.raises(OverflowError, match=r"increment of 'big'.*float range"):
            write()
    assert (sharded.items(), sharded.clock) == before
    with pytest.raises(OverflowError, match=r"percentile 75: no float .*float range"):
        sharded.score_at_percentile(75)
    sharded._check()


def test_durable_shards_survive_a_restart(tmp_path: Any) -> None:
    paths = [tmp_path / f"shard{i}" for i in range(3)]
    sharded = ShardedLeaderboard([Leaderboard.open(p, fsync="never") for p in paths])
    sharded.set_many({f"p{i}": i % 5 for i in range(60)})
    sharded.incr("p3", 10)
    expected = (sharded.items(), sharded.clock)
    for board in sharded.shards:
        board.close()
    again = ShardedLeaderboard([Leaderboard.open(p) for p in paths])
    assert (again.items(), again.clock) == expected
    for board in again.shards:
        board.close()


@pytest.mark.parametrize(
    ("shards", "error"), [(True, TypeError), (2.0, TypeError), ("2", TypeError), (0, ValueError)]
)
def test_a_bad_shard_count_is_refused(shards: Any, error: type) -> None:
    with pytest.raises(error, match="shards must"):
        ShardedLeaderboard.local(shards)


@pytest.mark.redis
@pytest.mark.parametrize(
    ("shards", "options", "refusal"),
    [
        (True, {}, (TypeError, "shards must be an int")),
        (2.0, {}, (TypeError, "shards must be an int")),
        (-1, {}, (ValueError, "shards must be at least 1")),
        (2, {"name": 5}, (TypeError, "name must be a str")),
        (2, {"log": "LOG"}, (ValueError, "one log per shard")),
        (2, {"rank_style": "best"}, (ValueError, "rank style")),
    ],
)
def test_a_refused_sharded_board_on_redis_creates_no_shard(
    redis_client: Any, tmp_path: Any, shards: Any, options: dict[str, Any], refusal: Any
) -> None:
    name = options.pop("name", unique_name())
    if options.get("log") == "LOG":
        options["log"] = tmp_path / "log"
    error, match = refusal
    with pytest.raises(error, match=match):
        ShardedLeaderboard.on_redis(redis_client, name, shards, **options)
    assert redis_client.keys(f"rankengine:{{{name}:*") == []
    assert not (tmp_path / "log").exists()


@pytest.mark.redis
def test_a_shard_with_other_settings_leaves_no_shard_created(redis_client: Any) -> None:
    """Shard 2 exists with another order: opening the sharded board is
    refused before shards 0 and 1 are created, so they do not hold it to
    the refused order (and the board opens with the right one)."""
    name = unique_name()
    RedisLeaderboard(redis_client, f"{name}:2", order="asc")
    with pytest.raises(ValueError, match=rf"'{name}:2' was created with"):
        ShardedLeaderboard.on_redis(redis_client, name, 3)
    assert redis_client.keys(f"rankengine:{{{name}:*") == [f"rankengine:{{{name}:2}}:s".encode()]
    board = ShardedLeaderboard.on_redis(redis_client, name, 3, order="asc")
    board.set_many({f"p{i}": i for i in range(9)})
    assert [e.member for e in board.top(2)] == ["p0", "p1"]


@pytest.mark.redis
def test_one_board_twice_is_no_sharded_board(redis_client: Any, tmp_path: Any) -> None:
    """Two shards that are one board (one object, or two handles on the same
    keys) would hold each other's members; two Redis shards that share one
    event log would each rebuild from the other's records."""
    local = Leaderboard()
    with pytest.raises(ValueError, match="shards 0 and 1 are one board"):
        ShardedLeaderboard([local, local])
    name = unique_name()
    one, two = RedisLeaderboard(redis_client, name), RedisLeaderboard(redis_client, name)
    with pytest.raises(ValueError, match="shards 1 and 2 are one board"):
        ShardedLeaderboard([Leaderboard(), one, two])
    with Leaderboard.open(tmp_path) as log:
        logged = [RedisLeaderboard(redis_client, unique_name(), log=log) for _ in range(2)]
        with pytest.raises(ValueError, match="shards 0 and 1 share one event log"):
            ShardedLeaderboard(logged)
        assert len(log) == 0


def _stored_keys(client: Any, name: str) -> dict[bytes, bytes]:
    """Every key of the sharded board ``name`` and its serialized value."""
    return {key: client.dump(key) for key in client.keys(f"rankengine:{{{name}:*")}


@pytest.mark.redis
def test_a_sharded_board_on_redis_reopens_only_as_it_was_created(redis_client: Any) -> None:
    """A member's shard is ``shard_of(member, S)``: the same shards opened
    with another S, or in another order, would look members up on the wrong
    shard (missing them) and write them again on another (two scores for one
    member).  Each shard records its place (shard i of S) when it is created,
    and any other place is refused before anything is written."""
    name = unique_name()
    board = ShardedLeaderboard.on_redis(redis_client, name, 3)
    members = {f"p{i}": i for i in range(30)}
    board.set_many(members)
    # The placements disagree for some members, so a wrong S would misplace them.
    assert any(shard_of(m, 3) != shard_of(m, 4) for m in members)
    before = _stored_keys(redis_client, name)
    with pytest.raises(ValueError, match=rf"'{name}:0' was created as shard 0 of 3\b.*0 of 4"):
        ShardedLeaderboard.on_redis(redis_client, name, 4)
    with pytest.raises(ValueError, match=rf"'{name}:0' was created as shard 0 of 3\b.*0 of 2"):
        ShardedLeaderboard.on_redis(redis_client, name, 2)
    with pytest.raises(ValueError, match=rf"shard 0 \('{name}:2'\) was created as shard 2 of 3"):
        ShardedLeaderboard(list(reversed(board.shards)))
    with pytest.raises(ValueError, match=r"shard 0 .* of 3; this board has 2 shards"):
        ShardedLeaderboard(board.shards[:2])
    handles = [RedisLeaderboard(redis_client, f"{name}:{i}") for i in (0, 2, 1)]
    with pytest.raises(ValueError, match=rf"shard 1 \('{name}:2'\) was created as shard 2 of 3"):
        ShardedLeaderboard(handles)
    assert _stored_keys(redis_client, name) == before  # no shard 3, nothing written
    for again in (
        ShardedLeaderboard.on_redis(redis_client, name, 3),
        ShardedLeaderboard([handles[0], handles[2], handles[1]]),
    ):
        assert dict(again.items()) == members and again.score("p7") == 7
        again._check()


@pytest.mark.redis
def test_shards_stored_without_a_place_open_unchecked(redis_client: Any) -> None:
    """Shards stored in the format before places were recorded (as earlier
    versions of rankengine, or ``RedisLeaderboard`` on its own, store them)
    open as any shard, and opening them records nothing."""
    name = unique_name()
    legacy = b'{"order": "desc", "packing": null, "tie_break": "first", "version": 1}'
    handles = [RedisLeaderboard(redis_client, f"{name}:{i}") for i in range(3)]
    assert [redis_client.hget(h.keys[5], "config") for h in handles] == [legacy] * 3
    ShardedLeaderboard(handles).set_many({f"p{i}": i for i in range(12)})
    again = ShardedLeaderboard.on_redis(redis_client, name, 3)
    assert again.rank("p11") == 1 and len(again) == 12
    assert [redis_client.hget(h.keys[5], "config") for h in handles] == [legacy] * 3


@pytest.mark.redis
def test_a_shard_keeps_its_place_when_redis_loses_it(redis_client: Any) -> None:
    """A handle stores the settings again when Redis lost the board (a
    restart, a flush): with the shard's place, also on a handle opened on
    its own, so the shards are still refused with another count."""
    name = unique_name()
    board = ShardedLeaderboard.on_redis(redis_client, name, 2)
    alone = RedisLeaderboard(redis_client, f"{name}:1")
    assert alone._shard_place == (1, 2)
    redis_client.delete(*board.shards[0].keys, *alone.keys)
    members = [f"p{i}" for i in range(10)]
    alone.set(next(m for m in members if board.shard_of(m) == 1), 2)  # stores shard 1's
    board.set(next(m for m in members if board.shard_of(m) == 0), 1)  # and shard 0's
    with pytest.raises(ValueError, match=rf"'{name}:0' was created as shard 0 of 2\b"):
        ShardedLeaderboard.on_redis(redis_client, name, 3)
    redis_client.delete(*board.shards[0].keys)
    with pytest.raises(ValueError, match=rf"'{name}:1' was created as shard 1 of 2\b"):
        ShardedLeaderboard.on_redis(redis_client, name, 3)
