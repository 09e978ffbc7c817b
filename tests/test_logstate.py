"""The durable board keeps its log's state in slots (rankengine/durable/logstate.py):
its instance dictionary holds the Leaderboard's own attributes only, within
the number of names CPython shares a layout for."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankengine import Leaderboard
from rankengine.durable.logstate import SHARED_KEYS_LIMIT, LogState


@pytest.mark.parametrize("fsync", ["everysec", "never"])
def test_the_dictionary_holds_the_in_memory_boards_attributes_only(
    tmp_path: Path, fsync: str
) -> None:
    with Leaderboard.open(tmp_path, fsync=fsync) as board:
        board.incr("ann", 3)
        board.set("bob", 5)
        board._check()
        assert set(vars(board)) == set(vars(Leaderboard()))
        assert len(vars(board)) <= SHARED_KEYS_LIMIT
        # every slot is assigned by the open (none left to raise AttributeError)
        assert all(hasattr(board, name) for name in LogState.__slots__)


def test_a_subclass_with_slots_of_its_own_is_refused_with_the_reason(tmp_path: Path) -> None:
    class Slotted(Leaderboard):
        __slots__ = ("extra",)

    with pytest.raises(TypeError, match="declares __slots__"):
        Slotted.open(tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing created

    class Plain(Leaderboard):
        pass

    with Plain.open(tmp_path / "plain") as board:
        board.incr("ann", 2)
        assert isinstance(board, Plain) and set(vars(board)) == set(vars(Leaderboard()))
