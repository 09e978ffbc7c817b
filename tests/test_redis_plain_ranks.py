"""Ranks of a member by plain commands, no script (rankengine/redis/plainranks.py):
a unique, competition or dense rank on a first-to-reach board reads the
member's row, then counts with one command its element makes exact.  Each
must answer as an in-process twin does, whatever other clients did
meanwhile, and fall back to the function where a plain count could be wrong."""

from __future__ import annotations

import random
from typing import Any

import pytest
from board_spies import functions_run
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard
from rankengine.redis.direct import DirectCalls

pytestmark = pytest.mark.redis

STYLES = ("unique", "competition", "dense")


def twin_of(board: RedisLeaderboard) -> Leaderboard:
    """An in-process board with the same members, scores and tie order."""
    twin = Leaderboard(**board.config())
    for member, score in board.items():  # best first: ties keep their order
        twin.set(member, score)
    return twin


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_plain_ranks_answer_as_the_twin(redis_client: Any, order: str, monkeypatch: Any) -> None:
    name = unique_name()
    writer = RedisLeaderboard(redis_client, name, order=order)  # type: ignore[arg-type]
    rng = random.Random(11)
    members = [f"p{i}" for i in range(40)]
    # ties, floats, -0.0 and 0, infinities, and ints past 2**53 (an ordkey)
    values = [0, -0.0, 1, 1.5, 2, 2, 3, float("inf"), float("-inf"), 2**53, 2**53 + 1, -(2**60) - 3]
    for member in members:
        writer.set(member, rng.choice(values))
    writer.rank(members[0], style="dense")  # the dense counts are built
    for step in range(200):
        member = rng.choice(members)
        action = rng.randrange(3)
        if action == 0:
            writer.incr(member, rng.choice([1, -1, 0.5]))
        elif action == 1:
            writer.remove(member)
        else:
            writer.set(member, rng.choice(values))
        twin = twin_of(writer)
        cold = RedisLeaderboard(redis_client, name, order=order)  # type: ignore[arg-type]
        probe = rng.choice([*members, "nobody"])
        for style in STYLES:
            assert cold.rank(probe, style=style) == twin.rank(probe, style=style), (
                step,
                probe,
                style,
            )
    writer._check()


def test_the_plain_path_runs_no_script(redis_client: Any, monkeypatch: Any) -> None:
    name = unique_name()
    writer = RedisLeaderboard(redis_client, name)
    writer.set_many({f"p{i}": i % 7 for i in range(50)})
    reader = RedisLeaderboard(redis_client, name)
    ran = functions_run(reader, monkeypatch)
    twin = twin_of(writer)
    for style in ("unique", "competition"):
        assert [reader.rank(f"p{i}", style=style) for i in range(50)] == [
            twin.rank(f"p{i}", style=style) for i in range(50)
        ]
    assert reader.rank("nobody", style="competition") is None
    assert ran == []
    # dense: the first dense read builds the distinct scores (a function);
    # the reads after it are plain
    assert reader.rank("p3", style="dense") == twin.rank("p3", style="dense")
    assert ran == ["ENTRIES"]
    assert [reader.rank(f"p{i}", style="dense") for i in range(50)] == [
        twin.rank(f"p{i}", style="dense") for i in range(50)
    ]
    assert ran == ["ENTRIES"]


def test_past_two_to_the_53_the_function_counts(redis_client: Any, monkeypatch: Any) -> None:
    # 2**53 + 1 and 2**53 + 2 share a double with 2**53: only the function
    # tells them apart
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    board.set_many({"a": 2**53, "b": 2**53 + 1, "c": 2**53 + 2, "d": 5})
    reader = RedisLeaderboard(redis_client, name)
    ran = functions_run(reader, monkeypatch)
    assert [reader.rank(m, style="competition") for m in "abcd"] == [3, 2, 1, 4]
    assert ran == ["ENTRIES"] * 3  # a, b, c by the function; d (5) plainly


@pytest.mark.parametrize("style", STYLES)
def test_a_member_moved_between_the_round_trips(
    redis_client: Any, style: str, monkeypatch: Any
) -> None:
    """Another client moves the member after its row was read: the element
    read is gone, so the function answers, with the member's new rank."""
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    board.set_many({"ann": 10, "bob": 20, "cid": 30, "dan": 20})
    board.rank("ann", style="dense")  # dense counts built
    other = RedisLeaderboard(redis_client, name)
    reader = RedisLeaderboard(redis_client, name)
    ran = functions_run(reader, monkeypatch)
    real_read = reader._read  # (the board's plain reads: HGET, then the count)
    moved: list[bool] = []

    def hget_then_move(*args: Any) -> Any:
        row = real_read(*args)
        if args[0] == "HGET" and args[2] == b"sann" and not moved:
            moved.append(True)
            other.incr("ann", 100)  # ann: 110, first
        return row

    monkeypatch.setattr(reader, "_read", hget_then_move)
    # (a unique rank on a pooled connection reads the row and then the rank
    # on one connection: the move goes between them)
    real_read_then = DirectCalls.read_then

    def read_then(self: DirectCalls, first: bytes, then: Any) -> Any:
        def move_then(row: Any) -> Any:
            if b"HGET" in first and first.endswith(b"\r\nsann\r\n") and not moved:
                moved.append(True)
                other.incr("ann", 100)  # ann: 110, first
            return then(row)

        return real_read_then(self, first, move_then)

    monkeypatch.setattr(DirectCalls, "read_then", read_then)
    assert reader.rank("ann", style=style) == 1
    assert moved and len(ran) == 1  # the plain read saw the move, the function answered


def test_pipelined_ranks_answer_as_the_twin(redis_client: Any, monkeypatch: Any) -> None:
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    rng = random.Random(5)
    members = [f"p{i}" for i in range(30)]
    board.set_many({m: rng.randrange(8) for m in members})
    board.set("big", 2**53 + 1)  # counted by its function
    board.rank("p0", style="dense")  # dense counts built
    sent: list[str] = []
    real = board._scripts.call_args
    real_packed = board._scripts.packed

    def call_args(name: str, keys: list[str], args: list[Any]) -> list[Any]:
        sent.append(name)
        return real(name, keys, args)

    def packed(packer: Any, name: str, keys: list[str], args: list[Any]) -> bytes:
        sent.append(name)  # (a function call the board encodes itself)
        return real_packed(packer, name, keys, args)

    monkeypatch.setattr(board._scripts, "call_args", call_args)
    monkeypatch.setattr(board._scripts, "packed", packed)
    for step in range(20):
        twin = twin_of(board)
        probes = [rng.choice([*members, "big", "nobody"]) for _ in range(6)]
        styles = [rng.choice(STYLES) for _ in probes]
        sent.clear()
        with board.pipeline() as p:
            for probe, style in zip(probes, styles, strict=True):
                p.rank(probe, style=style)  # type: ignore[arg-type]
        want = [twin.rank(m, style=s) for m, s in zip(probes, styles, strict=True)]  # type: ignore[arg-type]
        assert p.results == want, step
        # only a score past 2**53 needs a function
        assert len(sent) == sum(
            m == "big" and s != "unique" for m, s in zip(probes, styles, strict=True)
        )
        # writes first, ranks after them in the same pipeline: the ranks see the writes
        member = rng.choice(members)
        with board.pipeline() as p:
            p.incr(member, rng.choice([1, 5, -3]))
            p.rank(member).rank(member, style="competition").rank(member, style="dense")
        twin = twin_of(board)
        assert p.results[1:] == [twin.rank(member, style=s) for s in STYLES]  # type: ignore[arg-type]


def test_a_rank_before_a_write_in_a_pipeline_reads_before_it(redis_client: Any) -> None:
    name = unique_name()
    board = RedisLeaderboard(redis_client, name)
    board.set_many({"ann": 1, "bob": 2, "cid": 3})
    with board.pipeline() as p:
        p.rank("ann").rank("ann", style="competition").incr("ann", 10).rank("ann")
    assert p.results == [3, 3, 11, 1]
