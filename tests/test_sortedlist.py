"""Tests for rankengine.index.sortedlist.SortedListIndex.

Every test compares the index with a reference: a plain sorted Python list of
``(primary, tie, member)`` tuples, kept sorted with ``bisect``.  Every
mutation is followed by ``_check()``, which verifies the internal invariants
(sorted blocks, ``_maxes``, load bounds, positional tree, cached offsets,
column shapes and kinds) and dumps the structure when one breaks.  Tiny load
factors (4, 5, 6) force splits and merges after a handful of operations; the
state machines run int, float, mixed and tuple primaries, int and string ties.
"""

from __future__ import annotations

import bisect
import random
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from rankengine.index.protocol import RUN_SCAN_LIMIT
from rankengine.index.sortedlist import DEFAULT_LOAD, MIN_LOAD, REBUILD_MIN, SortedListIndex

Entry = tuple[Any, Any, Any]


# ----------------------------------------------------------------------
# Reference model
# ----------------------------------------------------------------------


class Reference:
    """A sorted list of entries: the obviously correct ordered index."""

    def __init__(self) -> None:
        self.items: list[Entry] = []

    def keys(self) -> list[tuple[Any, Any]]:
        return [(p, t) for p, t, _ in self.items]

    def has(self, primary: Any, tie: Any) -> bool:
        i = bisect.bisect_left(self.keys(), (primary, tie))
        return i < len(self.items) and self.items[i][:2] == (primary, tie)

    def index(self, primary: Any, tie: Any) -> int:
        i = bisect.bisect_left(self.keys(), (primary, tie))
        assert self.items[i][:2] == (primary, tie)
        return i

    def insert(self, entry: Entry) -> None:
        i = bisect.bisect_left(self.keys(), entry[:2])
        self.items.insert(i, entry)

    def remove(self, primary: Any, tie: Any) -> Entry:
        return self.items.pop(self.index(primary, tie))

    def move(self, primary: Any, tie: Any, new_primary: Any, new_tie: Any) -> None:
        _, _, member = self.remove(primary, tie)
        self.insert((new_primary, new_tie, member))

    def count_less(self, primary: Any, tie: Any) -> int:
        return bisect.bisect_left(self.keys(), (primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        if inclusive:
            return sum(1 for p, _, _ in self.items if p <= primary)
        return sum(1 for p, _, _ in self.items if p < primary)

    def distance(self, primary: Any, tie: Any, *, oldest_last: bool | None) -> int:
        """Entries of the run of ``primary`` between ``(primary, tie)`` and
        the run's oldest end (its last entry when ``oldest_last``)."""
        run = [t for p, t, _ in self.items if p == primary]
        k = run.index(tie)
        return len(run) - 1 - k if oldest_last else k


def contents(index: SortedListIndex) -> list[Entry]:
    return list(index.iter_range(0, len(index)))


def assert_same(index: SortedListIndex, ref: Reference) -> None:
    index._check()
    assert len(index) == len(ref.items)
    assert contents(index) == ref.items


def make(entries: list[Entry], load: int = 4) -> tuple[SortedListIndex, Reference]:
    index = SortedListIndex(load=load)
    ref = Reference()
    for entry in entries:
        index.insert(*entry)
        index._check()
        ref.insert(entry)
    assert_same(index, ref)
    return index, ref


def spread(n: int, load: int = 4) -> tuple[SortedListIndex, Reference]:
    """``n`` entries with primaries 0, 10, 20, ... bulk-loaded."""
    entries = [(10 * k, 0, f"m{k}") for k in range(n)]
    index = SortedListIndex(load=load)
    index.build(entries)
    ref = Reference()
    ref.items = list(entries)
    assert_same(index, ref)
    return index, ref


# ----------------------------------------------------------------------
# Construction and simple methods
# ----------------------------------------------------------------------


def test_empty() -> None:
    index = SortedListIndex()
    index._check()
    assert len(index) == 0
    assert list(index.iter_range(0, 0)) == []
    assert index.count_less(1, 1) == 0
    assert index.count_primary(1, inclusive=True) == 0
    assert index.count_primary(1, inclusive=False) == 0
    with pytest.raises(IndexError):
        index.entry(0)
    with pytest.raises(KeyError):
        index.position(1, 1)
    with pytest.raises(KeyError):
        index.remove(1, 1)
    with pytest.raises(KeyError):
        index.move(1, 1, 2, 2)


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
        ref.insert((k, 0, f"m{k}"))
        assert_same(index, ref)
    assert len(index._lists) > 10


def test_insert_duplicate_key_raises_and_changes_nothing() -> None:
    index, ref = make([(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
    with pytest.raises(KeyError):
        index.insert(1, 1, "x")
    with pytest.raises(KeyError):
        index.insert(1.0, 0, "x")  # 1.0 == 1: the same key
    assert_same(index, ref)


def test_remove_every_entry_with_merges() -> None:
    rng = random.Random(2)
    index, ref = spread(150)
    order = list(ref.items)
    rng.shuffle(order)
    for primary, tie, _ in order:
        index.remove(primary, tie)
        ref.remove(primary, tie)
        assert_same(index, ref)
    assert index._lists == [] and len(index._maxes) == 0


def test_remove_absent_raises() -> None:
    index, ref = make([(1, 0, "a"), (1, 2, "b"), (3, 0, "c")])
    for key in [(1, 1), (2, 0), (0, 0), (4, 0), (3, 1), (1, 3)]:
        with pytest.raises(KeyError):
            index.remove(*key)
    assert_same(index, ref)


def test_position_and_entry_round_trip() -> None:
    index, ref = spread(300)
    for i, (primary, tie, member) in enumerate(ref.items):
        assert index.position(primary, tie) == i
        assert index.entry(i) == (primary, tie, member)
    with pytest.raises(IndexError):
        index.entry(300)
    with pytest.raises(IndexError):
        index.entry(-1)
    with pytest.raises(KeyError):
        index.position(5, 0)


def test_count_less_every_gap() -> None:
    entries = [(p, t, f"{p}/{t}") for p in range(0, 40, 2) for t in (1, 3, 5)]
    index, ref = make(entries, load=4)
    for p in range(-1, 42):
        for t in range(7):
            assert index.count_less(p, t) == ref.count_less(p, t), (p, t)
            assert index.count_less(p + 0.5, t) == ref.count_less(p + 0.5, t)


def test_count_primary_runs() -> None:
    entries = [(p, t, f"{p}/{t}") for p in range(10) for t in range(p % 7)]
    index, ref = make(entries, load=4)
    for p in [-1, *range(11), 2.5, 9.5]:
        for inclusive in (False, True):
            got = index.count_primary(p, inclusive=inclusive)
            assert got == ref.count_primary(p, inclusive=inclusive), (p, inclusive)


def test_iter_range_all_windows_both_directions() -> None:
    index, ref = spread(37, load=4)
    n = len(ref.items)
    for start in range(n + 1):
        for stop in range(start, n + 1):
            assert list(index.iter_range(start, stop)) == ref.items[start:stop]
            backwards = list(index.iter_range(start, stop, reverse=True))
            assert backwards == ref.items[start:stop][::-1]
    with pytest.raises(IndexError):
        index.iter_range(0, n + 1)


def test_columns_between_all_windows_both_directions() -> None:
    index, ref = spread(37, load=4)
    n = len(ref.items)
    # stale and then rebuilt block offsets: the position look-up takes both paths
    for _ in range(3):
        for start in range(n + 1):
            for stop in range(start, n + 1):
                rows = ref.items[start:stop]
                want = ([p for p, _, _ in rows], [m for _, _, m in rows])
                assert index.columns_between(start, stop) == want
                back = index.columns_between(start, stop, reverse=True)
                assert back == (want[0][::-1], want[1][::-1])
        index._stale_from(1)
        index._check()
    with pytest.raises(IndexError):
        index.columns_between(0, n + 1)


@pytest.mark.parametrize("oldest_last", [None, False, True])
def test_tie_of_finds_every_member_in_runs_across_blocks(oldest_last: bool | None) -> None:
    # runs of 1, 2, ... 12 equal primaries in blocks of 4-8: runs cross blocks;
    # the distance counts the run's entries from its oldest end (the first
    # entry unless oldest_last)
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    index = SortedListIndex(load=MIN_LOAD)
    index.oldest_last = oldest_last
    index.build(entries)
    assert len(index._lists) > 1
    for p, t, m in entries:
        assert index.tie_of(p, m) == (t, p - 1 - t if oldest_last else t)
    for p, m in [(0, "m1.0"), (2, "m1.0"), (13, "m9.0"), (5, "nobody"), (12, "m1.0")]:
        with pytest.raises(KeyError):
            index.tie_of(p, m)
    index.clear()
    with pytest.raises(KeyError):
        index.tie_of(1, "m1.0")


@pytest.mark.parametrize("oldest_last", [False, True])
def test_near_reads_the_slot_run_scan_limit_away(oldest_last: bool) -> None:
    # Runs of 1 .. 24 entries in blocks of 2-4 and of 8-16: the slot
    # RUN_SCAN_LIMIT entries towards the oldest end lies in the entry's block,
    # in the next block towards that end, or beyond.  _near is exact whenever
    # it can see that slot (or the run's end in the entry's own block), and a
    # conservative False otherwise.
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 25) for t in range(p)]
    ref = Reference()
    ref.items = list(entries)
    seen = set()
    for load in (MIN_LOAD, 16):
        index = SortedListIndex(load=load)
        index.oldest_last = oldest_last
        index.build(entries)
        lists = index._lists
        for i, ps in enumerate(lists):
            for b, p in enumerate(ps):
                t = index._ties[i][b]
                truth = ref.distance(p, t, oldest_last=oldest_last) < RUN_SCAN_LIMIT
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
        ref = Reference()
        ref.items = contents(index)
        assert ref.distance(50, tie, oldest_last=oldest_last) == depth
        expected = _visible_near(index, 50, tie, depth < k)
        assert near is expected, (depth, near)
        answers.add(near)
    assert answers == {True, False}


def test_iter_range_large_load_single_block() -> None:
    index, ref = spread(50, load=DEFAULT_LOAD)
    assert len(index._lists) == 1
    assert list(index.iter_range(40, 50, reverse=True)) == ref.items[40:50][::-1]
    assert list(index.iter_range(0, 10)) == ref.items[:10]


def test_clear() -> None:
    index, _ = spread(40)
    index.clear()
    index._check()
    assert len(index) == 0 and contents(index) == []
    index.insert(1, 1, "a")
    assert contents(index) == [(1, 1, "a")]


def test_int_and_float_primaries_compare_as_numbers() -> None:
    entries = [(1, 0, "a"), (1.5, 0, "b"), (2.0, 0, "c"), (2, 1, "d"), (-0.5, 3, "e")]
    index, ref = make(entries, load=4)
    assert index.position(2, 0) == ref.index(2, 0) == 3  # 2 == 2.0: same primary
    assert index.count_primary(2, inclusive=False) == 3


def test_tuple_primaries() -> None:
    entries = [((a, b), t, f"{a}{b}{t}") for a in range(4) for b in (0, 1.5) for t in (0, 1)]
    random.Random(3).shuffle(entries)
    index, ref = make(entries, load=4)
    for p, t, _ in ref.items:
        assert index.position(p, t) == ref.index(p, t)
    assert index.count_primary((2, 0), inclusive=True) == ref.count_primary((2, 0), inclusive=True)


def test_member_as_tie() -> None:
    names = ["bob", "ann", "cid", "dee", "eve", "fay", "gus", "hal", "ivy"]
    index, ref = make([(len(name) % 2, name, name) for name in names], load=4)
    index.move(1, "ann", 0, "ann")
    ref.move(1, "ann", 0, "ann")
    assert_same(index, ref)


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
    ref.insert((-0.0, 100, "negzero"))
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
        ref.insert((odd, 99, "odd"))
    else:
        p, t, _ = ref.items[5]
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


def test_run_of_equal_primaries_spans_many_blocks() -> None:
    entries = [(5, t, f"t{t}") for t in range(0, 200, 2)]
    entries += [(4, 0, "low"), (6, 0, "high")]
    index, ref = make(sorted(entries), load=4)
    assert index._maxes.count(5) > 10
    for t in range(-1, 202):
        assert index.count_less(5, t) == ref.count_less(5, t)
    for t in range(1, 200, 20):
        index.insert(5, t, f"t{t}")
        ref.insert((5, t, f"t{t}"))
        assert_same(index, ref)
    for t in range(0, 200, 14):
        index.move(5, t, 5, t + 0.5)
        ref.move(5, t, 5, t + 0.5)
        assert_same(index, ref)
        assert index.position(5, t + 0.5) == ref.index(5, t + 0.5)


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
    index.position(*ref.items[-1][:2])  # builds the positional tree
    index._rebuild_offsets()
    tree = list(index._index)
    assert tree and index._valid == len(index._lists)
    slow = counting(monkeypatch, "_block_for")
    offsets = (index._offsets.tolist(), index._valid)
    for name in ("_split", "_merge", "_transfer", "_resized", "_delete", "_stale_from"):
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
    assert index._index == tree  # sizes unchanged: tree untouched
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


def test_cross_block_move_transfers_the_tree_count(monkeypatch: pytest.MonkeyPatch) -> None:
    index, ref = spread(200, load=8)
    index.position(*ref.items[-1][:2])  # builds the positional tree
    transfers = counting(monkeypatch, "_transfer")
    start = index._lists[4][3]
    index.move(start, 0, start + 125, 1)  # well into another block
    ref.move(start, 0, start + 125, 1)
    assert_same(index, ref)
    assert transfers == [1]
    for i, (p, t, _) in enumerate(ref.items):
        assert index.position(p, t) == i


def test_offsets_cache_patched_invalidated_and_rebuilt() -> None:
    index, ref = spread(400, load=8)  # 50 blocks of 8
    blocks = len(index._lists)
    assert index._valid == 0
    for _ in range(REBUILD_MIN):  # tree walks until the offsets are rebuilt
        p, t, _ = ref.items[200]
        assert index.position(p, t) == 200
    assert index._valid == blocks

    # A short cross-block move patches the offsets in between.
    index.move(1000, 0, 1275, 0)  # block 12 -> 16: offsets of 13 .. 16 patched
    ref.move(1000, 0, 1275, 0)
    assert_same(index, ref)
    assert index._valid == blocks
    for i, (p, t, _) in enumerate(ref.items):
        assert index.position(p, t) == i
    assert index._valid == blocks  # no walk was needed

    # A far one makes them stale from the lower block on.
    index.move(500, 0, 3005, 0)
    ref.move(500, 0, 3005, 0)
    assert_same(index, ref)
    assert index._valid == 7

    # So does an insert (after its block) and a remove.
    index._rebuild_offsets()
    index.insert(2001, 0, "new")
    ref.insert((2001, 0, "new"))
    assert_same(index, ref)
    assert index._valid == 26
    index.remove(1200, 0)
    ref.remove(1200, 0)
    assert_same(index, ref)
    assert index._valid == 16
    for i, (p, t, _) in enumerate(ref.items):
        assert index.position(p, t) == i
        assert index.entry(i) == ref.items[i]
    assert index._valid == blocks  # rebuilt along the way


def test_far_moves_both_ways_split_and_merge() -> None:
    rng = random.Random(4)
    index, ref = spread(120, load=4)
    for _ in range(400):
        p, t, _ = rng.choice(ref.items)
        new = (rng.randrange(-50, 1300), rng.randrange(3))
        if ref.has(*new):
            continue
        index.move(p, t, *new)
        ref.move(p, t, *new)
        assert_same(index, ref)


def test_move_errors_change_nothing() -> None:
    index, ref = make([(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (9, 0, "d")], load=4)
    with pytest.raises(KeyError):
        index.move(3, 0, 4, 0)  # old key absent
    with pytest.raises(KeyError):
        index.move(1, 0, 2, 1)  # new key present (same block)
    with pytest.raises(KeyError):
        index.move(1, 0, 9, 0)  # new key present (maybe another block)
    assert_same(index, ref)
    index.move(2, 1, 2, 1)  # new key == old key: nothing to do
    assert_same(index, ref)


def test_move_at_the_ends() -> None:
    index, ref = spread(30, load=4)
    moves = [(0, -100), (-100, 10_000), (10_000, -5), (290, 10_001), (-5, 10_002)]
    for old, new in moves:
        index.move(old, 0, new, 0)
        ref.move(old, 0, new, 0)
        assert_same(index, ref)


# ----------------------------------------------------------------------
# Random operations against the reference
# ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_random_operations(seed: int) -> None:
    rng = random.Random(seed)
    load = rng.choice([4, 5, 6, 8])
    index = SortedListIndex(load=load)
    ref = Reference()

    def key() -> tuple[Any, Any]:
        primary = rng.choice([rng.randrange(6), rng.randrange(6) + 0.5, float(rng.randrange(6))])
        return primary, rng.randrange(10)

    for step in range(1500):
        roll = rng.random()
        if roll < 0.35 or not ref.items:
            p, t = key()
            if not ref.has(p, t):
                index.insert(p, t, f"m{step}")
                ref.insert((p, t, f"m{step}"))
        elif roll < 0.5:
            p, t, _ = rng.choice(ref.items)
            index.remove(p, t)
            ref.remove(p, t)
        elif roll < 0.8:
            p, t, _ = rng.choice(ref.items)
            new = (p + rng.choice([0, 0.25, 1, -1]), rng.randrange(10))
            if rng.random() < 0.3:
                new = key()
            if not ref.has(*new):
                index.move(p, t, *new)
                ref.move(p, t, *new)
        else:
            p, t = key()
            assert index.count_less(p, t) == ref.count_less(p, t)
            for inclusive in (False, True):
                want = ref.count_primary(p, inclusive=inclusive)
                assert index.count_primary(p, inclusive=inclusive) == want
            if ref.items:
                a = rng.randrange(len(ref.items))
                b = rng.randrange(a, len(ref.items) + 1)
                assert list(index.iter_range(a, b)) == ref.items[a:b]
                assert list(index.iter_range(a, b, reverse=True)) == ref.items[a:b][::-1]
                assert index.entry(a) == ref.items[a]
                p, t, _ = ref.items[a]
                assert index.position(p, t) == a
        index._check()
        assert len(index) == len(ref.items)
    assert_same(index, ref)


# ----------------------------------------------------------------------
# build
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 1000])
@pytest.mark.parametrize("load", [4, 5, 1000])
def test_build_equals_incremental_inserts(n: int, load: int) -> None:
    entries = [(k // 3, k % 3, f"m{k}") for k in range(n)]
    built = SortedListIndex(load=load)
    built.build(iter(entries))  # any iterable, even a one-shot generator
    built._check()
    inserted = SortedListIndex(load=load)
    for entry in reversed(entries):
        inserted.insert(*entry)
    inserted._check()
    assert contents(built) == contents(inserted) == entries
    for i, (p, t, _) in enumerate(entries):
        assert built.position(p, t) == i
    if n > load:
        sizes = [len(block) for block in built._lists]
        assert max(sizes) <= load and min(sizes) >= load // 2
    if n:
        built.insert(-1, 0, "first")
        built.remove(entries[-1][0], entries[-1][1])
        built._check()


def test_build_replaces_contents() -> None:
    index, _ = spread(50)
    index.build([(1, 1, "only")])
    index._check()
    assert contents(index) == [(1, 1, "only")]
    index.build([])
    index._check()
    assert len(index) == 0


def test_build_from_its_own_entries_read_lazily() -> None:
    # build() takes any iterable, like ListIndex.build; one that reads this
    # index lazily (iter_range over several blocks) must be read before the
    # old contents go, not after (it raised IndexError and left the index
    # empty).
    index, ref = spread(20)
    index.build(index.iter_range(2, 15))
    ref.items = ref.items[2:15]
    assert_same(index, ref)


def test_build_rejects_ragged_entries() -> None:
    index = SortedListIndex()
    with pytest.raises(ValueError, match="triples"):
        index.build([(1, 0, "a"), (2, 0)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="triples"):
        index.build([(1, 0, "a", "extra")])  # type: ignore[list-item]
    index._check()
    assert len(index) == 0


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
    index.position(390, 0)  # builds the positional tree
    index._index[-1] += 1
    with pytest.raises(AssertionError, match="tree"):
        index._check()


def test_check_message_is_truncated() -> None:
    index, _ = spread(5000, load=DEFAULT_LOAD)
    index._maxes[0] = -1
    with pytest.raises(AssertionError) as excinfo:
        index._check()
    assert len(str(excinfo.value)) < 3000
    assert "truncated" in str(excinfo.value)


# ----------------------------------------------------------------------
# Hypothesis state machines
# ----------------------------------------------------------------------

small_ints = st.integers(min_value=-3, max_value=3)
halves = small_ints.map(lambda x: x + 0.5)
numbers = st.one_of(small_ints, small_ints.map(float), halves)
#: Ints, rarely one beyond int64 (the column turns into lists mid-run).
ints = st.one_of(small_ints, small_ints, small_ints, st.just(2**64))
floats = st.one_of(small_ints.map(float), halves)
ties = st.integers(min_value=0, max_value=12)
tuples = st.tuples(st.integers(min_value=0, max_value=2), numbers)


class IndexMachine(RuleBasedStateMachine):
    """Random operations on the index and the reference, checked after each step."""

    #: Strategies for primaries and ties; subclasses override them.
    primaries: st.SearchStrategy[Any] = numbers
    tie_values: st.SearchStrategy[Any] = ties

    def __init__(self) -> None:
        super().__init__()
        self.index = SortedListIndex(load=MIN_LOAD)
        self.ref = Reference()
        self.counter = 0

    @initialize(
        load=st.sampled_from([4, 5, 6, 16]), oldest_last=st.sampled_from([None, False, True])
    )
    def setup(self, load: int, oldest_last: bool | None) -> None:
        self.index = SortedListIndex(load=load)
        self.index.oldest_last = oldest_last

    def _member(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    def _run_tie(self, k: int) -> Any:
        """The k-th tie of a run (ascending in k)."""
        return k

    def _check_near(self, primary: Any, tie: Any, near: bool | None) -> None:
        """insert/move said whether the entry lies near its run's oldest end:
        True only when it does, False when it does not or (conservatively)
        when the slot RUN_SCAN_LIMIT entries away was out of view (see
        _near); exactly right when that slot lies in the entry's block (it
        did before any split or merge, or in a block next to it).  None
        when not asked."""
        last = self.index.oldest_last
        if last is None:
            assert near is None
            return
        assert near is True or near is False
        distance = self.ref.distance(primary, tie, oldest_last=last)
        if near:
            assert distance < RUN_SCAN_LIMIT, (primary, tie, distance)
        i, b = self.index._locate(primary, tie)
        c = b + RUN_SCAN_LIMIT if last else b - RUN_SCAN_LIMIT
        if 0 <= c < len(self.index._lists[i]):
            assert near == (distance < RUN_SCAN_LIMIT), (primary, tie, distance)

    def _insert(self, primary: Any, tie: Any) -> None:
        if self.ref.has(primary, tie):
            with pytest.raises(KeyError):
                self.index.insert(primary, tie, "dup")
            return
        member = self._member()
        near = self.index.insert(primary, tie, member)
        self.ref.insert((primary, tie, member))
        self._check_near(primary, tie, near)

    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        self._insert(data.draw(self.primaries), data.draw(self.tie_values))

    @rule(data=st.data(), count=st.integers(min_value=1, max_value=30))
    def insert_run(self, data: st.DataObject, count: int) -> None:
        """Many ties on one primary, so that runs span several blocks."""
        primary = data.draw(self.primaries)
        for k in range(count):
            self._insert(primary, self._run_tie(k))

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        p, t, _ = data.draw(st.sampled_from(self.ref.items))
        self.index.remove(p, t)
        self.ref.remove(p, t)

    def _move(self, p: Any, t: Any, new: tuple[Any, Any]) -> None:
        if self.ref.has(*new) and new != (p, t):
            with pytest.raises(KeyError):
                self.index.move(p, t, *new)
            return
        near = self.index.move(p, t, *new)
        self.ref.move(p, t, *new)
        self._check_near(*new, near)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def find_by_member(self, data: st.DataObject) -> None:
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        distance = self.ref.distance(p, t, oldest_last=self.index.oldest_last)
        assert self.index.tie_of(p, m) == (t, distance)
        assert self.index.position_of(p, m) == self.ref.index(p, t)
        with pytest.raises(KeyError):
            self.index.tie_of(p, "nobody")

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def move_member(self, data: st.DataObject) -> None:
        """Move an entry found by its primary and member."""
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        new = (data.draw(self.primaries), data.draw(self.tie_values))
        if self.ref.has(*new) and new != (p, t):
            with pytest.raises(KeyError):
                self.index.move_member(p, m, *new)
            return
        near = self.index.move_member(p, m, *new)
        self.ref.move(p, t, *new)
        self._check_near(*new, near)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def move_small(self, data: st.DataObject) -> None:
        """Move to a neighbour's primary: usually stays in its block."""
        items = self.ref.items
        i = data.draw(st.integers(min_value=0, max_value=len(items) - 1))
        j = i + data.draw(st.integers(min_value=-2, max_value=2))
        j = min(len(items) - 1, max(0, j))
        p, t, _ = items[i]
        self._move(p, t, (items[j][0], data.draw(self.tie_values)))

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def move_large(self, data: st.DataObject) -> None:
        """Move to any key: usually to another block."""
        p, t, _ = data.draw(st.sampled_from(self.ref.items))
        self._move(p, t, (data.draw(self.primaries), data.draw(self.tie_values)))

    @rule(data=st.data())
    def count_less(self, data: st.DataObject) -> None:
        primary = data.draw(self.primaries)
        tie = data.draw(self.tie_values)
        assert self.index.count_less(primary, tie) == self.ref.count_less(primary, tie)

    @rule(data=st.data(), inclusive=st.booleans())
    def count_primary(self, data: st.DataObject, inclusive: bool) -> None:
        primary = data.draw(self.primaries)
        want = self.ref.count_primary(primary, inclusive=inclusive)
        assert self.index.count_primary(primary, inclusive=inclusive) == want

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def entry_and_position(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(min_value=0, max_value=len(self.ref.items) - 1))
        assert self.index.entry(i) == self.ref.items[i]
        p, t, _ = self.ref.items[i]
        assert self.index.position(p, t) == i

    @rule(data=st.data(), reverse=st.booleans())
    def iter_range(self, data: st.DataObject, reverse: bool) -> None:
        n = len(self.ref.items)
        start = data.draw(st.integers(min_value=0, max_value=n))
        stop = data.draw(st.integers(min_value=start, max_value=n))
        want = self.ref.items[start:stop]
        got = list(self.index.iter_range(start, stop, reverse=reverse))
        assert got == (want[::-1] if reverse else want)

    @invariant()
    def consistent(self) -> None:
        self.index._check()
        assert len(self.index) == len(self.ref.items)
        assert contents(self.index) == self.ref.items


class IntIndexMachine(IndexMachine):
    """Int primaries: int64 arrays, until a huge int arrives."""

    primaries = ints


class FloatIndexMachine(IndexMachine):
    """Float primaries: double arrays throughout."""

    primaries = floats


class TupleIndexMachine(IndexMachine):
    """The same machine with composite (tuple) primaries."""

    primaries = tuples


class MemberTieIndexMachine(IndexMachine):
    """String ties (a member as tie, Redis order): the tie column is lists."""

    primaries = ints
    tie_values = ties.map(lambda k: f"t{k:02d}")

    def _run_tie(self, k: int) -> Any:
        return f"t{k:02d}"


machine_settings = settings(max_examples=40, stateful_step_count=40, deadline=None)
TestIndexMachine = IndexMachine.TestCase
TestIndexMachine.settings = machine_settings
TestIntIndexMachine = IntIndexMachine.TestCase
TestIntIndexMachine.settings = machine_settings
TestFloatIndexMachine = FloatIndexMachine.TestCase
TestFloatIndexMachine.settings = machine_settings
TestTupleIndexMachine = TupleIndexMachine.TestCase
TestTupleIndexMachine.settings = machine_settings
TestMemberTieIndexMachine = MemberTieIndexMachine.TestCase
TestMemberTieIndexMachine.settings = machine_settings
