"""The sharded tie map (rankengine.board.tiemap.TieMap) against a plain dict:
random operation sequences, ``_check()`` after every step; and a board's
tie map after writes that cross a shard's doubling."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import untied_far_members
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from rankengine import Leaderboard
from rankengine.board.direct import direct_incr
from rankengine.board.tiemap import TIE_SHARD_MASK, TIE_SHARDS, VACANT_SHARD, TieMap

#: members of every kind a board takes, with hashes that share shards:
#: small ints (hash = value), negative ones (hash(-1) is -2), strings,
#: bytes, tuples, and values that equal one another (1, True, 1.0)
members = st.one_of(
    st.integers(-600, 600),
    st.integers(-(2**70), 2**70),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.tuples(st.integers(0, 3), st.text(max_size=1)),
    st.sampled_from([True, False, 1.0, 0.0, -0.0]),
)
ties = st.integers(-(2**63), 2**63 - 1)


class TieMapAgainstDict(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.map = TieMap()
        self.model: dict[Any, Any] = {}

    @rule(member=members, tie=ties)
    def set(self, member: Any, tie: Any) -> None:
        self.map[member] = tie
        self.model[member] = tie

    @rule(member=members)
    def get(self, member: Any) -> None:
        assert self.map.get(member) == self.model.get(member)
        assert self.map.get(member, "none") == self.model.get(member, "none")
        assert (member in self.map) == (member in self.model)
        if member in self.model:
            assert self.map[member] == self.model[member]
        else:
            with pytest.raises(KeyError):
                self.map[member]

    @rule(member=members, default=st.sampled_from([None, "none"]))
    def pop_default(self, member: Any, default: Any) -> None:
        assert self.map.pop(member, default) == self.model.pop(member, default)

    @rule(member=members)
    def pop(self, member: Any) -> None:
        if member in self.model:
            assert self.map.pop(member) == self.model.pop(member)
        else:
            with pytest.raises(KeyError):
                self.map.pop(member)

    @rule(member=members)
    def delete(self, member: Any) -> None:
        if member in self.model:
            del self.map[member]
            del self.model[member]
        else:
            with pytest.raises(KeyError):
                del self.map[member]

    @rule()
    def copy(self) -> None:
        twin = self.map.copy()
        twin._check()
        assert twin == self.map and twin is not self.map
        # no shard shared, but the vacant one (which holds nothing)
        pairs = zip(twin.shards, self.map.shards, strict=True)
        assert all(a is not b or a is VACANT_SHARD for a, b in pairs)
        twin["copy only"] = 1  # the copy is a map of its own
        assert "copy only" not in self.map or "copy only" in self.model
        self.map = twin
        self.model = {**self.model, "copy only": 1}

    @rule(pairs=st.lists(st.tuples(members, ties), max_size=20))
    def rebuild(self, pairs: list[tuple[Any, Any]]) -> None:
        built = TieMap(pairs)
        model = dict(pairs)
        built._check()
        assert sorted(map(repr, built.items())) == sorted(map(repr, model.items()))
        assert (built == self.map) == (model == self.model)

    @invariant()
    def agrees(self) -> None:
        self.map._check()
        assert not VACANT_SHARD
        assert len(self.map) == len(self.model)
        assert bool(self.map) == bool(self.model)
        assert sorted(map(repr, self.map)) == sorted(map(repr, self.model))
        assert sorted(map(repr, self.map.items())) == sorted(map(repr, self.model.items()))
        assert self.map == TieMap(self.model.items())


TestTieMapAgainstDict = TieMapAgainstDict.TestCase
TestTieMapAgainstDict.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


def test_equal_members_meet_in_one_shard() -> None:
    ties = TieMap()
    ties[1] = 5
    ties[True] = 6  # equal to 1, as in a dict: one entry
    assert len(ties) == 1 and ties.get(1.0) == 6
    assert TieMap() != ties and (ties == {1: 6}) is False  # only another TieMap compares
    assert repr(ties) == "TieMap({1: 6})"
    ties._check()


def test_check_finds_a_member_in_the_wrong_shard() -> None:
    ties = TieMap([("ann", 1)])
    wrong = (hash("ann") + 1) & TIE_SHARD_MASK
    ties.shards[wrong] = {"ann": 1}
    with pytest.raises(AssertionError, match="wrong shard"):
        ties._check()


def test_a_set_gives_a_vacant_slot_a_dict_of_its_own() -> None:
    ties = TieMap()
    assert all(shard is VACANT_SHARD for shard in ties.shards)
    ties["ann"] = 1
    mine = hash("ann") & TIE_SHARD_MASK
    assert type(ties.shards[mine]) is dict and ties.shards[mine] == {"ann": 1}
    assert sum(shard is VACANT_SHARD for shard in ties.shards) == TIE_SHARDS - 1
    assert not VACANT_SHARD
    assert ties.pop("ann") == 1 and ties.pop("cy", None) is None and "ann" not in ties
    ties._check()
    # a copy has no shard of the map's
    twin = ties.copy()
    assert twin == ties and twin.shards[mine] is VACANT_SHARD  # (empty: not copied)
    twin._check()
    VACANT_SHARD["cy"] = 3  # a fault: an entry written into the vacant shard
    try:
        with pytest.raises(AssertionError, match="vacant shard"):
            ties._check()
    finally:
        VACANT_SHARD.clear()


def test_board_writes_never_reach_the_vacant_shard() -> None:
    # every write path of a first-to-reach board, into a map whose slots are
    # vacant: the increment inlined in incr, _put, direct_incr, a bulk load
    count = 3 * TIE_SHARDS
    for write in ("incr", "direct", "set"):
        board = Leaderboard()
        board.set_many({f"p{i}": 10 + i for i in range(count)})  # distinct: none kept
        for i in range(count):  # each into one run of 1s, deep: kept
            if write == "incr":
                board.incr(f"p{i}", -9 - i)  # (the increment inlined in incr)
            elif write == "direct":
                direct_incr(board, f"p{i}", -9 - i)
            else:
                board.set(f"p{i}", 1)  # (_put)
            direct_incr(board, f"new{i}", 1)  # (a new member, deep too)
            assert not VACANT_SHARD, write
        assert len(board._tie) >= 2 * count - 20
        board._check()
    board.set_many({f"q{i}": 1 for i in range(count)})  # (a bulk load)
    assert not VACANT_SHARD
    board._check()


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_board_whose_tie_map_grows_past_its_shards_doublings(backend: Any, order: Any) -> None:
    # Every newcomer lands deep in one run of equal scores (as new players
    # in a crowd do): the tie map takes nearly all of them, and its shards
    # double several times (8 entries a shard fit before the first).
    board = Leaderboard(backend=backend, order=order)
    model: dict[str, tuple[int, int]] = {}  # member -> (score, clock of its last change)
    clock = 0

    def write(member: str, score: int) -> None:
        nonlocal clock
        clock += 1
        if model.get(member, (None, 0))[0] != score:
            model[member] = (score, clock)

    count = 12 * TIE_SHARDS
    for i in range(count):
        board.incr(f"p{i}", 1)
        write(f"p{i}", 1)
    board._check()
    assert len(board._tie) >= count - 10
    # moves out of the run (the increment path and _put), deletes, reads
    for i in range(0, count, 3):
        board.incr(f"p{i}", 2 + i)
        write(f"p{i}", model[f"p{i}"][0] + 2 + i)
    for i in range(1, count, 11):
        board.set(f"p{i}", count + i)  # _put: out of the run, alone
        write(f"p{i}", count + i)
    for i in range(1, count, 7):
        board.remove(f"p{i}")
        model.pop(f"p{i}", None)
    for i in range(2, count, 5):
        if board.set(f"p{i}", 1):  # back into the run, newest end
            write(f"p{i}", 1)
    board._check()
    sign = -1 if order == "desc" else 1
    expected = sorted(model, key=lambda m: (sign * model[m][0], model[m][1]))
    assert [m for m, _ in board.items()] == expected
    assert [board.rank(m) for m in expected] == list(range(1, len(expected) + 1))
    assert untied_far_members(board) == []
    # a copy keeps only the members deep now, each with the tie it had
    twin = board.copy()
    twin._check()
    assert twin.items() == board.items()
    assert set(twin._tie.items()) <= set(board._tie.items())
    assert untied_far_members(twin) == []
