"""Snapshot files: typed columns, the two format versions, damaged columns.

A version 2 snapshot stores a column of scores or clocks that are all 64-bit
ints (or all floats) as one msgpack extension object of raw 8-byte values;
anything else stays a msgpack array.  These tests check that every kind of
value survives the round trip bit for bit, that version 1 files (arrays
only) still load, and that a damaged typed column is refused with an error
naming its offset.
"""

from __future__ import annotations

import math
import os
import struct
import warnings
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankengine import Leaderboard
from rankengine.durable import snapshot as snapshot_module
from rankengine.durable.eventlog import PREFIX_BYTES, CorruptionError, frame, pack, write_prefix
from rankengine.durable.snapshot import (
    FLOAT64_COLUMN_EXT,
    INT64_COLUMN_EXT,
    SNAPSHOT_MAGIC,
    read_snapshot,
    write_snapshot,
    write_snapshot_columns,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False)
CLOCKS = st.integers(0, 2**63 - 1)


def snapshot_file(path: Path, version: int, chunks: list[Any], *, count: int | None = None) -> str:
    """A snapshot written by hand: ``chunks`` are packed as given."""
    rows = sum(len(chunk[0]) for chunk in chunks) if count is None else count
    data = write_prefix(SNAPSHOT_MAGIC, version) + frame(
        pack({"seq": 1, "clock": 1, "count": rows})
    )
    for chunk in chunks:
        data += frame(msgpack.packb(chunk, use_bin_type=True))
    data += frame(pack({"count": rows, "chunks": len(chunks)}))
    path.write_bytes(data)
    return str(path)


def int_column(values: list[int]) -> msgpack.ExtType:
    return msgpack.ExtType(INT64_COLUMN_EXT, struct.pack(f"<{len(values)}q", *values))


def float_column(values: list[float]) -> msgpack.ExtType:
    return msgpack.ExtType(FLOAT64_COLUMN_EXT, struct.pack(f"<{len(values)}d", *values))


def same_values(a: list[Any], b: list[Any]) -> bool:
    """Equal value by value, with float signs of zero and types compared too."""
    return len(a) == len(b) and all(
        type(x) is type(y) and (x == y and math.copysign(1, x) == math.copysign(1, y))
        if type(x) is float
        else type(x) is type(y) and x == y
        for x, y in zip(a, b, strict=True)
    )


@settings(max_examples=60, deadline=None)
@given(
    scores=st.one_of(
        st.lists(INT64, max_size=40),
        st.lists(FLOATS, max_size=40),
        st.lists(st.one_of(INT64, FLOATS), max_size=40),
        st.lists(st.one_of(INT64, st.integers(2**63, 2**80)), max_size=40),
    ),
    chunk_rows=st.integers(1, 7),
    data=st.data(),
)
def test_every_score_and_clock_kind_round_trips(
    tmp_path_factory: pytest.TempPathFactory,
    scores: list[Any],
    chunk_rows: int,
    data: st.DataObject,
) -> None:
    scores = sorted(scores)
    clocks = data.draw(st.lists(CLOCKS, min_size=len(scores), max_size=len(scores)))
    members = [f"m{i}" for i in range(len(scores))]
    metas = {i: {"i": i} for i in range(0, len(scores), 3)}
    path = str(tmp_path_factory.mktemp("snap") / "s.snap")
    old = snapshot_module.SNAPSHOT_CHUNK_ROWS
    snapshot_module.SNAPSHOT_CHUNK_ROWS = chunk_rows  # type: ignore[misc]
    try:
        write_snapshot_columns(path, {"seq": 3, "clock": 9}, (members, scores, clocks, metas))
    finally:
        snapshot_module.SNAPSHOT_CHUNK_ROWS = old  # type: ignore[misc]
    snap = read_snapshot(path)
    got_members, got_scores, got_clocks, got_metas = snap.columns()
    assert got_members == members
    assert same_values(list(got_scores), scores)
    assert list(got_clocks) == clocks
    assert got_metas == {members[i]: meta for i, meta in metas.items()}
    assert [row[:3] for row in snap.rows()] == list(zip(members, scores, clocks, strict=True))
    # typed columns come back as arrays exactly when every value fits one kind
    kinds = {type(s) for s in scores}
    wide = any(type(s) is int and not -(2**63) <= s < 2**63 for s in scores)
    assert (type(got_scores) is array) == (len(kinds) == 1 and not wide and bool(scores))
    assert (type(got_clocks) is array) == bool(clocks)


def test_version_1_snapshots_still_load(tmp_path: Path) -> None:
    chunk = [["a", "b", "c"], [1, 2.5, 7], [3, 1, 2], [1, {"x": 1}]]
    snap = read_snapshot(snapshot_file(tmp_path / "v1.snap", 1, [chunk]))
    assert list(snap.rows()) == [("a", 1, 3, None), ("b", 2.5, 1, {"x": 1}), ("c", 7, 2, None)]


def test_version_1_snapshot_with_a_typed_column_is_refused(tmp_path: Path) -> None:
    chunk = [["a", "b"], int_column([1, 2]), [1, 2], []]
    with pytest.raises(CorruptionError, match="does not decode"):
        read_snapshot(snapshot_file(tmp_path / "v1.snap", 1, [chunk]))


def test_unknown_version_is_refused_naming_the_versions_read(tmp_path: Path) -> None:
    chunk = [["a"], [1], [1], []]
    with pytest.raises(CorruptionError, match="version 3; this rankengine reads 1 and 2") as err:
        read_snapshot(snapshot_file(tmp_path / "v3.snap", 3, [chunk]))
    assert err.value.offset == 8


@pytest.mark.parametrize(
    ("chunk", "reason"),
    [
        ([["a", "b"], msgpack.ExtType(INT64_COLUMN_EXT, b"\0" * 12), [1, 2], []], "decode"),
        ([["a", "b"], int_column([1, 2]), float_column([1.0, 2.0]), []], "floats"),
        ([["a", "b"], float_column([1.0, math.nan]), int_column([1, 2]), []], "NaN"),
        ([["a", "b"], int_column([1, 2]), int_column([1, -2]), []], "non-negative"),
        ([["a", "b"], int_column([1, 2, 3]), int_column([1, 2]), []], "length"),
        ([["a", "b"], [1, 2], int_column([1]), []], "length"),
        ([["a", "b"], msgpack.ExtType(9, b"\0" * 16), [1, 2], []], "decode"),
        ([int_column([1, 2]), [1, 2], [1, 2], []], "four arrays"),
    ],
)
def test_damaged_typed_columns_are_refused_at_their_offset(
    tmp_path: Path, chunk: list[Any], reason: str
) -> None:
    path = snapshot_file(tmp_path / "bad.snap", 2, [chunk])
    with pytest.raises(CorruptionError, match=reason) as err:
        read_snapshot(path)
    head = 12 + len(pack({"seq": 1, "clock": 1, "count": 2}))
    assert err.value.offset == PREFIX_BYTES + head  # the chunk frame


def test_typed_scores_on_a_composite_board_are_refused(tmp_path: Path) -> None:
    path = snapshot_file(tmp_path / "c.snap", 2, [[["a"], int_column([1]), [1], []]])
    with pytest.raises(CorruptionError, match="composite scores are a typed column"):
        read_snapshot(path, columns=2)


@settings(max_examples=150, deadline=None)
@given(
    code=st.sampled_from([INT64_COLUMN_EXT, FLOAT64_COLUMN_EXT, 1, 5]),
    raw=st.binary(max_size=40),
    other=st.binary(max_size=40),
)
def test_arbitrary_typed_column_bytes_give_rows_or_a_clear_error(
    tmp_path_factory: pytest.TempPathFactory, code: int, raw: bytes, other: bytes
) -> None:
    n = len(raw) // 8
    chunk = [
        [f"m{i}" for i in range(n)],
        msgpack.ExtType(code, raw),
        msgpack.ExtType(INT64_COLUMN_EXT, other),
        [],
    ]
    path = snapshot_file(tmp_path_factory.mktemp("fuzz") / "f.snap", 2, [chunk], count=n)
    try:
        snap = read_snapshot(path)
    except CorruptionError as exc:
        assert exc.offset >= 0 and exc.reason
        return
    members, scores, clocks, _ = snap.columns()
    assert len(members) == len(scores) == len(clocks) == n
    assert all(clock >= 0 for clock in clocks)
    assert all(score == score for score in scores)


@pytest.mark.parametrize("backend", ["sortedlist", "skiplist"])
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("tie_break", ["first", "member"])
@pytest.mark.parametrize("kind", ["int", "float", "mixed", "wide"])
def test_compacted_board_reopens_equal_for_every_column_kind(
    tmp_path: Path, backend: str, order: str, tie_break: str, kind: str
) -> None:
    path = str(tmp_path / "board")
    values: dict[str, Any] = {
        "int": [5, -3, 5, 2**62, 0, -(2**63)],
        "float": [5.5, -0.0, 5.5, 1e300, 0.25, -math.inf],
        "mixed": [5, 2.5, 5, 1e300, 0, -7],
        "wide": [5, 2**70, 5, -(2**64), 0, 3],
    }
    board = Leaderboard.open(path, order=order, tie_break=tie_break, backend=backend)
    for i, score in enumerate(values[kind] * 3):
        board.set(f"p{i % 7}", score)
    board.incr("p1", 1)
    board.compact()
    before = list(board.page(1, size=100))
    clock = board.clock
    board.close()
    (snap_name,) = [name for name in os.listdir(path) if name.endswith(".snap")]
    negated = read_snapshot(os.path.join(path, snap_name)).negated_clocks
    # a descending board's index keeps its clocks negated, and so does its snapshot
    assert negated == (order == "desc" and tie_break == "first")
    with warnings.catch_warnings():
        # a snapshot that did not load would be skipped with a warning and
        # the board rebuilt from the log: make that a failure here
        warnings.simplefilter("error")
        again = Leaderboard.open(path, order=order, tie_break=tie_break, backend=backend)
    again._check()
    assert list(again.page(1, size=100)) == before
    assert again.clock == clock
    again.set("p0", values[kind][1])  # goes on as the original would
    again._check()
    again.close()


def test_snapshot_writer_takes_rows_or_columns_alike(tmp_path: Path) -> None:
    rows = [("a", 1, 4, None), ("b", 2.5, 2, {"k": 1}), ("c", 2**70, 0, None)]
    write_snapshot(str(tmp_path / "r.snap"), {"seq": 1, "clock": 4}, rows)
    members = [row[0] for row in rows]
    columns = (members, [row[1] for row in rows], array("q", [4, 2, 0]), {1: {"k": 1}})
    write_snapshot_columns(str(tmp_path / "c.snap"), {"seq": 1, "clock": 4}, columns)
    assert (tmp_path / "r.snap").read_bytes() == (tmp_path / "c.snap").read_bytes()
    assert list(read_snapshot(str(tmp_path / "c.snap")).rows()) == rows


def test_negated_clocks_are_recorded_and_undone_by_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "n.snap")
    columns = (["a", "b", "c"], [1, 1, 2], array("q", [-7, -3, 0]), {})
    write_snapshot_columns(path, {"seq": 1, "clock": 7}, columns)
    snap = read_snapshot(path)
    assert snap.negated_clocks and snap.header["negated_clocks"] is True
    assert list(snap.columns()[2]) == [-7, -3, 0]
    assert [row[2] for row in snap.rows()] == [7, 3, 0]
    write_snapshot_columns(path, {"seq": 1, "clock": 7}, (["a"], [1], [0], {}))
    assert not read_snapshot(path).negated_clocks


@pytest.mark.parametrize("clocks", [[-1, 2], [2, -1], array("q", [-1, 2]), array("q", [0, -1, 3])])
def test_clocks_of_mixed_signs_are_not_written(tmp_path: Path, clocks: Sequence[int]) -> None:
    path = tmp_path / "m.snap"
    members = [f"m{k}" for k in range(len(clocks))]
    scores = list(range(len(clocks)))
    with pytest.raises(ValueError, match="mix signs"):
        write_snapshot_columns(str(path), {"seq": 1, "clock": 7}, (members, scores, clocks, {}))
    assert not path.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize(
    ("flag", "clocks", "reason"),
    [
        (True, [-1, 2], "non-positive"),
        (True, [0, 2**62], "non-positive"),
        (True, [-1, 0], None),
        (True, [0, 0], None),
        (False, [-1, -2], "non-negative"),
        (False, [5, -(2**63)], "non-negative"),
        (False, [0, 2**63 - 1], None),
        (1, [-1, -2], "not a bool"),
        ("yes", [1, 2], "not a bool"),
    ],
)
def test_clock_signs_must_match_the_header(
    tmp_path: Path, flag: Any, clocks: list[int], reason: str | None, typed: bool
) -> None:
    head = {"seq": 1, "clock": 1, "count": 2, "negated_clocks": flag}
    data = write_prefix(SNAPSHOT_MAGIC, 2) + frame(pack(head))
    column = int_column(clocks) if typed else clocks
    data += frame(msgpack.packb([["a", "b"], [1, 2], column, []]))
    data += frame(pack({"count": 2, "chunks": 1}))
    (tmp_path / "h.snap").write_bytes(data)
    if reason is None:
        assert [row[2] for row in read_snapshot(str(tmp_path / "h.snap")).rows()] == [
            abs(c) for c in clocks
        ]
        return
    with pytest.raises(CorruptionError, match=reason):
        read_snapshot(str(tmp_path / "h.snap"))
