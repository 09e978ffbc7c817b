"""Reads a Redis board answers with one plain command instead of a script:
``top`` and ``by_rank`` on a first-to-reach board (the elements hold
everything), a unique rank on a tie_break="member" board (the element is
the member) or of a member whose element the handle has seen.  Each must
answer as the script does whatever other clients did meanwhile."""

from __future__ import annotations

import random
from typing import Any

import pytest
from redis_service import (  # noqa: F401 - fixtures
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
    unique_name,
)

from rankengine import Leaderboard
from rankengine.redis.board import RedisLeaderboard, encode_member
from rankengine.redis.decode import ELEMENTS_SEEN

pytestmark = pytest.mark.redis


def twin_of(board: RedisLeaderboard) -> Leaderboard:
    """An in-process board with the same members, scores and tie order."""
    twin = Leaderboard(**board.config())
    for member, score in board.items():  # best first: ties keep their order
        twin.set(member, score)
    return twin


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_seen_element_answers_the_rank_other_clients_changed(
    redis_client: Any, order: str
) -> None:
    name = unique_name()
    mine = RedisLeaderboard(redis_client, name, order=order)  # type: ignore[arg-type]
    other = RedisLeaderboard(redis_client, name, order=order)  # type: ignore[arg-type]
    rng = random.Random(4)
    members = [f"p{i}" for i in range(30)]
    for member in members:
        mine.set(member, rng.randint(0, 10))  # mine has seen every element
    for step in range(300):
        member = rng.choice(members)
        action = rng.randrange(4)
        if action == 0:
            other.incr(member, rng.choice([1, -1, 0.5]))
        elif action == 1:
            other.remove(member)
        elif action == 2:
            mine.incr(member, 1)
        else:
            other.set(member, rng.randint(0, 10))
        probe = rng.choice(members)
        assert mine.rank(probe) == twin_of(mine).rank(probe), (step, probe)
    assert mine._elements  # the plain path was taken
    for key, element in mine._elements.items():  # each seen element: its member's, or gone
        assert element.endswith(key)
    mine._check()


def test_the_seen_elements_are_bounded(redis_client: Any, monkeypatch: Any) -> None:
    import rankengine.redis.decode as module

    monkeypatch.setattr(module, "ELEMENTS_SEEN", 5)
    board = RedisLeaderboard(redis_client, unique_name())
    board.set_many({f"p{i}": i for i in range(20)})
    for i in range(20):
        board.incr(f"p{i}", 1)
        assert len(board._elements) <= 5
        # the element the write noted is the one Redis holds
        assert redis_client.zscore(board.keys[0], board._elements[encode_member(f"p{i}")])
    assert [board.rank(f"p{i}") for i in range(20)] == list(range(20, 0, -1))
    assert ELEMENTS_SEEN >= 1000


@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_plain_ranges_answer_as_the_twin(redis_client: Any, tie_break: str, order: str) -> None:
    board = RedisLeaderboard(redis_client, unique_name(), tie_break=tie_break, order=order)  # type: ignore[arg-type]
    rng = random.Random(9)
    board.set_many({f"p{i}": rng.randint(0, 5) for i in range(40)})
    board.set("big", 2**60)  # an inexact score: its element has an ordkey
    board.incr("p3", 0.5)
    twin = twin_of(board)
    for style in ("unique", "competition", "dense"):
        for k in (0, 1, 7, 41, 50, 2**70):
            assert board.top(k, style=style) == twin.top(k, style=style), (style, k)  # type: ignore[arg-type]
        for start, stop in ((1, 5), (1, -1), (3, 9), (5, -3), (2, 2), (9, 3), (2**70, -(2**70))):
            got = board.by_rank(start, stop, style=style)  # type: ignore[arg-type]
            assert got == twin.by_rank(start, stop, style=style), (style, start, stop)  # type: ignore[arg-type]
    for member in [*board, "nobody"]:
        assert board.rank(member) == twin.rank(member), member
    board._check()
