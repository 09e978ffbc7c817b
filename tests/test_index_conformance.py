"""One behaviour suite for every ordered index backend.

Every :class:`rankengine.index.protocol.OrderedIndex` backend runs the same
tests against one model, the plain sorted list of ``tests/listindex.py``
(which runs here as a backend too, so the model meets the contract it
checks):

* the skip list with a tiny ``max_level`` (1 and 4: crowded, tall levels)
  and the full one (32);
* the sorted-list index with a tiny load (4: blocks split and merge every
  few writes) and the default-sized one (1000: one block);
* ``ListIndex``, the model itself.

The first part is parametrized tests, one behaviour each; the optional hooks
(``tie_of``, ``position_of``, ``move_member``, ``columns``, the answer of
``insert`` and ``move`` near a run's oldest end) are tested on the backends
that have them.  The second part is one Hypothesis state machine that drives
a backend and the model with the same writes and reads -- many ties, runs
deeper than ``RUN_SCAN_LIMIT``, primaries equal across types (``0``, ``0.0``,
``-0.0``; ``2**53`` and ``2.0**53``), big ints, infinities, tuples -- and
calls ``_check()`` after every step.

What only one backend has (node heights, the finger, typed columns, block
offsets, the structure ``_check()`` verifies) is tested in that backend's own
file: ``tests/test_skiplist.py``, ``tests/test_sortedlist.py``.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from listindex import ListIndex

from rankengine.index.protocol import (
    PROTOCOL_METHODS,
    RUN_SCAN_LIMIT,
    DuplicateKeyError,
    Entry3,
)
from rankengine.index.skiplist import MAX_LEVEL, P, SkipList
from rankengine.index.sortedlist import SortedListIndex

Index = Any  # an OrderedIndex backend
Factory = Callable[[random.Random], Index]


class ScriptedCoin(random.Random):
    """A random source whose next draws can be dictated (``queue``); with
    nothing queued it falls back on its own seeded draws.  A skip list draws
    node heights from it; the other backends ignore it."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.queue: list[float] = []

    def random(self) -> float:
        if self.queue:
            return self.queue.pop(0)
        return super().random()

    def heights(self, heights: list[int], max_level: int, *, bulk: bool = False) -> None:
        """Queue the coins for nodes of these heights (in the order drawn).

        One coin per level climbed (below P), then one that stops the climb
        (unless the node reaches ``max_level``).  A bulk load draws its
        first coin even when ``max_level`` is 1.
        """
        self.queue.clear()
        for h in heights:
            if bulk and max_level == 1:
                self.queue.append(0.99)
                continue
            self.queue.extend([P / 2] * (h - 1))
            if h < max_level:
                self.queue.append(0.99)


def _skiplist(max_level: int) -> Factory:
    return lambda rng: SkipList(rng, max_level=max_level)


def _sortedlist(load: int) -> Factory:
    return lambda rng: SortedListIndex(load=load)


#: name -> factory(rng).  The rng draws skip-list node heights.
BACKENDS: dict[str, Factory] = {
    "skiplist-1": _skiplist(1),
    "skiplist-4": _skiplist(4),
    "skiplist-32": _skiplist(MAX_LEVEL),
    "sortedlist-4": _sortedlist(4),
    "sortedlist-1000": _sortedlist(1000),
    "model": lambda rng: ListIndex(),
}

#: The optional hooks the by-member tests need.
MEMBER_HOOKS = ("oldest_last", "tie_of", "position_of", "move_member")
WITH_MEMBER_HOOKS = [
    name
    for name, make in BACKENDS.items()
    if all(hasattr(make(random.Random(0)), hook) for hook in MEMBER_HOOKS)
]
WITH_COLUMNS = [n for n, make in BACKENDS.items() if hasattr(make(random.Random(0)), "columns")]


@pytest.fixture(params=list(BACKENDS))
def make(request: pytest.FixtureRequest) -> Callable[..., Index]:
    """A factory of empty indexes of one backend: ``make(seed=0)``."""
    factory = BACKENDS[request.param]
    return lambda seed=0: factory(random.Random(seed))


@pytest.fixture(params=WITH_MEMBER_HOOKS)
def make_hooked(request: pytest.FixtureRequest) -> Callable[..., Index]:
    """As ``make``, for the backends with the by-member hooks."""
    factory = BACKENDS[request.param]
    return lambda seed=0: factory(random.Random(seed))


# ----------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------


def assert_same(index: Index, ref: ListIndex) -> None:
    """Full comparison: invariants, length, contents in both directions."""
    index._check()
    rows = ref.rows()
    assert len(index) == len(rows)
    assert list(index.iter_range(0, len(index))) == rows
    assert list(index.iter_range(0, len(index), reverse=True)) == rows[::-1]


def fill(index: Index, entries: list[Entry3], *, check: bool = False) -> ListIndex:
    """Insert ``entries`` one by one into ``index`` and a new model."""
    ref = ListIndex()
    for entry in entries:
        index.insert(*entry)
        ref.insert(*entry)
        if check:
            index._check()
    assert_same(index, ref)
    return ref


def filled(index: Index, n: int, seed: int = 0) -> ListIndex:
    """``n`` random entries with many ties (primaries below n / 4)."""
    rng = random.Random(seed)
    return fill(index, [(rng.randrange(max(1, n // 4)), t, f"m{t}") for t in range(n)])


def spread(index: Index, n: int) -> ListIndex:
    """``n`` entries with primaries 0, 10, 20, ... bulk-loaded."""
    entries = [(10 * k, 0, f"m{k}") for k in range(n)]
    index.build(entries)
    ref = ListIndex()
    ref.build(entries)
    assert_same(index, ref)
    return ref


def runs(longest: int) -> list[Entry3]:
    """Runs of 1, 2, ..., ``longest`` entries: primary p has ties 0 .. p - 1."""
    return [(p, t, f"m{p}.{t}") for p in range(1, longest + 1) for t in range(p)]


# ----------------------------------------------------------------------
# The protocol itself
# ----------------------------------------------------------------------


def test_every_backend_has_the_protocol_methods(make: Callable[..., Index]) -> None:
    index = make()
    assert [m for m in PROTOCOL_METHODS if not callable(getattr(index, m, None))] == []


def test_empty(make: Callable[..., Index]) -> None:
    index = make()
    index._check()
    assert len(index) == 0
    assert list(index.iter_range(0, 0)) == []
    assert list(index.iter_range(0, 0, reverse=True)) == []
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


def test_clear(make: Callable[..., Index]) -> None:
    index = make()
    filled(index, 100)
    index.clear()
    assert_same(index, ListIndex())
    index.insert(1, 1, "x")
    assert list(index.iter_range(0, 1)) == [(1, 1, "x")]
    index._check()


# ----------------------------------------------------------------------
# insert and remove
# ----------------------------------------------------------------------


def test_insert_remove_against_the_model(make: Callable[..., Index]) -> None:
    rng = random.Random(7)
    index = make(7)
    ref = ListIndex()
    for tie in rng.sample(range(1000), 300):
        entry = (rng.randrange(20), tie, f"m{tie}")
        index.insert(*entry)
        ref.insert(*entry)
        index._check()
    assert_same(index, ref)
    while len(ref):
        p, t, _ = ref.entry(rng.randrange(len(ref)))
        index.remove(p, t)
        ref.remove(p, t)
        index._check()
    assert_same(index, ref)


def test_insert_every_position(make: Callable[..., Index]) -> None:
    # Shuffled distinct keys: each insert lands at another place (block
    # splits in the sorted list, new levels in the skip list).
    keys = list(range(200))
    random.Random(1).shuffle(keys)
    index = make()
    ref = ListIndex()
    for k in keys:
        index.insert(k, 0, f"m{k}")
        ref.insert(k, 0, f"m{k}")
        assert_same(index, ref)


def test_remove_every_entry_after_a_bulk_load(make: Callable[..., Index]) -> None:
    index = make()
    ref = spread(index, 150)
    order = ref.rows()
    random.Random(2).shuffle(order)
    for primary, tie, _ in order:
        index.remove(primary, tie)
        ref.remove(primary, tie)
        assert_same(index, ref)


def test_insert_duplicate_key_raises_and_changes_nothing(make: Callable[..., Index]) -> None:
    index = make()
    ref = filled(index, 50)
    p, t, _ = ref.entry(17)
    with pytest.raises(DuplicateKeyError, match="already present"):
        index.insert(p, t, "other")
    index2 = make()
    ref2 = fill(index2, [(1, 0, "a"), (1, 1, "b"), (2, 0, "c")])
    with pytest.raises(DuplicateKeyError):
        index2.insert(1, 1, "x")
    with pytest.raises(DuplicateKeyError):
        index2.insert(1.0, 0, "x")  # 1.0 == 1: the same key
    assert_same(index, ref)
    assert_same(index2, ref2)


def test_remove_absent_raises_and_changes_nothing(make: Callable[..., Index]) -> None:
    index = make()
    ref = fill(index, [(1, 0, "a"), (1, 2, "b"), (3, 0, "c")])
    for key in [(1, 1), (2, 0), (0, 0), (4, 0), (3, 1), (1, 3), (10**6, 0)]:
        with pytest.raises(KeyError):
            index.remove(*key)
    assert_same(index, ref)


def test_member_never_compared(make: Callable[..., Index]) -> None:
    # Members that cannot be ordered are fine: keys are unique.
    index = make()
    for t in range(30):
        index.insert(t % 3, t, object())
        index._check()
    index.move(0, 0, 0, 100)
    index.remove(1, 1)
    index._check()


# ----------------------------------------------------------------------
# Reads
# ----------------------------------------------------------------------


def test_position_and_entry_round_trip(make: Callable[..., Index]) -> None:
    index = make()
    ref = filled(index, 400, seed=2)
    for i, (p, t, m) in enumerate(ref.rows()):
        assert index.position(p, t) == i
        assert index.entry(i) == (p, t, m)
    for bad in (-1, 400):
        with pytest.raises(IndexError):
            index.entry(bad)
    with pytest.raises(KeyError):
        index.position(5, -1)


def test_count_less_every_gap(make: Callable[..., Index]) -> None:
    index = make()
    ref = fill(index, [(p, t, f"{p}/{t}") for p in range(0, 40, 2) for t in (1, 3, 5)])
    for p in range(-1, 42):
        for t in range(7):
            assert index.count_less(p, t) == ref.count_less(p, t), (p, t)
            assert index.count_less(p + 0.5, t) == ref.count_less(p + 0.5, t)


def test_count_primary_runs(make: Callable[..., Index]) -> None:
    index = make()
    ref = fill(index, [(p, t, f"{p}/{t}") for p in range(10) for t in range(p % 7)])
    for p in [-1, *range(11), 2.5, 9.5]:
        for inclusive in (False, True):
            got = index.count_primary(p, inclusive=inclusive)
            assert got == ref.count_primary(p, inclusive=inclusive), (p, inclusive)


def test_iter_range_every_window_both_directions(make: Callable[..., Index]) -> None:
    index = make(5)
    rows = filled(index, 23, seed=5).rows()
    n = len(rows)
    for start in range(n + 1):
        for stop in range(start, n + 1):
            assert list(index.iter_range(start, stop)) == rows[start:stop]
            backwards = list(index.iter_range(start, stop, reverse=True))
            assert backwards == rows[start:stop][::-1]
    index = make()
    rows = spread(index, 50).rows()
    assert list(index.iter_range(40, 50, reverse=True)) == rows[40:50][::-1]
    assert list(index.iter_range(0, 10)) == rows[:10]


def test_int_and_float_primaries_compare_as_numbers(make: Callable[..., Index]) -> None:
    index = make()
    ref = fill(index, [(1, 0, "a"), (1.5, 0, "b"), (2.0, 0, "c"), (2, 1, "d"), (-0.5, 3, "e")])
    assert index.position(2, 0) == ref.position(2, 0) == 3  # 2 == 2.0: same primary
    assert index.count_primary(2, inclusive=False) == 3
    assert index.count_primary(4.5, inclusive=False) == ref.count_primary(4.5, inclusive=False)


def test_tuple_primaries(make: Callable[..., Index]) -> None:
    entries = [((a, b), t, f"{a}{b}{t}") for a in range(4) for b in (0, 1.5) for t in (0, 1)]
    random.Random(3).shuffle(entries)
    index = make()
    ref = fill(index, entries)
    for p, t, _ in ref.rows():
        assert index.position(p, t) == ref.position(p, t)
    assert index.count_primary((2, 0), inclusive=True) == ref.count_primary((2, 0), inclusive=True)
    other = make()
    other.build([((1, 2), 0, "a"), ((1, 2), 1, "b"), ((1, 3), 0, "c")])
    assert other.count_primary((1, 2), inclusive=False) == 0
    assert other.count_primary((1, 2), inclusive=True) == 2


def test_member_as_tie(make: Callable[..., Index]) -> None:
    names = ["bob", "ann", "cid", "dee", "eve", "fay", "gus", "hal", "ivy"]
    index = make()
    ref = fill(index, [(len(name) % 2, name, name) for name in names])
    index.move(1, "ann", 0, "ann")
    ref.move(1, "ann", 0, "ann")
    assert_same(index, ref)


def test_long_run_of_equal_primaries(make: Callable[..., Index]) -> None:
    # One primary, a hundred ties (across many blocks / under many levels).
    entries = [(5, t, f"t{t}") for t in range(0, 200, 2)] + [(4, 0, "low"), (6, 0, "high")]
    index = make()
    ref = fill(index, sorted(entries))
    for t in range(-1, 202):
        assert index.count_less(5, t) == ref.count_less(5, t)
    for t in range(1, 200, 20):
        index.insert(5, t, f"t{t}")
        ref.insert(5, t, f"t{t}")
        assert_same(index, ref)
    for t in range(0, 200, 14):
        index.move(5, t, 5, t + 0.5)
        ref.move(5, t, 5, t + 0.5)
        assert_same(index, ref)
        assert index.position(5, t + 0.5) == ref.position(5, t + 0.5)


# ----------------------------------------------------------------------
# move
# ----------------------------------------------------------------------


def test_move_against_the_model(make: Callable[..., Index]) -> None:
    rng = random.Random(9)
    index = make(9)
    ref = filled(index, 300, seed=9)
    next_tie = 10_000
    for _ in range(800):
        p, t, _ = ref.entry(rng.randrange(len(ref)))
        if rng.random() < 0.5:
            new = (p + rng.choice((-1, 0, 1)), next_tie)  # near: often in place
        else:
            new = (rng.randrange(-10, 100), next_tie)  # far
        next_tie += 1
        index.move(p, t, *new)
        ref.move(p, t, *new)
        index._check()
    assert_same(index, ref)


def test_redis_rescore_example(make: Callable[..., Index]) -> None:
    # x=10, y=20, z=30; set y=1 gives y, x, z.
    index = make()
    for member, score in (("x", 10), ("y", 20), ("z", 30)):
        index.insert(score, member, member)
    index.move(20, "y", 1, "y")
    index._check()
    assert [m for _, _, m in index.iter_range(0, 3)] == ["y", "x", "z"]


def test_move_errors_change_nothing(make: Callable[..., Index]) -> None:
    index = make()
    ref = fill(index, [(1, 0, "a"), (2, 0, "b"), (2, 1, "c"), (3, 0, "d"), (9, 0, "e")])
    with pytest.raises(KeyError):
        index.move(3, 1, 4, 0)  # old key absent
    with pytest.raises(KeyError):
        index.move(10**6, 0, 1, 10**6)
    # The new key present: next door on either side, or far away.
    for old, new in [((2, 0), (1, 0)), ((2, 0), (2, 1)), ((1, 0), (2, 1)), ((1, 0), (9, 0))]:
        with pytest.raises(DuplicateKeyError, match="already present"):
            index.move(*old, *new)
        assert_same(index, ref)
    index.move(2, 1, 2, 1)  # new key == old key: nothing to do
    assert_same(index, ref)
    empty = make()
    with pytest.raises(KeyError):
        empty.move(1, 1, 2.5, "x")
    empty._check()
    empty.insert(7, 7, "a")
    assert list(empty.iter_range(0, 1)) == [(7, 7, "a")]


def test_move_onto_an_equal_key_keeps_the_place_and_takes_the_values(
    make: Callable[..., Index],
) -> None:
    # 5 == 5.0 and 0 == -0.0: the same key, so the entry does not move, but
    # it now holds what it was given (the model found the skip list and the
    # sorted list disagreeing here).
    index = make()
    ref = fill(index, [(-1, 0, "a"), (0, 1, "b"), (5, 0, "c"), (9, 0, "d")])
    for old, new in [((5, 0), (5.0, 0)), ((0, 1), (-0.0, 1)), ((5.0, 0), (5, 0.0))]:
        index.move(*old, *new)
        ref.move(*old, *new)
        assert_same(index, ref)
        assert show(index.iter_range(0, len(index))) == show(ref.rows())
    assert show([index.entry(1), index.entry(2)]) == show([(-0.0, 1, "b"), (5, 0.0, "c")])


def test_move_at_the_ends(make: Callable[..., Index]) -> None:
    index = make()
    ref = spread(index, 30)
    moves = [(0, -100), (-100, 10_000), (10_000, -5), (290, 10_001), (-5, 10_002)]
    for old, new in moves:
        index.move(old, 0, new, 0)
        ref.move(old, 0, new, 0)
        assert_same(index, ref)


def test_small_moves_ahead(make: Callable[..., Index]) -> None:
    # Increments of every size, ties and clashes included.
    rng = random.Random(4)
    index = make(4)
    keys = sorted({(rng.randrange(80), rng.randrange(3)) for _ in range(60)})
    index.build([(p, t, (p, t)) for p, t in keys])
    ref = ListIndex()
    ref.build([(p, t, (p, t)) for p, t in keys])
    for _ in range(400):
        old = ref.entry(rng.randrange(len(ref)))[:2]
        new = (old[0] + rng.randrange(0, 12), rng.randrange(3))
        if ref.has(*new) and new != old:
            with pytest.raises(DuplicateKeyError):
                index.move(*old, *new)
        else:
            index.move(*old, *new)
            ref.move(*old, *new)
        index._check()
    assert_same(index, ref)


def test_thousand_rescores_among_ten_members(make: Callable[..., Index]) -> None:
    rng = random.Random(4)
    index = make(4)
    scores = {f"m{i}": rng.randrange(5) for i in range(10)}
    for m, s in scores.items():
        index.insert(s, m, m)
    for _ in range(1000):
        m = rng.choice(sorted(scores))
        new = rng.randrange(5) if rng.random() < 0.5 else scores[m] + rng.choice((-1, 1))
        index.move(scores[m], m, new, m)
        scores[m] = new
        index._check()
    assert list(index.iter_range(0, 10)) == sorted((s, m, m) for m, s in scores.items())


# ----------------------------------------------------------------------
# build
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 1000])
def test_build_equals_incremental_inserts(make: Callable[..., Index], n: int) -> None:
    entries = [(k // 3, k % 3, f"m{k}") for k in range(n)]
    built = make(n)
    built.build(iter(entries))  # any iterable, even a one-shot generator
    built._check()
    inserted = make(n)
    for entry in reversed(entries):
        inserted.insert(*entry)
    inserted._check()
    assert list(built.iter_range(0, n)) == list(inserted.iter_range(0, n)) == entries
    assert list(built.iter_range(0, n, reverse=True)) == entries[::-1]
    for i, (p, t, _) in enumerate(entries):
        assert built.position(p, t) == i
        assert built.entry(i) == entries[i]
    if n:
        built.insert(-1, 0, "first")
        built.remove(entries[-1][0], entries[-1][1])
        built._check()


def test_build_replaces_contents_and_stays_usable(make: Callable[..., Index]) -> None:
    index = make(6)
    filled(index, 200, seed=6)
    ref = ListIndex()
    ref.build([(i, 0, i) for i in range(0, 500, 5)])
    index.build(iter(ref.rows()))
    assert_same(index, ref)
    rng = random.Random(6)
    for i in range(300):
        if rng.random() < 0.3:
            p, t, _ = ref.entry(rng.randrange(len(ref)))
            index.remove(p, t)
            ref.remove(p, t)
        else:
            e = (rng.randrange(600), i + 1, i)
            index.insert(*e)
            ref.insert(*e)
        index._check()
    assert_same(index, ref)
    index.build([(1, 1, "only")])
    assert_same(index, fill(make(), [(1, 1, "only")]))
    index.build([])
    assert_same(index, ListIndex())


def test_build_accepts_lists_and_restores_gc(make: Callable[..., Index]) -> None:
    index = make()
    index.build([[1, 0, "a"], [2, 0, "b"]])
    assert list(index.iter_range(0, 2)) == [(1, 0, "a"), (2, 0, "b")]
    assert all(type(e) is tuple for e in index.iter_range(0, 2))
    assert gc.isenabled()
    gc.disable()
    try:
        index.build([(1, 0, "a")])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_build_from_its_own_entries_read_lazily(make: Callable[..., Index]) -> None:
    # An iterable that reads this index lazily must be read before the old
    # contents go.
    index = make()
    ref = spread(index, 20)
    index.build(index.iter_range(2, 15))
    ref.build(ref.rows()[2:15])
    assert_same(index, ref)


def test_build_that_fails_leaves_it_empty_and_usable(make: Callable[..., Index]) -> None:
    # A row that is not a triple, or an input that raises, stops the load:
    # the index is left empty and whole.
    def failing() -> Iterator[Entry3]:
        yield (1, 0, "a")
        yield (2, 0, "b")
        raise RuntimeError("bad input")

    for rows, error in [
        ([(1, 0, "a"), (2, 0, "b"), (3, 0)], ValueError),
        ([(1, 0, "a", "extra")], ValueError),
        (failing(), RuntimeError),
    ]:
        index = make()
        filled(index, 20)
        with pytest.raises(error):
            index.build(rows)
        assert_same(index, ListIndex())
        index.insert(5, 0, "x")
        assert list(index.iter_range(0, 1)) == [(5, 0, "x")]
        index._check()


@pytest.mark.parametrize("backend", WITH_COLUMNS)
@pytest.mark.parametrize("n", [0, 1, 2, 57])
def test_columns_are_the_entries_transposed(backend: str, n: int) -> None:
    index = BACKENDS[backend](random.Random(n))
    ref = filled(index, n, seed=n)

    def transposed(rows: list[Entry3]) -> tuple[list[Any], ...]:
        return tuple([row[k] for row in rows] for k in range(3))

    assert tuple(map(list, index.columns())) == transposed(ref.rows())
    for primary, tie, _ in ref.rows()[::3]:  # still right after removes
        index.remove(primary, tie)
        ref.remove(primary, tie)
    index._check()
    assert tuple(map(list, index.columns())) == transposed(ref.rows())


# ----------------------------------------------------------------------
# Redis-style stress: rank(at(i)) == i, forward == reversed backward
# ----------------------------------------------------------------------


def test_stress_rank_of_element_at_index(make: Callable[..., Index]) -> None:
    rng = random.Random(1)
    index = make(1)
    scores: dict[int, int] = {}
    for _ in range(4000):
        member = rng.randrange(800)
        roll = rng.random()
        if roll < 0.2:  # 20% removals
            if member in scores:
                index.remove(scores.pop(member), member)
        elif member in scores:
            # re-score: small steps (often in place) and jumps
            new = scores[member] + rng.randint(-2, 2) if roll < 0.6 else rng.randrange(200)
            index.move(scores[member], member, new, member)
            scores[member] = new
        else:
            scores[member] = rng.randrange(200)
            index.insert(scores[member], member, member)
    index._check()
    assert len(index) == len(scores)
    for i in range(len(index)):
        p, t, _ = index.entry(i)
        assert index.position(p, t) == i
    forward = list(index.iter_range(0, len(index)))
    assert forward == list(index.iter_range(0, len(index), reverse=True))[::-1]
    assert forward == sorted((s, m, m) for m, s in scores.items())


def test_stress_float_scores_against_sort(make: Callable[..., Index]) -> None:
    rng = random.Random(12)
    index = make(12)
    entries = [(rng.uniform(-1e6, 1e6), i, i) for i in range(3000)]
    for e in entries:
        index.insert(*e)
    index._check()
    assert list(index.iter_range(0, len(index))) == sorted(entries)
    assert list(index.iter_range(0, len(index), reverse=True)) == sorted(entries, reverse=True)


@pytest.mark.parametrize("seed", range(6))
def test_random_operations(make: Callable[..., Index], seed: int) -> None:
    rng = random.Random(seed)
    index = make(seed)
    ref = ListIndex()

    def key() -> tuple[Any, Any]:
        primary = rng.choice([rng.randrange(6), rng.randrange(6) + 0.5, float(rng.randrange(6))])
        return primary, rng.randrange(10)

    for step in range(1500):
        roll = rng.random()
        if roll < 0.35 or not len(ref):
            p, t = key()
            if not ref.has(p, t):
                index.insert(p, t, f"m{step}")
                ref.insert(p, t, f"m{step}")
        elif roll < 0.5:
            p, t, _ = ref.entry(rng.randrange(len(ref)))
            index.remove(p, t)
            ref.remove(p, t)
        elif roll < 0.8:
            p, t, _ = ref.entry(rng.randrange(len(ref)))
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
            if len(ref):
                a = rng.randrange(len(ref))
                b = rng.randrange(a, len(ref) + 1)
                assert list(index.iter_range(a, b)) == list(ref.iter_range(a, b))
                assert list(index.iter_range(a, b, reverse=True)) == list(
                    ref.iter_range(a, b, reverse=True)
                )
                assert index.entry(a) == ref.entry(a)
                p, t, _ = ref.entry(a)
                assert index.position(p, t) == a
        index._check()
        assert len(index) == len(ref)
    assert_same(index, ref)


# ----------------------------------------------------------------------
# Optional hooks: look-ups by member in runs of equal primaries
# ----------------------------------------------------------------------


@pytest.mark.parametrize("oldest_last", [None, False, True])
def test_tie_of_and_position_of_find_every_member(
    make_hooked: Callable[..., Index], oldest_last: bool | None
) -> None:
    # runs of 1, 2, ... 12 equal primaries; the distance counts the run's
    # entries from its oldest end (the first entry unless oldest_last)
    entries = runs(12)
    for seed in range(3):
        index = make_hooked(seed)
        index.oldest_last = oldest_last
        index.build(entries)
        for i, (p, t, m) in enumerate(entries):
            assert index.tie_of(p, m) == (t, p - 1 - t if oldest_last else t)
            assert index.position_of(p, m) == i
        for p, m in [(0, "m1.0"), (2, "m1.0"), (13, "m9.0"), (5, "nobody"), (12, "m1.0")]:
            with pytest.raises(KeyError):
                index.tie_of(p, m)
            with pytest.raises(KeyError):
                index.position_of(p, m)
        index.clear()
        with pytest.raises(KeyError):
            index.tie_of(1, "m1.0")


@pytest.mark.parametrize("oldest_last", [False, True])
def test_move_member_moves_the_member_there_and_back(
    make_hooked: Callable[..., Index], oldest_last: bool
) -> None:
    entries = runs(12)
    ref = ListIndex()
    ref.build(entries)
    for seed, (p, t, m) in itertools.product(range(3), entries):
        index = make_hooked(seed)
        index.oldest_last = oldest_last
        index.build(entries)
        near = index.move_member(p, m, 99, -1)  # a larger key
        index._check()
        assert index.entry(len(index) - 1) == (99, -1, m)
        assert near is True
        index.move_member(99, m, p, t)  # and back down
        assert_same(index, ref)
    with pytest.raises(KeyError):
        index.move_member(12, "nobody", 0, 0)
    with pytest.raises(KeyError):
        index.move_member(13, "m12.0", 0, 0)
    with pytest.raises(DuplicateKeyError):
        index.move_member(12, "m12.0", 11, 3)
    assert_same(index, ref)


@pytest.mark.parametrize("oldest_last", [None, False, True])
def test_writes_say_whether_the_entry_lies_near_the_oldest_end(
    make_hooked: Callable[..., Index], oldest_last: bool | None
) -> None:
    # insert and move answer None while oldest_last is None; otherwise True
    # only if the entry lies fewer than RUN_SCAN_LIMIT entries from its
    # run's oldest end (False may be conservative).
    index = make_hooked(3)
    index.oldest_last = oldest_last
    ref = ListIndex()
    answers = set()
    for k in range(3 * RUN_SCAN_LIMIT):
        tie = -k if oldest_last else k  # each arrival is the newest
        near = index.insert(7, tie, f"m{k}")
        ref.insert(7, tie, f"m{k}")
        answers.add(near)
        if oldest_last is None:
            assert near is None
        elif near:
            assert ref.run_distance(7, f"m{k}", oldest_last=oldest_last) < RUN_SCAN_LIMIT
    for k in range(3 * RUN_SCAN_LIMIT):
        p, t, m = ref.entry(0)
        near = index.move(p, t, 8, -k if oldest_last else k)
        ref.move(p, t, 8, -k if oldest_last else k)
        if oldest_last is None:
            assert near is None
        elif near:
            assert ref.run_distance(8, m, oldest_last=oldest_last) < RUN_SCAN_LIMIT
    assert_same(index, ref)
    assert answers == ({None} if oldest_last is None else {True, False})


# ----------------------------------------------------------------------
# One state machine over every backend
# ----------------------------------------------------------------------

INF = math.inf
BIG = 2**53
SCALARS = [0, 0.0, -0.0, 1, 1.0, 2, 0.5, -1, BIG, BIG + 1, float(BIG), 2**70, INF, -INF]
IDX = st.integers(0, 10**6)
TIES = st.integers(-12, 12)
#: String ties (a board that breaks ties by member) stand for numbers: the
#: number plus TIE_OFFSET, zero-padded, so that they sort as the numbers do
#: and a rule can shift one by a step as it shifts an int.
TIE_OFFSET = 10**6


def encode_tie(x: float) -> str:
    return f"t{x + TIE_OFFSET:015.3f}"


def decode_tie(tie: str) -> float:
    return float(tie[1:]) - TIE_OFFSET


def show(entries: Any) -> list[str]:
    """Entries with the types of their values (``repr`` tells 0, 0.0, -0.0 apart)."""
    return [repr(tuple(e)) for e in entries]


#: Which answers of ``insert``/``move`` about the oldest end must be exact
#: (not just never wrongly True): the skip list walks level 0, so always;
#: the sorted list when the slot ``RUN_SCAN_LIMIT`` entries towards the
#: oldest end lies in the entry's own block.
def _exact_near(index: Index, primary: Any, member: Any) -> bool:
    if isinstance(index, SortedListIndex):
        i, b, _ = index._find(primary, member)
        c = b + RUN_SCAN_LIMIT if index.oldest_last else b - RUN_SCAN_LIMIT
        return 0 <= c < len(index._lists[i])
    return True


class IndexMachine(RuleBasedStateMachine):
    """A backend and the model, the same writes and reads, ``_check()`` after each."""

    def __init__(self) -> None:
        super().__init__()
        self.backend = "model"
        self.coin = ScriptedCoin(0)
        self.index: Index = ListIndex()
        self.ref = ListIndex()
        self.max_level = MAX_LEVEL
        self.kind = "scalar"
        self.str_ties = False
        self.next_member = 0

    #: The backends a run draws from (a backend's own machine narrows it).
    backends: tuple[str, ...] = tuple(BACKENDS)

    @initialize(
        data=st.data(),
        kind=st.sampled_from(["scalar", "tuple"]),
        ties=st.sampled_from(["int", "int", "str"]),
        oldest_last=st.sampled_from([None, False, True]),
        seed=st.integers(0, 2**16),
    )
    def setup(
        self, data: st.DataObject, kind: str, ties: str, oldest_last: bool | None, seed: int
    ) -> None:
        backend = data.draw(st.sampled_from(self.backends), label="backend")
        self.backend = backend
        self.kind = kind
        self.str_ties = ties == "str"
        self.coin = ScriptedCoin(seed)
        self.index = BACKENDS[backend](self.coin)
        self.max_level = getattr(self.index, "max_level", MAX_LEVEL)
        if self.hooked:
            self.index.oldest_last = oldest_last

    # -- helpers ------------------------------------------------------------

    @property
    def hooked(self) -> bool:
        return all(hasattr(self.index, hook) for hook in MEMBER_HOOKS)

    def primary(self, data: st.DataObject) -> Any:
        scalars = st.sampled_from(SCALARS)
        if self.kind == "tuple":
            return data.draw(st.tuples(st.sampled_from([0, 0.0, -0.0, 1, BIG, INF]), scalars))
        return data.draw(scalars)

    def height(self, data: st.DataObject) -> int:
        """A node height for the skip list: mostly short, tall and
        ``max_level`` ones common enough to matter."""
        m = self.max_level
        return data.draw(
            st.one_of(st.just(1), st.just(1), st.just(min(2, m)), st.just(m), st.integers(1, m))
        )

    def tie(self, k: float) -> Any:
        """The tie that stands for the number ``k`` in this run."""
        return encode_tie(k) if self.str_ties else k

    def shift(self, tie: Any, step: float) -> Any:
        """``tie`` moved by ``step`` (a number, or a string tie's number)."""
        return encode_tie(decode_tie(tie) + step) if self.str_ties else tie + step

    def key_at(self, idx: int) -> tuple[Any, Any]:
        return self.ref.keys[idx % len(self.ref)]

    def member_at(self, primary: Any, tie: Any) -> Any:
        return self.ref.members[self.ref.position(primary, tie)]

    def new_member(self) -> str:
        self.next_member += 1
        return f"m{self.next_member}"

    def check_near(self, primary: Any, member: Any, near: bool | None) -> None:
        last = getattr(self.index, "oldest_last", None)
        if last is None:
            assert near is None
            return
        truth = self.ref.run_distance(primary, member, oldest_last=last) < RUN_SCAN_LIMIT
        if near:
            assert truth, (primary, member)
        if _exact_near(self.index, primary, member):
            assert near == truth, (primary, member, near)

    # -- writes -------------------------------------------------------------

    def _insert(self, primary: Any, tie: Any, data: st.DataObject) -> None:
        self.coin.heights([self.height(data)], self.max_level)
        member = self.new_member()
        if self.ref.has(primary, tie):
            try:
                self.index.insert(primary, tie, member)
            except DuplicateKeyError:
                self.coin.queue.clear()
                return
            raise AssertionError("insert of a present key did not raise")
        got = self.index.insert(primary, tie, member)
        if isinstance(self.index, SkipList):
            assert self.coin.queue == [], "the node did not take the scripted height"
        self.coin.queue.clear()
        self.ref.insert(primary, tie, member)
        self.check_near(primary, member, got)

    @rule(data=st.data(), tie=TIES)
    def insert(self, data: st.DataObject, tie: int) -> None:
        self._insert(self.primary(data), self.tie(tie), data)

    @rule(data=st.data(), count=st.integers(RUN_SCAN_LIMIT, RUN_SCAN_LIMIT + 6))
    def crowd(self, data: st.DataObject, count: int) -> None:
        """Pile entries onto one primary: a run deeper than RUN_SCAN_LIMIT."""
        primary = self.primary(data)
        for tie in data.draw(st.lists(st.integers(-200, 200), min_size=count, max_size=count)):
            self._insert(primary, self.tie(tie), data)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, data=st.data())
    def write_clash(self, idx: int, data: st.DataObject) -> None:
        """Insert a present key, move an absent one, an absent member, onto
        a present key: each raises and changes nothing (checked after)."""
        primary, tie = self.key_at(idx)
        other = self.key_at(idx + 1)
        calls: list[tuple[type[Exception], Callable[[], Any]]] = [
            (DuplicateKeyError, lambda: self.index.insert(primary, tie, "nobody")),
        ]
        if self.shift(tie, -0.5) != tie:  # (a tie beyond 2**53: tie - 0.5 == tie)
            calls.append(
                (
                    KeyError,
                    lambda: self.index.move(
                        primary, self.shift(tie, -0.5), primary, self.shift(tie, 0.5)
                    ),
                )
            )
        if other != (primary, tie):
            calls.append((DuplicateKeyError, lambda: self.index.move(primary, tie, *other)))
        if self.hooked:
            calls.append(
                (
                    KeyError,
                    lambda: self.index.move_member(
                        primary, "nobody", primary, self.shift(tie, 0.5)
                    ),
                )
            )
        error, call = data.draw(st.sampled_from(calls))
        with pytest.raises(error):
            call()

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX)
    def remove(self, idx: int) -> None:
        primary, tie = self.key_at(idx)
        self.index.remove(primary, tie)
        self.ref.remove(primary, tie)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(end=st.sampled_from([0, -1]))
    def remove_end(self, end: int) -> None:
        """Remove the first or the last entry (the tail, the end blocks)."""
        primary, tie = self.ref.keys[end]
        self.index.remove(primary, tie)
        self.ref.remove(primary, tie)

    @rule(data=st.data(), k=TIES)
    def remove_absent(self, data: st.DataObject, k: int) -> None:
        primary, tie = self.primary(data), self.tie(k)
        if not self.ref.has(primary, tie):
            with pytest.raises(KeyError):
                self.index.remove(primary, tie)

    def _move(
        self, primary: Any, tie: Any, new_primary: Any, new_tie: Any, by_member: bool
    ) -> None:
        member = self.member_at(primary, tie)
        by_member = by_member and self.hooked

        def move() -> bool | None:
            if by_member:
                return self.index.move_member(primary, member, new_primary, new_tie)  # type: ignore[no-any-return]
            return self.index.move(primary, tie, new_primary, new_tie)  # type: ignore[no-any-return]

        if self.ref.has(new_primary, new_tie) and (new_primary, new_tie) != (primary, tie):
            with pytest.raises(DuplicateKeyError):
                move()
            return
        got = move()
        self.ref.move(primary, tie, new_primary, new_tie)
        self.check_near(new_primary, member, got)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(data=st.data(), idx=IDX, tie=TIES, by_member=st.booleans())
    def move_anywhere(self, data: st.DataObject, idx: int, tie: int, by_member: bool) -> None:
        primary, old_tie = self.key_at(idx)
        self._move(primary, old_tie, self.primary(data), self.tie(tie), by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, to=IDX, side=st.sampled_from([-1, 0, 1]), by_member=st.booleans())
    def move_next_to(self, idx: int, to: int, side: int, by_member: bool) -> None:
        """Move onto a neighbour's key, or just past it: in place, clash, relink."""
        primary, tie = self.key_at(idx)
        p2, t2 = self.key_at(to)
        self._move(primary, tie, p2, self.shift(t2, side), by_member)

    @precondition(lambda self: len(self.ref) > 1)
    @rule(
        idx=IDX,
        steps=st.integers(-6, 6).filter(bool),
        side=st.sampled_from([-1, 1]),
        by_member=st.booleans(),
    )
    def move_by(self, idx: int, steps: int, side: int, by_member: bool) -> None:
        """Move a few positions back or ahead (a small score change)."""
        at = idx % len(self.ref)
        primary, tie = self.ref.keys[at]
        p2, t2 = self.ref.keys[max(0, min(len(self.ref) - 1, at + steps))]
        self._move(primary, tie, p2, self.shift(t2, side), by_member)

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, step=st.integers(-3, 3), by_member=st.booleans())
    def move_tie(self, idx: int, step: int, by_member: bool) -> None:
        """Keep the primary, shift the tie: moves within a run."""
        primary, tie = self.key_at(idx)
        self._move(primary, tie, primary, self.shift(tie, step), by_member)

    @rule()
    def clear(self) -> None:
        self.index.clear()
        self.ref.clear()

    @rule(data=st.data(), n=st.integers(0, 30))
    def build(self, data: st.DataObject, n: int) -> None:
        ties = map(self.tie, data.draw(st.lists(st.integers(-40, 40), min_size=n, max_size=n)))
        entries: dict[tuple[Any, Any], str] = {}
        for tie in ties:
            primary = self.primary(data)
            if (primary, tie) not in entries:  # equal keys (0 and 0.0) collapse
                entries[(primary, tie)] = self.new_member()
        rows = sorted(((p, t, m) for (p, t), m in entries.items()), key=lambda e: (e[0], e[1]))
        self.coin.heights([self.height(data) for _ in rows], self.max_level, bulk=True)
        self.index.build(rows)
        if isinstance(self.index, SkipList):
            assert self.coin.queue == [], "the nodes did not take the scripted heights"
        self.coin.queue.clear()
        self.ref.build(rows)

    @rule()
    def rebuild_own(self) -> None:
        """Bulk-load the current contents again (same entries, new shape)."""
        self.index.build(self.index.iter_range(0, len(self.index)))

    @rule(n=st.integers(0, 5))
    def build_fails(self, n: int) -> None:
        """A bulk load stopped by a row that is not a triple leaves it empty."""
        rows: list[tuple[Any, ...]] = [(k, self.tie(0), self.new_member()) for k in range(n)]
        rows.append((n, self.tie(0)))
        with pytest.raises(ValueError):
            self.index.build(rows)
        self.ref.clear()

    @precondition(lambda self: self.hooked)
    @rule(oldest_last=st.sampled_from([None, False, True]))
    def set_oldest_last(self, oldest_last: bool | None) -> None:
        self.index.oldest_last = oldest_last

    # -- reads ----------------------------------------------------------------

    @precondition(lambda self: len(self.ref) > 0)
    @rule(idx=IDX, delta=st.integers(-40, 40), width=st.integers(0, 6), reverse=st.booleans())
    def position_then_near(self, idx: int, delta: int, width: int, reverse: bool) -> None:
        """Rank a key, then read around it (the skip list's finger)."""
        primary, tie = self.key_at(idx)
        pos = self.index.position(primary, tie)
        assert pos == self.ref.position(primary, tie)
        self._read_near(pos + delta, width, reverse)

    @precondition(lambda self: len(self.ref) > 0 and self.hooked)
    @rule(idx=IDX, delta=st.integers(-40, 40), width=st.integers(0, 6), reverse=st.booleans())
    def position_of_then_near(self, idx: int, delta: int, width: int, reverse: bool) -> None:
        primary, tie = self.key_at(idx)
        pos = self.index.position_of(primary, self.member_at(primary, tie))
        assert pos == self.ref.position(primary, tie)
        self._read_near(pos + delta, width, reverse)

    def _read_near(self, at: int, width: int, reverse: bool) -> None:
        n = len(self.ref)
        at = max(0, min(n - 1, at))
        assert show([self.index.entry(at)]) == show([self.ref.entry(at)])
        start, stop = max(0, at - width), min(n, at + width + 1)
        assert show(self.index.iter_range(start, stop, reverse=reverse)) == show(
            self.ref.iter_range(start, stop, reverse=reverse)
        )

    @rule(data=st.data(), k=TIES, inclusive=st.booleans())
    def counts(self, data: st.DataObject, k: int, inclusive: bool) -> None:
        primary, tie = self.primary(data), self.tie(k)
        assert self.index.count_less(primary, tie) == self.ref.count_less(primary, tie)
        assert self.index.count_primary(primary, inclusive=inclusive) == self.ref.count_primary(
            primary, inclusive=inclusive
        )

    @precondition(lambda self: len(self.ref) > 0 and self.hooked)
    @rule(idx=IDX)
    def by_member(self, idx: int) -> None:
        primary, tie = self.key_at(idx)
        member = self.member_at(primary, tie)
        distance = self.ref.run_distance(primary, member, oldest_last=self.index.oldest_last)
        assert show([self.index.tie_of(primary, member)]) == show([(tie, distance)])
        assert self.index.position_of(primary, member) == self.ref.position(primary, tie)
        # The member under another primary is not found.
        other = self.key_at(idx + 1)[0]
        if other != primary:
            for call in (self.index.tie_of, self.index.position_of):
                with pytest.raises(KeyError):
                    call(other, member)

    @precondition(lambda self: self.hooked)
    @rule(data=st.data())
    def by_member_absent(self, data: st.DataObject) -> None:
        primary = self.primary(data)
        for call in (self.index.tie_of, self.index.position_of):
            with pytest.raises(KeyError):
                call(primary, "nobody")

    @rule(a=IDX, b=IDX, reverse=st.booleans())
    def iter_range(self, a: int, b: int, reverse: bool) -> None:
        n = len(self.ref)
        start, stop = sorted((a % (n + 1), b % (n + 1)))
        assert show(self.index.iter_range(start, stop, reverse=reverse)) == show(
            self.ref.iter_range(start, stop, reverse=reverse)
        )

    @precondition(lambda self: hasattr(self.index, "columns"))
    @rule()
    def columns(self) -> None:
        primaries, ties, members = self.index.columns()
        assert show(zip(primaries, ties, members, strict=True)) == show(self.ref.rows())

    # -- after every step -------------------------------------------------------

    @invariant()
    def same(self) -> None:
        self.index._check()
        assert len(self.index) == len(self.ref)
        rows = show(self.ref.rows())
        assert show(self.index.iter_range(0, len(self.ref))) == rows
        assert show(self.index.iter_range(0, len(self.ref), reverse=True)) == rows[::-1]


TestIndexMachine = IndexMachine.TestCase
TestIndexMachine.settings = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
