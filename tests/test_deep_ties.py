"""The tie map of a bulk load (rankengine.board.bulk.deep_ties): the sampled
pass and the full pass both give exactly the members ``RUN_SCAN_LIMIT`` or
more rows deep in their run of equal primaries, each shard of the tie map
in row order, against a model that looks at every row; and a board restored from columns with long
runs passes its checks."""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.board import bulk
from rankengine.board.tiemap import TieMap
from rankengine.index.protocol import RUN_SCAN_LIMIT

K = RUN_SCAN_LIMIT

#: runs of equal primaries: mostly single rows, some long (the deep ones)
run_lengths = st.lists(
    st.one_of(st.just(1), st.integers(1, 3), st.integers(K - 2, 3 * K + 3)), max_size=40
)


def columns(lengths: list[int]) -> tuple[list[int], list[int], list[str]]:
    primaries = [p for p, length in enumerate(lengths) for _ in range(length)]
    ties = [10 * i + 1 for i in range(len(primaries))]
    return primaries, ties, [f"m{i}" for i in range(len(primaries))]


def model(primaries: list[int], ties: list[int], members: list[str], oldest_last: bool) -> Any:
    shift = K if oldest_last else -K
    return [
        (members[i], ties[i])
        for i in range(len(primaries))
        if 0 <= i + shift < len(primaries) and primaries[i] == primaries[i + shift]
    ]


@pytest.mark.parametrize("share", [0, bulk._FULL_SCAN_SHARE, 10**9])  # sampled, as set, full
@settings(max_examples=150, deadline=None)
@given(lengths=run_lengths, oldest_last=st.booleans(), typed=st.booleans())
def test_deep_ties_against_every_row(
    share: int, lengths: list[int], oldest_last: bool, typed: bool
) -> None:
    primaries, ties, members = columns(lengths)
    expected = model(primaries, ties, members, oldest_last)
    saved = bulk._FULL_SCAN_SHARE
    bulk._FULL_SCAN_SHARE = share  # type: ignore[misc]
    try:
        if typed:
            got = bulk.deep_ties(
                array("q", primaries), array("q", ties), members, oldest_last=oldest_last
            )
        else:
            got = bulk.deep_ties(primaries, ties, members, oldest_last=oldest_last)
    finally:
        bulk._FULL_SCAN_SHARE = saved  # type: ignore[misc]
    got._check()
    # the same entries, each shard's in row order (the model's, put in shards)
    assert [list(s.items()) for s in got.shards] == [
        list(s.items()) for s in TieMap(expected).shards
    ]
    assert len(got) == len(expected)


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_a_board_restored_with_long_runs_keeps_the_deep_ties(backend: str, order: str) -> None:
    primaries, _, members = columns([1, 3 * K, 2, K + 1, 1, K, 2 * K + 1])
    board = Leaderboard(order=order, backend=backend)  # type: ignore[arg-type]
    board.set_many(dict(zip(members, primaries, strict=True)))
    again = Leaderboard(order=order, backend=backend)  # type: ignore[arg-type]
    again._load_state(board._copy_state(copy_meta=True))
    again._check()
    assert again._tie  # (runs of K + 1 and more: some members are deep)
    assert again.items() == board.items()
    for m in members:
        assert again.rank(m) == board.rank(m)
        assert again._tie_of(m) == board._tie_of(m)
