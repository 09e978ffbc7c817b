"""Tests that only the sorted-list index has: blocks, offsets, typed columns.

The behaviour every index backend shares (insert, remove, move, reads,
build, the by-member hooks, the Redis stress properties, random operations,
a state machine against the model) is in ``tests/test_index_conformance.py``,
which runs this index with a load of 4 (blocks split and merge every few
writes) and of 1000.  Here: the load bound, block splits and merges, the
positional tree and its cached offsets, the in-block fast path of ``move``,
``columns_between``, how far ``_near`` can see, the typed columns (int64 and
double arrays, falling back to lists), ``_check()`` catching damage, and the
conformance machine narrowed to this index with rules that reach into its
blocks (block edges, column kinds, ``build_columns``, offset bursts).
Every mutation is followed by ``_check()``, which verifies the internal
invariants and dumps the structure when one breaks.
"""

from __future__ import annotations

import math
import random
from array import array
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule
from listindex import ListIndex
from test_index_conformance import IndexMachine

from rankengine.index import blockoffsets
from rankengine.index.blockoffsets import FILL_CHUNK
from rankengine.index.protocol import RUN_SCAN_LIMIT
from rankengine.index.sortedlist import (
    DEFAULT_LOAD,
    MIN_LOAD,
    SortedListIndex,
)
from rankengine.index.spares import SPARE_MIN

Entry = tuple[Any, Any, Any]


def contents(index: SortedListIndex) -> list[Entry]:
    return list(index.iter_range(0, len(index)))


def assert_same(index: SortedListIndex, ref: ListIndex) -> None:
    index._check()
    assert len(index) == len(ref)
    assert contents(index) == ref.rows()


def make(entries: list[Entry], load: int = 4) -> tuple[SortedListIndex, ListIndex]:
    index = SortedListIndex(load=load)
    ref = ListIndex()
    for entry in entries:
        index.insert(*entry)
        index._check()
        ref.insert(*entry)
    assert_same(index, ref)
    return index, ref


def spread(n: int, load: int = 4) -> tuple[SortedListIndex, ListIndex]:
    """``n`` entries with primaries 0, 10, 20, ... bulk-loaded."""
    entries = [(10 * k, 0, f"m{k}") for k in range(n)]
    index = SortedListIndex(load=load)
    index.build(entries)
    ref = ListIndex()
    ref.build(entries)
    assert_same(index, ref)
    return index, ref


# ----------------------------------------------------------------------
# Construction and simple methods
# ----------------------------------------------------------------------


def test_load_is_validated() -> None:
    assert SortedListIndex()._load == DEFAULT_LOAD
    assert SortedListIndex(load=MIN_LOAD)._load == MIN_LOAD
    with pytest.raises(ValueError, match="load"):
        SortedListIndex(load=MIN_LOAD - 1)


def test_insert_every_position_with_splits() -> None:
    rng = random.Random(1)
    keys = list(range(200))
    rng.shuffle(keys)
    index, ref = make([(k, 0, f"m{k}") for k in keys[:1]])
    for k in keys[1:]:
        index.insert(k, 0, f"m{k}")
        ref.insert(k, 0, f"m{k}")
        assert_same(index, ref)
    assert len(index._lists) > 10


def test_remove_every_entry_with_merges() -> None:
    rng = random.Random(2)
    index, ref = spread(150)
    order = ref.rows()
    rng.shuffle(order)
    for primary, tie, _ in order:
        index.remove(primary, tie)
        ref.remove(primary, tie)
        assert_same(index, ref)
    assert index._lists == [] and len(index._maxes) == 0


def test_iter_range_out_of_bounds_raises() -> None:
    # The board clamps the bounds; this index checks them (the skip list
    # answers start > stop with an empty range: see tests/test_skiplist.py).
    index, ref = spread(37, load=4)
    n = len(ref)
    for start, stop in [(0, n + 1), (5, 3), (-1, 2)]:
        with pytest.raises(IndexError):
            index.iter_range(start, stop)


def test_columns_between_all_windows_both_directions() -> None:
    index, ref = spread(37, load=4)
    n = len(ref.rows())
    # stale and then rebuilt block offsets: the position look-up takes both paths
    for _ in range(3):
        for start in range(n + 1):
            for stop in range(start, n + 1):
                rows = ref.rows()[start:stop]
                want = ([p for p, _, _ in rows], [m for _, _, m in rows])
                assert index.columns_between(start, stop) == want
                back = index.columns_between(start, stop, reverse=True)
                assert back == (want[0][::-1], want[1][::-1])
        index._valid, index._from = 1, len(index._lists) - 3  # a gap: blocks 1 .. -4
        index._check()
    with pytest.raises(IndexError):
        index.columns_between(0, n + 1)


@pytest.mark.parametrize("oldest_last", [False, True])
def test_near_reads_the_slot_run_scan_limit_away(oldest_last: bool) -> None:
    # Runs of 1 .. 24 entries in blocks of 2-4 and of 8-16: the slot
    # RUN_SCAN_LIMIT entries towards the oldest end lies in the entry's block,
    # in the next block towards that end, or beyond.  _near is exact whenever
    # it can see that slot (or the run's end in the entry's own block), and a
    # conservative False otherwise.
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 25) for t in range(p)]
    ref = ListIndex()
    ref.build(entries)
    seen = set()
    for load in (MIN_LOAD, 16):
        index = SortedListIndex(load=load)
        index.oldest_last = oldest_last
        index.build(entries)
        lists = index._lists
        for i, ps in enumerate(lists):
            for b, p in enumerate(ps):
                t = index._ties[i][b]
                m = index._members[i][b]
                truth = ref.run_distance(p, m, oldest_last=oldest_last) < RUN_SCAN_LIMIT
                visible, in_block = _near_view(index, i, b, p)
                assert index._near(i, b, p) is (truth if visible else False), (load, i, b, p, t)
                seen.add((truth, visible, in_block))
    # every case occurred: near and far, in the block, next door, out of view
    assert {(True, True, True), (False, True, True), (True, True, False)} <= seen
    assert {(False, True, False), (True, False, False), (False, False, False)} <= seen
    index.oldest_last = None
    assert index._near(0, 0, 1) is None


def _near_view(index: SortedListIndex, i: int, b: int, primary: Any) -> tuple[bool, bool]:
    """``(visible, in_block)`` for the entry at ``(i, b)``: can _near see the
    slot RUN_SCAN_LIMIT entries towards the oldest end (in the entry's
    block, the run's end in it, or the next block that way), and is that
    slot in the entry's own block."""
    lists = index._lists
    ps = lists[i]
    if index.oldest_last:
        c = b + RUN_SCAN_LIMIT
        visible = (
            c < len(ps)
            or ps[-1] != primary
            or i + 1 == len(lists)
            or c - len(ps) < len(lists[i + 1])
        )
    else:
        c = b - RUN_SCAN_LIMIT
        visible = c >= 0 or ps[0] != primary or not i or c + len(lists[i - 1]) >= 0
    return visible, 0 <= c < len(ps)


def _visible_near(index: SortedListIndex, primary: Any, tie: Any, truth: bool) -> bool:
    """What _near must answer for the entry ``(primary, tie)``: the truth when
    the slot RUN_SCAN_LIMIT entries away is in view, else a conservative False."""
    i, b = index._locate(primary, tie)
    visible, _ = _near_view(index, i, b, primary)
    return truth if visible else False


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("how", ["insert", "move_far", "move_near", "move_member"])
@pytest.mark.parametrize("load", [16, 128])
def test_writes_report_nearness_at_every_depth(oldest_last: bool, how: str, load: int) -> None:
    # A run of 2K + 1 entries (even ties) on primary 50 among single entries;
    # a write puts a new entry (odd tie) at every depth from the run's oldest
    # end: by insert, by a move from a far entry (case 3 in blocks of 15,
    # case 2 in one block of 116), by a move from the neighbouring primary
    # (case 1 or 2), by move_member.  No block splits or merges.
    k = RUN_SCAN_LIMIT
    answers = set()
    for depth in range(2 * k + 2):
        index = SortedListIndex(load=load)
        index.oldest_last = oldest_last
        run = [(50, 2 * n, f"r{n}") for n in range(2 * k + 1)]
        singles = [(p, 0, f"s{p}") for p in range(100) if p != 50]
        index.build(sorted(run + singles))
        tie = 4 * k - 2 * depth + 1 if oldest_last else 2 * depth - 1
        if how == "insert":
            near = index.insert(50, tie, "new")
        elif how == "move_far":
            near = index.move(3, 0, 50, tie)
        elif how == "move_near":
            near = index.move(49, 0, 50, tie)
        else:
            near = index.move_member(97, "s97", 50, tie)
        index._check()
        ref = ListIndex()
        ref.build(contents(index))
        member = ref.entry(ref.position(50, tie))[2]
        assert ref.run_distance(50, member, oldest_last=oldest_last) == depth
        expected = _visible_near(index, 50, tie, depth < k)
        assert near is expected, (depth, near)
        answers.add(near)
    assert answers == {True, False}


# ----------------------------------------------------------------------
# Typed columns
# ----------------------------------------------------------------------


def kinds(index: SortedListIndex) -> tuple[str, str]:
    """The storage of the primary and tie columns: an array code or 'list'."""

    def kind(column: list[Any]) -> str:
        codes = {getattr(block, "typecode", "list") for block in column}
        assert len(codes) <= 1
        return codes.pop() if codes else "empty"

    return kind(index._lists), kind(index._ties)


def test_int_primaries_and_clock_ties_use_int64_arrays() -> None:
    index, ref = make([(k * 7 % 50, -k, f"m{k}") for k in range(40)])
    assert kinds(index) == ("q", "q")
    assert all(type(p) is int and type(t) is int for p, t, _ in contents(index))
    index.move(0, 0, 1000, -1000)
    ref.move(0, 0, 1000, -1000)
    assert_same(index, ref)
    assert kinds(index) == ("q", "q")


def test_float_primaries_use_double_arrays() -> None:
    entries = [(k / 4, k, f"m{k}") for k in range(-20, 20)] + [(float("inf"), 0, "top")]
    index, ref = make(entries)
    assert kinds(index) == ("d", "q")
    assert index.entry(0) == (-5.0, -20, "m-20")
    assert type(index.entry(0)[0]) is float
    index.insert(-0.0, 100, "negzero")  # -0.0 == 0.0: a tie with (0.0, 0)
    ref.insert(-0.0, 100, "negzero")
    assert_same(index, ref)


def test_member_ties_use_lists() -> None:
    index, _ = make([(k, f"m{k}", f"m{k}") for k in range(20)])
    assert kinds(index) == ("q", "list")


@pytest.mark.parametrize(
    ("odd", "primary_kind"),
    [
        (2.5, "list"),  # a float among ints
        (2**63, "list"),  # an int beyond int64
        (-(2**63) - 1, "list"),
        (True, "list"),  # a bool is not stored as the int 1
        ((1, 2), "list"),
    ],
)
@pytest.mark.parametrize("how", ["insert", "move"])
def test_a_value_that_does_not_fit_turns_the_column_into_lists(
    odd: Any, primary_kind: str, how: str
) -> None:
    index, ref = make([(k, k, f"m{k}") for k in range(30)])
    assert kinds(index) == ("q", "q")
    if isinstance(odd, tuple):  # tuples do not compare with ints: a fresh index
        index, ref = make([((0, k), k, f"m{k}") for k in range(30)])
        odd = (1, 2)
    if how == "insert":
        index.insert(odd, 99, "odd")
        ref.insert(odd, 99, "odd")
    else:
        p, t, _ = ref.rows()[5]
        index.move(p, t, odd, 99)
        ref.move(p, t, odd, 99)
    assert_same(index, ref)
    assert kinds(index)[0] == primary_kind
    got = [e for e in contents(index) if e[1] == 99]
    assert got == [(odd, 99, "odd" if how == "insert" else "m5")]
    assert type(got[0][0]) is type(odd)


def test_a_tie_that_does_not_fit_turns_the_tie_column_into_lists() -> None:
    index, ref = make([(k % 3, k, f"m{k}") for k in range(30)])
    index.move(1, 4, 1, 2**64)
    ref.move(1, 4, 1, 2**64)
    assert_same(index, ref)
    assert kinds(index) == ("q", "list")


def test_an_emptied_index_chooses_kinds_again() -> None:
    index, _ = make([(1.5, 0, "a"), (2.5, 0, "b")])
    assert kinds(index) == ("d", "q")
    index.remove(1.5, 0)
    index.remove(2.5, 0)
    index.insert(3, "x", "c")
    index._check()
    assert kinds(index) == ("q", "list")
    index.clear()
    index.build([(1.5, 2.5, "a")])
    assert kinds(index) == ("d", "d")
    index.build([(1, 0, "a"), (1.5, 0, "b")])
    assert kinds(index) == ("list", "q")
    assert [type(p) for p, _, _ in contents(index)] == [int, float]


@pytest.mark.parametrize(
    ("late", "want"),
    [(10.5, ("list", "q")), (2**63, ("list", "q")), (10, ("q", "q"))],
)
def test_build_chooses_kinds_across_blocks(late: Any, want: tuple[str, str]) -> None:
    """A value in a late block that does not fit turns earlier blocks into lists."""
    entries: list[Entry] = [(k, 0, f"m{k}") for k in range(10)] + [(late, 1, "late")]
    index = SortedListIndex(load=4)
    index.build(entries)
    index._check()
    assert kinds(index) == want
    assert contents(index) == entries
    assert type(index.entry(10)[0]) is type(late)


def test_failed_move_on_empty_index_leaves_it_usable() -> None:
    index = SortedListIndex()
    with pytest.raises(KeyError):
        index.move(1, 1, 2.5, "x")
    index._check()
    index.insert(7, 7, "a")
    assert kinds(index) == ("q", "q")


# ----------------------------------------------------------------------
# Long runs of equal primaries spanning blocks
# ----------------------------------------------------------------------


# ----------------------------------------------------------------------
# move
# ----------------------------------------------------------------------


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count calls of a private helper of SortedListIndex."""
    calls: list[int] = []
    original = getattr(SortedListIndex, name)

    def wrapper(self: SortedListIndex, *args: Any) -> Any:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(SortedListIndex, name, wrapper)
    return calls


def test_in_block_move_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    index, ref = spread(100, load=8)  # blocks of 7 or 8 entries, 10 apart
    index._rebuild_offsets()
    lens = list(index._lens)
    assert index._valid == len(index._lists)
    slow = counting(monkeypatch, "_block_for")
    offsets = (index._offsets.tolist(), index._valid)
    for name in ("_split", "_merge", "_transfer", "_resized", "_delete"):
        monkeypatch.setattr(SortedListIndex, name, None)  # calling one would fail
    block = 5
    first, last = index._lists[block][0], index._lists[block][-1]
    before = [list(b) for b in index._lists]
    member = index._members[block][0]

    # Case 2: from the first slot of block 5 past three neighbours.
    index.move(first, 0, first + 35, 0)
    ref.move(first, 0, first + 35, 0)
    assert_same(index, ref)
    assert index._members[block][3] == member
    # Case 1: between the same neighbours, overwritten in place.
    index.move(first + 35, 0, first + 36, 7)
    ref.move(first + 35, 0, first + 36, 7)
    assert_same(index, ref)
    # Case 2 downwards.
    index.move(first + 36, 7, first - 1, 0)
    ref.move(first + 36, 7, first - 1, 0)
    assert_same(index, ref)

    assert slow == []
    assert list(index._lens) == lens  # sizes unchanged: lengths untouched
    assert (index._offsets.tolist(), index._valid) == offsets  # and offsets
    after = [list(b) for b in index._lists]
    assert after[:block] == before[:block] and after[block + 1 :] == before[block + 1 :]
    assert index._maxes[block] == last


def test_move_of_a_block_maximum_updates_maxes() -> None:
    index, ref = spread(60, load=8)
    block = 3
    last = index._lists[block][-1]
    index.move(last, 0, last - 5, 0)  # in place, still the block's last entry
    ref.move(last, 0, last - 5, 0)
    assert_same(index, ref)
    assert index._maxes[block] == last - 5
    prev = index._lists[block][-2]
    index.move(last - 5, 0, prev - 1, 0)  # no longer the last: max becomes prev
    ref.move(last - 5, 0, prev - 1, 0)
    assert_same(index, ref)
    assert index._maxes[block] == prev


def test_cross_block_move_transfers_the_length(monkeypatch: pytest.MonkeyPatch) -> None:
    index, ref = spread(200, load=8)
    index.position(*ref.rows()[-1][:2])
    transfers = counting(monkeypatch, "_transfer")
    start = index._lists[4][3]
    index.move(start, 0, start + 125, 1)  # well into another block
    ref.move(start, 0, start + 125, 1)
    assert_same(index, ref)
    assert transfers == [1]
    for i, (p, t, _) in enumerate(ref.rows()):
        assert index.position(p, t) == i


@pytest.mark.parametrize("chunk", [1, 3, FILL_CHUNK])
def test_offsets_cache_patched_invalidated_and_filled(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """A look-up in the gap makes the offsets exact from the gap's start up
    to its block (``FILL_CHUNK`` blocks at a time for a position), or sums
    the lengths from the gap's end when that is nearer; no tree is built."""
    monkeypatch.setattr(blockoffsets, "FILL_CHUNK", chunk)
    index, ref = spread(400, load=8)  # 50 blocks of 8
    blocks = len(index._lists)
    assert index._valid == blocks  # computed by the bulk load

    # A short cross-block move patches the offsets in between.
    index.move(1000, 0, 1275, 0)  # block 12 -> 16: offsets of 13 .. 16 patched
    ref.move(1000, 0, 1275, 0)
    assert_same(index, ref)
    assert index._valid == blocks
    for i, (p, t, _) in enumerate(ref.rows()):
        assert index.position(p, t) == i
    assert index._valid == blocks  # nothing was recomputed

    # A far one makes them stale from the lower block on: blocks 7 and later.
    index.move(500, 0, 3005, 0)
    ref.move(500, 0, 3005, 0)
    assert_same(index, ref)
    assert (index._valid, index._from) == (7, blocks)
    p, t, _ = ref.rows()[8 * 35 + 3]  # block 35: nearer the gap's end, summed
    assert index.position(p, t) == 8 * 35 + 3
    assert (index._valid, index._from) == (7, blocks)
    p, t, _ = ref.rows()[8 * 10 + 3]  # block 10: filled from the gap's start
    assert index.position(p, t) == 8 * 10 + 3
    assert (index._valid, index._from) == (11, blocks)
    index._check()
    assert index.entry(8 * 20 + 5) == ref.rows()[8 * 20 + 5]  # a position: chunks
    assert 21 <= index._valid <= min(blocks, 11 + -(-10 // chunk) * chunk)
    index._check()

    # An insert shifts the later blocks by one: they keep their offsets
    # behind a lag; a remove in an earlier block adds to the lag, the
    # blocks between the two are the gap.
    index._rebuild_offsets()
    index.insert(2001, 0, "new")
    ref.insert(2001, 0, "new")
    assert_same(index, ref)
    assert (index._valid, index._from, index._lag) == (26, 26, 1)
    index.remove(1200, 0)
    ref.remove(1200, 0)
    assert_same(index, ref)
    assert (index._valid, index._from, index._lag) == (16, 26, 0)
    for i, (p, t, _) in enumerate(ref.rows()):
        assert index.position(p, t) == i
        assert index.entry(i) == ref.rows()[i]
        index._check()
    assert index._valid == 26  # the gap was filled on the way
    assert index._index == []  # and no tree was built


def test_inserts_in_one_block_keep_every_offset() -> None:
    """New players join at the bottom of a game's board: every insert lands
    in block 0.  The later blocks keep their offsets behind one lag, and a
    split of block 0 inserts one slot: no look-up walks the positional tree
    (it is never built) and the offsets are never recomputed."""
    index, ref = spread(400, load=8)
    blocks = len(index._lists)
    for k in range(1, 200):
        index.insert(-k, k, f"n{k}")
        ref.insert(-k, k, f"n{k}")
        index._check()
        if k % 7 == 0:  # a remove in the same block
            p, t, _ = ref.rows()[3]
            index.remove(p, t)
            ref.remove(p, t)
            index._check()
        p, t, _ = ref.rows()[len(ref) // 2]
        assert index.position(p, t) == len(ref) // 2
        assert index.entry(len(ref) - 40) == ref.rows()[len(ref) - 40]
        assert index._valid == index._from == 1  # no gap
    assert len(index._lists) > blocks + 10  # block 0 split many times
    assert index._index == []  # no walk: the tree was never built
    assert_same(index, ref)


def test_far_moves_both_ways_split_and_merge() -> None:
    rng = random.Random(4)
    index, ref = spread(120, load=4)
    for _ in range(400):
        p, t, _ = rng.choice(ref.rows())
        new = (rng.randrange(-50, 1300), rng.randrange(3))
        if ref.has(*new):
            continue
        index.move(p, t, *new)
        ref.move(p, t, *new)
        assert_same(index, ref)


# ----------------------------------------------------------------------
# build
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 1000])
@pytest.mark.parametrize("load", [4, 5, 1000])
def test_build_cuts_blocks_between_half_and_full_load(n: int, load: int) -> None:
    # (That build equals inserts is in tests/test_index_conformance.py.)
    built = SortedListIndex(load=load)
    built.build(iter([(k // 3, k % 3, f"m{k}") for k in range(n)]))
    built._check()
    sizes = [len(block) for block in built._lists]
    assert sum(sizes) == n
    if n > load:
        assert max(sizes) <= load and min(sizes) >= load // 2
    else:
        assert len(sizes) == (1 if n else 0)


# ----------------------------------------------------------------------
# _check
# ----------------------------------------------------------------------


def test_check_reports_broken_invariants_with_state() -> None:
    index, _ = spread(40)
    index._maxes[2] = -1
    with pytest.raises(AssertionError, match=r"_maxes\[2\] is stale") as excinfo:
        index._check()
    assert "lists=" in str(excinfo.value)

    index, _ = spread(40)
    index._lists[1][0], index._lists[1][1] = index._lists[1][1], index._lists[1][0]
    with pytest.raises(AssertionError, match="out of order"):
        index._check()

    index, _ = spread(40)
    index._members[3].pop()
    with pytest.raises(AssertionError, match="lengths differ"):
        index._check()

    index, _ = spread(40)
    index._index[:] = [40]  # the positional tree, as a SortedList walk builds it
    with pytest.raises(AssertionError, match="tree is built"):
        index._check()

    index, _ = spread(40)
    index._lens[2] += 1
    with pytest.raises(AssertionError, match="length of block 2 is stale"):
        index._check()

    index, _ = spread(40, load=4)
    index._spares._stock[0].append(1)
    with pytest.raises(AssertionError, match="spare 0 is not an empty list"):
        index._check()

    index, _ = spread(40)
    index.insert(-1, 0, "x")  # later blocks lagged by one
    index._offsets[5] += 1
    with pytest.raises(AssertionError, match="offset of block 5 is stale"):
        index._check()


def test_check_message_is_truncated() -> None:
    index, _ = spread(5000, load=DEFAULT_LOAD)
    index._maxes[0] = -1
    with pytest.raises(AssertionError) as excinfo:
        index._check()
    assert len(str(excinfo.value)) < 3000
    assert "truncated" in str(excinfo.value)


# ----------------------------------------------------------------------
# The conformance machine, on this index, with rules on its blocks
# ----------------------------------------------------------------------

BIG = 2**63  # one past int64


def exact(value: Any) -> Any:
    """A value with its type and sign, for comparisons that tell 5 from 5.0
    and 0.0 from -0.0."""
    if isinstance(value, (tuple, list)):
        return tuple(exact(v) for v in value)
    if isinstance(value, float):
        return ("f", value, math.copysign(1.0, value))
    if isinstance(value, int):
        return ("i", value)
    return value


class SortedListMachine(IndexMachine):
    """:class:`IndexMachine` narrowed to the sorted-list index (load 4 and
    1000), plus rules aimed at its blocks: positions at block edges, runs
    that cross blocks read and moved by member, stretches removed (blocks
    merge), bulk loads from ``array`` columns and ``build_columns`` (column
    kinds chosen again, then mixed by later writes), moves across many
    blocks after bursts of look-ups (cached offsets patched or made stale),
    and ``columns_between`` both ways."""

    backends = ("sortedlist-4", "sortedlist-1000")

    def _edges(self) -> list[int]:
        """Positions where the index's blocks start (and its length)."""
        return list(accumulate(map(len, self.index._lists), initial=0))

    def _position(self, data: st.DataObject, *, inclusive_end: bool) -> int:
        """A position, often a block edge or next to one."""
        n = len(self.ref) + (1 if inclusive_end else 0)
        edges = [e + d for e in self._edges() for d in (-1, 0, 1) if 0 <= e + d < n]
        if edges and data.draw(st.booleans()):
            return data.draw(st.sampled_from(edges))
        return data.draw(st.integers(0, n - 1))

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), count=st.integers(1, 12))
    def remove_stretch(self, data: st.DataObject, count: int) -> None:
        """Remove a stretch of neighbours: blocks empty out and merge."""
        start = self._position(data, inclusive_end=False)
        for p, t, _ in self.ref.rows()[start : start + count]:
            self.index.remove(p, t)
            self.ref.remove(p, t)
            self.index._check()

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), by_member=st.booleans())
    def move_near_an_edge(self, data: st.DataObject, by_member: bool) -> None:
        """To a neighbour's primary (within or just across a block), with a
        tie before, inside or after its run."""
        rows = self.ref.rows()
        i = self._position(data, inclusive_end=False)
        j = min(len(rows) - 1, max(0, i + data.draw(st.integers(-3, 3))))
        p, t, _ = rows[i]
        tie = self.shift(rows[j][1], data.draw(st.sampled_from([-1, 0, 1])))
        self._move(p, t, rows[j][0], tie, by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data())
    def move_into_run_end(self, data: st.DataObject) -> None:
        """Move an entry to the newest end of an existing run (a score
        change with a fresh clock), from anywhere, by member."""
        rows = self.ref.rows()
        p, t, _ = data.draw(st.sampled_from(rows))
        q = data.draw(st.sampled_from(rows))[0]
        run = [tt for pp, tt, _ in rows if pp == q]
        newest = self.shift(min(run), -1) if self.index.oldest_last else self.shift(max(run), 1)
        self._move(p, t, q, newest, True)

    @precondition(lambda self: len(self.ref) > 1)
    @rule(data=st.data(), up=st.booleans(), by_member=st.booleans())
    def move_across(self, data: st.DataObject, up: bool, by_member: bool) -> None:
        """From one end to the other, past many blocks: with exact offsets
        (after a few look-ups) the far move makes them stale instead of
        patching them."""
        rows = self.ref.rows()
        for k in range(data.draw(st.integers(0, 10))):
            p, t, _ = rows[k * (len(rows) - 1) // 10]
            assert self.index.position(p, t) == self.ref.position(p, t)
        p, t, _ = rows[0] if up else rows[-1]
        q, u, _ = rows[-1] if up else rows[0]
        self._move(p, t, q, self.shift(u, 1 if up else -1), by_member)

    @rule(data=st.data(), how=st.sampled_from(["lists", "columns"]))
    def rebuild_columns(self, data: st.DataObject, how: str) -> None:
        """``build_columns`` from lists, or from the index's own columns
        (``array`` columns while typed), maybe cut to a suffix."""
        rows = self.ref.rows()
        if rows and data.draw(st.booleans()):
            rows = rows[data.draw(st.integers(0, len(rows))) :]
        if how == "lists":
            self.index.build_columns(
                [p for p, _, _ in rows], [t for _, t, _ in rows], [m for _, _, m in rows]
            )
        else:
            ps, ts, ms = self.index.columns()
            cut = len(ps) - len(rows)
            self.index.build_columns(ps[cut:], ts[cut:], ms[cut:])
        self.ref.build(rows)

    @rule(
        n=st.integers(20, 90),
        step=st.sampled_from([1, 2]),
        kind=st.sampled_from(["q", "d", "i"]),
        ties=st.sampled_from(["q", "list"]),
    )
    def bulk(self, n: int, step: int, kind: str, ties: str) -> None:
        """Many blocks at once (offsets become worth caching), from array
        columns where the values allow (an ``array('i')`` is not a column
        kind: it is read as ints); later writes then mix other kinds in."""
        values = [k // step for k in range(n)]
        ps: Any = array(kind, values)
        if self.kind == "tuple":
            ps = [(2 * v // n, v) for v in ps]
        ts: Any = array("q", [k % step for k in range(n)])
        if ties == "list":
            ts = list(ts)
        if self.str_ties:
            ts = [self.tie(k % step) for k in range(n)]
        ms = [self.new_member() for _ in range(n)]
        self.index.build_columns(ps, ts, ms)
        self.ref.build(zip(list(ps), list(ts), ms, strict=True))

    @precondition(lambda self: not self.str_ties)
    @rule(data=st.data(), tie=st.sampled_from([BIG, -BIG - 1, 0.5, 2**70]))
    def insert_a_tie_beyond_int64(self, data: st.DataObject, tie: Any) -> None:
        """A tie that does not fit an int64 column (it turns into a list)."""
        self._insert(self.primary(data), tie, data)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data())
    def find_by_member_as_a_twin(self, data: st.DataObject) -> None:
        """The same primary as another type that compares equal (1 and 1.0)."""
        p, t, m = data.draw(st.sampled_from(self.ref.rows()))
        if isinstance(p, (int, float)) and abs(p) < 2**53:
            twin: Any = float(p) if isinstance(p, int) else int(p) if p.is_integer() else p
            distance = self.ref.run_distance(p, m, oldest_last=self.index.oldest_last)
            assert self.index.tie_of(twin, m)[1] == distance
            assert self.index.position_of(twin, m) == self.ref.position(p, t)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), burst=st.integers(1, 20))
    def lookups(self, data: st.DataObject, burst: int) -> None:
        """Bursts of positional reads: enough tree walks rebuild stale offsets."""
        rows = self.ref.rows()
        for _ in range(burst):
            k = self._position(data, inclusive_end=False)
            assert exact(self.index.entry(k)) == exact(rows[k])
            p, t, _ = rows[k]
            assert self.index.position(p, t) == k
            self.index._check()

    @rule(chunk=st.sampled_from([1, 2, FILL_CHUNK]))
    def fill_chunk(self, chunk: int) -> None:
        """A position in the gap fills the offsets ``chunk`` blocks at a time
        (with the default, the whole gap of an index this small at once);
        put back at teardown."""
        blockoffsets.FILL_CHUNK = chunk  # type: ignore[misc]

    def teardown(self) -> None:
        blockoffsets.FILL_CHUNK = FILL_CHUNK  # type: ignore[misc]
        super().teardown()

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), count=st.integers(1, 30), bottom=st.booleans())
    def burst_into_one_block(self, data: st.DataObject, count: int, bottom: bool) -> None:
        """New players all join at the bottom: inserts (and a few removes)
        into one block, positions read between.  The later blocks keep their
        offsets behind one lag; splits and merges insert or delete a slot."""
        rows = self.ref.rows()
        p, t, _ = rows[0 if bottom else self._position(data, inclusive_end=False)]
        for _ in range(count):
            step = data.draw(st.integers(-400, 400))
            if step % 5 == 0:
                k = self.ref.position(p, t) if self.ref.has(p, t) else 0
                if len(self.ref) > 1:
                    q, u, _ = self.ref.rows()[min(k, len(self.ref) - 1)]
                    self.index.remove(q, u)
                    self.ref.remove(q, u)
            elif not self.ref.has(p, self.shift(t, step)):
                self._insert(p, self.shift(t, step), data)
            self.index._check()
            k = data.draw(st.integers(0, len(self.ref) - 1))
            assert exact(self.index.entry(k)) == exact(self.ref.rows()[k])
            q, u, _ = self.ref.rows()[k]
            assert self.index.position(q, u) == k

    @rule(data=st.data(), reverse=st.booleans())
    def columns_between(self, data: st.DataObject, reverse: bool) -> None:
        start = self._position(data, inclusive_end=True)
        stop = data.draw(st.sampled_from([e for e in self._edges() if e >= start] + [start]))
        if data.draw(st.booleans()):
            stop = data.draw(st.integers(start, len(self.ref)))
        want = self.ref.rows()[start:stop]
        if reverse:
            want.reverse()
        ps, ms = self.index.columns_between(start, stop, reverse=reverse)
        assert type(ps) is list
        assert type(ms) is list
        assert exact(ps) == exact([p for p, _, _ in want])
        assert ms == [m for _, _, m in want]

    @invariant()
    def columns_keep_their_types(self) -> None:
        ps, ts, ms = self.index.columns()
        assert exact(list(ps)) == exact([p for p, _ in self.ref.keys])
        assert exact(list(ts)) == exact([t for _, t in self.ref.keys])
        assert ms == self.ref.members


TestSortedListMachine = SortedListMachine.TestCase
TestSortedListMachine.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)


# ----------------------------------------------------------------------
# spare lists
# ----------------------------------------------------------------------


def test_split_fills_the_oldest_spare_and_merge_gives_its_list_back() -> None:
    """A split's new member block is the spare at the front of the stock
    (made long before, empty); a merge puts the emptied block back at the
    front.  Every step keeps every position and ``_check()``."""
    index, ref = spread(40, load=4)  # 40 entries in blocks of 2 .. 4
    stock = index._spares._stock
    assert len(stock) >= len(index._lists)
    rows = ref.rows()
    for k in range(60):
        spare = stock[0]
        blocks = len(index._lists)
        p = rows[-1][0] + 1 + k
        index.insert(p, 0, f"n{k}")  # the last block grows until it splits
        ref.insert(p, 0, f"n{k}")
        index._check()
        if len(index._lists) > blocks:
            assert any(block is spare for block in index._members)
        for i, (q, t, _) in enumerate(ref.rows()):
            assert index.position(q, t) == i
    merges = 0
    for _ in range(60):
        blocks = len(index._lists)
        p, t, _ = ref.rows()[len(ref) // 2]
        gone = index._members[:]
        room = len(stock) < 2 * max(SPARE_MIN, blocks - 1)  # else let go
        index.remove(p, t)
        ref.remove(p, t)
        index._check()
        if len(index._lists) < blocks and room:  # a merge: its emptied block is a spare now
            dropped = [b for b in gone if not any(b is m for m in index._members)]
            assert len(dropped) == 1 and stock[0] is dropped[0]
            merges += 1
        for i, (q, t2, _) in enumerate(ref.rows()):
            assert index.position(q, t2) == i
    assert merges > 3
    assert_same(index, ref)


def test_object_columns_split_into_spares_too() -> None:
    """A column that holds objects (here: tuples as primaries) is lists, and
    a split takes its new block from the spares as the members do."""
    index = SortedListIndex(load=4)
    for k in range(30):
        index.insert((k,), k, f"m{k}")
        index._check()
    assert all(type(block) is list for block in index._lists)
    assert [m for _, _, m in index.iter_range(0, 30)] == [f"m{k}" for k in range(30)]
