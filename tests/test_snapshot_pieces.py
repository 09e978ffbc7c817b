"""Snapshots written from pieces (``write_snapshot_pieces``): a live board's
snapshot hands over its slices instead of whole columns, and the writer
packs, joins and frees them a little at a time.  The file must be byte for
byte the one the whole-columns writer makes in one msgpack call per chunk,
whatever the pieces' sizes and kinds, and the pieces are given back as they
are written.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine.durable import snapshot as snapshot_module
from rankengine.durable import typed_columns
from rankengine.durable.snapshot import (
    Piece,
    read_snapshot,
    write_snapshot_columns,
    write_snapshot_pieces,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False)
SCORES = st.one_of(
    st.lists(INT64, max_size=30),
    st.lists(FLOATS, max_size=30),
    st.lists(st.one_of(INT64, FLOATS), max_size=30),
    st.lists(st.one_of(INT64, st.integers(2**63, 2**80)), max_size=30),
)


@contextmanager
def small_units(chunk: int, pack: int, sign: int) -> Iterator[None]:
    """Chunks, pack pieces and sign pieces of a few rows, so that a handful
    of rows crosses every boundary."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(snapshot_module, "SNAPSHOT_CHUNK_ROWS", chunk)
        mp.setattr(snapshot_module, "PACK_PIECE_ROWS", pack)
        mp.setattr(typed_columns, "SIGN_PIECE_ROWS", sign)
        yield


def as_kind(values: list[Any], kind: str) -> Sequence[Any]:
    """``values`` as a list, a tuple or (where every value fits one) an array."""
    if kind == "tuple":
        return tuple(values)
    if kind == "array" and values:
        kinds = {type(v) for v in values}
        if kinds == {float}:
            return array("d", values)
        if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values):
            return array("q", values)
    return list(values)


def cut(columns: tuple[list[Any], ...], cuts: list[int], kinds: list[str]) -> list[Piece | None]:
    bounds = [0, *sorted(cuts), len(columns[0])]
    pieces: list[Piece | None] = []
    for k, (lo, hi) in enumerate(pairwise(bounds)):
        kind = kinds[k % len(kinds)]
        members, scores, clocks = (column[lo:hi] for column in columns)
        pieces.append((as_kind(members, kind), as_kind(scores, kind), as_kind(clocks, kind)))
    return pieces


@settings(max_examples=150, deadline=None)
@given(
    scores=SCORES,
    units=st.tuples(st.integers(1, 7), st.integers(1, 5), st.integers(1, 4)),
    data=st.data(),
)
def test_pieces_write_the_same_bytes_as_whole_columns(
    tmp_path_factory: pytest.TempPathFactory,
    scores: list[Any],
    units: tuple[int, int, int],
    data: st.DataObject,
) -> None:
    n = len(scores)
    negated = data.draw(st.booleans(), label="negated")
    kinds = data.draw(
        st.lists(st.sampled_from(["list", "tuple", "array"]), min_size=1, max_size=4),
        label="kinds",
    )
    paused = data.draw(st.booleans(), label="paused")
    clocks = data.draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n))
    if negated:
        clocks = [-c for c in clocks]
    members = [f"m{i}" for i in range(n)]
    metas = {i: {"i": i} for i in data.draw(st.sets(st.integers(0, max(n - 1, 0)))) if i < n}
    cuts = data.draw(st.lists(st.integers(0, n), max_size=6))
    pieces = cut((members, scores, clocks), cuts, kinds)
    pauses: list[int] = []
    head = {"seq": 3, "clock": 9, "created_ms": 1}
    where = tmp_path_factory.mktemp("pieces")
    with small_units(*units):
        whole = write_snapshot_columns(
            str(where / "w.snap"), head, (members, scores, clocks, metas)
        )
        size = write_snapshot_pieces(
            str(where / "p.snap"),
            head,
            pieces,
            metas,
            pause=(lambda: pauses.append(1)) if paused else None,
        )
    assert (where / "p.snap").read_bytes() == (where / "w.snap").read_bytes()
    assert size == whole
    assert pieces == [None] * len(pieces)  # each given back once written
    assert bool(pauses) == (paused and n > 0)
    rows = list(read_snapshot(str(where / "p.snap")).rows())
    assert [row[0] for row in rows] == members
    assert [row[2] for row in rows] == [abs(c) for c in clocks]
    assert {i: row[3] for i, row in enumerate(rows) if row[3] is not None} == metas


@settings(max_examples=60, deadline=None)
@given(
    scores=SCORES,
    units=st.tuples(st.integers(1, 7), st.integers(1, 5), st.integers(1, 4)),
    data=st.data(),
)
def test_pausing_does_not_change_the_bytes(
    tmp_path_factory: pytest.TempPathFactory,
    scores: list[Any],
    units: tuple[int, int, int],
    data: st.DataObject,
) -> None:
    """The paused path (pack in pieces, typed columns in pieces) against
    one msgpack call a chunk, from the same whole columns."""
    n = len(scores)
    clocks = data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    columns = ([f"m{i}" for i in range(n)], scores, clocks, {})
    where = tmp_path_factory.mktemp("paused")
    with small_units(*units):
        write_snapshot_columns(str(where / "a.snap"), {"seq": 1, "clock": 1}, columns)
        write_snapshot_columns(
            str(where / "b.snap"), {"seq": 1, "clock": 1}, columns, pause=lambda: None
        )
    assert (where / "a.snap").read_bytes() == (where / "b.snap").read_bytes()


@pytest.mark.parametrize("paused", [False, True])
def test_clocks_of_mixed_signs_across_pieces_are_not_written(tmp_path: Path, paused: bool) -> None:
    path = tmp_path / "m.snap"
    pieces: list[Piece | None] = [(["a"], [1], [-1]), (("b", "c"), [2, 3], array("q", [0, 4]))]
    with pytest.raises(ValueError, match="mix signs"):
        write_snapshot_pieces(
            str(path), {"seq": 1, "clock": 4}, pieces, {}, pause=(lambda: None) if paused else None
        )
    assert not list(tmp_path.iterdir())
    assert all(piece is not None for piece in pieces)  # nothing was handed out


def test_pieces_of_unequal_columns_or_written_twice_are_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "x.snap")
    with pytest.raises(ValueError, match="differ in length"):
        write_snapshot_pieces(path, {"seq": 1, "clock": 1}, [(["a", "b"], [1], [1, 2])], {})
    pieces: list[Piece | None] = [(["a"], [1], [1])]
    write_snapshot_pieces(path, {"seq": 1, "clock": 1}, pieces, {})
    with pytest.raises(ValueError, match="written already"):
        write_snapshot_pieces(str(tmp_path / "y.snap"), {"seq": 1, "clock": 1}, pieces, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.snap"]


def test_whole_columns_are_never_changed(tmp_path: Path) -> None:
    """A chunk that joins parts copies them: the caller's columns stay."""
    members = ["a", "b", "c"]
    scores = array("q", [1, 2, 3])
    pieces: list[Piece | None] = [(members, scores, [0, 0, 0]), (["d"], [4.5], [0])]
    with small_units(8, 2, 2):
        write_snapshot_pieces(str(tmp_path / "s.snap"), {"seq": 1, "clock": 1}, pieces, {})
    assert members == ["a", "b", "c"] and scores == array("q", [1, 2, 3])
    rows = list(read_snapshot(str(tmp_path / "s.snap")).rows())
    assert [row[1] for row in rows] == [1, 2, 3, 4.5]
