"""Copying and pickling boards.

An in-memory board's ``copy()``, ``copy.copy``, ``copy.deepcopy`` and a
pickle round trip each give an independent board that answers every read as
the original does (items with their score types, ranks in every style,
metadata, the logical clock) and passes ``_check()``; the same further writes
then leave the two equal, and a write to one never shows in the other.

Boards that own something a copy cannot share (a directory and its lock, a
Redis key, a clock function and callbacks) refuse ``copy.copy``, ``deepcopy``
and pickling with a :class:`TypeError` that says what to do instead.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from redis_service import (  # noqa: F401 - fixtures
    redis_board,
    redis_client_fixture,
    redis_server_fixture,
    redis_url_fixture,
)
from test_redis_differential import apply, exact, operations

from rankengine import Leaderboard
from rankengine.sharded.board import ShardedLeaderboard
from rankengine.timed.decay import DecayedLeaderboard
from rankengine.timed.periodic import PeriodicLeaderboard
from rankengine.timed.window import SlidingWindowLeaderboard

STYLES = ("unique", "dense", "competition")

CONFIGS = [
    {"order": "desc", "tie_break": "first"},
    {"order": "asc", "tie_break": "first"},
    {"order": "desc", "tie_break": "member", "rank_style": "dense"},
    {"order": "asc", "tie_break": "member"},
    {"order": ("desc", "asc"), "tie_break": "first", "rank_style": "competition"},
    {"order": ("desc", "asc"), "tie_break": "member"},
]
CONFIG_IDS = ["desc-first", "asc-first", "desc-member-dense", "asc-member", "composite", "comp-mem"]


def _pickled(board: Any, protocol: int = pickle.HIGHEST_PROTOCOL) -> Any:
    return pickle.loads(pickle.dumps(board, protocol=protocol))


COPIERS: dict[str, Callable[[Any], Any]] = {
    "copy()": lambda board: board.copy(),
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "pickle": _pickled,
    "pickle-protocol-2": lambda board: _pickled(board, 2),
}


def view(board: Any) -> tuple[Any, ...]:
    """Everything observable about a board, scores compared with their types."""
    board._check()
    items = board.items()
    members = [member for member, _ in items]
    ranks = [[board.rank(m, style=style) for m in members] for style in STYLES]
    metas = [board.meta(m) for m in members]
    tops = [board.top(3, style=style, with_meta=True) for style in STYLES]
    return exact(items), ranks, metas, exact(tops), board.clock, board.config()


def check_copy(original: Any, clone: Any, more: list[tuple[Any, ...]]) -> None:
    assert type(clone) is type(original)
    assert clone is not original
    assert clone._lock is not original._lock
    assert clone._index is not original._index
    for member, data in original._meta.items():
        assert clone._meta[member] == data
        assert clone._meta[member] is not data, "metadata shared with the original"
    before = view(original)
    assert view(clone) == before
    # writes to the copy leave the original as it was...
    results = [apply(clone, op) for op in more]
    ticked = clone.clock
    clone.set("zz-copy-only", 1 if not isinstance(original.order, tuple) else (1, 1))
    assert view(original) == before
    clone.remove("zz-copy-only")
    extra = clone.clock - ticked
    # ...and the same writes to the original give the same answers and state
    assert [apply(original, op) for op in more] == results
    assert view(clone)[:4] == view(original)[:4]
    assert clone.clock - extra == original.clock
    after = view(clone)
    original.set("zz-original-only", 2 if not isinstance(original.order, tuple) else (2, 2))
    assert view(clone) == after


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_copies_answer_alike_and_stay_independent(
    copier: str, config: dict[str, Any], backend: str
) -> None:
    @given(history=operations(config), more=operations(config))
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(history: list[tuple[Any, ...]], more: list[tuple[Any, ...]]) -> None:
        original = Leaderboard(**config, backend=backend)
        for op in history:
            apply(original, op)
        original._check()
        check_copy(original, COPIERS[copier](original), more)

    run()


@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_copy_keeps_tie_order_and_clock(copier: str) -> None:
    board = Leaderboard()
    board.set_many({"a": 5, "b": 5, "c": 5})
    board.set("a", 6)
    board.set("a", 5, meta={"name": "Ann", "tags": ["x"]})  # now last among the 5s
    clone = COPIERS[copier](board)
    clone._check()
    assert clone.items() == [("b", 5), ("c", 5), ("a", 5)]
    assert clone.clock == board.clock == 5
    assert clone.meta("a") == {"name": "Ann", "tags": ["x"]}
    clone.set("d", 5)
    assert "d" not in board and board.clock == 5
    board.set("d", 5)
    assert clone.items() == board.items() == [("b", 5), ("c", 5), ("a", 5), ("d", 5)]


@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_copy_of_an_empty_board(copier: str) -> None:
    board = Leaderboard(order="asc", tie_break="member", rank_style="dense", backend="skiplist")
    clone = COPIERS[copier](board)
    clone._check()
    assert clone.config() == board.config() and len(clone) == 0 and clone.clock == 0
    clone.set("a", 1)
    assert len(board) == 0


def test_shallow_copy_no_longer_shares_state() -> None:
    board = Leaderboard()
    board.set_many({"a": 1, "b": 2})
    clone = copy.copy(board)
    clone.set("z", 5)
    assert "z" not in board and board.clock == 2 and clone.clock == 3


def test_copy_survives_large_bulk_loaded_boards() -> None:
    # typed columns (array) from the sortedlist backend, metadata on a few rows
    board = Leaderboard()
    board.set_many({f"m{i}": i % 7 for i in range(3000)})
    board.set("m5", 3.5, meta={"k": 1})
    for copier in COPIERS.values():
        clone = copier(board)
        assert view(clone) == view(board)


class _SeasonBoard(Leaderboard):
    """A subclass with a required argument and state of its own."""

    def __init__(self, season: int, **config: Any) -> None:
        super().__init__(**config)
        self.season = season
        self.notes: list[str] = []


@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_copy_of_a_subclass_keeps_its_class_and_attributes(copier: str) -> None:
    board = _SeasonBoard(7, order="asc", rank_style="dense")
    board.notes.append("opened")
    board.set_many({"a": 2, "b": 1})
    board.set("a", 1, meta={"k": [1]})
    clone = COPIERS[copier](board)
    clone._check()
    assert type(clone) is _SeasonBoard
    assert clone.season == 7 and clone.notes == ["opened"]
    assert clone.config() == board.config() and clone.clock == board.clock
    assert clone.items() == board.items() == [("b", 1), ("a", 1)]
    assert clone.meta("a") == {"k": [1]}
    clone.set("c", 0)
    assert "c" not in board


def test_deepcopy_of_a_subclass_copies_its_attributes() -> None:
    board = _SeasonBoard(1)
    clone = copy.deepcopy(board)
    clone.notes.append("only in the copy")
    assert board.notes == []


# ----------------------------------------------------------------------
# Durable boards: copy() is an in-memory snapshot; the rest is refused
# ----------------------------------------------------------------------
def test_durable_copy_is_an_in_memory_snapshot(tmp_path: Path) -> None:
    with Leaderboard.open(tmp_path / "board", fsync="never", order="asc") as board:
        board.set_many({"a": 3, "b": 3, "c": 1})
        board.set("b", 2, meta={"n": 1})
        snap = board.copy()
        assert type(snap) is Leaderboard
        assert view(snap) == view(board)
        snap.set("z", 9)
        board.set("y", 0)
        assert "z" not in board and "y" not in snap
    with Leaderboard.open(tmp_path / "board", fsync="never") as reopened:
        assert "z" not in reopened and "y" in reopened


@pytest.mark.parametrize("copier", ["copy.copy", "copy.deepcopy", "pickle", "pickle-protocol-2"])
def test_durable_refuses_shallow_copy_and_pickle(tmp_path: Path, copier: str) -> None:
    with Leaderboard.open(tmp_path / "board", fsync="never") as board:
        board.set("a", 1)
        with pytest.raises(TypeError, match=r"DurableLeaderboard.*copy\(\)"):
            COPIERS[copier](board)


# ----------------------------------------------------------------------
# Sharded boards: copied shard by shard when every shard is in memory
# ----------------------------------------------------------------------
@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_sharded_copies_are_independent(copier: str) -> None:
    board = ShardedLeaderboard.local(3, order="desc", rank_style="dense")
    board.set_many({"a": 3, "b": 3, "c": 1, "d": 3, "e": 2})
    board.set("c", 3, meta={"n": 1})
    clone = COPIERS[copier](board)
    assert type(clone) is ShardedLeaderboard
    assert view(clone) == view(board)
    assert all(a is not b for a, b in zip(clone.shards, board.shards, strict=True))
    clone.set("z", 9)
    assert "z" not in board and len(board) == 5
    clone.remove("z")
    board.set("y", 1)
    assert "y" not in clone
    clone.set("y", 1)
    # the same contents and order (the copy's clock ticked once more, for z)
    assert view(clone)[:4] == view(board)[:4]
    assert clone.clock == board.clock + 1


@pytest.mark.redis
@pytest.mark.parametrize("copier", list(COPIERS), ids=list(COPIERS))
def test_sharded_with_redis_shards_refuses(copier: str) -> None:
    board = ShardedLeaderboard([redis_board(), Leaderboard()])
    try:
        with pytest.raises(TypeError, match="RedisLeaderboard"):
            COPIERS[copier](board)
    finally:
        board.close()


# ----------------------------------------------------------------------
# Redis boards: a handle on server state
# ----------------------------------------------------------------------
@pytest.mark.redis
@pytest.mark.parametrize("copier", ["copy.copy", "copy.deepcopy", "pickle", "pickle-protocol-2"])
def test_redis_board_refuses_copy_and_pickle(copier: str) -> None:
    board = redis_board()
    try:
        board.set("a", 1)
        with pytest.raises(
            TypeError, match=r"RedisLeaderboard.*RedisLeaderboard\(client, board\.name, prefix="
        ):
            COPIERS[copier](board)
        assert board.items() == [("a", 1)]
    finally:
        board.close()


@pytest.mark.redis
def test_redis_copy_advice_reaches_a_packed_board_with_a_prefix() -> None:
    # the advice must name every setting a handle needs: board.config() is
    # the in-process settings only, so prefix and packing must be given too
    from rankengine.board.packed import PackedScore
    from rankengine.redis.board import RedisLeaderboard

    packing = PackedScore(0, 86400)
    board = redis_board(prefix="other:", order=("desc", "asc"), packing=packing)
    try:
        board.set("a", (3, 10))
        with pytest.raises(TypeError) as refused:
            copy.copy(board)
        advice = str(refused.value)
        assert "prefix=" in advice and "packing=board.packing" in advice
        handle = RedisLeaderboard(
            board._client,
            board.name,
            prefix="other:",
            packing=board.packing,
            **board.config(),
        )
        assert handle.items() == board.items() == [("a", (3, 10.0))]
    finally:
        board.close()


# ----------------------------------------------------------------------
# Time-driven boards: refused, naming the board to copy instead
# ----------------------------------------------------------------------
def _periodic(root: Path | None) -> Any:
    if root is None:
        return PeriodicLeaderboard("daily", clock=lambda: 1000.0)
    return PeriodicLeaderboard.open(root, "daily", clock=lambda: 1000.0, fsync="never")


def _window(root: Path | None) -> Any:
    if root is None:
        return SlidingWindowLeaderboard("daily", 3, clock=lambda: 1000.0)
    return SlidingWindowLeaderboard.open(root, "daily", 3, clock=lambda: 1000.0, fsync="never")


def _decayed(root: Path | None) -> Any:
    if root is None:
        return DecayedLeaderboard(half_life=60, clock=lambda: 1000.0)
    return DecayedLeaderboard.open(root, half_life=60, clock=lambda: 1000.0, fsync="never")


TIMED = {
    "periodic": (_periodic, r"PeriodicLeaderboard.*\.board\(\)\.copy\(\)"),
    "window": (_window, r"SlidingWindowLeaderboard.*\.board\.copy\(\)"),
    "decayed": (_decayed, r"DecayedLeaderboard.*\.board\.copy\(\)"),
}


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("kind", list(TIMED))
@pytest.mark.parametrize("copier", ["copy.copy", "copy.deepcopy", "pickle", "pickle-protocol-2"])
def test_time_driven_boards_refuse_with_advice(
    tmp_path: Path, copier: str, kind: str, durable: bool
) -> None:
    make, advice = TIMED[kind]
    board = make(tmp_path / "root" if durable else None)
    try:
        if kind == "decayed":
            board.add("a", 1)
        else:
            board.set("a", 1)
        with pytest.raises(TypeError, match=advice):
            COPIERS[copier](board)
    finally:
        board.close()
