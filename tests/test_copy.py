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
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_redis_differential import apply, exact, operations

from rankengine import Leaderboard

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
