"""Tests for rankengine.index.skiplist.SkipList.

Every test compares the skip list with a reference: a plain sorted Python list
of ``(primary, tie, member)`` tuples, kept sorted with ``bisect``.  Every
mutation is followed by ``_check()``, which verifies the internal invariants
(spans, backward links, levels) and dumps the structure when one breaks.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator
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
from rankengine.index.skiplist import MAX_LEVEL, P, SkipList, node_entry, node_height

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

    def index(self, primary: Any, tie: Any) -> int:
        i = bisect.bisect_left(self.keys(), (primary, tie))
        assert self.items[i][:2] == (primary, tie)
        return i

    def insert(self, entry: Entry) -> None:
        i = bisect.bisect_left(self.keys(), entry[:2])
        self.items.insert(i, entry)

    def remove(self, primary: Any, tie: Any) -> Entry:
        return self.items.pop(self.index(primary, tie))

    def count_less(self, primary: Any, tie: Any) -> int:
        return bisect.bisect_left(self.keys(), (primary, tie))

    def count_primary(self, primary: Any, *, inclusive: bool) -> int:
        primaries = [p for p, _, _ in self.items]
        if inclusive:
            return bisect.bisect_right(primaries, primary)
        return bisect.bisect_left(primaries, primary)

    def __contains__(self, key: tuple[Any, Any]) -> bool:
        i = bisect.bisect_left(self.keys(), key)
        return i < len(self.items) and self.items[i][:2] == key

    def distance(self, primary: Any, tie: Any, *, oldest_last: bool | None) -> int:
        """Entries of the run of ``primary`` between ``(primary, tie)`` and
        the run's oldest end (its last entry when ``oldest_last``)."""
        run = [t for p, t, _ in self.items if p == primary]
        k = run.index(tie)
        return len(run) - 1 - k if oldest_last else k


def assert_same(sl: SkipList, ref: Reference) -> None:
    """Full comparison: invariants, contents, both directions."""
    sl._check()
    assert len(sl) == len(ref.items)
    assert list(sl) == ref.items
    assert list(sl.iter_range(0, len(sl), reverse=True)) == ref.items[::-1]


def backward_walk(sl: SkipList) -> list[Entry]:
    """Entries read from the tail through ``backward`` pointers."""
    out = []
    x = sl.tail
    while x is not None:
        out.append(node_entry(x))
        x = x[3]
    return out


def filled(n: int, seed: int = 0, max_level: int = MAX_LEVEL) -> tuple[SkipList, Reference]:
    """A skip list and its reference with ``n`` random entries (many ties)."""
    rng = random.Random(seed)
    sl = SkipList(random.Random(seed + 1), max_level=max_level)
    ref = Reference()
    for tie in range(n):
        entry = (rng.randrange(max(1, n // 4)), tie, f"m{tie}")
        sl.insert(*entry)
        ref.insert(entry)
    return sl, ref


# ----------------------------------------------------------------------
# Construction and small surface
# ----------------------------------------------------------------------


def test_constants() -> None:
    assert MAX_LEVEL == 32
    assert P == 0.25


def test_empty() -> None:
    sl = SkipList()
    sl._check()
    assert len(sl) == 0
    assert list(sl) == []
    assert list(sl.iter_range(0, 0)) == []
    assert list(sl.iter_range(0, 0, reverse=True)) == []
    assert sl.count_less(1, 1) == 0
    assert sl.count_primary(1, inclusive=True) == 0
    assert sl.tail is None
    assert sl.level == 1
    with pytest.raises(IndexError):
        sl.entry(0)
    with pytest.raises(KeyError):
        sl.position(1, 1)
    with pytest.raises(KeyError):
        sl.remove(1, 1)
    with pytest.raises(KeyError):
        sl.move(1, 1, 2, 2)


@pytest.mark.parametrize("bad", [0, -1, MAX_LEVEL + 1])
def test_max_level_bounds(bad: int) -> None:
    with pytest.raises(ValueError, match="max_level"):
        SkipList(max_level=bad)


def test_repr_and_render() -> None:
    sl = SkipList(random.Random(0), max_level=3)
    assert repr(sl) == "SkipList([], length=0, level=1)"
    sl.build([(i, 0, f"m{i}") for i in range(20)])
    text = repr(sl)
    assert text.startswith("SkipList([(0, 0, 'm0'), (1, 0, 'm1'),")
    assert ", ...], length=20, level=" in text
    picture = sl.render(max_nodes=5)
    rows = picture.splitlines()
    # One row per level, top first, then the labels, then the truncation note.
    assert [r[:3] for r in rows[: sl.level]] == [f"L{i:<2}" for i in range(sl.level - 1, -1, -1)]
    assert rows[sl.level].split() == ["H", "0/0", "1/0", "2/0", "3/0", "4/0"]
    assert "15 more nodes" in rows[-1]


def test_levels_reports_heights_and_spans() -> None:
    sl = SkipList(random.Random(3), max_level=4)
    entries = [(i, -i, str(i)) for i in range(50)]
    sl.build(entries)
    rows = list(sl.levels(include_header=True))
    head, nodes = rows[0], rows[1:]
    assert head[:3] == (None, None, None)
    assert len(head[3]) == sl.level
    assert [r[:3] for r in nodes] == entries
    # Spans on each level add up to the length, header included.
    for i in range(sl.level):
        assert sum(spans[i] for *_, spans in rows if len(spans) > i) == len(sl)
    assert max(len(spans) for *_, spans in nodes) == sl.level
    # The lists handed out are copies.
    nodes[0][3][0] = 99
    sl._check()


def test_same_seed_same_shape() -> None:
    def shape(seed: int) -> list[list[int]]:
        sl = SkipList(random.Random(seed))
        for i in range(200):
            sl.insert(i % 7, i, i)
        return [spans for *_, spans in sl.levels()]

    assert shape(11) == shape(11)
    assert shape(11) != shape(12)


def assert_heights_follow_p(heights: list[int]) -> None:
    """The share of heights above k is P**k, within 4 standard deviations."""
    n = len(heights)
    for k in range(1, 5):
        share = sum(h > k for h in heights) / n
        expected = P**k
        assert abs(share - expected) <= 4 * (expected * (1 - expected) / n) ** 0.5, (k, share)


def test_level_distribution_matches_p() -> None:
    sl = SkipList(random.Random(5))
    heights = [sl._random_level() for _ in range(40_000)]
    assert_heights_follow_p(heights)
    capped = SkipList(random.Random(1), max_level=3)
    assert max(capped._random_level() for _ in range(999)) == 3
    assert {SkipList(max_level=1)._random_level() for _ in range(50)} == {1}


# ----------------------------------------------------------------------
# Each method against the reference
# ----------------------------------------------------------------------


@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_insert_remove_against_reference(max_level: int) -> None:
    rng = random.Random(max_level)
    sl = SkipList(random.Random(7), max_level=max_level)
    ref = Reference()
    for tie in rng.sample(range(1000), 300):
        entry = (rng.randrange(20), tie, f"m{tie}")
        sl.insert(*entry)
        ref.insert(entry)
        sl._check()
    assert_same(sl, ref)
    while ref.items:
        p, t, _ = ref.items[rng.randrange(len(ref.items))]
        sl.remove(p, t)
        ref.remove(p, t)
        sl._check()
    assert_same(sl, ref)
    assert sl.level == 1
    assert sl.tail is None


def test_insert_duplicate_key_raises_and_changes_nothing() -> None:
    sl, ref = filled(50)
    p, t, _ = ref.items[17]
    with pytest.raises(ValueError, match="already present"):
        sl.insert(p, t, "other")
    assert_same(sl, ref)


def test_remove_absent_raises() -> None:
    sl, ref = filled(50)
    with pytest.raises(KeyError):
        sl.remove(10**6, 0)
    p, t, _ = ref.items[3]
    with pytest.raises(KeyError):
        sl.remove(p, t + 10**6)
    assert_same(sl, ref)


def test_position_and_count_less() -> None:
    sl, ref = filled(400, seed=2)
    for i, (p, t, _) in enumerate(ref.items):
        assert sl.position(p, t) == i
    for p in range(-1, 110):
        for t in (-1, 0, 150, 399, 400):
            assert sl.count_less(p, t) == ref.count_less(p, t)
    with pytest.raises(KeyError):
        sl.position(5, -1)


def test_count_primary() -> None:
    sl, ref = filled(400, seed=3)
    for p in range(-2, 105):
        for inclusive in (False, True):
            assert sl.count_primary(p, inclusive=inclusive) == ref.count_primary(
                p, inclusive=inclusive
            )
    # Float and tuple primaries compare the same way.
    assert sl.count_primary(4.5, inclusive=False) == ref.count_primary(4.5, inclusive=False)
    comp = SkipList(random.Random(0))
    comp.build([((1, 2), 0, "a"), ((1, 2), 1, "b"), ((1, 3), 0, "c")])
    assert comp.count_primary((1, 2), inclusive=False) == 0
    assert comp.count_primary((1, 2), inclusive=True) == 2


def test_entry() -> None:
    sl, ref = filled(300, seed=4)
    for i, e in enumerate(ref.items):
        assert sl.entry(i) == e
    for bad in (-1, 300):
        with pytest.raises(IndexError):
            sl.entry(bad)


def test_iter_range_every_window() -> None:
    sl, ref = filled(23, seed=5, max_level=3)
    n = len(ref.items)
    for start in range(n + 1):
        for stop in range(start, n + 1):
            assert list(sl.iter_range(start, stop)) == ref.items[start:stop]
            assert list(sl.iter_range(start, stop, reverse=True)) == ref.items[start:stop][::-1]
    assert list(sl.iter_range(5, 3)) == []


def transposed(items: list[Entry]) -> tuple[list[Any], list[Any], list[Any]]:
    return [e[0] for e in items], [e[1] for e in items], [e[2] for e in items]


@pytest.mark.parametrize("n", [0, 1, 2, 57])
def test_columns_are_the_entries_transposed(n: int) -> None:
    sl, ref = filled(n, seed=n, max_level=4)
    assert sl.columns() == transposed(ref.items)
    for primary, tie, _ in ref.items[::3]:  # still right after removes
        sl.remove(primary, tie)
        ref.remove(primary, tie)
    sl._check()
    assert sl.columns() == transposed(ref.items)


def test_clear() -> None:
    sl, _ = filled(100)
    sl.clear()
    assert_same(sl, Reference())
    sl.insert(1, 1, "x")
    assert list(sl) == [(1, 1, "x")]
    sl._check()


def test_build_that_fails_leaves_an_empty_list() -> None:
    # A row that is not a triple, or an input that raises, stops the bulk
    # load half-way.  It used to leave nodes linked from the header with
    # length 0, no tail and the first node's backward link on the header:
    # len() said 0 while iteration gave the rows read so far, and _check()
    # failed.  Now the list is left empty and whole, as SortedListIndex does.
    def failing() -> Iterator[Entry]:
        yield (1, 0, "a")
        yield (2, 0, "b")
        raise RuntimeError("bad input")

    for rows, error in [
        ([(1, 0, "a"), (2, 0, "b"), (3, 0)], ValueError),
        (failing(), RuntimeError),
    ]:
        sl, _ = filled(20, max_level=4)
        with pytest.raises(error):
            sl.build(rows)  # type: ignore[arg-type]
        assert_same(sl, Reference())
        sl.insert(5, 0, "x")
        assert list(sl) == [(5, 0, "x")]
        sl._check()


def test_member_never_compared() -> None:
    # Members that cannot be ordered are fine: keys are unique.
    sl = SkipList(random.Random(0))
    for t in range(30):
        sl.insert(t % 3, t, object())
        sl._check()
    sl.move(0, 0, 0, 100)
    sl.remove(1, 1)
    sl._check()


# ----------------------------------------------------------------------
# move(): fast path in place, slow path relinks the same node
# ----------------------------------------------------------------------


def test_move_against_reference() -> None:
    rng = random.Random(9)
    sl, ref = filled(300, seed=9, max_level=4)
    next_tie = 10_000
    for _ in range(800):
        p, t, m = ref.items[rng.randrange(len(ref.items))]
        if rng.random() < 0.5:
            new = (p + rng.choice((-1, 0, 1)), next_tie)  # near: often in place
        else:
            new = (rng.randrange(-10, 100), next_tie)  # far
        next_tie += 1
        sl.move(p, t, *new)
        ref.remove(p, t)
        ref.insert((*new, m))
        sl._check()
    assert_same(sl, ref)


def test_redis_rescore_example() -> None:
    # x=10, y=20, z=30; set y=1 gives y, x, z.
    sl = SkipList(random.Random(0))
    for member, score in (("x", 10), ("y", 20), ("z", 30)):
        sl.insert(score, member, member)
    sl.move(20, "y", 1, "y")
    sl._check()
    assert [m for _, _, m in sl] == ["y", "x", "z"]


def test_move_in_place_keeps_links(monkeypatch: pytest.MonkeyPatch) -> None:
    sl = SkipList(random.Random(1), max_level=4)
    sl.build([(10 * i, 0, f"m{i}") for i in range(100)])
    # A tall node in the middle, so several levels point at it.
    rank = next(r for r, (*_, spans) in enumerate(sl.levels(), 1) if r > 20 and len(spans) > 1)
    node = sl._node_at(rank)
    p, t, m = node_entry(node)
    links_before = node[4:]
    before = [r[3] for r in sl.levels(include_header=True)]

    # Any relink on this path is a failure.
    def no_relink(*_: object) -> None:
        raise AssertionError("the in-place path must not unlink or relink")

    monkeypatch.setattr(SkipList, "_unlink", no_relink)
    monkeypatch.setattr(SkipList, "_link", no_relink)
    sl.move(p, t, p + 5, 7)  # still between p - 10 and p + 10
    sl.move(p + 5, 7, p - 9, -1)
    sl.move(p - 9, -1, p + 9, 99)
    monkeypatch.undo()

    assert sl._node_at(rank) is node
    assert node_entry(node) == (p + 9, 99, m)
    assert len(node[4:]) == len(links_before)
    assert all(a is b for a, b in zip(node[4:], links_before, strict=True))
    assert [r[3] for r in sl.levels(include_header=True)] == before
    sl._check()


def test_move_in_place_respects_equal_neighbour_keys() -> None:
    sl = SkipList(random.Random(0))
    sl.build([(1, 0, "a"), (2, 0, "b"), (3, 0, "c")])
    # New key equal to a neighbour's key is a clash, whichever side.
    for new in ((1, 0), (3, 0)):
        with pytest.raises(ValueError, match="already present"):
            sl.move(2, 0, *new)
        assert list(sl) == [(1, 0, "a"), (2, 0, "b"), (3, 0, "c")]
        sl._check()
    # A far clash leaves everything as it was, too.
    sl.insert(9, 9, "z")
    with pytest.raises(ValueError, match="already present"):
        sl.move(1, 0, 9, 9)
    assert list(sl) == [(1, 0, "a"), (2, 0, "b"), (3, 0, "c"), (9, 9, "z")]
    sl._check()
    # Moving a key onto itself is a no-op.
    sl.move(2, 0, 2, 0)
    assert sl.entry(1) == (2, 0, "b")


def test_move_far_reuses_node(monkeypatch: pytest.MonkeyPatch) -> None:
    sl = SkipList(random.Random(2), max_level=4)
    sl.build([(i, 0, f"m{i}") for i in range(64)])
    node = sl._node_at(10)
    height = node_height(node)
    calls: list[str] = []
    real_unlink, real_link = SkipList._unlink, SkipList._link
    real_ahead = SkipList._move_ahead

    def unlink(self: SkipList, x: Any) -> None:
        calls.append("unlink")
        real_unlink(self, x)

    def link(self: SkipList, x: Any) -> None:
        calls.append("link")
        real_link(self, x)

    def move_ahead(self: SkipList, x: Any, p: Any, t: Any) -> None:
        calls.append("move_ahead")
        real_ahead(self, x, p, t)

    monkeypatch.setattr(SkipList, "_unlink", unlink)
    monkeypatch.setattr(SkipList, "_link", link)
    monkeypatch.setattr(SkipList, "_move_ahead", move_ahead)
    # To a larger key: the fused finger move.
    sl.move(9, 0, 100, 0)
    assert calls == ["move_ahead"]
    assert sl.tail is node
    assert sl._node_at(64) is node
    assert node_entry(node) == (100, 0, "m9")
    sl._check()
    # To a smaller key: unlink, search from the header, relink.
    calls.clear()
    sl.move(100, 0, -1, 0)
    monkeypatch.undo()

    assert calls == ["unlink", "link"]
    assert sl._node_at(1) is node
    assert node_height(node) == height
    assert node_entry(node) == (-1, 0, "m9")
    sl._check()


@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_small_moves_ahead_keep_invariants(max_level: int) -> None:
    # Increments of every size, ties included, clashes included: the fused
    # move must leave exactly what unlink + link would.
    rng = random.Random(max_level)
    sl = SkipList(random.Random(max_level), max_level=max_level)
    keys = sorted({(rng.randrange(80), rng.randrange(3)) for _ in range(60)})
    sl.build([(p, t, (p, t)) for p, t in keys])
    ref = {k: k for k in keys}
    for _ in range(400):
        old = rng.choice(sorted(ref))
        new = (old[0] + rng.randrange(0, 12), rng.randrange(3))
        if new in ref and new != old:
            with pytest.raises(ValueError, match="already present"):
                sl.move(*old, *new)
        else:
            sl.move(*old, *new)
            ref[new] = ref.pop(old)
        sl._check()
        assert list(sl) == sorted((p, t, m) for (p, t), m in ref.items())


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_search_run_end_stops_before_the_oldest_node(oldest_last: bool, max_level: int) -> None:
    # Runs of 1 .. 12 nodes: the search fills update[i] with the last node
    # before the run's oldest node on every level, rank[i] with its rank,
    # and returns that oldest node (the run's last when oldest_last).
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    sl = SkipList(random.Random(max_level), max_level=max_level)
    sl.oldest_last = oldest_last
    sl.build(entries)
    nodes = [sl.header, *sl._nodes()]
    for p in range(14):
        x = sl._search_run_end(p)
        run = [n for n in nodes[1:] if n[0] == p]
        if not run:
            assert x is None or x[0] != p
            continue
        oldest = run[-1] if oldest_last else run[0]
        assert x is oldest
        at = next(k for k, n in enumerate(nodes) if n is oldest)
        for i in range(sl.level):
            before = [k for k in range(at) if k == 0 or node_height(nodes[k]) > i][-1]
            assert sl._update[i] is nodes[before], (p, i)
            assert sl._rank[i] == before, (p, i)


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_seek_member_leaves_the_search_for_the_member(oldest_last: bool, max_level: int) -> None:
    # From the run-end search, _seek_member finds any node of the run and
    # leaves update[] and rank[] exactly as a search for its key does.
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    for seed in range(4):
        sl = SkipList(random.Random(seed), max_level=max_level)
        sl.oldest_last = oldest_last
        sl.build(entries)
        for p, t, m in entries:
            end = sl._search_run_end(p)
            x = end if end[2] == m else sl._seek_member(end, m)
            assert (x[0], x[1], x[2]) == (p, t, m)
            got = (list(sl._update[: sl.level]), sl._rank[: sl.level])
            sl._search_update_rank(p, t)
            assert got == (list(sl._update[: sl.level]), sl._rank[: sl.level]), (seed, m)


@pytest.mark.parametrize("oldest_last", [False, True])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_move_member_takes_one_search(
    oldest_last: bool, max_level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wherever the node sits in its run, move_member searches once (to the
    # run's oldest end), walks level 0 to the node and corrects update[]
    # (_seek_member): no search from the header for its key, no tie_of.
    searches: list[Any] = []
    for name in ("tie_of", "_search_update_rank", "_search_update"):
        method = getattr(SkipList, name)

        def counting(self: SkipList, *args: Any, method: Any = method, name: str = name) -> Any:
            searches.append(name)
            return method(self, *args)

        monkeypatch.setattr(SkipList, name, counting)
    entries = [(p, t, f"m{p}.{t}") for p in range(1, 13) for t in range(p)]
    for seed, (p, t, m) in itertools.product(range(6), entries):
        sl = SkipList(random.Random(seed), max_level=max_level)
        sl.oldest_last = oldest_last
        sl.build(entries)
        near = sl.move_member(p, m, 99, -1)  # a larger key: moved ahead by finger
        assert searches == []
        sl._check()
        assert sl.entry(len(sl) - 1) == (99, -1, m)
        assert near is True
        # and back down (a smaller key: relinked after a search, as move does)
        sl.move_member(99, m, p, t)
        assert list(sl) == entries
        searches.clear()
    with pytest.raises(KeyError):
        sl.move_member(12, "nobody", 0, 0)
    with pytest.raises(KeyError):
        sl.move_member(13, "m12.0", 0, 0)


def test_move_absent_raises() -> None:
    sl, ref = filled(40)
    with pytest.raises(KeyError):
        sl.move(10**6, 0, 1, 10**6)
    assert_same(sl, ref)


def test_thousand_rescores_among_ten_members() -> None:
    rng = random.Random(4)
    sl = SkipList(random.Random(4), max_level=3)
    scores = {f"m{i}": rng.randrange(5) for i in range(10)}
    for m, s in scores.items():
        sl.insert(s, m, m)
    for _ in range(1000):
        m = rng.choice(sorted(scores))
        new = rng.randrange(5) if rng.random() < 0.5 else scores[m] + rng.choice((-1, 1))
        sl.move(scores[m], m, new, m)
        scores[m] = new
        sl._check()
    assert list(sl) == sorted((s, m, m) for m, s in scores.items())


# ----------------------------------------------------------------------
# build(): O(N) bulk load
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000])
@pytest.mark.parametrize("max_level", [1, 2, 4, MAX_LEVEL])
def test_build_matches_incremental_inserts(n: int, max_level: int) -> None:
    entries = [(i // 3, i % 3, f"m{i}") for i in range(n)]
    built = SkipList(random.Random(n), max_level=max_level)
    built.build(entries)
    built._check()
    inserted = SkipList(random.Random(n), max_level=max_level)
    for e in reversed(entries):
        inserted.insert(*e)
    inserted._check()
    assert list(built) == list(inserted) == entries
    for i, (p, t, _) in enumerate(entries):
        assert built.position(p, t) == i
        assert built.entry(i) == entries[i]
    assert backward_walk(built) == entries[::-1]


def test_build_replaces_contents_and_stays_usable() -> None:
    sl, _ = filled(200, seed=6)
    ref = Reference()
    for e in [(i, 0, i) for i in range(0, 500, 5)]:
        ref.insert(e)
    sl.build(iter(ref.items))  # any iterable, here a one-shot iterator
    assert_same(sl, ref)
    rng = random.Random(6)
    for i in range(300):
        if rng.random() < 0.3:
            p, t, _ = ref.items[rng.randrange(len(ref.items))]
            sl.remove(p, t)
            ref.remove(p, t)
        else:
            e = (rng.randrange(600), i + 1, i)
            sl.insert(*e)
            ref.insert(e)
        sl._check()
    assert_same(sl, ref)


def test_build_accepts_lists_and_restores_gc() -> None:
    import gc

    sl = SkipList(random.Random(0))
    sl.build([[1, 0, "a"], [2, 0, "b"]])  # type: ignore[list-item]
    assert list(sl) == [(1, 0, "a"), (2, 0, "b")]
    assert all(type(e) is tuple for e in sl)
    assert gc.isenabled()
    gc.disable()
    try:
        sl.build([(1, 0, "a")])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_build_draws_heights_like_insert() -> None:
    sl = SkipList(random.Random(8))
    sl.build((i, 0, i) for i in range(40_000))
    assert_heights_follow_p([len(spans) for *_, spans in sl.levels()])


# ----------------------------------------------------------------------
# _check(): it does catch broken invariants
# ----------------------------------------------------------------------


def _tall_node(sl: SkipList) -> Any:
    x = sl.header[4]
    while x is not None and node_height(x) < 2:
        x = x[4]
    assert x is not None
    return x


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda sl: sl.header.__setitem__(5, 2), "span"),  # header's level-0 span
        (lambda sl: _tall_node(sl).__setitem__(7, 99), "span"),  # level-1 span
        (lambda sl: sl.tail.__setitem__(3, None), "backward"),
        (lambda sl: setattr(sl, "tail", sl.header[4]), "tail"),
        (lambda sl: setattr(sl, "length", 99), "length"),
        (lambda sl: setattr(sl, "level", sl.level + 1), "level"),
        (lambda sl: sl.header[4].__setitem__(0, 10**9), "order"),
        (lambda sl: _tall_node(sl).__setitem__(6, None), "level 1"),  # level-1 link
        (lambda sl: setattr(sl, "_finger", (sl.header[4], 2)), "finger"),
    ],
)
def test_check_catches_damage(damage: Any, message: str) -> None:
    sl = SkipList(random.Random(0), max_level=4)
    sl.build([(i, 0, i) for i in range(40)])
    sl._check()
    damage(sl)
    with pytest.raises(AssertionError, match=message) as info:
        sl._check()
    # The message carries a dump of the levels.
    assert "L0" in str(info.value)


# ----------------------------------------------------------------------
# Redis-style stress: rank(at(i)) == i, forward == reversed backward
# ----------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "max_level"), [(1, MAX_LEVEL), (2, 4), (3, 2)])
def test_stress_rank_of_element_at_index(seed: int, max_level: int) -> None:
    rng = random.Random(seed)
    sl = SkipList(random.Random(seed), max_level=max_level)
    scores: dict[int, int] = {}
    for _ in range(4000):
        member = rng.randrange(800)
        roll = rng.random()
        if roll < 0.2:
            # 20% removals
            if member in scores:
                sl.remove(scores.pop(member), member)
        elif member in scores:
            # re-score: small steps (often in place) and jumps
            new = scores[member] + rng.randint(-2, 2) if roll < 0.6 else rng.randrange(200)
            sl.move(scores[member], member, new, member)
            scores[member] = new
        else:
            scores[member] = rng.randrange(200)
            sl.insert(scores[member], member, member)
    sl._check()
    assert len(sl) == len(scores)
    for i in range(len(sl)):
        p, t, _ = sl.entry(i)
        assert sl.position(p, t) == i
    forward = list(sl)
    assert forward == backward_walk(sl)[::-1]
    assert forward == sorted((s, m, m) for m, s in scores.items())


def test_stress_float_scores_against_sort() -> None:
    rng = random.Random(12)
    sl = SkipList(random.Random(12))
    entries = [(rng.uniform(-1e6, 1e6), i, i) for i in range(3000)]
    for e in entries:
        sl.insert(*e)
    sl._check()
    assert list(sl) == sorted(entries)
    assert list(sl.iter_range(0, len(sl), reverse=True)) == sorted(entries, reverse=True)


# ----------------------------------------------------------------------
# Hypothesis: a state machine against the reference list
# ----------------------------------------------------------------------

PRIMARIES = st.integers(0, 6)  # few primaries: many ties
TIES = st.integers(0, 12)


class SkipListMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sl = SkipList()
        self.ref = Reference()
        self.serial = 0  # members are unique: they are looked up by name too

    @initialize(
        max_level=st.sampled_from([1, 2, 4, MAX_LEVEL]),
        seed=st.integers(0, 2**16),
        oldest_last=st.sampled_from([None, False, True]),
    )
    def setup(self, max_level: int, seed: int, oldest_last: bool | None) -> None:
        self.sl = SkipList(random.Random(seed), max_level=max_level)
        self.sl.oldest_last = oldest_last

    def _check_near(self, primary: int, tie: int, near: bool | None) -> None:
        """insert/move said whether the entry lies near its run's oldest end:
        exactly right (the skip list walks level 0), or None when not asked."""
        last = self.sl.oldest_last
        if last is None:
            assert near is None
        else:
            distance = self.ref.distance(primary, tie, oldest_last=last)
            assert near == (distance < RUN_SCAN_LIMIT), (primary, tie, distance, near)

    @rule(primary=PRIMARIES, tie=TIES)
    def insert(self, primary: int, tie: int) -> None:
        self.serial += 1
        entry = (primary, tie, f"m{primary}.{tie}#{self.serial}")
        if (primary, tie) in self.ref:
            with pytest.raises(ValueError, match="already present"):
                self.sl.insert(*entry)
        else:
            near = self.sl.insert(*entry)
            self.ref.insert(entry)
            self._check_near(primary, tie, near)

    @rule(primary=PRIMARIES, count=st.integers(1, 13))
    def insert_run(self, primary: int, count: int) -> None:
        """Ties 0 .. count - 1 on one primary: runs deeper than RUN_SCAN_LIMIT."""
        for tie in range(count):
            if (primary, tie) not in self.ref:
                self.insert(primary, tie)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def find_by_member(self, data: st.DataObject) -> None:
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        distance = self.ref.distance(p, t, oldest_last=self.sl.oldest_last)
        assert self.sl.tie_of(p, m) == (t, distance)
        assert self.sl.position_of(p, m) == self.ref.index(p, t)
        with pytest.raises(KeyError):
            self.sl.tie_of(p, "nobody")
        with pytest.raises(KeyError):
            self.sl.position_of(p + 1, m)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data(), new_primary=PRIMARIES, new_tie=TIES)
    def move_member(self, data: st.DataObject, new_primary: int, new_tie: int) -> None:
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        if (new_primary, new_tie) in self.ref and (new_primary, new_tie) != (p, t):
            with pytest.raises(ValueError, match="already present"):
                self.sl.move_member(p, m, new_primary, new_tie)
            return
        near = self.sl.move_member(p, m, new_primary, new_tie)
        self.ref.remove(p, t)
        self.ref.insert((new_primary, new_tie, m))
        self._check_near(new_primary, new_tie, near)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        p, t, _ = data.draw(st.sampled_from(self.ref.items))
        self.sl.remove(p, t)
        self.ref.remove(p, t)

    @rule(primary=PRIMARIES, tie=TIES)
    def remove_absent(self, primary: int, tie: int) -> None:
        if (primary, tie) not in self.ref:
            with pytest.raises(KeyError):
                self.sl.remove(primary, tie)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data(), new_primary=PRIMARIES, new_tie=TIES)
    def move_anywhere(self, data: st.DataObject, new_primary: int, new_tie: int) -> None:
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        self._move(p, t, m, new_primary, new_tie)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data(), dp=st.sampled_from([-1, 0, 1]), dt=st.integers(-3, 3))
    def move_near(self, data: st.DataObject, dp: int, dt: int) -> None:
        # Small changes: most of these take the in-place path.
        p, t, m = data.draw(st.sampled_from(self.ref.items))
        self._move(p, t, m, p + dp, t + dt)

    def _move(self, p: int, t: int, m: str, new_p: int, new_t: int) -> None:
        if (new_p, new_t) == (p, t):
            self._check_near(p, t, self.sl.move(p, t, new_p, new_t))
        elif (new_p, new_t) in self.ref:
            with pytest.raises(ValueError, match="already present"):
                self.sl.move(p, t, new_p, new_t)
        else:
            near = self.sl.move(p, t, new_p, new_t)
            self.ref.remove(p, t)
            self.ref.insert((new_p, new_t, m))
            self._check_near(new_p, new_t, near)

    @rule(primary=PRIMARIES, tie=TIES, inclusive=st.booleans())
    def counts(self, primary: int, tie: int, inclusive: bool) -> None:
        assert self.sl.count_less(primary, tie) == self.ref.count_less(primary, tie)
        assert self.sl.count_primary(primary, inclusive=inclusive) == self.ref.count_primary(
            primary, inclusive=inclusive
        )
        if (primary, tie) in self.ref:
            assert self.sl.position(primary, tie) == self.ref.index(primary, tie)

    @precondition(lambda self: self.ref.items)
    @rule(data=st.data())
    def positions(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.ref.items) - 1))
        assert self.sl.entry(i) == self.ref.items[i]
        p, t, _ = self.ref.items[i]
        assert self.sl.position(p, t) == i

    @rule(data=st.data(), reverse=st.booleans())
    def ranges(self, data: st.DataObject, reverse: bool) -> None:
        n = len(self.ref.items)
        start = data.draw(st.integers(0, n))
        stop = data.draw(st.integers(start, n))
        expected = self.ref.items[start:stop]
        if reverse:
            expected = expected[::-1]
        assert list(self.sl.iter_range(start, stop, reverse=reverse)) == expected

    @rule(data=st.data())
    def rebuild(self, data: st.DataObject) -> None:
        # Occasionally bulk-load the current contents (same entries, new shape).
        if data.draw(st.integers(0, 9)) == 0:
            self.sl.build(list(self.ref.items))

    @invariant()
    def agrees_with_reference(self) -> None:
        self.sl._check()
        assert len(self.sl) == len(self.ref.items)
        assert list(self.sl) == self.ref.items
        assert backward_walk(self.sl) == self.ref.items[::-1]


SkipListMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=50, deadline=None
)
TestSkipListMachine = SkipListMachine.TestCase
